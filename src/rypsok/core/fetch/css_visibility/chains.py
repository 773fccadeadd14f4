"""Selectors of plain compounds joined by combinators, tested in Python from the subject.

Through XPath, `.a .b .c` is `*[c][ancestor::*[b][ancestor::*[a]]]`: for each
candidate libxml2 walks its ancestors, walks theirs again at every one that
passes `b`, and builds a string for every class test on the way, so a chain of
four compounds on a deep page cost about 12 µs per candidate. Here each
element's verdict for each compound is decided once per call, and "some
ancestor (or some earlier sibling) matches" is remembered along the way, so a
call costs one visit per element and compound it reaches.

The verdicts are XPath's, which is what cssselect's translation asks: a tag
compared with the lower-case name, an id compared whole (`@id = 'x'`), a
class as a token of the attribute split at the four XML spaces (what
`normalize-space` collapses), a dynamic pseudo-class never. The tests hold
this module to the XPath on generated documents and selectors.
"""

from __future__ import annotations

import functools
from typing import Final, NamedTuple

from rypsok.core.fetch.parse import Element

# Longer chains are left to XPath: the verdicts recurse once per compound.
MAX_COMPOUNDS: Final = 32
_XML_SPACES: Final = str.maketrans("\t\n\r", "   ")


class Compound(NamedTuple):
    tag: str | None  # lower case; None for `*`
    classes: frozenset[str]
    ids: tuple[str, ...]  # every id it names (two different ones never match)
    never: bool  # it names a dynamic pseudo-class: never on a static page


class Chain:
    """Compounds from left to right (the subject last) and the combinators between them."""

    __slots__ = ("axes", "compounds")

    def __init__(self, compounds: tuple[Compound, ...], axes: tuple[str, ...]) -> None:
        self.compounds = compounds
        self.axes = axes  # axes[i] joins compounds[i] and compounds[i + 1]: " ", ">", "~", "+"

    def among(self, elements: list[Element]) -> list[Element]:
        """The members of `elements` that match, in their order, repeats kept."""
        run = _Run(self)
        last = len(self.compounds) - 1
        return [element for element in elements if run.matches(last, element)]


class _Run:
    """The verdicts of one call: per compound, per element."""

    __slots__ = ("chain", "inclusive", "matched")

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        count = len(chain.compounds)
        self.matched: list[dict[Element, bool]] = [{} for _ in range(count)]
        # inclusive[i][x]: x, or an ancestor of x (or an earlier sibling, by the axis
        # that leaves compound i), matches the chain up to compound i.
        self.inclusive: list[dict[Element, bool]] = [{} for _ in range(count)]

    def matches(self, index: int, element: Element) -> bool:
        known = self.matched[index].get(element)
        if known is None:
            known = self.matched[index][element] = self._decide(index, element)
        return known

    def _decide(self, index: int, element: Element) -> bool:
        if not self._test(self.chain.compounds[index], element):
            return False
        if index == 0:
            return True
        axis = self.chain.axes[index - 1]
        if axis == ">":
            parent = element.getparent()
            return parent is not None and self.matches(index - 1, parent)
        if axis == "+":
            previous = _previous_element(element)
            return previous is not None and self.matches(index - 1, previous)
        start = element.getparent() if axis == " " else _previous_element(element)
        return start is not None and self._any_from(index - 1, start, axis)

    def _any_from(self, index: int, start: Element, axis: str) -> bool:
        """Whether `start` or one further along the axis (up for " ", back for "~")
        matches the chain up to `index`; remembered for every element walked."""
        memo = self.inclusive[index]
        walked: list[Element] = []
        node: Element | None = start
        found = False
        while node is not None:
            known = memo.get(node)
            if known is not None:
                found = known
                break
            walked.append(node)
            node = node.getparent() if axis == " " else _previous_element(node)
        # Back down the walk: a node holds when it matches or the one beyond it holds.
        for node in reversed(walked):
            found = found or self.matches(index, node)
            memo[node] = found
        return found

    def _test(self, compound: Compound, element: Element) -> bool:
        if compound.never:
            return False
        if compound.tag is not None and element.tag != compound.tag:
            return False
        if compound.ids:
            identifier = element.get("id")
            if any(identifier != name for name in compound.ids):
                return False
        return not compound.classes or compound.classes <= _class_tokens(element.get("class") or "")


@functools.lru_cache(maxsize=8_192)
def _class_tokens(value: str) -> frozenset[str]:
    """A class value's tokens as XPath's `normalize-space` splits it (a pure function of
    the text: values repeat across a page's elements and a site's pages)."""
    return frozenset(value.translate(_XML_SPACES).split(" "))


def _previous_element(element: Element) -> Element | None:
    node = element.getprevious()
    while node is not None and not isinstance(node.tag, str):
        node = node.getprevious()
    return node
