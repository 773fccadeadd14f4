"""What the markup says before any style sheet: attributes, tags and names.

The elements a check starts from without CSS (`hidden`, `aria-hidden` and
`style` attributes, closed `<dialog>`s, `<font color>`), whether the page
links a sheet that is not read, the presentational colour of `<font>`, and
the index of the classes and ids the selector matching starts from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, KeysView
from itertools import chain
from typing import Any, Final, TypeAlias

from lxml import etree  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.colours import legacy_colour
from rypsok.core.fetch.css_visibility.properties import _Declared
from rypsok.core.fetch.parse import Element

# The elements with a `hidden`, `aria-hidden` or `style` attribute, in document order
# (the union is sorted and without duplicates). Three `//@name` steps walk the tree
# three times and still cost libxml2 a quarter of one `//@*` step whose predicate calls
# name() on every attribute, and half of `//*[@style or ...]` (docs/extraction.md 6.1v).
_ATTRIBUTE_QUERY: Final = "//@style/.. | //@hidden/.. | //@aria-hidden/.."
# With the closed `<dialog>` elements, which are not rendered (the browser's own sheet:
# display none), and the `<font color>` elements (a presentational colour); each only
# on a page that has one.
_CANDIDATE_QUERIES: Final = {
    (dialogs, fonts): etree.XPath(
        " | ".join(
            [_ATTRIBUTE_QUERY]
            + (["//dialog[not(@open)]"] if dialogs else [])
            + (["//font[@color]"] if fonts else [])
        )
    )
    for dialogs in (False, True)
    for fonts in (False, True)
}
# HTML splits `rel` at ASCII whitespace; XPath's normalize-space, which this replaced,
# knew only these four (a form feed was never a separator here).
_REL_SEPARATORS: Final = str.maketrans(dict.fromkeys("\t\n\r", " "))

# The class and id values of the document, in document order, each knowing its element
# (lxml's smart strings: `getparent()`). Two attribute steps cost libxml2 about half of
# one element step with the predicate `[@class or @id]`, and no element is wrapped for
# Python until a selector asks for the carriers of one of its names.
_CLASS_VALUES: Final = etree.XPath("//@class")
_ID_VALUES: Final = etree.XPath("//@id")
# An attribute value from XPath: a `str` that also knows its element (`getparent()`).
_SmartString: TypeAlias = Any


def attribute_candidates(root: Element) -> list[Element]:
    """The elements a hiding attribute, a closed dialog or a font colour marks, in
    document order. iter() of a tag name the document never holds returns at once
    (lxml's name dictionary), so a page without dialogs or fonts pays nothing for them."""
    has_dialog = next(root.iter("dialog"), None) is not None
    has_font = next(root.iter("font"), None) is not None
    found: list[Element] = _CANDIDATE_QUERIES[has_dialog, has_font](root)
    return found


def carriers(root: Element) -> tuple[_Carriers, _Carriers]:
    """The elements carrying each class and each id of the document."""
    return _Carriers(_CLASS_VALUES(root), str.split), _Carriers(_ID_VALUES(root), _id_names)


class _Carriers:
    """The names a document's class (or id) values carry, and the elements carrying each.

    `keys()` is every name carried; `get(name, default)` the elements whose value
    carries it, in document order, an element once per time its value names it (as
    a loop over the elements splitting each value gives). The values are split once
    per distinct value; the elements of a name are gathered only when asked for,
    and most names never are (docs/extraction.md 6.1t).
    """

    __slots__ = ("_by_name", "_holders", "_positions", "_values")

    def __init__(self, values: list[_SmartString], names_of: Callable[[str], list[str]]) -> None:
        self._values = values  # smart strings: `getparent()` is the element
        holders: dict[str, list[str]] = {}
        for value in set(values):
            for name in names_of(value):
                if (held := holders.get(name)) is None:
                    holders[name] = [value]
                else:
                    held.append(value)
        self._holders = holders
        self._positions: dict[str, list[int]] | None = None
        self._by_name: dict[str, list[Element]] = {}

    def keys(self) -> KeysView[str]:
        return self._holders.keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._holders)

    def get(self, name: str, default: list[Element]) -> list[Element]:
        found = self._by_name.get(name)
        if found is not None:
            return found
        held = self._holders.get(name)
        if held is None:
            return default
        positions = self._positions
        if positions is None:
            positions = {}
            for index, value in enumerate(self._values):
                if (at := positions.get(value)) is None:
                    positions[value] = [index]
                else:
                    at.append(index)
            self._positions = positions
        if len(held) == 1:
            indexes = positions[held[0]]
        else:  # several values (or one naming it twice): merged back into document order
            indexes = sorted(chain.from_iterable(positions[value] for value in held))
        values = self._values
        found = self._by_name[name] = [values[index].getparent() for index in indexes]
        return found


def _id_names(value: str) -> list[str]:
    """The name an id value gives, as a list (an empty id gives none; spaces are cut)."""
    return [value.strip()] if value else []


def _names_import(css: str) -> bool:
    """Whether `@import` appears in the sheet in any case (as `"@import" in css.lower()`,
    without lowering the whole sheet: only ASCII letters lower to those of "import")."""
    position = css.find("@")
    while position >= 0:
        if css[position + 1 : position + 7].lower() == "import":
            return True
        position = css.find("@", position + 1)
    return False


def _links_a_style_sheet(root: Element) -> bool:
    """Whether the document has a `<link rel="stylesheet" href>` (a sheet we do not read)."""
    for link in root.getroottree().iter("link"):
        rel = (link.get("rel") or "").translate(_STYLESHEET_CASE).translate(_REL_SEPARATORS)
        if link.get("href") is not None and "stylesheet" in rel.split(" "):
            return True
    return False


# The letters of "stylesheet" in upper case, as the XPath this replaced lowered them.
_STYLESHEET_CASE: Final = str.maketrans("STYLEHET", "stylehet")


def _presentational(element: Element) -> tuple[_Declared, ...]:
    """The colour a `<font color>` gives, as a declaration (HTML's legacy colour value)."""
    if element.tag != "font":
        return ()
    value = element.get("color")
    colour = None if value is None else legacy_colour(value)
    return () if colour is None else (_Declared(False, "color", colour, 0),)


def _hidden_by_markup(element: Element) -> bool:
    """The `hidden` attribute, or a closed `<dialog>`: never rendered without script."""
    if element.get("hidden") is not None:
        return True
    return element.tag == "dialog" and element.get("open") is None
