"""Custom properties and `var()` in the properties that hide.

`:root{--quiet:none} .note{display:var(--quiet)}` hides as surely as
`display:none`. A declaration of a hiding property (`display`, `visibility`,
`opacity`, `font-size`/`font`, `content-visibility`, `transform`, `filter`,
`clip-path`) whose value holds `var()` is kept as a `VarRef` and read again,
element by element, once the references are substituted: a custom property
takes the value of the nearest element (itself or an ancestor) that declares
it, in a style attribute or in a rule that matches it, and the fallback of
`var(--name, fallback)` when none does; a reference with neither makes the
declaration invalid, which a browser treats as not set. Custom values may
refer to others, up to `_MAX_DEPTH` deep, and a substituted value longer
than `_MAX_CHARS` is invalid, so a chain of references cannot grow without
bound. Colours and lengths through `var()` stay unknown (docs/hidden-text.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

import tinycss2  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.textcache import TextCache

# The properties, prefixes removed, whose `var()` values are resolved.
VAR_PROPERTIES: Final = frozenset(
    {"display", "visibility", "opacity", "font-size", "font", "content-visibility"}
    | {"transform", "filter", "clip-path"}
)
_MAX_DEPTH: Final = 4
_MAX_CHARS: Final = 1_024
_REFERENCE: Final = re.compile(r"var\(\s*(--[^\s,()]+)", re.IGNORECASE)


class VarRef(NamedTuple):
    """A hiding property's value that holds `var()`: `prop` as declared (`font`,
    `-webkit-transform`) and the value's CSS text, resolved per element."""

    prop: str
    text: str


def holds_var(tokens: list[Any], depth: int = 0) -> bool:
    """Whether a value's tokens call `var()`, at the top or inside a function."""
    for token in tokens:
        if token.type == "function":
            if token.lower_name == "var":
                return True
            if depth < _MAX_DEPTH and holds_var(token.arguments, depth + 1):
                return True
    return False


def referenced_names(text: str) -> set[str]:
    """The custom properties a value's text refers to."""
    return set(_REFERENCE.findall(text))


@functools.lru_cache(maxsize=4_096)
def custom_declarations(block: str) -> tuple[tuple[str, str, bool], ...]:
    """The custom properties a block or style attribute declares: (name, value text,
    important), in order; names keep their case (CSS compares them as written)."""
    try:
        items = tinycss2.parse_declaration_list(block, skip_comments=True, skip_whitespace=True)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return ()
    return tuple(
        (item.name, tinycss2.serialize(item.value).strip(), bool(item.important))
        for item in items
        if item.type == "declaration" and item.name.startswith("--")
    )


Lookup = Callable[[str], tuple[str, Callable[[str], Any]] | None]


def substitute(text: str, lookup: Lookup, depth: int = 0) -> str | None:
    """`text` with each `var()` replaced by the value `lookup` finds (or the fallback);
    None when one has neither, or the result grows past `_MAX_CHARS`.

    `lookup(name)` returns the value's text and the lookup to resolve references
    inside it (those are resolved where the value was declared).
    """
    if depth > _MAX_DEPTH:
        return None
    try:
        tokens = _value_tokens(text)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return None
    out = _substituted(tokens, lookup, depth)
    if out is None or len(out) > _MAX_CHARS:
        return None
    return out


# A value's tokens, read once per text (a page's custom properties are used by many
# elements; the tokens are only read, never changed).
_value_tokens: Final = TextCache(
    lambda text: tuple(tinycss2.parse_component_value_list(text, skip_comments=True)),
    max_texts=4_096,
    max_chars=256 * 1024,
)


def _substituted(tokens: Sequence[Any], lookup: Lookup, depth: int) -> str | None:
    parts: list[str] = []
    for token in tokens:
        if token.type != "function":
            parts.append(tinycss2.serialize([token]))
            continue
        if token.lower_name != "var":
            inner = _substituted(token.arguments, lookup, depth)
            if inner is None:
                return None
            parts.append(f"{tinycss2.serialize_identifier(token.name)}({inner})")
            continue
        replacement = _reference(token.arguments, lookup, depth)
        if replacement is None:
            return None
        parts.append(replacement)
        if sum(len(part) for part in parts) > _MAX_CHARS:
            return None
    return "".join(parts)


def _reference(arguments: list[Any], lookup: Lookup, depth: int) -> str | None:
    """One `var(--name[, fallback])`, resolved."""
    meaningful = [t for t in arguments if t.type not in ("whitespace", "comment")]
    if not meaningful or meaningful[0].type != "ident" or not meaningful[0].value.startswith("--"):
        return None
    found = lookup(meaningful[0].value)
    if found is not None:
        value, inner_lookup = found
        return substitute(value, inner_lookup, depth + 1)
    comma = next(
        (i for i, t in enumerate(arguments) if t.type == "literal" and t.value == ","), None
    )
    if comma is None:
        return None  # neither a value nor a fallback: invalid at computed-value time
    return _substituted(arguments[comma + 1 :], lookup, depth + 1)
