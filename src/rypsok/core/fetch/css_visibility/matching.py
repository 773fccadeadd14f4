"""Selectors compiled once per process, matched from their subject (cssselect + lxml XPath).

cssselect parses a selector group and translates each compound to XPath 1.0;
`_from_subject` composes the compounds from the subject outwards
(`B[ancestor::A]` rather than `//A//B`, which rescans A's subtree for every A),
so one evaluation over the tree visits each element once. A compound of only
a tag, classes and an id is tested without XPath. `_Rule` is a parsed rule:
its declarations (`properties`) and, when first matched, its selectors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

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

from rypsok.core.fetch.css_visibility.chains import MAX_COMPOUNDS, Chain, Compound
from rypsok.core.fetch.css_visibility.properties import (
    _CACHED_RULES,
    _CACHED_SELECTOR_CHARS,
    _CACHED_XPATH_CHARS,
    _Declared,
    _hides_alone,
    _parse_block,
)
from rypsok.core.fetch.css_visibility.relax import _TEXT_PSEUDO_ELEMENTS, rewrite_group
from rypsok.core.fetch.css_visibility.sheets import _Chunk
from rypsok.core.fetch.css_visibility.textcache import TextCache
from rypsok.core.fetch.css_visibility.variables import VarRef
from rypsok.core.fetch.parse import Element


@dataclass(slots=True, eq=False)
class _Selector:
    """One selector, compiled (when first needed) to XPath that starts from its subject.

    cssselect composes `A B` as `//A/descendant::B`, which libxml2 evaluates by
    walking the subtree of every A again; starting from the subject instead
    (`B[ancestor::A]`) visits each element once, so one evaluation over the
    tree is linear in it (times the depth for an ancestor step).
    """

    tree: Tree | None  # None when `_plain_group` read it (its steps are then given)
    specificity: tuple[int, int, int]
    classes: frozenset[str]  # classes and ids every match must carry (for a cheap pre-check)
    ids: frozenset[str]
    key: tuple[str, str] | None  # ("class", name) or ("id", name) of the subject
    tag: str | None  # the subject's tag, if it names one
    # For a selector of one compound of tag, classes and ids only: what an element needs,
    # checked without XPath. None for any other selector.
    plain: tuple[str | None, frozenset[str], str | None] | None = None
    _expressions: dict[str, str] = field(default_factory=dict)  # by axis
    _steps: str | None = None  # `_from_subject(tree)`, translated once
    # Rewritten by `relax` (often a superset): only its rule's hiding declarations apply.
    relaxed: bool = False
    _key_alone: bool | None = None  # `key_alone()`, decided once
    # For a plain selector of several compounds: tested in Python (`chains`), not XPath.
    chain: Chain | None = None

    def _xpath(self, axis: str) -> Any:
        expression = self._expressions.get(axis)
        if expression is None:
            if self._steps is None:
                if self.tree is None:  # never: `_plain_group` gives the steps it reads
                    raise ExpressionError("a selector without its steps")
                self._steps = _from_subject(self.tree)
            expression = self._expressions[axis] = axis + self._steps
        return _compiled_xpath(expression)

    def over_tree(self, root: Element) -> list[Element]:
        """Every match in the document (raises etree.XPathError or ExpressionError)."""
        return list(self._xpath("descendant-or-self::")(root))

    def within(self, scope: list[Element]) -> list[Element]:
        """Every match inside the subtrees of `scope`, in document order (raises as `on`).

        One evaluation over a node-set variable: libxml2 gives the union of the
        subtrees' matches sorted and without repeats, as `over_tree` gives them.
        """
        return list(self._xpath("$scope/descendant-or-self::")(scope[0], scope=scope))

    def among(self, elements: list[Element]) -> list[Element]:
        """The members of `elements` that match, in their order, repeats kept (raises as `on`).

        A selector that needs XPath is evaluated once over all of them, passed
        as a node-set variable, because each call of a compiled XPath from
        Python has a fixed cost (a context set up and torn down).
        `$elements/self::S` tests each member on its own, exactly as
        `self::S` on each does. A few elements are tested one by one: there the
        node set costs more (instructions counted, docs/extraction.md 6.1k).
        """
        if self.chain is not None:
            return self.chain.among(elements)
        if self.plain is not None or len(elements) < _FEW_ELEMENTS:
            return [element for element in elements if self.on(element)]
        found = self._xpath("$elements/self::")(elements[0], elements=elements)
        if len(found) == len(elements):
            return list(elements)  # all of them, no repeats: the common case
        matched = set(found)
        return [element for element in elements if element in matched]

    def key_alone(self) -> bool:
        """Whether carrying the subject's class or id is all the selector asks (`.a`,
        `#b`): then every element the class and id index gives for that name matches,
        as `on` would find one by one (the index splits values as `on` does)."""
        alone = self._key_alone
        if alone is None:
            plain, key = self.plain, self.key
            alone = self._key_alone = (
                plain is not None
                and key is not None
                and plain[0] is None
                and (
                    plain[1] == {key[1]} and plain[2] is None
                    if key[0] == "class"
                    else not plain[1] and plain[2] == key[1]
                )
            )
        return alone

    def on(self, element: Element) -> bool:
        """Whether `element` matches (raises etree.XPathError or ExpressionError)."""
        plain = self.plain
        if plain is None:
            if self.chain is not None:
                return bool(self.chain.among([element]))
            return bool(self._xpath("self::")(element))
        tag, classes, identifier = plain
        if tag is not None and element.tag != tag:
            return False
        if identifier is not None and (element.get("id") or "").strip() != identifier:
            return False
        return not classes or classes.issubset((element.get("class") or "").split())


# Below this many elements, one XPath call each counts fewer instructions than one
# call over a node-set variable (measured on the corpus, section 6.1k).
_FEW_ELEMENTS: Final = 8


@dataclass(slots=True, eq=False)
class _Rule:
    chunk: _Chunk
    declarations: tuple[_Declared, ...]
    order: int
    _selectors: list[tuple[_Selector, ...]] = field(default_factory=list)
    _hiding: list[_Rule] = field(default_factory=list)

    @property
    def holds_var(self) -> bool:
        """Whether a declaration of it waits for custom properties (`variables`)."""
        return any(isinstance(d.value, VarRef) for d in self.declarations)

    def hiding_part(self) -> _Rule:
        """The rule with only its declarations that hide, and the `position` and
        `overflow` that off-screen and zero-size hiding need: what a relaxed selector's
        matches receive (a superset must never re-show or recolour)."""
        if not self._hiding:
            kept = tuple(
                d
                for d in self.declarations
                if _hides_alone(d.prop, d.value) or d.prop in _HIDING_COMPANIONS
            )
            self._hiding.append(_Rule(self.chunk, kept, self.order, self._selectors))
        return self._hiding[0]

    def selectors(self) -> tuple[_Selector, ...]:
        if not self._selectors:
            text = self.chunk.selector_text()
            try:
                if "/*" in text:
                    text = _without_comments(text)
                self._selectors.append(_compile_selectors(text))
            except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
                self._selectors.append(())
        return self._selectors[0]


_TRANSLATOR: Final = HTMLTranslator()
_HIDING_COMPANIONS: Final = frozenset({"position", "overflow-x", "overflow-y"})


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
    """The group read once per process: cssselect's parse and translation are pure
    Python and cost more than matching; a `_Selector` keeps no page state."""
    return _cached_selectors(text)


def _uncached_selectors(text: str) -> tuple[_Selector, ...]:
    read = _plain_group(text)
    if read is not None:
        return read
    try:
        return _read_selectors(text)
    except _Unreadable:
        return _rewritten_selectors(text)


# Both caches are bounded in characters, not only in entries: what a group or an
# expression holds grows with its length, and a compiled XPath costs libxml2 about 25
# to 50 bytes per character of the expression (8,192 groups of 1 KiB once held 1.9 GiB;
# docs/extraction.md 6.1v). The selectors hold their expressions, not the compiled
# XPath, so an expression dropped here is compiled again when next needed.
_cached_selectors: Final = TextCache(
    _uncached_selectors, max_texts=_CACHED_RULES, max_chars=_CACHED_SELECTOR_CHARS
)
_without_comments: Final = TextCache(
    lambda text: tinycss2.serialize(tinycss2.parse_component_value_list(text, skip_comments=True)),
    max_texts=_CACHED_RULES,
    max_chars=_CACHED_SELECTOR_CHARS,
)
_compiled_xpath: Final = TextCache(
    etree.XPath, max_texts=_CACHED_RULES, max_chars=_CACHED_XPATH_CHARS
)


class _Unreadable(Exception):
    """A selector of the group that cssselect cannot parse or translate."""


_READ_ERRORS: Final = (
    SelectorError, ExpressionError, etree.XPathError, ValueError, TypeError, IndexError,
    AttributeError, RecursionError,
)  # fmt: skip


def _rewritten_selectors(text: str) -> tuple[_Selector, ...]:
    """A group cssselect cannot read whole, one selector at a time (`relax`): what it
    reads as written, the rest rewritten and marked relaxed."""
    compiled: list[_Selector] = []
    for rewritten in rewrite_group(text):
        try:
            selectors = _read_selectors(rewritten.text)
        except _Unreadable:
            continue
        if not rewritten.relaxed:
            compiled.extend(selectors)
            continue
        for selector in selectors:
            selector.relaxed = True
            first, second, third = selector.specificity
            selector.specificity = (first, second + rewritten.dropped, third)
            compiled.append(selector)
    return tuple(compiled)


def _read_selectors(text: str) -> tuple[_Selector, ...]:
    """The group compiled by cssselect (raises `_Unreadable` for any selector it lacks)."""
    try:
        parsed = parse_selectors(text)
    except _READ_ERRORS as error:
        raise _Unreadable(text) from error
    compiled: list[_Selector] = []
    for selector in parsed:
        if selector.pseudo_element is not None:
            if str(selector.pseudo_element).lower() in _TEXT_PSEUDO_ELEMENTS:
                raise _Unreadable(text)  # `::first-line` styles the text: `relax` reads it
            continue  # ::before, ::placeholder: not the element's own text
        tree = selector.parsed_tree
        plain = _plain(tree)
        steps: str | None = None
        if plain is None:
            try:  # translate and compile now: a pseudo-class cssselect lacks raises here
                steps = _from_subject(tree)
                _compiled_xpath("self::" + steps)
            except _READ_ERRORS as error:
                raise _Unreadable(text) from error
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
                {} if steps is None else {"self::": "self::" + steps},
                steps,
            )
        )
    return tuple(compiled)


# -- the plain subset, read without cssselect ------------------------------------------------

# A group of compounds (a tag or `*`, then classes, ids and the dynamic pseudo-classes a
# static page never matches; `::before`/`::after` last) joined by combinators, in ASCII
# names without escapes: most selectors of real sheets. cssselect's parse and translation
# cost more than the lxml compilation they feed, so this subset is read here into exactly
# the fields cssselect's path gives (held to it field by field in
# tests/core/fetch/test_css_cold_selectors.py); anything else goes to cssselect.
_PLAIN_GROUP_TEXT: Final = re.compile(r"[A-Za-z0-9_.#*>+~,: \t\n\r\f-]+")
_PLAIN_COMPOUND: Final = re.compile(
    r"(\*|[A-Za-z][A-Za-z0-9-]*)?"
    r"((?:[.#]-?[A-Za-z_][A-Za-z0-9_-]*|:(?:hover|focus|active|visited)(?![A-Za-z0-9_-]))*)"
    r"(::?(?:before|after))?"
)
_PLAIN_NAME: Final = re.compile(r"([.#:])(-?[A-Za-z_][A-Za-z0-9_-]*)")
# cssselect translates these pseudo-classes to the condition `0` (never on a static page).
_NEVER_CONDITION: Final = "0"
_COMBINATORS_SPACED: Final = str.maketrans({">": " > ", "+": " + ", "~": " ~ "})


class _PlainCompound(NamedTuple):
    tag: str | None  # lower case; None for `*` or no tag
    names: tuple[tuple[str, str], ...]  # (".", class), ("#", id), (":", pseudo), as written
    xpath: str  # as cssselect's HTMLTranslator writes the compound
    pseudo_element: bool  # `::before`, `::after`: the selector is not the element's text


def _plain_group(text: str) -> tuple[_Selector, ...] | None:
    """The compiled selectors of a group in the plain subset; None for any other group."""
    if _PLAIN_GROUP_TEXT.fullmatch(text) is None:
        return None
    compiled: list[_Selector] = []
    for selector in text.split(","):
        words = selector.translate(_COMBINATORS_SPACED).split()
        compounds: list[_PlainCompound] = []
        axes: list[str] = []  # the combinator before each compound but the first
        combinator = " "
        for index, word in enumerate(words):
            if word in _AXES:
                if combinator != " " or not compounds or index == len(words) - 1:
                    return None  # `a > > b`, `> a`, `a >`: cssselect's errors
                combinator = word
                continue
            compound = _plain_compound(word)
            if compound is None or (compound.pseudo_element and index != len(words) - 1):
                return None
            if compounds:
                axes.append(combinator)
            compounds.append(compound)
            combinator = " "
        if not compounds:
            return None  # an empty selector of the group: invalid
        if not compounds[-1].pseudo_element:  # skipped as `_uncached_selectors` skips it
            compiled.append(_plain_selector(compounds, axes))
    return tuple(compiled)


def _plain_compound(word: str) -> _PlainCompound | None:
    found = _PLAIN_COMPOUND.fullmatch(word)
    if found is None or not word:
        return None
    written, rest = found.group(1), found.group(2)
    names = tuple((mark, name) for mark, name in _PLAIN_NAME.findall(rest))
    tag = None if written in (None, "*") else written.lower()
    condition = ""
    for mark, name in names:
        if mark == ":":
            test = _NEVER_CONDITION
        elif mark == "#":
            test = f"@id = '{name}'"
        else:
            test = (
                f"@class and contains(@class, '{name}') "
                f"and contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"
            )
        condition = f"({condition}) and ({test})" if condition else test
    element = tag or "*"
    xpath = f"{element}[{condition}]" if condition else element
    return _PlainCompound(tag, names, xpath, found.group(3) is not None)


def _plain_selector(compounds: list[_PlainCompound], axes: list[str]) -> _Selector:
    """One selector of compounds (subject last), with cssselect's fields."""
    ids = [name for compound in compounds for mark, name in compound.names if mark == "#"]
    classes = [name for compound in compounds for mark, name in compound.names if mark == "."]
    pseudo_classes = sum(mark == ":" for compound in compounds for mark, _ in compound.names)
    elements = sum(compound.tag is not None for compound in compounds)
    subject = compounds[-1]
    subject_ids = [name for mark, name in subject.names if mark == "#"]
    subject_classes = [name for mark, name in subject.names if mark == "."]
    key: tuple[str, str] | None = None
    if subject_ids:
        key = ("id", subject_ids[-1])  # cssselect's tree holds the last written outermost
    elif subject_classes:
        key = ("class", subject_classes[-1])
    plain: tuple[str | None, frozenset[str], str | None] | None = None
    if (
        len(compounds) == 1
        and len(subject_ids) <= 1
        and len(subject_classes) + len(subject_ids) == len(subject.names)
    ):
        plain = (subject.tag, frozenset(subject_classes), subject_ids[0] if subject_ids else None)
    expression = compounds[0].xpath
    for compound, axis in zip(compounds[1:], axes, strict=True):
        expression = f"{compound.xpath}[{_AXES[axis]}{expression}]"
    chain = None
    if 2 <= len(compounds) <= MAX_COMPOUNDS:
        chain = Chain(tuple(_chain_compound(compound) for compound in compounds), tuple(axes))
    return _Selector(
        None,
        (len(ids), len(classes) + pseudo_classes, elements),
        frozenset(classes),
        frozenset(ids),
        key,
        subject.tag,
        plain,
        {},  # compiled when first matched: the subset's XPath is always valid
        expression,
        chain=chain,
    )


def _chain_compound(compound: _PlainCompound) -> Compound:
    names = compound.names
    return Compound(
        compound.tag,
        frozenset(name for mark, name in names if mark == "."),
        tuple(name for mark, name in names if mark == "#"),
        any(mark == ":" for mark, _ in names),
    )


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
