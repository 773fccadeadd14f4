"""Rules nested inside a rule (CSS nesting) hide as their flattened selectors say.

REQ-CTX-005: hidden text never reaches the caller. A defect found in session 12:
the splitter kept a rule whose block held another rule as one text, and the
nested rule was never read, so `.card { .note { display: none } }` let the
note through. REQ-SEC-003: the flattened selectors are those of the nesting,
so text outside the parent, inside print media or re-shown by a nested rule
stays.
"""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.nesting import _MAX_SELECTORS, flatten
from rypsok.core.fetch.parse import parse_bounded

SECRET = "SECRET-IN-A-NESTED-RULE"


def _visible(css: str, body: str) -> str:
    html = f"<!doctype html><html><head><style>{css}</style></head><body>{body}<p>shown</p>"
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split())


HIDDEN = {
    "relative selector": (".n{ .m{display:none} }", '<div class="n"><p class="m">S</p></div>'),
    "& and a descendant": (".n{ & .m{display:none} }", '<div class="n"><p class="m">S</p></div>'),
    "& compound": (".n{ &.x{display:none} }", '<p class="n x">S</p>'),
    "child combinator": (".n{ > .m{display:none} }", '<div class="n"><p class="m">S</p></div>'),
    "parent group": (".a, .b { .m{display:none} }", '<div class="b"><p class="m">S</p></div>'),
    "three deep": (
        ".a{ .b{ .c{opacity:0} } }",
        '<div class="a"><div class="b"><p class="c">S</p></div></div>',
    ),
    "declarations in nested @media": (
        ".n{ color:#000; @media screen { display:none } }",
        '<p class="n">S</p>',
    ),
    "declaration after a nested rule": (".n{ .z{color:red} display:none }", '<p class="n">S</p>'),
    "inside a top-level @media": (
        "@media screen{ .n{ .m{visibility:hidden} } }",
        '<div class="n"><p class="m">S</p></div>',
    ),
}
SHOWN = {
    "nested print media": (".n{ @media print { display:none } }", '<p class="n">S</p>'),
    "another parent": (".n{ .m{display:none} }", '<div class="q"><p class="m">S</p></div>'),
    "a brace in a string": ('.n{ content:"{"; color:red }', '<p class="n">S</p>'),
    "re-shown by a nested rule": (".n{display:none; &.x{display:block} }", '<p class="n x">S</p>'),
}


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_req_ctx_005_nested_rules_hide(case: str) -> None:
    css, body = HIDDEN[case]
    text = _visible(css, body.replace(">S<", f">{SECRET}<"))
    assert SECRET not in text
    assert "shown" in text


@pytest.mark.req("REQ-SEC-003")
@pytest.mark.parametrize("case", sorted(SHOWN))
def test_req_sec_003_nested_rules_keep_what_shows(case: str) -> None:
    css, body = SHOWN[case]
    assert SECRET in _visible(css, body.replace(">S<", f">{SECRET}<"))


def test_req_ctx_005_flattened_selectors_and_bounds() -> None:
    text = ".a, .b[title='x,y'] { color: red; &:hover, .c { display: none } }"
    brace = text.index("{")
    assert [rule for rule, _ in flatten(text, brace)] == [
        ".a, .b[title='x,y']{color: red}",
        ".a:hover, .b[title='x,y']:hover, .a .c, .b[title='x,y'] .c{display: none}",
    ]
    parents = ", ".join(f".p{index}" for index in range(_MAX_SELECTORS + 1))
    wide = parents + "{ .c { display: none } }"
    assert flatten(wide, wide.index("{")) == []  # past the bound: left out, as before
    deep = ".a{" * 40 + "display:none" + "}" * 40
    assert len(flatten(deep, deep.index("{"))) <= 9
