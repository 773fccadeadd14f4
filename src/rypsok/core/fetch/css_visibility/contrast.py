"""Text and background colours declared by different rules: the page's palette.

A rule that sets only a text colour hides nothing by itself, yet it may put
that colour on a background that another rule or a style attribute declares:
`body{background:#111} .note{color:#111}` is as unreadable as white on white.
Each rule's declared colours are read once per sheet; a page's palette is
the union of the backgrounds and the text colours its sheets and style
attributes declare. A rule whose text colour is near one of the page's
backgrounds, or whose background is near one of its text colours, is then
read and matched like a rule that hides, and the cascade decides for each
element as for any colour (`_State.hides_text`). Nearness here is coarse (a
colour's bucket of 8 levels per channel and the buckets beside it): a filter
that lets through every pair `_close` would call the same, and a few more.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain, product
from typing import Final, NamedTuple

from rypsok.core.fetch.css_visibility.colours import _INVISIBLE_ALPHA, _Rgba
from rypsok.core.fetch.css_visibility.prechecks import (
    _background_value,
    _colour_value,
    _compact,
    _values,
    compact_unreadable,
)
from rypsok.core.fetch.css_visibility.properties import (
    _SAME_COLOUR,
    _Declared,
    _parse_style,
)

# One bucket spans `_SAME_COLOUR`: two channels that `_close` calls the same are in the
# same bucket or in buckets side by side.
_LEVELS_PER_BUCKET: Final = _SAME_COLOUR * 255
_BUCKETS: Final = int(256 // _LEVELS_PER_BUCKET) + 1
_NEIGHBOURS: Final = tuple(product((-1, 0, 1), repeat=3))


class RuleColours(NamedTuple):
    """The buckets of the opaque text colours and backgrounds one rule declares, and
    the buckets near each (what the rule adds to a page's palette)."""

    colours: frozenset[int]
    backgrounds: frozenset[int]
    near_colours: frozenset[int]
    near_backgrounds: frozenset[int]

    @classmethod
    def of(cls, colours: Iterable[_Rgba], backgrounds: Iterable[_Rgba]) -> RuleColours:
        colour_keys, background_keys = _keys(colours), _keys(backgrounds)
        return cls(colour_keys, background_keys, _widen(colour_keys), _widen(background_keys))


NO_COLOURS: Final = RuleColours(frozenset(), frozenset(), frozenset(), frozenset())


def _bucket(colour: _Rgba) -> tuple[int, int, int]:
    return (
        int(colour.red * 255 // _LEVELS_PER_BUCKET),
        int(colour.green * 255 // _LEVELS_PER_BUCKET),
        int(colour.blue * 255 // _LEVELS_PER_BUCKET),
    )


def _key(red: int, green: int, blue: int) -> int:
    return (red * _BUCKETS + green) * _BUCKETS + blue


def _keys(colours: Iterable[_Rgba]) -> frozenset[int]:
    return frozenset(_key(*_bucket(colour)) for colour in colours)


def _visible(colour: _Rgba) -> bool:
    # A transparent text colour hides on its own (`_hides_alone`): nothing to compare.
    return colour.alpha > _INVISIBLE_ALPHA


def rule_colours(text: str) -> RuleColours:
    """The colours a rule's text (selector and block) declares, read without tinycss2's
    tokeniser except on the values (`_values` finds `color:` and `background`); a
    rule with a value the compact text cannot hold (`rgb(0 0 0)`) is parsed."""
    if "\\" in text:  # an escape may spell a property (`c\olor`): parse the rule
        return _parsed_rule_colours(text)
    compact = _compact(text)
    colours: list[_Rgba] = []
    for value in chain(_values(compact, "color:"), _values(compact, "-webkit-text-fill-color:")):
        colour = _colour_value(value)
        if colour is None and compact_unreadable(value):
            return _parsed_rule_colours(text)
        if colour is not None and _visible(colour):
            colours.append(colour)
    backgrounds: list[_Rgba] = []
    for prop in ("background:", "background-color:"):
        for value in _values(compact, prop):
            background = _background_value(value)
            if background == "unknown" and compact_unreadable(value):
                return _parsed_rule_colours(text)
            if isinstance(background, _Rgba):
                backgrounds.append(background)
    if not colours and not backgrounds:
        return NO_COLOURS
    return RuleColours.of(colours, backgrounds)


def _parsed_rule_colours(text: str) -> RuleColours:
    block = text[text.find("{") + 1 :]
    return declared_colours(_parse_style(block[:-1] if block.endswith("}") else block))


def declared_colours(declared: Sequence[_Declared]) -> RuleColours:
    """The colours of parsed declarations (a style attribute's)."""
    colours = [
        d.value for d in declared if d.prop in ("color", "text-fill") and isinstance(d.value, _Rgba)
    ]
    backgrounds = [
        d.value for d in declared if d.prop == "background" and isinstance(d.value, _Rgba)
    ]
    if not colours and not backgrounds:
        return NO_COLOURS
    return RuleColours.of(
        (c for c in colours if _visible(c)), (b for b in backgrounds if _visible(b))
    )


def _widen(keys: frozenset[int]) -> frozenset[int]:
    """Each bucket key and the keys of the buckets beside it."""
    near: set[int] = set()
    for key in keys:
        rest, blue = divmod(key, _BUCKETS)
        red, green = divmod(rest, _BUCKETS)
        near.update(_key(red + dr, green + dg, blue + db) for dr, dg, db in _NEIGHBOURS)
    return frozenset(near)


class Palette:
    """The colours declared on one page (its rules that may apply, its style
    attributes), for `contrasts`."""

    __slots__ = ("_near_backgrounds", "_near_colours")

    def __init__(self) -> None:
        self._near_colours: set[int] = set()
        self._near_backgrounds: set[int] = set()

    def add(self, found: RuleColours) -> None:
        self._near_colours |= found.near_colours
        self._near_backgrounds |= found.near_backgrounds

    def near_a_colour(self, found: RuleColours) -> bool:
        """Whether a background of `found` may meet a text colour of the page."""
        return not self._near_colours.isdisjoint(found.backgrounds)

    def contrasts(self, found: RuleColours) -> bool:
        """Whether a text colour of `found` may meet a background of the page, or one of
        its backgrounds a text colour of the page (a superset of `_close` pairs)."""
        return not (
            self._near_backgrounds.isdisjoint(found.colours)
            and self._near_colours.isdisjoint(found.backgrounds)
        )
