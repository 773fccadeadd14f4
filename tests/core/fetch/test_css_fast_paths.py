"""The hidden-text engine's fast paths give exactly what the plain per-rule code gives.

REQ-CTX-005: a pre-check that wrongly said "cannot hide" would let hidden text
through, so each vectorised or shortcut path is checked against the plain
definition it replaces, on sheets built from the pieces that matter.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rypsok.core.fetch.css_visibility import clear_caches, sheets
from rypsok.core.fetch.css_visibility.engine import _names_import
from rypsok.core.fetch.css_visibility.prechecks import could_hide
from rypsok.core.fetch.css_visibility.properties import _parse_whole_block, _uncached_block
from rypsok.core.fetch.css_visibility.sheets import _SheetRules

_RULE_PIECES = st.sampled_from(
    [
        ".a",
        "#b",
        "div",
        " ",
        "\n",
        "\t",
        ",",
        ">",
        "{",
        "}",
        ";",
        ":",
        "display:none",
        "display: none",
        "DISPLAY:NONE",
        "opacity:0",
        "opacity:.5",
        "left:-9999px",
        "transform:translate(-9999px)",
        "width:0",
        "height:1px",
        "clip:rect(0 0 0 0)",
        "color:",
        "color:#fff",
        "color:#333",
        "color:transparent",
        "color:rgba(0,0,0,0)",
        "background:#000",
        "background:#fff",
        "background-color:#333",
        "background:url(x.png)",
        "font:0/0 a",
        "margin:0",
        "/*",
        "*/",
        '"',
        "'",
        "\\",
        "é",
        "\x0b",
        "@media screen{",
        "@media print{",
        "@font-face{",
        "!important",
    ]
)


@pytest.mark.req("REQ-CTX-005")
@settings(max_examples=400, deadline=None, database=None)
@given(pieces=st.lists(_RULE_PIECES, max_size=40), external=st.booleans())
def test_each_rules_hiding_flag_equals_could_hide_of_its_text(
    pieces: list[str], external: bool
) -> None:
    """REQ-CTX-005: the flags found from the whole sheet's text at once (one search per
    hiding form and colour mark) equal `could_hide` of each rule's own text."""
    css = "".join(pieces)
    sheet = _SheetRules(css)
    expected = tuple(could_hide(text, external=external) for text, _ in sheet.rules)
    assert sheet.hiding(external) == expected


@pytest.mark.req("REQ-CTX-005")
def test_hiding_flags_single_out_the_rules_that_could_hide() -> None:
    """REQ-CTX-005: in a sheet of many rules, exactly the hiding and colour rules are
    flagged, including one whose only hiding form is its last, and a white text colour."""
    rules = [".keep{margin:0}", ".gone{ display : none }", ".pad{padding:1px}"]
    rules += [".white{color:#fff}", ".grey{color:#333}", ".dark{background:#000}"]
    rules += [".last{margin:0;opacity:0}"]
    sheet = _SheetRules("\n".join(rules))
    assert sheet.hiding(False) == (False, True, False, True, False, True, True)
    # With an external sheet the page colours are unknown: white alone proves nothing.
    assert sheet.hiding(True) == (False, True, False, False, False, False, True)


_DECLARATIONS = st.sampled_from(
    [
        "display:none",
        " display : block ",
        "DISPLAY:None!important",
        "opacity:0",
        "opacity: .5 !important",
        "color:#fff",
        "color:rgb(0 0 0 / 0)",
        "background:#000 url(x.png)",
        "font-size:0",
        "font:12px/1 serif",
        "left:-9999px",
        "margin:0 0 0 -10000px",
        "transform:translate(-200vw)",
        "clip:rect(0,0,0,0)",
        "width:0",
        "overflow:hidden",
        "padding:1px",
        "",
        "\u00a0display:none",
    ]
)


@pytest.mark.req("REQ-CTX-005")
@settings(max_examples=300, deadline=None, database=None)
@given(declarations=st.lists(_DECLARATIONS, max_size=12))
def test_a_simple_block_read_declaration_by_declaration_equals_the_whole_block(
    declarations: list[str],
) -> None:
    """REQ-CTX-005: a block cut at its semicolons, each declaration read once and
    remembered, gives the declarations (values, `!important`, positions) that
    tinycss2 gives for the whole block; read again from the cache, the same."""
    content = ";".join(declarations)
    clear_caches()
    first = _uncached_block(content)
    assert first == _parse_whole_block(content)
    assert _uncached_block(content) == first
    assert [declared.position for declared in first] == list(range(len(first)))


@pytest.mark.req("REQ-CTX-005")
@settings(max_examples=300, deadline=None, database=None)
@given(
    pieces=st.lists(
        st.sampled_from(["@", "import", "IMPORT", "ImPoRt", "im", "port", "İ", "x", " ", "@media"]),
        max_size=12,
    )
)
def test_an_import_is_found_in_any_letter_case(pieces: list[str]) -> None:
    """REQ-CTX-005: `@import` in any case marks the page's colours as unknown (an
    imported sheet is not read); found without lowering the whole sheet, the same as
    searching the lowered sheet."""
    css = "".join(pieces)
    assert _names_import(css) == ("@import" in css.lower())


@pytest.mark.req("REQ-CTX-005")
@settings(max_examples=500, deadline=None, database=None)
@given(pieces=st.lists(_RULE_PIECES, max_size=40))
@example(pieces=[".a", "{", "/*", "}", "*/", "display:none", "}", ".b", "{", "}"])
@example(pieces=[".a", "/*", ",", "*/", "{", "}", "@media screen{", ".b", "{", "}", "}"])
@example(pieces=[".a", ";", ".b", "{", "}", "}", ".c", "{", '"', "}", '"', "}"])
def test_the_splitters_one_match_per_simple_rule_cuts_what_its_general_steps_cut(
    pieces: list[str],
) -> None:
    """REQ-CTX-005: a rule cut by one match (`_SIMPLE_RULE`) is the rule, with its
    block's place, that the general steps cut; at-rules, strings, comments, escapes and
    stray braces or semicolons around it leave the sheet's rules as they were."""
    css = "".join(pieces)
    fast = sheets._uncached_split(css)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sheets, "_SIMPLE_RULE", re.compile(r"(?!)"))  # never matches
        assert sheets._uncached_split(css) == fast


_MATCHING_PAGE = """<html><body>
<div id="top" class="a b"><p class="a">one <span class="a c">two</span></p>
<ul class="b"><li class="a">x</li><li class="a b">y</li><li>z</li></ul></div>
<section class="c"><p class="a">three</p><em class="a"></em><p class="b a">four</p></section>
<div class="a"><div class="a"><p class="a c">deep</p></div></div>
</body></html>"""

_SELECTORS = [
    ".a",
    "div .a",
    "div > .a",
    "p.a",
    ".b .a",
    "#top .a",
    "ul > li.a:first-child",
    "li.a:last-child",
    ".a + .a",
    ".a ~ p.a",
    "section .a:not(em)",
    ".a:nth-child(2)",
    "div.a > div.a p.c",
    ".a:empty",
    '[class~="c"].a',
    ".a:only-child",
    "p.a:first-of-type",
    "li:not(.b)",
]


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("text", _SELECTORS)
def test_a_selector_among_elements_equals_testing_each_on_its_own(text: str) -> None:
    """`among` (one XPath over a node set) gives `on` element by element, order and repeats."""
    from lxml import html  # noqa: PLC0415 - only this test builds a tree by hand

    from rypsok.core.fetch.css_visibility.matching import _compile_selectors  # noqa: PLC0415

    root = html.fromstring(_MATCHING_PAGE)
    named = list(root.iter("div", "p", "span", "ul", "li", "section", "em"))
    orders = [named, named[::-1], named + named[:3], named[1::2], []]
    (selector,) = _compile_selectors(text)
    for elements in orders:
        assert selector.among(elements) == [e for e in elements if selector.on(e)]
