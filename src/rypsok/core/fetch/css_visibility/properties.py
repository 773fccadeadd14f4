"""The hiding properties: CSS values read into what this package judges (REQ-CTX-005).

A declaration of interest (display, visibility, opacity, font size, colour and
background, clip and clip-path, transform, offsets, margins, text indent,
sizes and overflow) is tokenised by tinycss2 and normalised to a `Value`
(`_declarations`); everything else is never tokenised. This module also says
which values hide: alone (`_hides_alone`, the first pass's filter), for a
whole subtree once cascaded (`_hides_subtree`, `_visually_clipped`), or for
text through inheritance (`_State`). It knows no sheet, selector or tree.
The thresholds and the assumed 1280 x 800 screen are documented in
docs/hidden-text.md.

Names with a leading underscore are shared inside the package only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any, Final, Literal, NamedTuple, TypeAlias

import tinycss2  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.calc import calc_length
from rypsok.core.fetch.css_visibility.colours import _INVISIBLE_ALPHA, _Rgba, parse_colour
from rypsok.core.fetch.css_visibility.textcache import TextCache
from rypsok.core.fetch.css_visibility.variables import VAR_PROPERTIES, VarRef, holds_var

# Process-wide caches of pure functions of CSS text (package docstring, "Caches").
# Worst case kept: 16 Mi characters of sheets with their rules (about 5 bytes of memory
# per character, measured on the corpus: some 80 MiB); six caches of 8,192 texts of at
# most 1 KiB; and the caches bounded in characters (`textcache`): a fixed base
# (REQ-PERF-003). 512 sheets: a service reads many sites in turn and each site's pages
# share its sheets; the characters, not the count, bound the memory.
_CACHED_SHEETS: Final = 512
_CACHED_SHEET_CHARS: Final = 16 * 1024 * 1024  # and at most this much sheet text in all
_CACHED_RULES: Final = 8_192  # rule texts, blocks, selector groups, style attributes
_CACHED_BLOCK_TEXT: Final = 1_024  # longer texts go to the caches bounded in characters
_CACHED_LONG_TEXTS: Final = 1_024
_CACHED_LONG_CHARS: Final = 512 * 1024
_CACHED_SELECTOR_CHARS: Final = 256 * 1024  # selector groups (matching)
_CACHED_XPATH_CHARS: Final = 256 * 1024  # compiled XPath expressions (matching)


# -- values -------------------------------------------------------------------------------


_BLACK: Final = _Rgba(0.0, 0.0, 0.0, 1.0)
_WHITE: Final = _Rgba(1.0, 1.0, 1.0, 1.0)
_SAME_COLOUR: Final = 8 / 255  # per channel: closer than this is unreadable
_OFF_SCREEN_PX: Final = 999.0
_ZERO_SIZE_PX: Final = 1.0
# Text this small is unreadable (`font-size: 1px`, `0.5pt`): read as a zero size.
_UNREADABLE_FONT_PX: Final = 1.0
# A transform scaled this far down leaves nothing to read (`scale(0.001)`).
_UNREADABLE_SCALE: Final = 0.01
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
Value: TypeAlias = str | float | bool | _Rgba | VarRef | None

# Properties that never inherit and hide the whole element when they hide.
_NUMERIC: Final = frozenset(
    {"left", "top", "right", "margin-left", "margin-top", "text-indent"}
    | {"width", "height", "max-width", "max-height"}
)
_KEYWORDS: Final = frozenset(
    {"display", "visibility", "position", "overflow-x", "overflow-y", "content-visibility"}
)
_INHERITED: Final = frozenset(
    {"visibility", "font-size", "color", "background", "text-fill", "background-clip"}
)


def _tokens(value: Sequence[Any]) -> list[Any]:
    return [token for token in value if token.type not in ("whitespace", "comment")]


def _length(token: Any) -> float | None:
    """A length in CSS pixels, or None when it is not one (a percentage, an unknown
    unit, a `calc()` that needs the layout: `calc`)."""
    kind = token.type
    if kind == "number":
        return 0.0 if token.value == 0 else None
    if kind == "percentage":
        return 0.0 if token.value == 0 else None
    if kind == "dimension":
        return _dimension_px(token)
    if kind == "function" and token.lower_name == "calc":
        return calc_length(token, _dimension_px)
    return None


def _dimension_px(token: Any) -> float | None:
    scale = _ABSOLUTE_UNITS.get(token.lower_unit)
    return None if scale is None else float(token.value) * scale


def _keyword(tokens: list[Any]) -> str | None:
    if tokens and tokens[0].type == "ident":
        return str(tokens[0].lower_value)
    return None


def _font_size(tokens: list[Any], shorthand: bool) -> FontSize:
    """The size class of `font-size` or of the `font` shorthand's size."""
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
        if token.type == "number":
            if token.value == 0:
                return "zero"
            if shorthand:
                continue  # a weight (`font: 600 14px a`): the size comes later
            return "absolute"  # `font-size: 12`, read as pixels in quirks mode
        if token.type in ("percentage", "dimension"):
            return _size_class(token)
        if token.type == "function":
            return "absolute"  # calc() and friends: assume a visible size
    return "inherit"


def _size_class(token: Any) -> FontSize:
    """A percentage or dimension font size; an absolute one too small to read is zero.

    A relative size is never judged small: descendants compound it (MathJax
    sets `font-size: 5%` on a box and `2000%` on what is inside).
    """
    if token.value == 0:
        return "zero"
    if token.type == "percentage" or token.lower_unit in ("em", "ex", "ch"):
        return "relative"
    scale = _ABSOLUTE_UNITS.get(token.lower_unit)
    if scale is not None and 0 < float(token.value) * scale <= _UNREADABLE_FONT_PX:
        return "zero"
    return "absolute"


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
    """A colour of any CSS level in sRGB (`colours`), or None when not known."""
    return parse_colour(token)


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
        elif token.type == "function":
            return "unknown"  # a colour in a space not converted here, or not valid
    if isinstance(colour, _Rgba):
        if colour.alpha <= _INVISIBLE_ALPHA:
            return "transparent"
        if colour.alpha < 1.0:
            return "unknown"  # what shows through is not known
    return colour


_COLOUR_FUNCTIONS: Final = frozenset(
    {"rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color"}
)


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
        if token.lower_name == "polygon":
            return _degenerate_polygon(token.arguments)
    return False


def _degenerate_polygon(arguments: list[Any]) -> bool:
    """A polygon whose points all share one x or one y encloses nothing."""
    points: list[tuple[Any, Any]] = []
    for point in _split_on_commas(arguments):
        lengths = [t for t in point if t.type in ("number", "percentage", "dimension")]
        if len(lengths) != 2 or len(point) != 2:
            return False  # a fill rule, calc(), var(): not judged
        points.append((_coordinate(lengths[0]), _coordinate(lengths[1])))
    if len(points) < 1 or any(None in point for point in points):
        return False
    return len({x for x, _ in points}) == 1 or len({y for _, y in points}) == 1


def _split_on_commas(arguments: list[Any]) -> list[list[Any]]:
    pieces: list[list[Any]] = [[]]
    for token in _tokens(arguments):
        if token.type == "literal" and token.value == ",":
            pieces.append([])
        else:
            pieces[-1].append(token)
    return pieces


def _coordinate(token: Any) -> tuple[str, float] | None:
    """A polygon coordinate, comparable with another of the same kind."""
    if token.type == "percentage":
        return ("%", float(token.value)) if token.value != 0 else ("px", 0.0)
    length = _length(token)
    return None if length is None else ("px", length)


def _unreadable_scale(token: Any) -> bool:
    if token.type == "number":
        return abs(float(token.value)) <= _UNREADABLE_SCALE
    if token.type == "percentage":
        return abs(float(token.value)) <= _UNREADABLE_SCALE * 100
    return False


def _hiding_filter(tokens: list[Any]) -> bool:
    """`filter: opacity(0)`: as transparent as `opacity: 0`."""
    for token in tokens:
        if token.type == "function" and token.lower_name == "opacity":
            arguments = _tokens(token.arguments)
            if len(arguments) == 1 and arguments[0].type in ("number", "percentage"):
                value = float(arguments[0].value)
                if arguments[0].type == "percentage":
                    value /= 100
                if value <= _INVISIBLE_ALPHA:
                    return True
    return False


def _hiding_transform(tokens: list[Any]) -> bool:
    """A transform that scales to nothing or moves the element off the screen."""
    for token in tokens:
        if token.type != "function":
            continue
        name = token.lower_name
        arguments = [t for t in _tokens(token.arguments) if t.type != "literal"]
        if name.startswith("scale") and any(_unreadable_scale(t) for t in arguments):
            return True
        if name.startswith("translate"):
            for argument in arguments:
                moved = _length(argument)
                if moved is not None and abs(moved) >= _OFF_SCREEN_PX:
                    return True
        if name in ("rotatex", "rotatey", "rotate3d") and _edge_on(name, arguments):
            return True
        if name == "matrix" and _hiding_matrix(arguments):
            return True
    return False


def _hiding_matrix(arguments: list[Any]) -> bool:
    """`matrix(a, b, c, d, e, f)` that squashes the box along some direction to 0.01 or
    less (its smaller singular value, as `scale()` per axis), or moves it 999 px or more."""
    if len(arguments) != 6 or any(t.type != "number" for t in arguments):
        return False
    a, b, c, d, e, f = (float(t.value) for t in arguments)
    if abs(e) >= _OFF_SCREEN_PX or abs(f) >= _OFF_SCREEN_PX:
        return True
    # The singular values of [[a, c], [b, d]]: s^2 = (t +- sqrt(t^2 - 4 det^2)) / 2.
    total = a * a + b * b + c * c + d * d
    determinant = a * d - b * c
    smaller_squared = (total - math.sqrt(max(0.0, total * total - 4 * determinant**2))) / 2
    return smaller_squared <= _UNREADABLE_SCALE**2


def _edge_on(name: str, arguments: list[Any]) -> bool:
    """A rotation that turns the element's face away from the screen: `rotateX(90deg)`.

    Without perspective the rotated box is flattened onto the screen, its area
    multiplied by the z component of its turned normal: cos(a) for `rotateX`
    and `rotateY`, cos(a) + z^2 (1 - cos(a)) about a unit axis (x, y, z) for
    `rotate3d`. At 0.01 or less nothing is left to read, as with `scale()`.
    """
    if name == "rotate3d":
        if len(arguments) != 4 or any(t.type != "number" for t in arguments[:3]):
            return False
        x, y, z = (float(t.value) for t in arguments[:3])
        norm = math.sqrt(x * x + y * y + z * z)
        if norm == 0:
            return False
        turn = _angle_radians(arguments[3])
        if turn is None:
            return False
        z_axis = z / norm
        return abs(math.cos(turn) + z_axis * z_axis * (1 - math.cos(turn))) <= _UNREADABLE_SCALE
    if len(arguments) != 1:
        return False
    turn = _angle_radians(arguments[0])
    return turn is not None and abs(math.cos(turn)) <= _UNREADABLE_SCALE


_ANGLE_UNITS: Final = {"deg": math.pi / 180, "rad": 1.0, "grad": math.pi / 200, "turn": 2 * math.pi}


def _angle_radians(token: Any) -> float | None:
    if token.type == "number" and token.value == 0:
        return 0.0
    if token.type != "dimension":
        return None
    scale = _ANGLE_UNITS.get(token.lower_unit)
    return None if scale is None else float(token.value) * scale


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
        yield "font-size", _font_size(tokens, shorthand=name == "font")
    elif name == "color":
        yield name, _colour(tokens)
    elif name == "text-fill-color":  # `-webkit-text-fill-color` paints over `color`
        yield "text-fill", _colour(tokens)
    elif name == "background-clip":  # gradient text: the background paints the glyphs
        yield name, any(t.type == "ident" and t.lower_value == "text" for t in tokens)
    elif name in ("background", "background-color"):
        yield "background", _background(tokens)
    elif name == "clip":
        yield name, _zero_clip(tokens)
    elif name == "clip-path":
        yield name, _zero_clip_path(tokens)
    elif name == "transform":
        yield name, _hiding_transform(tokens)
    elif name == "filter":
        yield name, _hiding_filter(tokens)
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
    | {"clip", "clip-path", "transform", "inset", "margin", "filter"}
    | {"-webkit-transform", "-moz-transform", "-ms-transform", "-webkit-clip-path"}
    | {"-webkit-filter"}
    | {"-webkit-text-fill-color", "background-clip", "-webkit-background-clip"}
)
_HARD_BLOCK_MARKS: Final = ('"', "'", "\\", "/*", "{", "}")


def _parse_block(content: str) -> tuple[_Declared, ...]:
    """The declarations of interest in a block (see `_uncached_block`); may raise."""
    if len(content) <= _CACHED_BLOCK_TEXT:
        return _cached_block(content)
    return _long_block(content)


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
        declaration = piece.strip(_CSS_WHITESPACE)
        cached = len(declaration) <= _CACHED_TEXT
        parsed = _piece_declarations(declaration) if cached else _declare(declaration)
        for important, prop, value in parsed:
            found.append(_Declared(important, prop, value, len(found)))
    return tuple(found)


_long_block: Final = TextCache(
    _uncached_block, max_texts=_CACHED_LONG_TEXTS, max_chars=_CACHED_LONG_CHARS
)


# CSS's own whitespace: what tinycss2 skips around a declaration (str.strip() would
# also take characters such as U+00A0, which CSS reads as part of a name).
_CSS_WHITESPACE: Final = " \t\n\r\f"


@functools.lru_cache(maxsize=_CACHED_RULES)
def _piece_declarations(piece: str) -> tuple[tuple[bool, str, Value], ...]:
    """`_declare`, cached: a sheet repeats the same declaration across its rules (half
    the declarations tokenised on the development corpus are repeats within a page)."""
    return _declare(piece)


def _declare_piece(piece: str) -> tuple[tuple[bool, str, Value], ...]:
    """`_declare`, through the cache when the text is short."""
    return _piece_declarations(piece) if len(piece) <= _CACHED_TEXT else _declare(piece)


def _declare(piece: str) -> tuple[tuple[bool, str, Value], ...]:
    """One `prop: value` of a simple block, normalised: (important, prop, value) of each
    declaration it sets."""
    found: list[_Declared] = []
    _add_declaration(tinycss2.parse_one_declaration(piece, skip_comments=True), found)
    return tuple((declared.important, declared.prop, declared.value) for declared in found)


def _parse_whole_block(content: str) -> tuple[_Declared, ...]:
    found: list[_Declared] = []
    for item in tinycss2.parse_declaration_list(content, skip_comments=True, skip_whitespace=True):
        _add_declaration(item, found)
    return tuple(found)


def _add_declaration(item: Any, found: list[_Declared]) -> None:
    if item.type != "declaration" or item.lower_name not in _PROPERTIES:
        return
    tokens = _tokens(item.value)
    if not tokens:
        return
    if _unprefixed(item.lower_name) in VAR_PROPERTIES and holds_var(tokens):
        # Resolved per element once custom properties are known (`variables`).
        reference = VarRef(item.lower_name, tinycss2.serialize(item.value).strip())
        found.append(
            _Declared(bool(item.important), _unprefixed(item.lower_name), reference, len(found))
        )
        return
    try:
        pairs = tuple(_declarations(item.lower_name, tokens))
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        # One declaration this reader cannot follow drops only itself, as a browser
        # drops an invalid one: raising would drop the whole rule, and with it a
        # `display: none` beside it (a weight in `font: 600 14px a` once did).
        return
    for prop, value in pairs:
        found.append(_Declared(bool(item.important), prop, value, len(found)))


def _unprefixed(name: str) -> str:
    return name.split("-", 2)[2] if name.startswith(("-webkit-", "-moz-", "-ms-")) else name


def _hides_alone(prop: str, value: Value) -> bool:
    """Whether this one declaration can hide (the first-pass filter after parsing)."""
    if isinstance(value, VarRef):
        return True  # may, once its references are resolved
    if prop == "display":
        return value == "none"
    if prop == "visibility":
        return value in ("hidden", "collapse")
    if prop == "opacity":
        return isinstance(value, float) and value <= _INVISIBLE_ALPHA
    if prop == "font-size":
        return value == "zero"
    if prop in ("clip", "clip-path", "transform", "filter"):
        return value is True
    if prop == "content-visibility":
        return value == "hidden"
    if prop in ("left", "top", "right", "margin-left", "margin-top"):
        return isinstance(value, float) and value <= -_OFF_SCREEN_PX
    if prop == "text-indent":
        return isinstance(value, float) and abs(value) >= _OFF_SCREEN_PX
    if prop in ("width", "height", "max-width", "max-height"):
        return isinstance(value, float) and value <= _ZERO_SIZE_PX
    if prop in ("color", "text-fill"):
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
        if declared.prop in ("color", "text-fill") and isinstance(declared.value, _Rgba):
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


# Pages repeat a few media queries and colours many times; only short texts are
# cached, so the caches stay small whatever the pages hold.
_CACHED_TEXT: Final = 200


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


def _parse_style(style: str) -> tuple[_Declared, ...]:
    try:
        return _parse_block(style)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return ()


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
    if values.get("filter") is True or values.get("content-visibility") == "hidden":
        return True  # transparent, or contents skipped (the element's own text is content)
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
    if values.get("filter") is True or values.get("content-visibility") == "hidden":
        return False  # hidden from assistive technology as well
    return _hides_subtree(values)


def _far_negative(value: Value) -> bool:
    return isinstance(value, float) and value <= -_OFF_SCREEN_PX


# The properties that decide each hiding property: a rule declaring none of
# the group of a hiding declaration found on the page cannot re-show it.
_GROUPS: Final = {
    "display": ("display",),
    "visibility": ("visibility",),
    "opacity": ("opacity",),
    "font-size": ("font-size",),
    "color": ("color", "background"),
    "text-fill": ("text-fill", "background-clip", "color"),
    "background": ("color", "background"),
    "clip": ("clip", "position"),
    "clip-path": ("clip-path",),
    "transform": ("transform",),
    "filter": ("filter",),
    "content-visibility": ("content-visibility",),
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
    "text-fill": ("text-fill",),
    "background-clip": ("background-clip",),
    "background": ("background",),
    "clip": ("clip",),
    "clip-path": ("clip-path",),
    "transform": ("transform",),
    "filter": ("filter",),
    "content-visibility": ("content-visibility",),
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
