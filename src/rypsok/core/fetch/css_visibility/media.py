"""Media queries evaluated for the assumed desktop screen (1280 x 800 CSS px, landscape).

`@media` blocks and `<style media>` apply when their query matches: type
`screen` or `all` (never `print` or `speech`), min/max width and height and
the level 4 range syntax, orientation, light colour scheme, a fine hovering
pointer. An unknown feature does not match. `@supports` applies unless its
condition starts with `not`; `@layer`, `@container` and `@scope` apply.
"""

from __future__ import annotations

import functools
from typing import Any, Final

import tinycss2.color3  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.properties import (
    _CACHED_TEXT,
    VIEWPORT_HEIGHT_PX,
    VIEWPORT_WIDTH_PX,
    _keyword,
    _length,
    _tokens,
)

# -- media queries ------------------------------------------------------------------------


def _condition_applies(name: str, condition: str) -> bool:
    try:
        if name == "media":
            return media_matches(condition)
        if name == "supports":
            return not condition.strip().lower().startswith("not")
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return False
    return True  # @layer, @container, @scope


def media_matches(query_list: str) -> bool:
    """Whether a media query list matches the assumed desktop screen (1280 x 800 px)."""
    if len(query_list) <= _CACHED_TEXT:
        return _cached_media_matches(query_list)
    return _media_matches(query_list)


@functools.lru_cache(maxsize=1_024)
def _cached_media_matches(query_list: str) -> bool:
    return _media_matches(query_list)


def _media_matches(query_list: str) -> bool:
    tokens = _tokens(tinycss2.parse_component_value_list(query_list, skip_comments=True))
    if not tokens:
        return True
    queries: list[list[Any]] = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            queries.append([])
        else:
            queries[-1].append(token)
    return any(_query_matches(query) for query in queries if query)


def _query_matches(tokens: list[Any]) -> bool:
    negate = False
    if tokens and tokens[0].type == "ident" and tokens[0].lower_value == "not":
        negate, tokens = True, tokens[1:]
    if tokens and tokens[0].type == "ident" and tokens[0].lower_value == "only":
        tokens = tokens[1:]
    result = True
    if tokens and tokens[0].type == "ident":
        result = tokens[0].lower_value in ("all", "screen")
        tokens = tokens[1:]
    if tokens:
        result = result and _condition_matches(tokens)
    return result != negate


_MAX_CONDITION_DEPTH: Final = 16  # nested parentheses of a media condition


def _condition_matches(tokens: list[Any], depth: int = 0) -> bool:
    """`(a) and (b)`, `(a) or (b)`, `not (a)`: a condition of features."""
    if depth > _MAX_CONDITION_DEPTH:
        return False  # no real query nests this deep
    results: list[bool] = []
    joiner = "and"
    negate_next = False
    for token in tokens:
        if token.type == "ident":
            word = token.lower_value
            if word in ("and", "or"):
                joiner = word
            elif word == "not":
                negate_next = True
            else:
                return False
            continue
        if token.type != "() block":
            return False
        inner = _tokens(token.content)
        nested = bool(inner) and (
            inner[0].type == "() block"
            or (inner[0].type == "ident" and inner[0].lower_value == "not")
        )
        matched = _condition_matches(inner, depth + 1) if nested else _feature_matches(inner)
        results.append(matched != negate_next)
        negate_next = False
    if not results:
        return False
    return all(results) if joiner == "and" else any(results)


_FEATURE_VALUES: Final = {
    "orientation": "landscape",
    "prefers-color-scheme": "light",
    "prefers-reduced-motion": "no-preference",
    "prefers-contrast": "no-preference",
    "hover": "hover",
    "any-hover": "hover",
    "pointer": "fine",
    "any-pointer": "fine",
    "scripting": "none",
    "display-mode": "browser",
}
_BOOLEAN_FEATURES: Final = frozenset({"color", "hover", "any-hover", "pointer", "any-pointer"})
_DIMENSIONS: Final = {"width": VIEWPORT_WIDTH_PX, "height": VIEWPORT_HEIGHT_PX}


def _feature_matches(tokens: list[Any]) -> bool:
    if len(tokens) == 1 and tokens[0].type == "ident":
        return tokens[0].lower_value in _BOOLEAN_FEATURES
    if len(tokens) >= 3 and tokens[1].type == "literal" and tokens[1].value == ":":
        name = tokens[0].lower_value if tokens[0].type == "ident" else ""
        return _plain_feature(name, tokens[2:])
    return _range_feature(tokens)


def _plain_feature(name: str, value: list[Any]) -> bool:
    prefix, _, base = name.partition("-") if name[:4] in ("min-", "max-") else ("", "", name)
    if base in _DIMENSIONS:
        length = _length(value[0]) if len(value) == 1 else None
        if length is None:
            return False
        actual = _DIMENSIONS[base]
        if prefix == "min":
            return actual >= length
        if prefix == "max":
            return actual <= length
        return actual == length
    expected = _FEATURE_VALUES.get(name)
    return expected is not None and len(value) == 1 and _keyword(value) == expected


def _range_feature(tokens: list[Any]) -> bool:
    """Level 4 ranges: `(width >= 600px)`, `(400px < width <= 1200px)`."""
    parts: list[Any] = []
    for token in tokens:
        if token.type == "literal" and token.value == "=" and parts and parts[-1] in ("<", ">"):
            parts[-1] += "="
        elif token.type == "literal" and token.value in ("<", ">", "="):
            parts.append(token.value)
        elif token.type == "ident" and token.lower_value in _DIMENSIONS:
            parts.append(_DIMENSIONS[token.lower_value])
        else:
            length = _length(token)
            if length is None:
                return False
            parts.append(("length", length))
    values = [p[1] if isinstance(p, tuple) else p for p in parts]
    if len(values) not in (3, 5):
        return False
    for left, operator, right in zip(values[0::2], values[1::2], values[2::2], strict=False):
        if not isinstance(left, float) or not isinstance(right, float):
            return False
        if not _compare(left, str(operator), right):
            return False
    return True


def _compare(left: float, operator: str, right: float) -> bool:
    return {
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
        "=": left == right,
    }.get(operator, False)


def _safe_media(media: str) -> bool:
    try:
        return media_matches(media)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return False
