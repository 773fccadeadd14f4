"""Could this CSS text hide anything? Cheap checks on text before tinycss2 reads it.

tinycss2 tokenises in pure Python, so a rule or style attribute is parsed
only when its compact text (lower case, comments and whitespace removed)
holds a hiding form (`display:none`, `opacity:0`, `left:-`, `translate`, an
escape, ...) or colours that could hide text. Every check here is an
over-approximation: text it rejects has no declaration that hides. No
regular expression reads CSS syntax; these are substring searches.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Final

import tinycss2.color3  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.colours import _INVISIBLE_ALPHA, _Rgba
from rypsok.core.fetch.css_visibility.properties import (
    _BLACK,
    _CACHED_BLOCK_TEXT,
    _CACHED_LONG_CHARS,
    _CACHED_LONG_TEXTS,
    _CACHED_RULES,
    _CACHED_TEXT,
    _WHITE,
    Background,
    _background,
    _close,
    _parse_colour,
    _tokens,
)
from rypsok.core.fetch.css_visibility.textcache import TextCache

_WHITESPACE: Final = str.maketrans("", "", " \t\n\r\f")


# -- rules and selectors ------------------------------------------------------------------

# Text forms (lower case, comments and whitespace removed) without which no
# declaration but a colour can hide; colours are looked at by `_colours_could_hide`.
_HIDING_FORMS: Final = (
    "display:none",
    "visibility:hidden",
    "visibility:collapse",
    "opacity:0",
    "opacity:.",
    "opacity:-",
    "font-size:0",
    "font-size:.",
    "font-size:1px",
    "opacity(",  # filter: opacity(0), also after other filter functions
    "content-visibility:hidden",
    "font:",
    "clip:rect",
    "clip-path:",
    "translate",
    "scale",
    "rotatex(",  # edge-on rotations (`rotateX(90deg)`)
    "rotatey(",
    "rotate3d(",
    "matrix(",  # a squashing or far-moving matrix (`matrix(0, 0, 0, 0, 0, 0)`)
    "text-indent:",
    "left:-",
    "top:-",
    "right:-",
    "inset:-",
    "margin:-",
    "left:calc(",  # offsets written through calc() (`calc`); margin-left, margin-top too
    "top:calc(",
    "right:calc(",
    "inset:calc(",
    "margin:calc(",
    "width:0",
    "width:.",
    "width:1px",
    "height:0",
    "height:.",
    "height:1px",
    "\\",  # an escape could spell any of them
    # A custom property in a hiding property (`variables`); inside functions, the
    # `translate`, `scale`, `opacity(` and `clip-path:` forms above already hold.
    "text-fill-color:",  # `-webkit-text-fill-color` (its colours are judged when parsed)
    "display:var(",
    "visibility:var(",
    "opacity:var(",
    "font-size:var(",
    "content-visibility:var(",
    "transform:var(",
    "filter:var(",
)
_VALUE_ENDS: Final = (";", "}", "!")


def could_hide(css: str, *, external: bool, inline: bool = False) -> bool:
    """Whether a rule's or a style attribute's text could hide (see `_could_hide`)."""
    if len(css) <= _CACHED_BLOCK_TEXT:
        return _cached_could_hide(css, external, inline)
    return _long_could_hide[external, inline](css)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _cached_could_hide(css: str, external: bool, inline: bool) -> bool:
    return _could_hide(css, external, inline)


def _could_hide(css: str, external: bool, inline: bool) -> bool:
    """Whether a rule's or a style attribute's text could hide (a pre-check before parsing).

    An over-approximation: text that fails it has no declaration that hides.
    A style attribute that sets any colour passes, because its colour is
    compared with the backgrounds of its ancestors.
    """
    return _compact_could_hide(_compact(css), external, inline)


# One cache per pair of flags (a `TextCache` is keyed by the text alone).
_long_could_hide: Final = {
    (external, inline): TextCache(
        functools.partial(_could_hide, external=external, inline=inline),
        max_texts=_CACHED_LONG_TEXTS,
        max_chars=_CACHED_LONG_CHARS,
    )
    for external in (False, True)
    for inline in (False, True)
}


def _compact_could_hide(compact: str, external: bool, inline: bool) -> bool:
    """`_could_hide` of a text already made compact."""
    for form in _HIDING_FORMS:  # a plain loop: this runs for every rule of every sheet
        if form in compact:
            return True
    if inline:
        return "color:" in compact or "background" in compact
    return _colours_could_hide(compact, external)


def _compact(css: str) -> str:
    """Lower case, `;` first, comments and whitespace removed (quotes keep comments)."""
    text = css.lower()
    if "/*" in text and '"' not in text and "'" not in text:
        parts: list[str] = []
        cursor = 0
        while (start := text.find("/*", cursor)) >= 0:
            parts.append(text[cursor:start])
            end = text.find("*/", start + 2)
            cursor = len(text) if end < 0 else end + 2
        parts.append(text[cursor:])
        text = "".join(parts)
    elif "/*" in text:
        return ";" + text.translate(_WHITESPACE) + ";display:none"  # cannot tell: parse it
    return ";" + text.translate(_WHITESPACE)


def _values(compact: str, prop: str) -> Iterator[str]:
    """The values given to `prop` in a compact block (a `color:` that is not `x-color:`)."""
    for lead in (";", "{"):
        marker = lead + prop
        position = compact.find(marker)
        while position >= 0:
            start = position + len(marker)
            end = min(
                (found for found in (compact.find(e, start) for e in _VALUE_ENDS) if found >= 0),
                default=len(compact),
            )
            yield compact[start:end]
            position = compact.find(marker, end)


def _colour_value(value: str) -> _Rgba | None:
    """A colour value's text, parsed."""
    return _cached_colour(value) if len(value) <= _CACHED_TEXT else _uncached_colour(value)


@functools.lru_cache(maxsize=4_096)
def _cached_colour(value: str) -> _Rgba | None:
    return _uncached_colour(value)


def _uncached_colour(value: str) -> _Rgba | None:
    try:
        return _parse_colour(value)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return None


def _background_value(value: str) -> Background:
    if len(value) <= _CACHED_TEXT:
        return _cached_background(value)
    return _uncached_background(value)


@functools.lru_cache(maxsize=4_096)
def _cached_background(value: str) -> Background:
    return _uncached_background(value)


def _uncached_background(value: str) -> Background:
    try:
        return _background(_tokens(tinycss2.parse_component_value_list(value)))
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return "unknown"


# Colour functions whose space-separated arguments (`rgb(0 0 0 / 0)`) the compact text
# runs together, so that a value holding one may not be read from it.
_COLOUR_FUNCTION_MARKS: Final = (
    *("rgb(", "rgba(", "hsl(", "hsla(", "hwb(", "lab(", "lch(", "oklab(", "oklch(", "color("),
)


def compact_unreadable(value: str) -> bool:
    """Whether a compact colour or background value that did not read as a colour may
    be one once its spaces are back (a colour function; not over an image)."""
    return (
        any(mark in value for mark in _COLOUR_FUNCTION_MARKS)
        and "url(" not in value
        and "gradient(" not in value
    )


def _colours_could_hide(compact: str, external: bool) -> bool:
    """Whether the block's colours could hide its text (see `_block_may_hide`); True
    when a colour cannot be read from the compact text (the parsed rule decides)."""
    colours: list[_Rgba] = []
    for value in _values(compact, "color:"):
        colour = _colour_value(value)
        if colour is None:
            if compact_unreadable(value):
                return True
            continue  # currentColor, var(): never judged
        if colour.alpha <= _INVISIBLE_ALPHA or (not external and _close(colour, _WHITE)):
            return True
        colours.append(colour)
    backgrounds: list[_Rgba] = []
    for prop in ("background:", "background-color:"):
        for value in _values(compact, prop):
            background = _background_value(value)
            if isinstance(background, _Rgba):
                if not external and _close(background, _BLACK):
                    return True
                backgrounds.append(background)
            elif background == "unknown" and compact_unreadable(value):
                return True
    return any(_close(c, b) for c in colours for b in backgrounds)
