"""`calc()` lengths: `left: calc(-100vw - 50px)` is as far off the screen as `-1330px`.

Without this a hiding offset written through `calc()` was not judged, which
made it the cheapest way around the check. What is read is the arithmetic of
CSS Values 4 on what can be known without a layout: lengths the caller can
convert to pixels, plain numbers, `+ - * /`, parentheses and nested `calc()`.
A percentage, another math function (`min()`, `clamp()`), `var()` or an
ill-typed expression (`1px * 2px`, `5px + 1`) make the value unknown (None),
and nothing is judged on an unknown value. The nesting is bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

_MAX_DEPTH: Final = 8  # nested parentheses and calc() read; deeper is unknown

# (amount, is_length): a length in CSS pixels, or a plain number.
_Amount = tuple[float, bool]


def calc_length(token: Any, length_of: Callable[[Any], float | None]) -> float | None:
    """The pixels a `calc()` function token comes to, or None when it cannot be known.

    `length_of(token)` converts one dimension token to pixels (None when its unit
    cannot be). A bare number of 0 is a length of 0, as it is outside `calc()`.
    """
    amount = _sum(_meaningful(token.arguments), length_of, 0)
    if amount is None:
        return None
    value, is_length = amount
    return value if is_length or value == 0 else None


def _meaningful(tokens: Sequence[Any]) -> list[Any]:
    return [token for token in tokens if token.type not in ("whitespace", "comment")]


def _sum(tokens: list[Any], length_of: Callable[[Any], float | None], depth: int) -> _Amount | None:
    """`product [('+' | '-') product]*`, every product of one kind."""
    terms: list[list[Any]] = [[]]
    signs = [1.0]
    for token in tokens:
        if token.type == "literal" and token.value in ("+", "-"):
            if not terms[-1]:
                return None  # `calc(+ 5px)`, `a + - b`: not CSS
            terms.append([])
            signs.append(1.0 if token.value == "+" else -1.0)
        else:
            terms[-1].append(token)
    total = 0.0
    kind: bool | None = None
    for sign, term in zip(signs, terms, strict=True):
        amount = _product(term, length_of, depth)
        if amount is None or (kind is not None and amount[1] != kind):
            return None
        total += sign * amount[0]
        kind = amount[1]
    return None if kind is None else (total, kind)


def _product(
    tokens: list[Any], length_of: Callable[[Any], float | None], depth: int
) -> _Amount | None:
    """`value [('*' | '/') value]*`: at most one length, divided only by numbers."""
    if not tokens or len(tokens) % 2 == 0:
        return None
    amount = _value(tokens[0], length_of, depth)
    for operator, operand in zip(tokens[1::2], tokens[2::2], strict=True):
        right = _value(operand, length_of, depth)
        if amount is None or right is None or operator.type != "literal":
            return None
        if operator.value == "*" and not (amount[1] and right[1]):
            amount = (amount[0] * right[0], amount[1] or right[1])
        elif operator.value == "/" and not right[1] and right[0] != 0:
            amount = (amount[0] / right[0], amount[1])
        else:
            return None
    return amount


def _value(token: Any, length_of: Callable[[Any], float | None], depth: int) -> _Amount | None:
    kind = token.type
    if kind == "number":
        return float(token.value), False
    if kind == "dimension":
        pixels = length_of(token)
        return None if pixels is None else (pixels, True)
    if kind == "percentage":
        return (0.0, True) if token.value == 0 else None  # a share of an unknown size
    if depth >= _MAX_DEPTH:
        return None
    if kind == "() block" or (kind == "function" and token.lower_name == "calc"):
        inner = token.content if kind == "() block" else token.arguments
        return _sum(_meaningful(inner), length_of, depth + 1)
    return None
