"""Hidden text never reaches the caller: a small CSS visibility engine (REQ-CTX-005, REQ-SEC-003).

Text that a browser would not show is how prompt injection hides on a page.
`drop_hidden` removes from a parsed tree every element a desktop browser
would not render, as far as the page itself says so: the `hidden`
attribute, `aria-hidden="true"`, the `style` attribute, and the page's own
`<style>` sheets. External style sheets are never fetched (they would be a
second request the caller did not ask for); a page that links one is
treated as having unknown colours (see "Colour" below). `<style>` and
`<template>` elements are removed as well: neither is rendered.

Parsing. Style sheets and declarations are parsed by tinycss2, selectors by
cssselect (turned into XPath 1.0 that lxml compiles and evaluates in C). No
regular expression reads CSS syntax. tinycss2 tokenises in pure Python at
about 1 MB/s, several times slower than the whole extraction of a page, so a
sheet is first cut into its rules by a small splitter that only tracks
strings, comments, escapes and braces (`_split_rules`), and a rule is handed
to tinycss2 only when it could matter:

- in a first pass, when its text (lower case, comments and whitespace
  removed) contains a hiding form (`display:none`, `opacity:0`, `left:-`,
  `translate`, an escape, ...) or colours that could hide text, and its
  selector needs only classes and ids that some element carries;
- in a second pass, run only when the first hid something, when it sets a
  property that could re-show that (`display` for `display:none`, the
  inherited ones for hidden text) and its selector's subject is named like
  one of the hidden elements (their ancestors and descendants too, for
  inherited properties): `.d-none{display:none} .d-lg-block{display:block}`.

Inside a rule, only the declarations of the properties this module reads are
tokenised (a block without strings, escapes or comments is cut at its
semicolons first). Both passes are over-approximations: a rule they skip can
neither hide nor re-show an element the engine looks at, except that colour
contrast across two rules that each look harmless is not judged (see
"Colour").

Media. Rules inside `@media` apply when the query matches an assumed desktop
screen: media type `screen` or `all` (never `print` or `speech`), a
viewport of 1280 x 800 CSS pixels (`em`/`rem` as 16 px), landscape, light
colour scheme, a fine pointer that hovers. Unknown features do not match.
`@supports` blocks apply unless the condition starts with `not`; `@layer`
and `@container` blocks apply; `@keyframes`, `@font-face`, `@page` and
other at-rules are skipped. A `<style media=...>` attribute is evaluated the
same way. Rules nested inside rules (CSS nesting) and custom properties
(`var()`) are not resolved.

Cascade. For the elements a hiding rule matched (and only those, so the
cost stays small), each property is decided the way a browser does it:
`!important` first, then inline style over sheets, then specificity, then
the later rule. So `.a{display:none} .a.open{display:block}` keeps an
`<div class="a open">`. The root `html` and `body` are never removed (an
anti-flicker `body{opacity:0}` would otherwise empty the page).

What hides an element with everything inside it: `display:none`,
`opacity` at most 0.01, `clip:rect(...)` of zero width or height on an
absolutely positioned element, `clip-path: inset(50%)` or a zero
`circle()`/`ellipse()`, a `transform` that scales to zero or translates by
999 px or more, `left`/`top`/`right` at -999 px or less on a positioned
element, `margin-left`/`margin-top` at -999 px or less, a `text-indent` of
999 px or more either way, and a width or height of at most 1 px with
overflow hidden or clipped.

What hides text but lets a descendant show its own (inherited properties):
`visibility:hidden|collapse` (a descendant with `visibility:visible`
shows), a computed `font-size` of 0 (a descendant with an absolute size
shows; `em` and `%` of zero stay zero), and text whose colour matches its
background.

aria-hidden. `aria-hidden="true"` hides an element from assistive
technology, not from the eye, and pages use it for decoration and
duplicates, so its subtree is removed, with one exception: the "visually
hidden but accessible" pattern, where a visible rendering is aria-hidden
and its copy for screen readers, an adjacent sibling, is clipped, zero-sized
or off-screen (formula renderers, icon-and-label widgets). There the
rendering is kept and the copy removed, so the text appears once and as the
reader sees it. This lets no hidden text through: the rendering is kept only
as far as a browser shows it (every other rule here still applies to it), and
text a browser shows is read by the human too, so it is not hidden text in
the injection sense; the clipped copy, which no one sees, is always removed.

Colour. The element's own or inherited `color` is compared with the nearest
ancestor-or-self `background`/`background-color` that is opaque; named,
`#rgb`, `#rrggbb`(`aa`), `rgb()`, `rgba()`, `hsl()` colours are normalised by
tinycss2. Colours within 8/255 on every channel count as equal, and text with
alpha 0 (`color: transparent`) is hidden. A background image or a
translucent background makes the background unknown. Without any declared
colour a page is black on white, unless it links an external style sheet:
then an undeclared colour is unknown and nothing is judged against it.

Matching. A selector whose subject needs a class or id is tested on the
elements that carry it (an index built once per page); any other is
evaluated once over the whole tree, as XPath that starts from the subject.

Caches. What is read from CSS text alone is a pure function of that text
and is remembered per process in bounded LRU caches: a sheet's rules and
their pre-checks (16 sheets), parsed blocks, selector sketches and words,
compiled selectors with their XPath (8,192 texts each, texts longer than 1
KiB not kept; at most about 80 MiB in all, a fixed base). A site serves
the same sheets on every page, so its second page costs a fraction of its
first; nothing that depends on the document is cached, and the LIM-V
budgets are spent per page as if nothing were.
`clear_caches` forgets everything (the benchmark's first-visit figure).

Cancellation. The matching loops call `parse.check_cancelled` (per rule
matched, per 1,024 rules or candidates), so an abandoned extraction stops.

Bounds. Style sheet text read per page (LIM-V1), distinct style attribute
text parsed (LIM-V2), rules parsed (LIM-V3), elements matched by hiding and
re-showing rules (LIM-V4), and element visits (LIM-V5: elements visited by
an evaluation over the tree, elements tested one by one, elements whose
inherited state is computed). When a bound is hit, reading or matching
stops, what was found so far is still removed, and
`HiddenStats.sheets_truncated` is set so that the caller can say the check
was partial. Every loop over the tree is iterative, and the work is linear
in the document: LIM-V5 caps selector work at a fixed number of element
visits whatever the sheets hold. Measured figures: docs/hidden-text.md.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, NamedTuple, TypeAlias

import tinycss2  # type: ignore[import-untyped]
import tinycss2.color3  # type: ignore[import-untyped]
from cssselect import HTMLTranslator, SelectorError
from cssselect import parse as parse_selectors
from cssselect.parser import (
    Class,
    CombinedSelector,
    Hash,
    Matching,
    Negation,
    Relation,
    SpecificityAdjustment,
    Tree,
)
from cssselect.xpath import ExpressionError
from lxml import etree  # type: ignore[import-untyped]

from rypsok.core import limits
from rypsok.core.fetch.parse import CANCEL_CHECK_INTERVAL, Element, check_cancelled

__all__ = ["HiddenStats", "clear_caches", "drop_hidden"]

# Process-wide caches of pure functions of CSS text (see "Caches" above).
# Worst case kept: 16 sheets of LIM-V1 (1 MiB) with their rule texts, about 32 MiB, and
# six caches of 8,192 texts of at most 1 KiB, about 48 MiB: a fixed base (REQ-PERF-003).
_CACHED_SHEETS: Final = 16  # whole sheets
_CACHED_RULES: Final = 8_192  # rule texts, blocks, selector groups, style attributes
_CACHED_BLOCK_TEXT: Final = 1_024  # longer texts are rare and not kept


@dataclass(frozen=True, slots=True)
class HiddenStats:
    """What `drop_hidden` removed, and whether a bound cut the check short."""

    elements_removed: int  # elements removed, plus elements whose own text was cleared
    chars_removed: int  # text characters inside them, whitespace not counted
    sheets_truncated: bool  # a LIM-V bound was hit: some CSS was not read or matched


def drop_hidden(root: Element) -> HiddenStats:
    """Remove from `root`'s tree every element hidden by its attributes or the page's CSS.

    Mutates the tree: hidden elements are removed (their `.tail` text, which
    belongs to the parent, is kept), text hidden by an inherited property is
    cleared, and `<style>`/`<template>` elements are removed. Never raises on
    malformed CSS; raises `parse.ParseCancelled` when the extraction's cancel
    flag is set (checked per rule matched and per 1,024 rules or candidates).
    """
    engine = _Engine(root)
    engine.run()
    return HiddenStats(
        elements_removed=engine.elements_removed,
        chars_removed=engine.chars_removed,
        sheets_truncated=engine.budget.truncated,
    )


def clear_caches() -> None:
    """Forget what was read from CSS text so far (for a benchmark of a first visit)."""
    for cached in (
        _cached_split,
        _cached_could_hide,
        _cached_sketch,
        _cached_block,
        _cached_selectors,
        _selector_words,
        _cached_media_matches,
        _cached_colour,
        _cached_background,
    ):
        cached.cache_clear()


# -- values -------------------------------------------------------------------------------


class _Rgba(NamedTuple):
    red: float
    green: float
    blue: float
    alpha: float


_BLACK: Final = _Rgba(0.0, 0.0, 0.0, 1.0)
_WHITE: Final = _Rgba(1.0, 1.0, 1.0, 1.0)
_SAME_COLOUR: Final = 8 / 255  # per channel: closer than this is unreadable
_INVISIBLE_ALPHA: Final = 0.01
_OFF_SCREEN_PX: Final = 999.0
_ZERO_SIZE_PX: Final = 1.0
# The assumed desktop screen (docs/hidden-text.md).
VIEWPORT_WIDTH_PX: Final = 1280.0
VIEWPORT_HEIGHT_PX: Final = 800.0
_EM_PX: Final = 16.0
_ABSOLUTE_UNITS: Final = {
    "px": 1.0,
    "em": _EM_PX,
    "rem": _EM_PX,
    "pt": 4 / 3,
    "pc": 16.0,
    "in": 96.0,
    "cm": 96 / 2.54,
    "mm": 96 / 25.4,
    "q": 96 / 101.6,
    "vw": VIEWPORT_WIDTH_PX / 100,
    "vh": VIEWPORT_HEIGHT_PX / 100,
    "vmin": VIEWPORT_HEIGHT_PX / 100,
    "vmax": VIEWPORT_WIDTH_PX / 100,
}
_FONT_KEYWORDS: Final = frozenset(
    {"xx-small", "x-small", "small", "medium", "large", "x-large", "xx-large", "xxx-large"}
)
_INHERIT: Final = "inherit"
_UNKNOWN: Final = "unknown"
_TRANSPARENT: Final = "transparent"

FontSize: TypeAlias = Literal["zero", "absolute", "relative", "inherit"]
Colour: TypeAlias = _Rgba | Literal["inherit", "unknown"]
Background: TypeAlias = _Rgba | Literal["transparent", "unknown"]
Value: TypeAlias = str | float | bool | _Rgba | None

# Properties that never inherit and hide the whole element when they hide.
_NUMERIC: Final = frozenset(
    {"left", "top", "right", "margin-left", "margin-top", "text-indent"}
    | {"width", "height", "max-width", "max-height"}
)
_KEYWORDS: Final = frozenset({"display", "visibility", "position", "overflow-x", "overflow-y"})
_INHERITED: Final = frozenset({"visibility", "font-size", "color", "background"})


def _tokens(value: Sequence[Any]) -> list[Any]:
    return [token for token in value if token.type not in ("whitespace", "comment")]


def _length(token: Any) -> float | None:
    """A length in CSS pixels, or None when it is not one (percentages, calc())."""
    kind = token.type
    if kind == "number":
        return 0.0 if token.value == 0 else None
    if kind == "percentage":
        return 0.0 if token.value == 0 else None
    if kind == "dimension":
        scale = _ABSOLUTE_UNITS.get(token.lower_unit)
        return None if scale is None else float(token.value) * scale
    return None


def _keyword(tokens: list[Any]) -> str | None:
    if tokens and tokens[0].type == "ident":
        return str(tokens[0].lower_value)
    return None


def _font_size(tokens: list[Any]) -> FontSize:
    for token in tokens:
        if token.type == "literal" and token.value == "/":
            break  # the line height follows
        if token.type == "ident":
            word = token.lower_value
            if word in ("inherit", "unset"):
                return "inherit"
            if word in _FONT_KEYWORDS or word in ("initial", "revert"):
                return "absolute"
            if word in ("smaller", "larger"):
                return "relative"
            continue  # a style, weight or family name of the `font` shorthand
        if token.type in ("number", "percentage", "dimension"):
            if token.value == 0:
                return "zero"
            if token.type == "percentage" or token.lower_unit in ("em", "ex", "ch", "%"):
                return "relative"
            return "absolute"
        if token.type == "function":
            return "absolute"  # calc() and friends: assume a visible size
    return "inherit"


def _colour(tokens: list[Any]) -> Colour:
    if len(tokens) != 1:
        return "unknown"
    token = tokens[0]
    if token.type == "ident" and token.lower_value in ("inherit", "unset"):
        return "inherit"
    if token.type == "ident" and token.lower_value in ("initial", "revert"):
        return _BLACK
    parsed = _parse_colour(token)
    return "unknown" if parsed is None else parsed  # currentColor, var(), ...


def _parse_colour(token: Any) -> _Rgba | None:
    """A named, #hex, rgb(a)() or hsl(a)() colour, normalised by tinycss2."""
    parsed = tinycss2.color3.parse_color(token)
    if parsed is None or isinstance(parsed, str):
        return None
    red, green, blue, alpha = parsed
    return _Rgba(float(red), float(green), float(blue), float(alpha))


def _background(tokens: list[Any]) -> Background:
    """The background colour of `background`/`background-color`; unknown over an image."""
    colour: Background = "transparent"
    for token in tokens:
        if token.type == "url":
            return "unknown"
        if token.type == "function" and token.lower_name not in _COLOUR_FUNCTIONS:
            return "unknown"  # a gradient, image-set(), var(), ...
        if token.type == "ident" and token.lower_value in ("inherit", "unset", "currentcolor"):
            return "unknown"
        parsed = _parse_colour(token)
        if parsed is not None:
            colour = parsed
    if isinstance(colour, _Rgba):
        if colour.alpha <= _INVISIBLE_ALPHA:
            return "transparent"
        if colour.alpha < 1.0:
            return "unknown"  # what shows through is not known
    return colour


_COLOUR_FUNCTIONS: Final = frozenset({"rgb", "rgba", "hsl", "hsla"})


def _zero_clip(tokens: list[Any]) -> bool:
    """`clip: rect(top, right, bottom, left)` that leaves no area."""
    if len(tokens) != 1 or tokens[0].type != "function" or tokens[0].lower_name != "rect":
        return False
    sides = [_length(t) for t in _tokens(tokens[0].arguments) if t.type != "literal"]
    if len(sides) != 4 or any(side is None for side in sides):
        return False
    top, right, bottom, left = (float(side or 0.0) for side in sides)
    return right - left <= _ZERO_SIZE_PX or bottom - top <= _ZERO_SIZE_PX


def _zero_clip_path(tokens: list[Any]) -> bool:
    for token in tokens:
        if token.type != "function":
            continue
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        if token.lower_name == "inset" and arguments:
            first = arguments[0]
            return bool(first.type == "percentage" and first.value >= 50)
        if token.lower_name in ("circle", "ellipse") and arguments:
            first = arguments[0]
            return first.type in ("number", "percentage", "dimension") and first.value == 0
    return False


def _hiding_transform(tokens: list[Any]) -> bool:
    """A transform that scales to nothing or moves the element off the screen."""
    for token in tokens:
        if token.type != "function":
            continue
        name = token.lower_name
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        if name.startswith("scale") and any(
            t.type in ("number", "percentage") and t.value == 0 for t in arguments
        ):
            return True
        if name.startswith("translate"):
            for argument in arguments:
                moved = _length(argument)
                if moved is not None and abs(moved) >= _OFF_SCREEN_PX:
                    return True
    return False


def _declarations(name: str, tokens: list[Any]) -> Iterator[tuple[str, Value]]:
    """The (property, normalised value) pairs one declaration sets, shorthands expanded."""
    if name.startswith(("-webkit-", "-moz-", "-ms-")):
        name = name.split("-", 2)[2]  # browsers still honour these prefixes
    if name in _KEYWORDS:
        yield name, _keyword(tokens)
    elif name in _NUMERIC:
        yield name, _length(tokens[0]) if len(tokens) == 1 else None
    elif name == "opacity":
        yield name, _opacity(tokens)
    elif name == "overflow":
        words = [t.lower_value for t in tokens if t.type == "ident"] or [None]
        yield "overflow-x", words[0]
        yield "overflow-y", words[-1]
    elif name in ("font-size", "font"):
        yield "font-size", _font_size(tokens)
    elif name == "color":
        yield name, _colour(tokens)
    elif name in ("background", "background-color"):
        yield "background", _background(tokens)
    elif name == "clip":
        yield name, _zero_clip(tokens)
    elif name == "clip-path":
        yield name, _zero_clip_path(tokens)
    elif name == "transform":
        yield name, _hiding_transform(tokens)
    elif name in ("inset", "margin"):
        lengths = [_length(t) for t in tokens]
        if not lengths:
            return
        first = lengths[0]
        second = lengths[1] if len(lengths) > 1 else first
        fourth = lengths[3] if len(lengths) == 4 else second
        if name == "inset":
            yield "top", first
            yield "right", second
            yield "left", fourth
        else:
            yield "margin-top", first
            yield "margin-left", fourth


def _opacity(tokens: list[Any]) -> float | None:
    if len(tokens) != 1 or tokens[0].type not in ("number", "percentage"):
        return None
    value = float(tokens[0].value)
    return value / 100 if tokens[0].type == "percentage" else value


class _Declared(NamedTuple):
    """One normalised declaration and where it stands in the cascade."""

    important: bool
    prop: str
    value: Value
    position: int  # inside its block: a later declaration wins


# Every property `_declarations` reads; declarations of any other are never tokenised.
_PROPERTIES: Final = (
    _KEYWORDS
    | _NUMERIC
    | {"opacity", "overflow", "font-size", "font", "color", "background", "background-color"}
    | {"clip", "clip-path", "transform", "inset", "margin"}
    | {"-webkit-transform", "-moz-transform", "-ms-transform", "-webkit-clip-path"}
)
_HARD_BLOCK_MARKS: Final = ('"', "'", "\\", "/*", "{", "}")


def _parse_block(content: str) -> tuple[_Declared, ...]:
    """The declarations of interest in a block (see `_uncached_block`); may raise."""
    if len(content) <= _CACHED_BLOCK_TEXT:
        return _cached_block(content)
    return _uncached_block(content)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _cached_block(content: str) -> tuple[_Declared, ...]:
    return _uncached_block(content)


def _uncached_block(content: str) -> tuple[_Declared, ...]:
    """The declarations of interest in a block or style attribute, normalised.

    A block without strings, escapes, comments or nested blocks is cut at its
    semicolons first and only declarations of a property of interest are
    tokenised (most of a style sheet sets margins, fonts and borders); any
    other block is tokenised whole.
    """
    if any(mark in content for mark in _HARD_BLOCK_MARKS):
        return _parse_whole_block(content)
    found: list[_Declared] = []
    for piece in content.split(";"):
        if piece.count("(") != piece.count(")"):
            return _parse_whole_block(content)  # a `;` inside parentheses: not a boundary
        name, colon, _ = piece.partition(":")
        if not colon or name.strip().lower() not in _PROPERTIES:
            continue
        item = tinycss2.parse_one_declaration(piece, skip_comments=True)
        _add_declaration(item, found)
    return tuple(found)


def _parse_whole_block(content: str) -> tuple[_Declared, ...]:
    found: list[_Declared] = []
    for item in tinycss2.parse_declaration_list(content, skip_comments=True, skip_whitespace=True):
        _add_declaration(item, found)
    return tuple(found)


def _add_declaration(item: Any, found: list[_Declared]) -> None:
    if item.type != "declaration" or item.lower_name not in _PROPERTIES:
        return
    tokens = _tokens(item.value)
    if tokens:
        for prop, value in _declarations(item.lower_name, tokens):
            found.append(_Declared(bool(item.important), prop, value, len(found)))


def _hides_alone(prop: str, value: Value) -> bool:
    """Whether this one declaration can hide (the first-pass filter after parsing)."""
    if prop == "display":
        return value == "none"
    if prop == "visibility":
        return value in ("hidden", "collapse")
    if prop == "opacity":
        return isinstance(value, float) and value <= _INVISIBLE_ALPHA
    if prop == "font-size":
        return value == "zero"
    if prop in ("clip", "clip-path", "transform"):
        return value is True
    if prop in ("left", "top", "right", "margin-left", "margin-top"):
        return isinstance(value, float) and value <= -_OFF_SCREEN_PX
    if prop == "text-indent":
        return isinstance(value, float) and abs(value) >= _OFF_SCREEN_PX
    if prop in ("width", "height", "max-width", "max-height"):
        return isinstance(value, float) and value <= _ZERO_SIZE_PX
    if prop == "color":
        return isinstance(value, _Rgba) and value.alpha <= _INVISIBLE_ALPHA
    return False


def _block_may_hide(declarations: Sequence[_Declared], external: bool) -> bool:
    """Whether one rule or style attribute could hide: a hiding declaration, or colours.

    Colours are judged within the block: text on a background of its own
    colour, or (on a page whose colours are all known) white text or a black
    background, which the default black on white makes invisible elsewhere.
    """
    if any(_hides_alone(d.prop, d.value) for d in declarations):
        return True
    colour = background = None
    for declared in declarations:
        if declared.prop == "color" and isinstance(declared.value, _Rgba):
            colour = declared.value
        elif declared.prop == "background" and isinstance(declared.value, _Rgba):
            background = declared.value
    if colour is not None and background is not None:
        return _close(colour, background)
    if external:
        return False
    return (colour is not None and _close(colour, _WHITE)) or (
        background is not None and _close(background, _BLACK)
    )


# -- bounds -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Budget:
    """LIM-V1..V5: what one page may make the engine read and match."""

    # Read when a page is checked, not at import, so that a test may lower them.
    sheet_bytes: int = field(default_factory=lambda: limits.STYLE_SHEET_MAX_BYTES)
    attribute_bytes: int = field(default_factory=lambda: limits.STYLE_ATTRIBUTE_MAX_BYTES)
    rules: int = field(default_factory=lambda: limits.STYLE_RULES)
    matches: int = field(default_factory=lambda: limits.SELECTOR_MATCHES)
    visits: int = field(default_factory=lambda: limits.SELECTOR_VISITS)
    truncated: bool = False

    def take(self, name: str, amount: int) -> bool:
        """Spend `amount` of one budget; False (and truncated) when it is not there."""
        left: int = getattr(self, name)
        if amount > left:
            self.truncated = True
            setattr(self, name, 0)
            return False
        setattr(self, name, left - amount)
        return True


# -- splitting sheets into rules ----------------------------------------------------------

# The marks that matter to rule boundaries, inside a block and between statements.
_BLOCK_MARKS: Final = re.compile(r"""[{}"'\\]|/\*""")
_STATEMENT_MARKS: Final = re.compile(r"""[{};"'\\]|/\*""")
_BLOCK_AT_RULES: Final = frozenset({"media", "supports", "layer", "container", "scope"})
_WHITESPACE: Final = str.maketrans("", "", " \t\n\r\f")


@dataclass(slots=True)
class _Chunk:
    """The text of one qualified rule (prelude and block) whose media applies."""

    text: str
    brace: int  # where the block opens
    order: int
    may_hide: bool = True  # `could_hide` of its text (read once per sheet)
    sheet: _SheetRules | None = None  # the sheet it was cut from, and its place there
    index: int = 0
    parsed: bool = False
    _sketch: tuple[_Part, ...] | None = None

    def selector_text(self) -> str:
        return self.text[: self.brace]

    def block_text(self) -> str:
        block = self.text[self.brace + 1 :]
        return block[:-1] if block.endswith("}") else block

    def sketch(self) -> tuple[_Part, ...]:
        if self._sketch is None:
            self._sketch = _sketch(self.selector_text())
        return self._sketch


class _Part(NamedTuple):
    """What one selector of a group needs, read without parsing it (a pre-check only).

    Names inside parentheses, brackets, strings or escapes are left out, so
    the needs are never more than the real selector's.
    """

    classes: frozenset[str]  # anywhere in the selector
    ids: frozenset[str]
    subject: frozenset[str]  # classes and ids of its last compound ("\\" when escaped)
    tag: str | None  # the tag of its last compound


class _Keys(NamedTuple):
    """The names of the elements whose re-showing rules the second pass reads."""

    names: set[str]  # their classes and ids
    tags: set[str]
    bare_tags: set[str]  # tags for which a rule naming only the tag could win the cascade


_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_COMBINATORS: Final = frozenset(" \t\n\r\f>+~")


_SIMPLE_SEPARATORS: Final = str.maketrans({">": " ", "+": " ", "~": " ", "\t": " ", "\n": " "})
_NAME_MARKS: Final = str.maketrans({".": " .", "#": " #", ":": " :", "*": " "})


def _sketch(selectors: str) -> tuple[_Part, ...]:
    if len(selectors) <= _CACHED_BLOCK_TEXT:
        return _cached_sketch(selectors)
    return _uncached_sketch(selectors)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _cached_sketch(selectors: str) -> tuple[_Part, ...]:
    return _uncached_sketch(selectors)


def _uncached_sketch(selectors: str) -> tuple[_Part, ...]:
    if not any(mark in selectors for mark in _HARD_SELECTOR_MARKS):
        return _simple_sketch(selectors)
    return _full_sketch(selectors)


_HARD_SELECTOR_MARKS: Final = ("(", "[", "\\", '"', "'", "/*", "\r", "\f")


def _simple_sketch(selectors: str) -> tuple[_Part, ...]:
    """The sketch of selectors without brackets, strings or escapes, by splitting."""
    parts: list[_Part] = []
    for selector in selectors.split(","):
        compounds = selector.translate(_SIMPLE_SEPARATORS).split()
        classes: set[str] = set()
        ids: set[str] = set()
        subject: set[str] = set()
        tag: str | None = None
        for index, compound in enumerate(compounds):
            last = index == len(compounds) - 1
            for piece in compound.translate(_NAME_MARKS).split():
                if piece[0] == ".":
                    classes.add(piece[1:])
                elif piece[0] == "#":
                    ids.add(piece[1:])
                elif piece[0] == ":":
                    continue
                elif last:
                    tag = piece.lower()
                    continue
                else:
                    continue
                if last:
                    subject.add(piece[1:])
        parts.append(_Part(frozenset(classes), frozenset(ids), frozenset(subject), tag))
    return tuple(parts)


def _full_sketch(selectors: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    classes: set[str] = set()
    ids: set[str] = set()
    subject: set[str] = set()
    tag: str | None = None
    depth = 0
    quote = ""
    position, size = 0, len(selectors)
    while position < size:
        char = selectors[position]
        position += 1
        if quote:
            if char == "\\":
                position += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == "\\":
            position += 1
            subject.add("\\")  # an escaped name: unknown, never filtered out
        elif depth:
            continue
        elif char == ",":
            parts.append(_Part(frozenset(classes), frozenset(ids), frozenset(subject), tag))
            classes, ids, subject, tag = set(), set(), set(), None
        elif char in _COMBINATORS:
            subject, tag = set(), None
        elif char in ".#" or char in _NAME_CHARS or ord(char) > 127:
            start = position if char in ".#" else position - 1
            while position < size and (
                selectors[position] in _NAME_CHARS or ord(selectors[position]) > 127
            ):
                position += 1
            if position < size and selectors[position] == "\\":
                subject.add("\\")
                continue
            name = selectors[start:position]
            if char == ".":
                classes.add(name)
                subject.add(name)
            elif char == "#":
                ids.add(name)
                subject.add(name)
            else:
                tag = name.lower()
    parts.append(_Part(frozenset(classes), frozenset(ids), frozenset(subject), tag))
    return tuple(parts)


class _Scanner:
    """Finds the next token that matters to rule boundaries, in one C-speed search.

    The two searches look for literal marks only (a brace, a quote, a comment
    opening, a backslash, a semicolon); what follows a mark is read by the
    methods below, never by a regular expression.
    """

    __slots__ = ("css", "size")

    def __init__(self, css: str) -> None:
        self.css = css
        self.size = len(css)

    def special(self, start: int, marks: re.Pattern[str] = _STATEMENT_MARKS) -> int:
        """The position of the first of `marks` (default: all) at or after `start`."""
        found = marks.search(self.css, start)
        return self.size if found is None else found.start()

    def skip(self, position: int) -> int:
        """Past the string, comment or escape starting at `position`."""
        css = self.css
        char = css[position]
        if char == "\\":
            return position + 2
        if char == "/":
            end = css.find("*/", position + 2)
            return self.size if end < 0 else end + 2
        return self._after_string(position, char)

    def _after_string(self, position: int, quote: str) -> int:
        css = self.css
        cursor = position + 1
        while cursor < self.size:
            end = css.find(quote, cursor)
            if end < 0:
                end = self.size
            newline = css.find("\n", cursor, end)
            if newline >= 0:
                return newline  # an unescaped newline ends a bad string
            escape = css.find("\\", cursor, end)
            if escape < 0:
                return end + 1
            cursor = escape + 2
        return self.size

    def block_end(self, opening: int) -> int:
        """The index of the `}` closing the block opened at `opening` (EOF closes it)."""
        depth = 1
        cursor = opening + 1
        while True:
            position = self.special(cursor, _BLOCK_MARKS)
            if position >= self.size:
                return self.size
            char = self.css[position]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return position
            else:
                cursor = self.skip(position)
                continue
            cursor = position + 1


def _statement_start(prelude: str) -> str:
    """The prelude without leading whitespace and comments."""
    text = prelude.lstrip()
    while text.startswith("/*"):
        end = text.find("*/", 2)
        text = "" if end < 0 else text[end + 2 :].lstrip()
    return text


def _at_rule_name(head: str) -> tuple[str, str]:
    """`@media screen {` -> ("media", " screen ")."""
    end = 1
    while end < len(head) and (head[end].isalnum() or head[end] in "-_"):
        end += 1
    return head[1:end].lower(), head[end:]


def _split_rules(css: str, first_order: int, external: bool = False) -> list[_Chunk]:
    """The qualified rules of a sheet whose enclosing at-rules apply, in order.

    The chunks are fresh (they carry page state); what is read from their text
    alone comes from the sheet's `_SheetRules`, remembered per sheet text.
    """
    sheet = _cached_split(css)
    hiding = sheet.hiding(external)
    return [
        _Chunk(text, brace, first_order + index, hiding[index], sheet, index)
        for index, (text, brace) in enumerate(sheet.rules)
    ]


class _SheetRules:
    """A sheet's rules and the pre-checks read from their text, computed once per sheet.

    A site serves the same sheets on every page, so a process that fetches
    several of its pages reads each rule once: whether its text could hide
    (`could_hide`, per value of `external`) and its block in lower case (the
    second pass's pre-check looks for property spellings there).

    The rule texts are lowered and stripped of whitespace together, in C-speed
    string operations on the joined sheet. When the sheet is ASCII without the
    rare whitespace `str.split` removes beyond CSS's own, the stripped text of
    a rule without comments is exactly `_compact`'s, and the check runs on it
    directly; any other rule goes through `could_hide` as it is.
    """

    __slots__ = ("_hiding", "_lowered_blocks", "rules")

    def __init__(self, css: str) -> None:
        self.rules: Final = _uncached_split(css)
        self._hiding: dict[bool, tuple[bool, ...]] = {}
        self._lowered_blocks: list[str] | None = None

    def hiding(self, external: bool) -> tuple[bool, ...]:
        known = self._hiding.get(external)
        if known is None:
            known = self._could_hide_each(external)
            self._hiding[external] = known  # two threads may both compute it: same value
        return known

    def _could_hide_each(self, external: bool) -> tuple[bool, ...]:
        lowered = _RULE_SEPARATOR.join(text for text, _ in self.rules).lower()
        plain = lowered.isascii() and not any(space in lowered for space in _SPLIT_ONLY_SPACES)
        stripped = "".join(lowered.split()).split(_RULE_SEPARATOR)
        if len(stripped) != len(self.rules):  # no rules, or (never from lxml) a NUL in one
            return tuple(could_hide(text, external=external) for text, _ in self.rules)
        flags = [False] * len(self.rules)
        for index, text in enumerate(stripped):
            if plain and "/*" not in text:
                flags[index] = _compact_could_hide(";" + text, external, inline=False)
            else:
                flags[index] = could_hide(self.rules[index][0], external=external)
        return tuple(flags)

    def spells(self, index: int, spellings: re.Pattern[str]) -> bool:
        """Whether rule `index`'s block (lower case) holds one of `spellings`."""
        if self._lowered_blocks is None:
            joined = _RULE_SEPARATOR.join(text[brace:] for text, brace in self.rules)
            self._lowered_blocks = joined.lower().split(_RULE_SEPARATOR)
        return spellings.search(self._lowered_blocks[index]) is not None


# Never in a sheet: the parser removes C0 controls other than whitespace.
_RULE_SEPARATOR: Final = "\x00"
# ASCII characters `str.split` takes for whitespace and CSS (and `_compact`) does not.
_SPLIT_ONLY_SPACES: Final = ("\x0b", "\x1c", "\x1d", "\x1e", "\x1f")


@functools.lru_cache(maxsize=_CACHED_SHEETS)
def _cached_split(css: str) -> _SheetRules:
    return _SheetRules(css)


def _uncached_split(css: str) -> tuple[tuple[str, int], ...]:
    """(text, where its block opens) of each qualified rule whose at-rules apply."""
    scanner = _Scanner(css)
    chunks: list[tuple[str, int]] = []
    applies: list[bool] = [True]  # one entry per open at-rule block
    start = cursor = 0
    while True:
        position = scanner.special(cursor)
        if position >= scanner.size:
            break
        char = css[position]
        if char in "\"'/\\":
            cursor = scanner.skip(position)
            continue
        if char == ";":
            if _statement_start(css[start:position]).startswith("@"):
                start = position + 1  # a statement at-rule such as @import ends here
            cursor = position + 1
            continue
        if char == "}":
            if len(applies) > 1:
                applies.pop()
            start = cursor = position + 1
            continue
        head = _statement_start(css[start:position])
        if head.startswith("@"):
            name, condition = _at_rule_name(head)
            if name in _BLOCK_AT_RULES:
                applies.append(applies[-1] and _condition_applies(name, condition))
                start = cursor = position + 1
                continue
            end = scanner.block_end(position)  # @keyframes, @font-face, @page, ...
        else:
            end = scanner.block_end(position)
            if applies[-1]:
                chunks.append((css[start : end + 1], position - start))
        start = cursor = end + 1
    return tuple(chunks)


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


# Pages repeat a few media queries and colours many times; only short texts are
# cached, so the caches stay small whatever the pages hold.
_CACHED_TEXT: Final = 200


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
    "font:",
    "clip:rect",
    "clip-path:",
    "translate",
    "scale",
    "text-indent:",
    "left:-",
    "top:-",
    "right:-",
    "inset:-",
    "margin:-",
    "width:0",
    "width:.",
    "width:1px",
    "height:0",
    "height:.",
    "height:1px",
    "\\",  # an escape could spell any of them
)
_VALUE_ENDS: Final = (";", "}", "!")


def could_hide(css: str, *, external: bool, inline: bool = False) -> bool:
    """Whether a rule's or a style attribute's text could hide (see `_could_hide`)."""
    if len(css) <= _CACHED_BLOCK_TEXT:
        return _cached_could_hide(css, external, inline)
    return _could_hide(css, external, inline)


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


def _colours_could_hide(compact: str, external: bool) -> bool:
    """Whether the block's colours could hide its text (see `_block_may_hide`)."""
    colours: list[_Rgba] = []
    for value in _values(compact, "color:"):
        colour = _colour_value(value)
        if colour is None:
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
    return any(_close(c, b) for c in colours for b in backgrounds)


@dataclass(slots=True, eq=False)
class _Selector:
    """One selector, compiled (when first needed) to XPath that starts from its subject.

    cssselect composes `A B` as `//A/descendant::B`, which libxml2 evaluates by
    walking the subtree of every A again; starting from the subject instead
    (`B[ancestor::A]`) visits each element once, so one evaluation over the
    tree is linear in it (times the depth for an ancestor step).
    """

    tree: Tree
    specificity: tuple[int, int, int]
    classes: frozenset[str]  # classes and ids every match must carry (for a cheap pre-check)
    ids: frozenset[str]
    key: tuple[str, str] | None  # ("class", name) or ("id", name) of the subject
    tag: str | None  # the subject's tag, if it names one
    # For a selector of one compound of tag, classes and ids only: what an element needs,
    # checked without XPath. None for any other selector.
    plain: tuple[str | None, frozenset[str], str | None] | None = None
    _compiled: dict[str, Any] = field(default_factory=dict)

    def _xpath(self, axis: str) -> Any:
        compiled = self._compiled.get(axis)
        if compiled is None:
            compiled = self._compiled[axis] = etree.XPath(axis + _from_subject(self.tree))
        return compiled

    def over_tree(self, root: Element) -> list[Element]:
        """Every match in the document (raises etree.XPathError or ExpressionError)."""
        return list(self._xpath("descendant-or-self::")(root))

    def on(self, element: Element) -> bool:
        """Whether `element` matches (raises etree.XPathError or ExpressionError)."""
        plain = self.plain
        if plain is None:
            return bool(self._xpath("self::")(element))
        tag, classes, identifier = plain
        if tag is not None and element.tag != tag:
            return False
        if identifier is not None and (element.get("id") or "").strip() != identifier:
            return False
        return not classes or classes.issubset((element.get("class") or "").split())


@dataclass(slots=True, eq=False)
class _Rule:
    chunk: _Chunk
    declarations: tuple[_Declared, ...]
    order: int
    _selectors: list[tuple[_Selector, ...]] = field(default_factory=list)

    def selectors(self) -> tuple[_Selector, ...]:
        if not self._selectors:
            text = self.chunk.selector_text()
            try:
                if "/*" in text:
                    text = tinycss2.serialize(
                        tinycss2.parse_component_value_list(text, skip_comments=True)
                    )
                self._selectors.append(_compile_selectors(text))
            except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
                self._selectors.append(())
        return self._selectors[0]


_TRANSLATOR: Final = HTMLTranslator()


def _required_names(tree: Tree) -> tuple[set[str], set[str]]:
    """Classes and ids a selector requires positively (not under :not, :is, :has)."""
    classes: set[str] = set()
    ids: set[str] = set()
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, CombinedSelector):
            stack.extend((node.selector, node.subselector))
            continue
        if isinstance(node, Class):
            classes.add(node.class_name)
        elif isinstance(node, Hash):
            ids.add(node.id)
        inner = getattr(node, "selector", None)
        if inner is not None and not isinstance(node, (Negation, Matching, Relation)):
            stack.append(inner)
        elif isinstance(node, (Negation, Relation, Matching, SpecificityAdjustment)):
            stack.append(node.selector)
    return classes, ids


def _compile_selectors(text: str) -> tuple[_Selector, ...]:
    if len(text) <= _CACHED_BLOCK_TEXT:
        return _cached_selectors(text)
    return _uncached_selectors(text)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _cached_selectors(text: str) -> tuple[_Selector, ...]:
    """Compiled once per process: cssselect's parse and translation are pure Python and
    cost more than matching; a `_Selector` keeps its compiled XPath and no page state."""
    return _uncached_selectors(text)


def _uncached_selectors(text: str) -> tuple[_Selector, ...]:
    try:
        parsed = parse_selectors(text)
    except (SelectorError, ValueError, TypeError, IndexError, AttributeError, RecursionError):
        return ()  # an invalid selector invalidates the whole rule, as in a browser
    compiled: list[_Selector] = []
    for selector in parsed:
        if selector.pseudo_element is not None:
            continue  # ::before, ::placeholder: not the element's own text
        tree = selector.parsed_tree
        plain = _plain(tree)
        if plain is None:
            try:  # translate now: a pseudo-class cssselect lacks drops the selector here
                etree.XPath("self::" + _from_subject(tree))
            except (ExpressionError, SelectorError, etree.XPathError, ValueError, RecursionError):
                continue  # a pseudo-class that never matches a static page (:focus-within, ...)
        classes, ids = _required_names(tree)
        compiled.append(
            _Selector(
                tree,
                selector.specificity(),
                frozenset(classes),
                frozenset(ids),
                _subject_key(tree),
                _subject_tag(tree),
                plain,
            )
        )
    return tuple(compiled)


_AXES: Final = {
    " ": "ancestor::",
    ">": "parent::",
    "~": "preceding-sibling::",
    "+": "preceding-sibling::*[1]/self::",
}


def _from_subject(tree: Tree) -> str:
    """XPath steps for `tree` read from its subject: `A > B` becomes `B[parent::A]`."""
    steps: list[tuple[str, str]] = []  # (compound, axis to the compound on its left)
    node = tree
    while isinstance(node, CombinedSelector):
        axis = _AXES.get(node.combinator)
        if axis is None:
            raise ExpressionError(f"unknown combinator {node.combinator!r}")
        steps.append((_compound(node.subselector), axis))
        node = node.selector
    expression = _compound(node)
    for compound, axis in reversed(steps):
        expression = f"{compound}[{axis}{expression}]"
    return expression


def _compound(tree: Tree) -> str:
    xpath = _TRANSLATOR.xpath(tree)
    if xpath.path:
        raise ExpressionError("a compound selector that is not one step")
    return f"{xpath.element}[{xpath.condition}]" if xpath.condition else str(xpath.element)


def _plain(tree: Tree) -> tuple[str | None, frozenset[str], str | None] | None:
    """(tag, classes, id) of a compound made of nothing else; None otherwise."""
    classes: set[str] = set()
    identifier: str | None = None
    node: Any = tree
    while isinstance(node, (Class, Hash)):
        if isinstance(node, Class):
            classes.add(node.class_name)
        elif identifier is None:
            identifier = node.id
        else:
            return None  # two ids
        node = node.selector
    if type(node).__name__ != "Element" or node.namespace is not None:
        return None
    tag = None if node.element in (None, "*") else str(node.element).lower()
    return tag, frozenset(classes), identifier


def _subject_tag(tree: Tree) -> str | None:
    node: Any = tree.subselector if isinstance(tree, CombinedSelector) else tree
    while getattr(node, "selector", None) is not None:
        node = node.selector
    element = getattr(node, "element", None)
    return None if element in (None, "*") else str(element).lower()


def _subject_key(tree: Tree) -> tuple[str, str] | None:
    """An id or class the subject must carry, to test only the elements that do."""
    node: Any = tree.subselector if isinstance(tree, CombinedSelector) else tree
    found: tuple[str, str] | None = None
    while node is not None:
        if isinstance(node, Hash):
            return ("id", node.id)
        if isinstance(node, Class) and found is None:
            found = ("class", node.class_name)
        node = getattr(node, "selector", None)
    return found


def _parse_chunk(chunk: _Chunk) -> _Rule | None:
    """The rule's declarations (tinycss2); its selectors are compiled when first matched."""
    chunk.parsed = True
    try:
        declarations = _parse_block(chunk.block_text())
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return None
    if not declarations:
        return None
    return _Rule(chunk, declarations, chunk.order)


# -- the engine ---------------------------------------------------------------------------

_NEVER_HIDDEN: Final = frozenset({"html", "body", "head"})
_UNRENDERED: Final = ("style", "template")
_CANDIDATE_ATTRIBUTES: Final = etree.XPath("//*[@hidden or @aria-hidden or @style]")
_EXTERNAL_SHEET: Final = etree.XPath(
    "//link[@href and contains(concat(' ', normalize-space("
    "translate(@rel, 'STYLEHET', 'stylehet')), ' '), ' stylesheet ')]"
)
_ELEMENT_COUNT: Final = etree.XPath("count(//*)")
_ELEMENT_TEST_VISITS: Final = 4  # measured: XPath on one element from Python vs. in a tree walk
_NAMED: Final = etree.XPath("//*[@class or @id]")

# The properties that decide each hiding property: a rule declaring none of
# the group of a hiding declaration found on the page cannot re-show it.
_GROUPS: Final = {
    "display": ("display",),
    "visibility": ("visibility",),
    "opacity": ("opacity",),
    "font-size": ("font-size",),
    "color": ("color", "background"),
    "background": ("color", "background"),
    "clip": ("clip", "position"),
    "clip-path": ("clip-path",),
    "transform": ("transform",),
    "left": ("left", "top", "right", "position"),
    "top": ("left", "top", "right", "position"),
    "right": ("left", "top", "right", "position"),
    "margin-left": ("margin-left", "margin-top"),
    "margin-top": ("margin-left", "margin-top"),
    "text-indent": ("text-indent",),
    **dict.fromkeys(
        ("width", "height", "max-width", "max-height"),
        ("width", "height", "max-width", "max-height", "overflow-x", "overflow-y"),
    ),
}
# How each property is spelled in a rule's text (the second-pass pre-check).
_SPELLINGS: Final = {
    "display": ("display",),
    "visibility": ("visibility",),
    "opacity": ("opacity",),
    "font-size": ("font",),
    "color": ("color",),
    "background": ("background",),
    "clip": ("clip",),
    "clip-path": ("clip-path",),
    "transform": ("transform",),
    "position": ("position",),
    "left": ("left", "inset"),
    "top": ("top", "inset"),
    "right": ("right", "inset"),
    "margin-left": ("margin",),
    "margin-top": ("margin",),
    "text-indent": ("text-indent",),
    "width": ("width",),
    "height": ("height",),
    "max-width": ("max-width",),
    "max-height": ("max-height",),
    "overflow-x": ("overflow",),
    "overflow-y": ("overflow",),
}

_Specificity: TypeAlias = tuple[int, int, int]
_Entry: TypeAlias = tuple[_Rule, _Specificity]
_Rank: TypeAlias = tuple[bool, bool, _Specificity, int, int]


class _State(NamedTuple):
    """Inherited visibility at one element."""

    invisible: bool  # visibility hidden or collapse
    zero_font: bool
    colour: _Rgba | None  # None: unknown
    background: _Rgba | None  # None: unknown

    def hides_text(self) -> bool:
        if self.invisible or self.zero_font:
            return True
        colour = self.colour
        if colour is None:
            return False
        if colour.alpha <= _INVISIBLE_ALPHA:
            return True
        background = self.background
        return background is not None and _close(colour, background)


def _close(first: _Rgba, second: _Rgba) -> bool:
    return (
        abs(first.red - second.red) <= _SAME_COLOUR
        and abs(first.green - second.green) <= _SAME_COLOUR
        and abs(first.blue - second.blue) <= _SAME_COLOUR
    )


@dataclass(slots=True)
class _Engine:
    root: Element
    budget: _Budget = field(default_factory=_Budget)
    elements_removed: int = 0
    chars_removed: int = 0
    external: bool = False  # the page links a style sheet we do not read
    chunks: list[_Chunk] = field(default_factory=list)
    # Rules matched per element, the style attributes parsed, the cascaded values.
    entries: dict[Element, list[_Entry]] = field(default_factory=dict)
    inline: dict[Element, tuple[_Declared, ...]] = field(default_factory=dict)
    parsed_styles: dict[str, tuple[_Declared, ...]] = field(default_factory=dict)
    values: dict[Element, dict[str, Value]] = field(default_factory=dict)
    candidates: dict[Element, None] = field(default_factory=dict)  # an ordered set
    element_count: int = 0
    interest_tags: tuple[set[Element], dict[str, list[Element]]] | None = None
    # Inherited state at an element and the root of the hidden text it lies in.
    states: dict[Element, tuple[_State, Element | None]] = field(default_factory=dict)
    # The elements carrying each class and each id (built once, when first needed).
    present: tuple[dict[str, list[Element]], dict[str, list[Element]]] | None = None

    def run(self) -> None:
        self.external = bool(_EXTERNAL_SHEET(self.root))
        self._read_sheets()
        self._find_attribute_candidates()
        hiding, others = self._first_pass_rules()
        for rule in hiding:
            self._match(rule, interest=None)
        if not self.candidates:
            return
        removed, regions = self._decide()
        if self._second_pass(others, removed, regions):
            self.values.clear()  # new rules matched: decide again with the full cascade
            self.states.clear()
            removed, regions = self._decide()
        for element in removed:
            self._remove(element)
        for region in regions:
            self._clear_region(*region)

    # -- reading ---------------------------------------------------------------------------

    def _read_sheets(self) -> None:
        """Split the applicable `<style>` sheets into rules; remove style and template."""
        sheets: list[str] = []
        unrendered = list(self.root.iter(*_UNRENDERED))
        for element in unrendered:
            if element.tag == "style" and not _inside(element, "template"):
                media = element.get("media")
                if media is None or _safe_media(media):
                    sheets.append(element.text or "")
        for element in unrendered:
            if not _inside(element, "template"):
                _remove_keeping_tail(element)
        if any("@import" in css.lower() for css in sheets):
            self.external = True  # an imported sheet is not fetched either: colours unknown
        for css in sheets:
            encoded = css.encode("utf-8", "surrogatepass")
            left = self.budget.sheet_bytes
            if not self.budget.take("sheet_bytes", len(encoded)):
                # LIM-V1: read the part that fits; a rule cut in two is dropped.
                part = encoded[:left].decode("utf-8", "ignore")
                self.chunks.extend(_split_rules(part, len(self.chunks), self.external)[:-1])
                return
            self.chunks.extend(_split_rules(css, len(self.chunks), self.external))

    def _find_attribute_candidates(self) -> None:
        for element in _CANDIDATE_ATTRIBUTES(self.root):
            if element.tag in _NEVER_HIDDEN:
                continue
            if element.get("hidden") is not None or _aria_hidden(element):
                self.candidates[element] = None
                continue
            style = element.get("style") or ""
            if not could_hide(style, external=self.external, inline=True):
                continue
            declared = self._inline(element)
            if _block_may_hide(declared, self.external) or any(
                isinstance(d.value, _Rgba) for d in declared
            ):
                self.candidates[element] = None  # a colour: compared with the ancestors

    def _inline(self, element: Element) -> tuple[_Declared, ...]:
        """The element's style attribute, parsed once per distinct text (LIM-V2)."""
        known = self.inline.get(element)
        if known is not None:
            return known
        style = element.get("style") or ""
        declared = self.parsed_styles.get(style)
        if declared is None:
            declared = ()
            if style and self.budget.take("attribute_bytes", len(style)):
                declared = _parse_style(style)
            self.parsed_styles[style] = declared
        self.inline[element] = declared
        return declared

    def _first_pass_rules(self) -> tuple[list[_Rule], list[_Rule]]:
        """Parse the rules whose text could hide; split them into hiding and the others."""
        hiding: list[_Rule] = []
        others: list[_Rule] = []
        for index, chunk in enumerate(self.chunks):
            if not index % CANCEL_CHECK_INTERVAL:
                check_cancelled()
            if not chunk.may_hide or not self._may_apply(chunk):
                continue
            if not self.budget.take("rules", 1):  # LIM-V3
                break
            rule = _parse_chunk(chunk)
            if rule is not None:
                (hiding if _block_may_hide(rule.declarations, self.external) else others).append(
                    rule
                )
        return hiding, others

    def _may_apply(self, chunk: _Chunk, keys: _Keys | None = None) -> bool:
        """Whether some selector of the rule could match (and, given `keys`, match one of
        the elements they name), judged from its text without parsing it."""
        classes, ids = self.present or self._present()
        for part in chunk.sketch():
            if not (part.classes <= classes.keys() and part.ids <= ids.keys()):
                continue
            if keys is None or "\\" in part.subject:
                return True
            if not part.subject <= keys.names:
                continue
            if part.tag is not None and part.tag not in keys.tags:
                continue
            if part.tag is not None and not part.subject and part.tag not in keys.bare_tags:
                continue  # `div{display:block}` cannot beat a class rule
            return True
        return False

    def _present(self) -> tuple[dict[str, list[Element]], dict[str, list[Element]]]:
        """The elements carrying each class and each id of the document."""
        if self.present is None:
            by_class: dict[str, list[Element]] = {}
            by_id: dict[str, list[Element]] = {}
            for element in _NAMED(self.root):
                get = element.get
                if classes := get("class"):
                    for name in classes.split():
                        if (carriers := by_class.get(name)) is None:
                            by_class[name] = [element]
                        else:
                            carriers.append(element)
                if identifier := get("id"):
                    by_id.setdefault(identifier.strip(), []).append(element)
            self.present = (by_class, by_id)
        return self.present

    # -- matching --------------------------------------------------------------------------

    def _match(self, rule: _Rule, interest: set[Element] | None) -> None:
        """Evaluate each selector of `rule` once; record the matches.

        With `interest` None the rule hides and every match becomes a
        candidate; otherwise only matches inside `interest` are recorded.
        """
        check_cancelled()  # once per rule: an abandoned extraction stops here (REQ-PAGE-008)
        for selector in rule.selectors():
            for element in self._matches(selector, interest):
                if interest is not None and element not in interest:
                    continue
                if not self.budget.take("matches", 1):  # LIM-V4
                    return
                self.entries.setdefault(element, []).append((rule, selector.specificity))
                if interest is None and element.tag not in _NEVER_HIDDEN:
                    self.candidates[element] = None

    def _matches(self, selector: _Selector, interest: set[Element] | None) -> list[Element]:
        """The selector's matches, within `interest` when given.

        A selector whose subject needs a class or id is tested on the elements
        that carry it, one restricted to `interest` on those elements of it;
        any other is evaluated once over the whole tree.
        """
        classes, ids = self.present or self._present()
        if not (selector.classes <= classes.keys() and selector.ids <= ids.keys()):
            return []
        carriers: list[Element] | None = None
        if selector.key is not None:
            kind, name = selector.key
            carriers = (ids if kind == "id" else classes).get(name, [])
            if interest is not None:
                carriers = [element for element in carriers if element in interest]
        elif interest is not None:
            carriers = self._interest_by_tag(interest).get(selector.tag or "*", [])
        try:
            if carriers is not None:
                # A test through XPath from Python costs about as much as four elements
                # visited by one evaluation over the tree; a plain selector's, one.
                weight = 1 if selector.plain is not None else _ELEMENT_TEST_VISITS
                if not self.budget.take("visits", weight * len(carriers)):  # LIM-V5
                    return []
                return [element for element in carriers if selector.on(element)]
            if not self.element_count:
                self.element_count = max(1, int(_ELEMENT_COUNT(self.root)))
            if not self.budget.take("visits", self.element_count):  # LIM-V5
                return []
            return selector.over_tree(self.root)
        except (etree.XPathError, ExpressionError, SelectorError, ValueError, RecursionError):
            return []

    def _interest_by_tag(self, interest: set[Element]) -> dict[str, list[Element]]:
        """`interest` by tag, and all of it under "*" (built once per second pass)."""
        if self.interest_tags is None or self.interest_tags[0] is not interest:
            index: dict[str, list[Element]] = {"*": list(interest)}
            for element in interest:
                index.setdefault(str(element.tag), []).append(element)
            self.interest_tags = (interest, index)
        return self.interest_tags[1]

    def _second_pass(
        self,
        others: list[_Rule],
        removed: list[Element],
        regions: list[tuple[Element, _State]],
    ) -> bool:
        """Read and match the rules that could re-show what the first pass hid.

        Only the elements found hidden matter, and only the properties that
        hid them: a `display:none` is undone by `display`, inherited hiding
        by visibility, font size or colour on the element, its ancestors or
        inside it. True when some rule was matched.
        """
        in_play: set[str] = set()
        interest: set[Element] = set()
        bare: set[Element] = set()  # elements a rule naming only their tag could re-show
        for element in removed:
            for prop, value in self._cascade(element).items():
                if _hides_alone(prop, value):
                    in_play.update(_GROUPS.get(prop, ()))
                    interest.add(element)
            if self._hidden_by_tag_rules_only(element):
                bare.add(element)
        for root, _ in regions:
            in_play.update(_INHERITED)
            related = {root, *root.iterancestors()}
            related.update(e for e in root.iterdescendants() if isinstance(e.tag, str))
            interest.update(related)
            bare.update(related)
        for element in self.candidates:
            if element not in interest and self._sets_colour(element):
                # Its own colour is judged against its ancestors' backgrounds: read their rules.
                in_play.add("background")
                related = {element, *element.iterancestors()}
                interest.update(related)
                bare.update(related)
        if not in_play:
            return False  # only attributes hide: nothing in CSS re-shows them
        keys = _Keys(
            _names_of(interest), {str(e.tag) for e in interest}, {str(e.tag) for e in bare}
        )
        spellings = _spelling_pattern(
            frozenset(spelling for prop in in_play for spelling in _SPELLINGS[prop])
        )
        rules = [
            rule
            for rule in others
            if any(d.prop in in_play for d in rule.declarations)
            and self._may_apply(rule.chunk, keys)
        ]
        for index, chunk in enumerate(self.chunks):
            if not index % CANCEL_CHECK_INTERVAL:
                check_cancelled()
            if chunk.parsed or not _spells_any(chunk, spellings):
                continue
            if _names_none_of(chunk, keys) or not self._may_apply(chunk, keys):
                continue
            if not self.budget.take("rules", 1):  # LIM-V3
                break
            rule = _parse_chunk(chunk)
            if rule is not None and any(d.prop in in_play for d in rule.declarations):
                rules.append(rule)
        for rule in rules:
            self._match(rule, interest)
        return bool(rules)

    def _hidden_by_tag_rules_only(self, element: Element) -> bool:
        """Whether every rule that matched the element names no class or id (nor an inline
        style hides it), so that a rule naming only a tag may win over them."""
        entries = self.entries.get(element, ())
        return (
            bool(entries)
            and element.get("style") is None
            and all(specificity[0] == 0 and specificity[1] == 0 for _, specificity in entries)
        )

    def _sets_colour(self, element: Element) -> bool:
        return any(
            d.prop in ("color", "background") and isinstance(d.value, _Rgba)
            for d in self._declared(element)
        )

    # -- the cascade -----------------------------------------------------------------------

    def _declared(self, element: Element) -> list[_Declared]:
        """Every declaration that applies to `element`, in cascade order (the last wins)."""
        ranked: list[tuple[_Rank, _Declared]] = []
        for rule, specificity in self.entries.get(element, ()):
            for declared in rule.declarations:
                rank = (declared.important, False, specificity, rule.order, declared.position)
                ranked.append((rank, declared))
        if element.get("style") is not None:
            for declared in self._inline(element):
                rank = (declared.important, True, (0, 0, 0), 0, declared.position)
                ranked.append((rank, declared))
        ranked.sort(key=lambda pair: pair[0])
        return [declared for _, declared in ranked]

    def _cascade(self, element: Element) -> dict[str, Value]:
        """The winning value of each property declared for `element` (after matching)."""
        known = self.values.get(element)
        if known is None:
            known = {declared.prop: declared.value for declared in self._declared(element)}
            self.values[element] = known
        return known

    # -- deciding --------------------------------------------------------------------------

    def _decide(self) -> tuple[list[Element], list[tuple[Element, _State]]]:
        """Candidates removed whole, and the roots of text hidden by inheritance."""
        removed: dict[Element, None] = {}
        regions: dict[Element, _State] = {}
        for index, element in enumerate(self.candidates):
            if not index % CANCEL_CHECK_INTERVAL:
                check_cancelled()
            if element.tag in _NEVER_HIDDEN or element in removed or element in regions:
                continue
            if self._hidden_whole(element):
                removed[element] = None
                continue
            root, state = self._region_root(element)
            if root is not None:
                regions[root] = state
        outermost = [e for e in removed if not any(a in removed for a in e.iterancestors())]
        kept = [
            (root, state)
            for root, state in regions.items()
            if not any(a in removed or a in regions for a in root.iterancestors())
        ]
        return outermost, kept

    def _hidden_whole(self, element: Element) -> bool:
        if element.get("hidden") is not None:
            return True
        if _aria_hidden(element) and not self._beside_its_accessible_copy(element):
            return True
        return _hides_subtree(self._cascade(element))

    def _beside_its_accessible_copy(self, element: Element) -> bool:
        """Whether the aria-hidden `element` is the visible rendering of a sibling that
        is its copy for assistive technology, visually clipped (see "aria-hidden" above).

        Only the two adjacent element siblings are looked at, so each element is
        tested at most twice and the check stays linear in the document.
        """
        for sibling in (element.getprevious(), element.getnext()):
            if sibling is None or not isinstance(sibling.tag, str):
                continue
            if sibling.get("hidden") is not None or _aria_hidden(sibling):
                continue
            if _visually_clipped(self._cascade(sibling)) and _holds_text(sibling):
                return True
        return False

    def _region_root(self, element: Element) -> tuple[Element | None, _State]:
        """The topmost ancestor-or-self whose own text inherited values hide, and its state.

        States and roots are remembered per element, so many candidates under
        one ancestor cost one walk down from the root, not one each.
        """
        path: list[Element] = []
        node: Element | None = element
        while node is not None and node not in self.states:
            path.append(node)
            node = node.getparent()
        if node is None:
            parent_state, parent_root = self._page_state(), None
        else:
            parent_state, parent_root = self.states[node]
        for ancestor in reversed(path):
            state = self._inherit(ancestor, parent_state)
            root = parent_root
            if root is None and state.hides_text() and ancestor.tag not in _NEVER_HIDDEN:
                root = ancestor
            self.states[ancestor] = (state, root)
            parent_state, parent_root = state, root
        state, root = self.states[element]
        return root, (self.states[root][0] if root is not None else state)

    def _page_state(self) -> _State:
        """Black on white, or unknown colours when an external sheet may set them."""
        return _State(
            invisible=False,
            zero_font=False,
            colour=None if self.external else _BLACK,
            background=None if self.external else _WHITE,
        )

    def _inherit(self, element: Element, parent: _State) -> _State:
        """The state at `element`, given its parent's.

        Each element with declarations costs a visit (LIM-V5); past the bound
        an element inherits its parent's state unchanged, which can only hide
        more, never show hidden text.
        """
        if element not in self.entries and element.get("style") is None:
            return parent
        if not self.budget.take("visits", 1):
            return parent
        values = self._cascade(element)
        exempt = element.tag in _NEVER_HIDDEN
        invisible, zero_font, colour, background = parent
        visibility = values.get("visibility")
        if visibility in ("hidden", "collapse"):
            invisible = not exempt
        elif visibility == "visible":
            invisible = False
        font = values.get("font-size")
        if font == "zero":
            zero_font = not exempt
        elif font == "absolute":
            zero_font = False
        declared_colour = values.get("color", _INHERIT)
        if isinstance(declared_colour, _Rgba):
            colour = declared_colour
        elif declared_colour == _UNKNOWN:
            colour = None
        declared_background = values.get("background", _TRANSPARENT)
        if isinstance(declared_background, _Rgba):
            background = declared_background
        elif declared_background == _UNKNOWN:
            background = None
        return _State(invisible, zero_font, colour, background)

    # -- changing the tree -----------------------------------------------------------------

    def _clear_region(self, root: Element, state: _State) -> None:
        """Clear the text hidden under `root`; keep what descendants re-show."""
        if root.getparent() is None:
            return
        stack: list[tuple[Element, _State]] = [(root, state)]
        cleared = shown = False
        while stack:
            element, here = stack.pop()
            if element is not root:
                here = self._inherit(element, here)
            if here.hides_text():
                cleared = self._clear_own_text(element) or cleared
            elif _has_own_text(element):
                shown = True
            stack.extend((child, here) for child in element if isinstance(child.tag, str))
        if not shown:
            self._remove(root)  # nothing of it shows: drop the empty shell too
        elif cleared:
            self.elements_removed += 1

    def _clear_own_text(self, element: Element) -> bool:
        """Clear the element's text and its children's tails (text in its own flow)."""
        cleared = False
        if element.text:
            self.chars_removed += _chars(element.text)
            element.text = None
            cleared = True
        for child in element:
            if child.tail:
                self.chars_removed += _chars(child.tail)
                child.tail = None
                cleared = True
        return cleared

    def _remove(self, element: Element) -> None:
        if element.getparent() is None:
            return
        self.elements_removed += 1
        self.chars_removed += sum(_chars(text) for text in element.itertext())
        _remove_keeping_tail(element)


def _chars(text: str) -> int:
    """Characters of text that would show, whitespace aside."""
    return len("".join(text.split()))


def _parse_style(style: str) -> tuple[_Declared, ...]:
    try:
        return _parse_block(style)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return ()


def _names_of(elements: Iterable[Element]) -> set[str]:
    """The ids and classes of `elements`: the names a selector's subject may use."""
    keys: set[str] = set()
    for element in elements:
        identifier = element.get("id")
        if identifier:
            keys.add(identifier.strip())
        classes = element.get("class")
        if classes:
            keys.update(classes.split())
    return keys


_WORD_SEPARATORS: Final = str.maketrans(dict.fromkeys(".#>+~,()=|^$!\"' \t\n\r\f", " "))


def _names_none_of(chunk: _Chunk, keys: _Keys) -> bool:
    """True when no selector of the rule can have its subject among `keys`, judged by
    splitting the selector text into words (cheaper than the sketch, and looser)."""
    words = _selector_words(chunk.selector_text())
    if words is None:
        return False  # a subject may have no name at all: leave it to the sketch
    names, lowered = words
    return keys.names.isdisjoint(names) and keys.tags.isdisjoint(lowered)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _selector_words(selector: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The words of a selector group and their lower case; None when a subject may
    have no name (`*`, an attribute, a pseudo-class, an escape)."""
    if any(mark in selector for mark in ("*", "[", ":", "\\")):
        return None
    words = frozenset(selector.translate(_WORD_SEPARATORS).split())
    return words, frozenset(word.lower() for word in words)


def _spells_any(chunk: _Chunk, spellings: re.Pattern[str]) -> bool:
    """Whether the rule's block names one of the properties in play."""
    return chunk.sheet is None or chunk.sheet.spells(chunk.index, spellings)


@functools.lru_cache(maxsize=64)
def _spelling_pattern(spellings: frozenset[str]) -> re.Pattern[str]:
    """One search for any of `spellings` (plain words: no escaping is needed, but done)."""
    return re.compile("|".join(re.escape(spelling) for spelling in sorted(spellings)))


def _hides_subtree(values: dict[str, Value]) -> bool:
    """Whether the cascaded non-inherited values hide the element and all inside it."""
    if values.get("display") == "none":
        return True
    opacity = values.get("opacity")
    if isinstance(opacity, float) and opacity <= _INVISIBLE_ALPHA:
        return True
    position = values.get("position")
    if values.get("clip") is True and position in ("absolute", "fixed"):
        return True
    if values.get("clip-path") is True or values.get("transform") is True:
        return True
    if position in ("absolute", "fixed", "relative", "sticky") and any(
        _far_negative(values.get(side)) for side in ("left", "top", "right")
    ):
        return True
    if _far_negative(values.get("margin-left")) or _far_negative(values.get("margin-top")):
        return True
    indent = values.get("text-indent")
    if isinstance(indent, float) and abs(indent) >= _OFF_SCREEN_PX:
        return True
    if {values.get("overflow-x"), values.get("overflow-y")} & {"hidden", "clip"}:
        for prop in ("width", "height", "max-width", "max-height"):
            size = values.get(prop)
            if isinstance(size, float) and size <= _ZERO_SIZE_PX:
                return True
    return False


def _visually_clipped(values: dict[str, Value]) -> bool:
    """Hidden from the eye but not from a screen reader: clipped, zero-sized or
    off-screen, not `display:none` or transparent (which hide it from both)."""
    if values.get("display") == "none":
        return False
    opacity = values.get("opacity")
    if isinstance(opacity, float) and opacity <= _INVISIBLE_ALPHA:
        return False
    return _hides_subtree(values)


def _holds_text(element: Element) -> bool:
    return any(not text.isspace() for text in element.itertext())


def _far_negative(value: Value) -> bool:
    return isinstance(value, float) and value <= -_OFF_SCREEN_PX


def _aria_hidden(element: Element) -> bool:
    return (element.get("aria-hidden") or "").strip().lower() == "true"


def _inside(element: Element, tag: str) -> bool:
    return any(ancestor.tag == tag for ancestor in element.iterancestors())


def _safe_media(media: str) -> bool:
    try:
        return media_matches(media)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return False


def _has_own_text(element: Element) -> bool:
    if element.text and element.text.strip():
        return True
    return any(child.tail and child.tail.strip() for child in element)


def _remove_keeping_tail(element: Element) -> None:
    """Remove `element` with its subtree; its tail text belongs to the parent and stays."""
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
