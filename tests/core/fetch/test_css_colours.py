"""Colours of CSS Color Level 4 are judged like those of level 3.

REQ-CTX-005: hidden text never reaches the caller. A defect found in session 12:
colours were read by tinycss2's level-3 parser only, so `color: rgb(0 0 0 / 0)`
(transparent in the space-separated syntax), `rgb(255 255 255)`, `hwb()`,
`lab()` and `oklch()` white on a white page were unknown colours and the text
stayed. `colours.parse_colour` reads every level and converts to sRGB.
"""

from __future__ import annotations

import pytest
import tinycss2.color3  # type: ignore[import-untyped]
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.colours import legacy_colour, parse_colour
from rypsok.core.fetch.parse import parse_bounded

SECRET = "SECRET-IN-A-LEVEL-4-COLOUR"


def _visible_text(css: str, body: str) -> str:
    html = f"<!doctype html><html><head><style>{css}</style></head><body>{body}<p>shown</p>"
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split())


WHITE = [
    "rgb(255 255 255)",
    "rgb(100% 100% 100%)",
    "hsl(0 0% 100%)",
    "hwb(0 100% 0%)",
    "lab(100% 0 0)",
    "lch(100 0 0)",
    "oklab(1 0 0)",
    "oklch(100% 0 0)",
    "color(srgb 1 1 1)",
    "color(srgb-linear 1 1 1)",
    "color(xyz-d65 0.9505 1 1.089)",
]
TRANSPARENT = [
    "rgb(0 0 0 / 0)",
    "rgb(12 200 7 / 0%)",
    "hsl(120 50% 50% / 0)",
    "oklch(0.5 0.1 200 / 0)",
    "color(display-p3 1 0 0 / 0)",
]


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("colour", WHITE)
def test_req_ctx_005_white_text_of_any_level_is_hidden_on_a_white_page(colour: str) -> None:
    assert SECRET not in _visible_text("", f'<p style="color: {colour}">{SECRET}</p>')
    assert SECRET not in _visible_text(f".w{{color:{colour}}}", f'<p class="w">{SECRET}</p>')


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("colour", TRANSPARENT)
def test_req_ctx_005_transparent_text_of_any_level_is_hidden(colour: str) -> None:
    assert SECRET not in _visible_text("", f'<p style="color: {colour}">{SECRET}</p>')
    assert SECRET not in _visible_text(f".w{{color:{colour}}}", f'<p class="w">{SECRET}</p>')


@pytest.mark.req("REQ-SEC-003")
@pytest.mark.parametrize(
    ("css", "body"),
    [
        ("", '<p style="color: oklch(0.3 0.1 250)">S</p>'),
        ("", '<p style="color: rgb(0 0 0 / 0.9)">S</p>'),
        # A background in a space not converted here is unknown: nothing is judged.
        (".bg{background:color(display-p3 0 0 0)}", '<div class="bg"><p>S</p></div>'),
        (
            ".bg{background:color-mix(in srgb, #fff, #fff)} .t{color:#fff}",
            '<div class="bg"><p class="t">S</p></div>',
        ),
        ("", '<div style="background: lab(20% 0 0)"><p style="color: #fff">S</p></div>'),
    ],
)
def test_req_sec_003_readable_level_4_colours_stay(css: str, body: str) -> None:
    assert SECRET in _visible_text(css, body.replace(">S<", f">{SECRET}<"))


def test_req_ctx_005_known_conversions() -> None:
    red = parse_colour("lab(54.29 80.8 69.89)")
    assert red is not None and red.red > 0.99 and red.green < 0.01 and red.blue < 0.01
    grey = parse_colour("color(srgb-linear 0.5 0.5 0.5)")
    assert grey is not None and abs(grey.red - 0.7354) < 1e-3
    assert parse_colour("currentcolor") is None
    assert parse_colour("color(display-p3 1 1 1)") is None  # not converted: unknown
    assert parse_colour("rgb(300 -5 0)") == parse_colour("red")  # clamped to the gamut
    assert parse_colour("rgb(none 0 0)") == parse_colour("black")
    assert parse_colour("rebeccapurple") == parse_colour("#663399")  # a level-4 name


_byte = st.integers(0, 255)
_level_3 = st.one_of(
    st.builds(lambda r, g, b: f"#{r:02x}{g:02x}{b:02x}", _byte, _byte, _byte),
    st.builds(lambda r, g, b: f"#{r % 16:x}{g % 16:x}{b % 16:x}", _byte, _byte, _byte),
    st.builds(lambda r, g, b: f"rgb({r}, {g}, {b})", _byte, _byte, _byte),
    st.builds(lambda r, g, b, a: f"rgba({r}, {g}, {b}, {a / 255:.3f})", _byte, _byte, _byte, _byte),
    st.builds(
        lambda h, s, light: f"hsl({h}, {s}%, {light}%)",
        st.integers(0, 360),
        st.integers(0, 100),
        st.integers(0, 100),
    ),
    st.sampled_from(["red", "navy", "white", "transparent", "orange", "GRAY"]),
)


@settings(max_examples=300, deadline=None)
@given(_level_3)
def test_req_ctx_005_level_3_colours_read_as_before(text: str) -> None:
    """The level-3 parser's answer, for every syntax it knows (to float rounding)."""
    before = tinycss2.color3.parse_color(text)
    after = parse_colour(text)
    assert after is not None
    assert all(abs(a - b) < 1e-9 for a, b in zip(after, before, strict=True))


# -- <font color>: a presentational colour, read as HTML reads a legacy colour value -------

FONT_HIDDEN = {
    "white": ("", '<font color="#ffffff">S</font>'),
    "hex without #": ("", '<font color="ffffff">S</font>'),
    "named, any case": ("", "<p>a <font color=White>S</font></p>"),
    "on a sheet's background": (
        ".bg{background:#123456}",
        '<div class="bg"><font color="#123456">S</font></div>',
    ),
    "on a style attribute's background": (
        "",
        '<div style="background:#123456"><font color="123456">S</font></div>',
    ),
    "inherited by a span": ("", '<font color="#fff"><span>S</span></font>'),
}
FONT_SHOWN = {
    "red": ("", '<font color="red">S</font>'),
    "white on black": ("", '<div style="background:#000"><font color="#fff">S</font></div>'),
    "a rule recolours it": ("font{color:#333}", '<font color="#fff">S</font>'),
    "a child recolours it": ("", '<font color="#fff"><span style="color:#333">S</span></font>'),
    "transparent is an error in HTML": ("", '<font color="transparent">S</font>'),
    "a face only": ("", '<font face="Arial">S</font>'),
}


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("case", sorted(FONT_HIDDEN))
def test_req_ctx_005_font_colour_that_hides_is_removed(case: str) -> None:
    css, body = FONT_HIDDEN[case]
    assert SECRET not in _visible_text(css, body.replace(">S<", f">{SECRET}<"))


@pytest.mark.req("REQ-SEC-003")
@pytest.mark.parametrize("case", sorted(FONT_SHOWN))
def test_req_sec_003_font_colour_that_reads_stays(case: str) -> None:
    css, body = FONT_SHOWN[case]
    assert SECRET in _visible_text(css, body.replace(">S<", f">{SECRET}<"))


@pytest.mark.parametrize(
    ("value", "hex_value"),
    [
        ("#fff", "#ffffff"),
        ("fff", "#0f0f0f"),  # three digits without `#` are not the short form
        ("chucknorris", "#c00000"),
        ("#0f0f0f0f0f", "#f0f0f0"),
        ("  navy ", "#000080"),
        ("#12345678901234567890", "#128956"),
    ],
)
def test_req_ctx_005_legacy_colour_values(value: str, hex_value: str) -> None:
    assert legacy_colour(value) == parse_colour(hex_value)


def test_req_ctx_005_legacy_colour_errors() -> None:
    assert legacy_colour("") is None
    assert legacy_colour(" TRANSPARENT ") is None


# -- -webkit-text-fill-color: paints the glyphs over `color` -------------------------------

FILL_HIDDEN = {
    "transparent in a style attribute": (
        "",
        '<p style="-webkit-text-fill-color:transparent">S</p>',
    ),
    "transparent in a sheet": (".f{-webkit-text-fill-color:rgba(0,0,0,0)}", '<p class="f">S</p>'),
    "white on a white page": (".f{-webkit-text-fill-color:#fff}", '<p class="f">S</p>'),
    "inherited": (".f{-webkit-text-fill-color:transparent}", '<div class="f"><span>S</span></div>'),
    "over a readable color": (
        ".f{-webkit-text-fill-color:transparent}",
        '<p class="f" style="color:#000">S</p>',
    ),
    "the colour of another rule's background": (
        ".bg{background:#123456} .f{-webkit-text-fill-color:#123456}",
        '<div class="bg"><p class="f">S</p></div>',
    ),
}
FILL_SHOWN = {
    "gradient heading": (
        ".g{background:linear-gradient(red,blue);-webkit-background-clip:text;"
        "-webkit-text-fill-color:transparent}",
        '<h2 class="g">S</h2>',
    ),
    "gradient heading, standard clip": (
        ".g{background-image:linear-gradient(red,blue);background-clip:text;"
        "-webkit-text-fill-color:transparent}",
        '<h2 class="g"><span>S</span></h2>',
    ),
    "a dark fill": (".f{-webkit-text-fill-color:#333}", '<p class="f">S</p>'),
    "a child filled again": (
        ".f{-webkit-text-fill-color:transparent} .r{-webkit-text-fill-color:#222}",
        '<div class="f"><span class="r">S</span></div>',
    ),
}


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("case", sorted(FILL_HIDDEN))
def test_req_ctx_005_text_fill_that_hides_is_removed(case: str) -> None:
    css, body = FILL_HIDDEN[case]
    assert SECRET not in _visible_text(css, body.replace(">S<", f">{SECRET}<"))


@pytest.mark.req("REQ-SEC-003")
@pytest.mark.parametrize("case", sorted(FILL_SHOWN))
def test_req_sec_003_gradient_and_readable_fills_stay(case: str) -> None:
    css, body = FILL_SHOWN[case]
    assert SECRET in _visible_text(css, body.replace(">S<", f">{SECRET}<"))
