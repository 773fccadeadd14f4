"""Chains of plain compounds are tested in Python with XPath's verdicts.

REQ-CTX-005: a hiding rule such as `.promo .card span` must reach every element
it matches, and a re-showing one must reach no other. `chains` replaced
libxml2's evaluation of these selectors for speed; these tests hold it to that
evaluation, element by element, on generated documents and selectors (every
combinator, tags, classes split at every kind of space, ids with spaces,
dynamic pseudo-classes).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.matching import _plain_group, _Selector
from rypsok.core.fetch.parse import Element, parse_bounded

_TAGS = ["div", "p", "span", "section"]
_NAMES = ["a", "b", "nav"]
_SPACES = [" ", "\t", "\n", "\r", "\x0c", "\xa0", "  "]

_class_value = st.lists(
    st.tuples(st.sampled_from(_SPACES), st.sampled_from([*_NAMES, "a-b", "A"])), max_size=3
).map(lambda parts: "".join(space + name for space, name in parts))
_element = st.tuples(
    st.sampled_from(_TAGS),
    st.none() | _class_value,
    st.none() | st.sampled_from(["a", "b", " a", "a ", ""]),
    st.integers(min_value=0, max_value=3),  # how many open elements it closes first
)


def _document(elements: list[tuple[str, str | None, str | None, int]]) -> str:
    parts: list[str] = []
    open_tags: list[str] = []
    for tag, classes, identifier, closing in elements:
        for _ in range(min(closing, len(open_tags))):
            parts.append(f"</{open_tags.pop()}>")
        attributes = "" if classes is None else f' class="{classes}"'
        attributes += "" if identifier is None else f' id="{identifier}"'
        parts.append(f"<{tag}{attributes}>t")
        open_tags.append(tag)
    parts.extend(f"</{tag}>" for tag in reversed(open_tags))
    return "<!doctype html><html><body>" + "".join(parts) + "</body></html>"


_compound = st.tuples(
    st.sampled_from(["", "*", *_TAGS]),
    st.lists(st.sampled_from(_NAMES), max_size=2),
    st.lists(st.sampled_from(["a", "b"]), max_size=2),
    st.booleans(),
).map(
    lambda parts: (
        (
            parts[0]
            + "".join(f".{name}" for name in parts[1])
            + "".join(f"#{name}" for name in parts[2])
            + (":hover" if parts[3] and not parts[1] else "")
        )
        or "*"
    )
)
_selector = st.tuples(
    _compound,
    st.lists(
        st.tuples(st.sampled_from([" ", " > ", " ~ ", " + ", ">", "~"]), _compound),
        min_size=1,
        max_size=3,
    ),
).map(lambda parts: parts[0] + "".join(combinator + compound for combinator, compound in parts[1]))


def _by_xpath(selector: _Selector, elements: list[Element]) -> list[Element]:
    """What `among` gave before chains: one XPath evaluation over the elements."""
    found = set(selector._xpath("$elements/self::")(elements[0], elements=elements))
    return [element for element in elements if element in found]


@settings(max_examples=300, deadline=None)
@given(st.lists(_element, min_size=1, max_size=30), st.lists(_selector, min_size=1, max_size=4))
def test_req_ctx_005_a_chain_matches_what_xpath_matches(
    elements: list[tuple[str, str | None, str | None, int]], texts: list[str]
) -> None:
    root = parse_bounded(
        _document(elements), max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH
    ).root
    members = list(root.iter())
    members += members[::3]  # repeats are kept, in the order given
    for text in texts:
        group = _plain_group(text)
        assert group is not None, text
        for selector in group:
            assert selector.chain is not None, text
            assert selector.among(members) == _by_xpath(selector, members), text
            for element in members[:8]:
                assert selector.on(element) == bool(_by_xpath(selector, [element])), text


def test_req_ctx_005_hiding_chains_reach_their_elements_and_no_other() -> None:
    css = (
        ".promo .card span{display:none}"
        ".list > .item + .item{visibility:hidden}"
        ".head ~ p.note{display:none}"
        ".x:hover .y{display:none}"
    )
    body = (
        "<div class='promo'><div class='card'><p><span>HIDDEN-1</span></p></div>"
        "<span>shown-1</span></div>"
        "<div class='card'><span>shown-2</span></div>"
        "<ul class='list'><li class='item'>shown-3</li><li class='item'>HIDDEN-2</li>"
        "<li>x</li><li class='item'>shown-4</li></ul>"
        "<h2 class='head'>h</h2><p>p</p><p class='note'>HIDDEN-3</p>"
        "<p class='note'>HIDDEN-4</p><div><p class='note'>shown-5</p></div>"
        "<div class='x'><p class='y'>shown-6</p></div>"
    )
    html = f"<!doctype html><html><head><style>{css}</style></head><body>{body}</body></html>"
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    text = " ".join(root.itertext())
    assert all(f"HIDDEN-{n}" not in text for n in range(1, 5)), text
    assert all(f"shown-{n}" in text for n in range(1, 7)), text


def test_req_ctx_005_a_chain_splits_classes_where_xpath_does() -> None:
    """XPath's `normalize-space` splits at space, tab, CR and LF only: a form feed or a
    no-break space joins two names into one token, for the chain as for XPath."""
    for space in [*_SPACES, "\x0b", "\u2003"]:
        for value in (f"x{space}a", f"{space}a", f"a{space}", f"a{space}nav"):
            html = f"<!doctype html><html><body><div class='{value}'><p class='{value}'>t</p></div>"
            root = parse_bounded(
                html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH
            ).root
            members = list(root.iter())
            for text in (".a p", "div .a", ".a > .a", ".nav .a", "div.a > p.nav"):
                (selector,) = _plain_group(text) or ()
                assert selector.among(members) == _by_xpath(selector, members), (value, text)
