"""The class and id index the selector matching starts from names the same elements
as a walk over the elements would.

REQ-CTX-005: a rule naming a class or id is tested on every element that carries
it, so the index must miss none, in any document (an element it left out would
keep hidden text). The index (`_Carriers`) is read from the attribute values
alone and gathers a name's elements only when asked; these tests hold it to the
walk it replaced, element by element and in document order.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.engine import _Engine
from rypsok.core.fetch.css_visibility.matching import _compile_selectors
from rypsok.core.fetch.parse import Element, parse_bounded

NAMES = ["a", "b", "nav", "x-1", "B", "é"]


def _walk_index(root: Element) -> tuple[dict[str, list[Element]], dict[str, list[Element]]]:
    """The index as a loop over the elements builds it (the definition)."""
    by_class: dict[str, list[Element]] = {}
    by_id: dict[str, list[Element]] = {}
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        for name in (element.get("class") or "").split():
            by_class.setdefault(name, []).append(element)
        if identifier := element.get("id"):
            by_id.setdefault(identifier.strip(), []).append(element)
    return by_class, by_id


_class_values = st.lists(st.sampled_from([*NAMES, " ", "\t", "  "]), max_size=5).map("".join)
_element = st.tuples(
    st.sampled_from(["div", "p", "span", "section"]),
    st.none() | _class_values,
    st.none() | st.sampled_from([*NAMES, " a ", ""]),
)


def _document(elements: list[tuple[str, str | None, str | None]], nest: list[bool]) -> str:
    parts: list[str] = []
    open_tags: list[str] = []
    for (tag, classes, identifier), inside in zip(elements, nest, strict=False):
        if not inside:
            while open_tags:
                parts.append(f"</{open_tags.pop()}>")
        attributes = ""
        if classes is not None:
            attributes += f' class="{classes}"'
        if identifier is not None:
            attributes += f' id="{identifier}"'
        parts.append(f"<{tag}{attributes}>text")
        open_tags.append(tag)
    parts.extend(f"</{tag}>" for tag in reversed(open_tags))
    return "<html><body>" + "".join(parts) + "</body></html>"


def _engine_for(elements: list[tuple[str, str | None, str | None]], nest: list[bool]) -> _Engine:
    """The hidden-text check's state for the generated document, before any matching."""
    html = _document(elements, nest)
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    return _Engine(root)


@settings(max_examples=150, deadline=None)
@given(st.lists(_element, max_size=25), st.lists(st.booleans(), min_size=25, max_size=25))
def test_req_ctx_005_carriers_equal_a_walk_over_the_elements(
    elements: list[tuple[str, str | None, str | None]], nest: list[bool]
) -> None:
    engine = _engine_for(elements, nest)
    root = engine.root
    classes, ids = engine._present()
    want_classes, want_ids = _walk_index(root)
    assert set(classes.keys()) == set(want_classes)
    assert set(ids.keys()) == set(want_ids) - {""}
    for name, carriers in want_classes.items():
        assert classes.get(name, []) == carriers
    for name, carriers in want_ids.items():
        if name:
            assert ids.get(name, []) == carriers
    assert classes.get("absent-name", []) == []


def test_req_ctx_005_a_rule_reaches_every_carrier_of_a_repeated_class() -> None:
    css = ".ad{display:none}"
    body = "".join(
        f'<div class="{value}">SECRET-{index}</div>'
        for index, value in enumerate(["ad", "x ad", "ad ad", " ad ", "ad\tx", "AD"])
    )
    # A standards-mode document: class names are case-sensitive there.
    html = f"<!doctype html><html><head><style>{css}</style></head><body>{body}<p>shown</p>"
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    text = " ".join(root.itertext())
    assert [f"SECRET-{index}" in text for index in range(6)] == [False] * 5 + [True]
    assert "shown" in text


_SELECTORS = [
    *(f".{name}" for name in NAMES),
    *(f"#{name}" for name in NAMES if name != "x-1"),
    "#x-1",
    ".a.b",
    "div.a",
    "*.a",
    ".a#b",
    "#b.a",
    "div#a",
    ".nav .a",
    ".a > .b",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(_element, max_size=25), st.lists(st.booleans(), min_size=25, max_size=25))
def test_req_ctx_005_a_selector_that_asks_only_its_key_matches_every_carrier(
    elements: list[tuple[str, str | None, str | None]], nest: list[bool]
) -> None:
    """`key_alone` lets the engine take a name's carriers without testing each: it must
    hold only where testing each (`among`) keeps them all, and must hold for `.a`, `#b`."""
    classes, ids = _engine_for(elements, nest)._present()
    for text in _SELECTORS:
        for selector in _compile_selectors(text):
            if selector.key is None:
                continue
            kind, name = selector.key
            carriers = (ids if kind == "id" else classes).get(name, [])
            matched = selector.among(carriers)
            if selector.key_alone():
                assert matched == carriers, text
            bare = text.removeprefix("*")  # `*.a` asks no more than `.a`
            only_key = bare.count(".") + bare.count("#") == 1 and bare[0] in ".#"
            assert selector.key_alone() == only_key, text


_SCOPED_SELECTORS = [
    ".a span",
    ".a > p",
    ".a ~ div",
    ".a + p span",
    "#b span",
    "#a ~ * p",
    ".nav .a div",
    "div .b > span",
    ".a span ~ p",
    "p:not(.a)",
    ":not(.a) > span",
    ".B [id]",
    "section.a ~ section > p",
    ".é + *",
]


@settings(max_examples=200, deadline=None)
@given(st.lists(_element, max_size=30), st.lists(st.booleans(), min_size=30, max_size=30))
def test_req_ctx_005_a_scoped_search_finds_what_the_whole_tree_gives(
    elements: list[tuple[str, str | None, str | None]], nest: list[bool]
) -> None:
    """A selector whose subject names no class or id is searched under the parents of
    the carriers of a name it requires (`_scope`): the matches must be those of the
    whole tree, in the same order, or hidden text would stay."""
    engine = _engine_for(elements, nest)
    root = engine.root
    classes, ids = engine._present()
    for text in _SCOPED_SELECTORS:
        for selector in _compile_selectors(text):
            if not (selector.classes <= classes.keys() and selector.ids <= ids.keys()):
                continue  # `_matches` answers these with no match before any search
            scope = engine._scope(selector, classes, ids)
            if scope is not None:
                assert selector.within(scope) == selector.over_tree(root), text
            if text.startswith(("p:not", ":not")):
                assert scope is None, text  # a negated name gives no scope
