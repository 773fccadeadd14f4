"""Offsets written through `calc()`, edge-on rotations and flat matrices hide.

REQ-CTX-005: `left: calc(-100vw - 50px)` is as far off the screen as
`left: -1330px`, `transform: rotateX(90deg)` leaves a box with no height and
`matrix(0, 0, 0, 0, 0, 0)` one with no size; each used to let hidden text
through. The arithmetic is held to Python's on
generated expressions, and what cannot be known without a layout (a
percentage, `min()`, `var()`, an ill-typed expression) stays unjudged.
"""

from __future__ import annotations

import math

import pytest
import tinycss2  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.calc import calc_length
from rypsok.core.fetch.css_visibility.properties import _dimension_px
from rypsok.core.fetch.parse import parse_bounded

_UNITS = {"px": 1.0, "em": 16.0, "rem": 16.0, "vw": 12.8, "vh": 8.0, "pt": 4 / 3, "in": 96.0}


def _calc(text: str) -> float | None:
    (token,) = [t for t in tinycss2.parse_component_value_list(text) if t.type != "whitespace"]
    return calc_length(token, _dimension_px)


def _visible(css: str, body: str) -> str:
    html = f"<html><head><style>{css}</style></head><body><p>kept</p>{body}</body></html>"
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split())


# Expressions with their value: (text, pixels) for lengths, (text, number) for numbers.
_numbers = st.integers(min_value=-50, max_value=50).map(lambda n: (str(n), float(n)))
_lengths = st.tuples(
    st.integers(min_value=-3000, max_value=3000), st.sampled_from(sorted(_UNITS))
).map(lambda pair: (f"{pair[0]}{pair[1]}", pair[0] * _UNITS[pair[1]]))


def _extend(children: st.SearchStrategy[tuple[str, float]]) -> st.SearchStrategy[tuple[str, float]]:
    def combine(
        parts: tuple[tuple[str, float], str, tuple[str, float], tuple[str, float], int],
    ) -> tuple[str, float]:
        (left, left_px), operator, (right, right_px), (number, factor), shape = parts
        if operator in "+-":
            text, value = (
                f"{left} {operator} {right}",
                left_px + (right_px if operator == "+" else -right_px),
            )
        elif operator == "*":
            text, value = f"{left} * {number}", left_px * factor
        else:
            divisor = factor or 1.0
            text, value = f"{left} / {number if factor else '1'}", left_px / divisor
        return (f"({text})" if shape == 0 else f"calc({text})"), value

    return st.tuples(children, st.sampled_from("+-*/"), children, _numbers, st.integers(0, 1)).map(
        combine
    )


_expressions = st.recursive(_lengths, _extend, max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(_expressions)
def test_req_ctx_005_calc_lengths_come_to_what_the_arithmetic_gives(
    expression: tuple[str, float],
) -> None:
    text, pixels = expression
    found = _calc(f"calc({text})")
    assert found is not None, text
    assert math.isclose(found, pixels, rel_tol=1e-9, abs_tol=1e-6), text


@pytest.mark.parametrize(
    "text",
    [
        "calc(1px * 2px)",  # a length times a length: not CSS
        "calc(5px + 1)",  # a length plus a number
        "calc(1px / 0)",
        "calc(10px / 2px)",
        "calc(50% - 10px)",  # a share of a size only the layout knows
        "calc(min(1px, 2px))",
        "calc(var(--x) - 1px)",
        "calc(+ 5px)",
        "calc(5px +)",
        "calc(1px 2px)",
        "calc(3)",  # a number is no length (but 0 is, as outside calc())
        "calc(1fr)",  # a unit with no length outside a grid
        "calc(" * 12 + "1px" + ")" * 12,  # nested deeper than the bound
    ],
)
def test_req_ctx_005_what_calc_cannot_know_stays_unknown(text: str) -> None:
    assert _calc(text) is None


def test_req_ctx_005_a_zero_number_is_a_zero_length_as_outside_calc() -> None:
    assert _calc("calc(0)") == 0.0 and _calc("calc(0 * 5)") == 0.0


HIDDEN = {
    "left": ".x{position:absolute;left:calc(-9999px)}",
    "left from the viewport": ".x{position:absolute;left:calc(-100vw - 50px)}",
    "top, nested": ".x{position:fixed;top:calc((-1 * 100vh) - calc(2 * 200px))}",
    "right": ".x{position:absolute;right:calc(-5000px + 1px)}",
    "margin-left": ".x{margin-left:calc(-2 * 1000px)}",
    "text-indent": ".x{text-indent:calc(-99em)}",
    "translate": ".x{transform:translateX(calc(-100vw - 1px))}",
    "rotateX": ".x{transform:rotateX(90deg)}",
    "rotateY in turns": ".x{transform:rotateY(0.25turn)}",
    "rotateX in radians": ".x{transform:rotateX(-1.5708rad)}",
    "rotate3d": ".x{transform:rotate3d(1, 1, 0, 90deg)}",
    "rotate3d in grads": ".x{transform:perspective(0) rotate3d(0, 2, 0, 100grad)}",
    "a zero matrix": ".x{transform:matrix(0, 0, 0, 0, 0, 0)}",
    "a matrix squashing one axis": ".x{transform:matrix(1, 0, 0, 0.005, 0, 0)}",
    "a skewed flat matrix": ".x{transform:matrix(1, 1, 1, 1, 0, 0)}",
    "a matrix moving off the screen": ".x{transform:matrix(1, 0, 0, 1, -5000, 0)}",
}
SHOWN = {
    "a centred box": ".x{position:absolute;left:calc(50% - 120px)}",
    "a small calc offset": ".x{position:absolute;left:calc(-10px - 1em)}",
    "a half-turned card": ".x{transform:rotateX(45deg)}",
    "a flat turn": ".x{transform:rotate3d(0, 0, 1, 90deg)}",
    "a full turn": ".x{transform:rotateY(1turn)}",
    "a rotating matrix": ".x{transform:matrix(0, 1, -1, 0, 10, 10)}",
    "a halving matrix": ".x{transform:matrix(0.5, 0, 0, 0.5, 0, 0)}",
}


@pytest.mark.parametrize("css", HIDDEN.values(), ids=HIDDEN.keys())
def test_req_ctx_005_calc_offsets_and_edge_on_rotations_hide(css: str) -> None:
    assert _visible(css, "<p class='x'>SECRET</p>") == "kept"


@pytest.mark.parametrize("css", SHOWN.values(), ids=SHOWN.keys())
def test_req_ctx_005_offsets_and_rotations_that_leave_text_readable_keep_it(css: str) -> None:
    assert _visible(css, "<p class='x'>visible text</p>") == "kept visible text"
