"""The page's names decide which rules are read at all, and no rule that can hide is lost.

The engine reads a sheet's rules one by one only when some selector of the rule
names nothing but classes and ids the page carries (`_SheetRules.viable`, found
for the whole sheet at once). A rule that index wrongly left out would let
hidden text through, so each way a selector can reach an element without
spelling its class plainly is checked here to still hide (REQ-CTX-005), and the
index is checked to keep every rule the per-rule sketches keep.
REQ-SEC-003: what shows stays verbatim.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import HiddenStats, clear_caches, drop_hidden
from rypsok.core.fetch.css_visibility.engine import _Engine
from rypsok.core.fetch.css_visibility.sheets import _SheetRules, _sketch
from rypsok.core.fetch.parse import Element, parse_bounded


def _tree(html: str) -> Element:
    return parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root


def _visible(html: str) -> tuple[str, HiddenStats]:
    root = _tree(html)
    clear_caches()
    stats = drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split()), stats


# Selectors that reach an element whose classes and ids do not appear in them as
# `.name`/`#name`, or that name an absent class where it is not required.
_REACHED_WITHOUT_ITS_NAME = {
    "negation of an absent class": "p:not(.absent)",
    "negation of an absent id": "p:not(#absent)",
    "is() with one absent class": ":is(.absent, .secret)",
    "where() with one absent class": "p:where(.absent, .secret)",
    "has() of a present child": "div:has(> .secret)",
    "class by attribute selector": 'p[class~="secret"]',
    "class by substring": 'p[class*="ecre"]',
    "id by attribute prefix": 'p[id^="sec"]',
    "escaped class": ".\\73 ecret",
    "escaped id": "#\\73 ecret-id",
    "escaped colon in a class": ".a\\:b",
    "escaped digit first": ".\\31 0x",
    "group with one absent part": ".absent, .secret",
    "group with an absent part last": ".secret,.absent .x",
    "absent class in an attribute value": '[data-x=".absent"]',
    "universal subject": ".wrap *",
    "tag only": "p",
    "comment inside the selector": "p/* .absent */.secret",
    "non-ASCII class": ".café",
    "pseudo-class after the class": ".secret:first-child",
    "descendant of a present class": ".wrap .secret",
    "under the body": "body p",
}

_BODY = (
    '<div class="wrap"><p class="secret a:b 10x café" id="secret-id" data-x=".absent">SECRET</p>'
    '<div><span class="inner">INNER</span></div></div><p class="kept">SHOWN</p>'
)


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
@pytest.mark.parametrize(
    "selector", _REACHED_WITHOUT_ITS_NAME.values(), ids=list(_REACHED_WITHOUT_ITS_NAME)
)
def test_a_rule_the_page_index_cannot_read_plainly_still_hides(selector: str) -> None:
    """REQ-CTX-005, REQ-SEC-003: the page carries none of the rule's absent names, or
    none spelled plainly, and the rule still hides what it matches; a sheet of many
    rules for absent classes around it changes nothing."""
    noise = "".join(f".absent-{n}{{display:none}}.x-{n} .y{{display:block}}" for n in range(50))
    css = f"{noise}{selector}{{display:none}}{noise}"
    body = _BODY.replace('<p class="kept">', '<p class="kept wrap-kept">')
    text, stats = _visible(f"<html><head><style>{css}</style></head><body>{body}</body></html>")
    assert "SECRET" not in text
    assert stats.elements_removed >= 1
    assert not stats.sheets_truncated


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
def test_a_rule_for_absent_names_hides_nothing_and_leaves_the_page_verbatim() -> None:
    """REQ-CTX-005, REQ-SEC-003: rules whose every selector names an absent class or id
    are skipped, and what the page shows comes back as it was."""
    css = ".absent{display:none} #nope p{opacity:0} .secret.absent{display:none}"
    text, stats = _visible(f"<html><head><style>{css}</style></head><body>{_BODY}</body></html>")
    assert text == "SECRET INNER SHOWN"
    assert stats.elements_removed == 0


@pytest.mark.req("REQ-CTX-005")
def test_skipped_rules_spend_no_rule_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-CTX-005: with room for one parsed rule (LIM-V3), a hundred rules for absent
    classes before the one that applies do not use it up, as before the index."""
    monkeypatch.setattr(limits, "STYLE_RULES", 1)
    noise = "".join(f".absent-{n}{{display:none}}" for n in range(100))
    css = f"{noise}.secret{{display:none}}"
    text, stats = _visible(f"<html><head><style>{css}</style></head><body>{_BODY}</body></html>")
    assert "SECRET" not in text and "SHOWN" in text
    assert not stats.sheets_truncated


@pytest.mark.req("REQ-CTX-005")
def test_re_showing_rule_for_a_present_class_is_still_read() -> None:
    """REQ-CTX-005: the second pass reads only rules the index keeps; one that re-shows
    a hidden element by a class it carries is among them, one for an absent class not."""
    css = ".d-none{display:none}.d-lg-block{display:block}.absent{display:block}"
    body = '<p class="d-none d-lg-block">SHOWN-1</p><p class="d-none">SECRET</p>'
    text, _ = _visible(f"<html><head><style>{css}</style></head><body>{body}</body></html>")
    assert text == "SHOWN-1"


@pytest.mark.req("REQ-CTX-005")
def test_page_names_are_the_classes_and_ids_elements_carry() -> None:
    """REQ-CTX-005: the names the sheets are filtered by are those of the engine's index:
    classes split at whitespace, ids stripped, empty ones left out, other attributes'
    values not counted."""
    root = _tree(
        '<html><body><p class=" a  b\tc" id=" i ">x</p><p id="">y</p>'
        '<p data-class="d" title="#e">z</p></body></html>'
    )
    classes, ids = _Engine(root)._present()
    assert (set(classes), set(ids)) == ({"a", "b", "c"}, {"i"})


_NAMES = ["a", "b", "absent", "é", "a-b", "_x", "1"]
_SELECTOR_PIECES = st.sampled_from(
    [
        *(f".{name}" for name in _NAMES),
        *(f"#{name}" for name in _NAMES),
        *("p", "div", "*", " ", "\t", "\n", "\r", "\f", "\x0b", "\xa0", ">", "+", "~", ","),
        *(":hover", ":not(", "(", ")", "[", "]", "[class~=a]", '"', "'", "\\", "\\61 "),
        *("/*", "*/", "{", "}", ";", "display:none", "@media screen{", "@media print{", "é", "."),
    ]
)


def _sketch_keeps(selectors: str, classes: set[str], ids: set[str]) -> bool:
    """What the engine's per-rule check (`_Engine._may_apply` without keys) says."""
    return any(part.classes <= classes and part.ids <= ids for part in _sketch(selectors))


@pytest.mark.req("REQ-CTX-005")
@settings(max_examples=500, deadline=None, database=None)
@given(
    pieces=st.lists(_SELECTOR_PIECES, max_size=30),
    classes=st.sets(st.sampled_from(_NAMES)),
    ids=st.sets(st.sampled_from(_NAMES)),
)
def test_the_sheet_index_keeps_every_rule_the_sketches_keep(
    pieces: list[str], classes: set[str], ids: set[str]
) -> None:
    """REQ-CTX-005: whatever the selectors (escapes, brackets, comments, strings, every
    kind of whitespace), every rule whose sketch may match the page's names is kept,
    in order; a rule left out is one the sketch refuses too."""
    sheet = _SheetRules("".join(pieces) + "{display:none}")
    names = dict.fromkeys([f".{c}" for c in classes] + [f"#{i}" for i in ids], "")
    kept = sheet.viable(names, len(sheet.rules))
    assert kept == sorted(kept)
    for index, (text, brace) in enumerate(sheet.rules):
        if _sketch_keeps(text[:brace], classes, ids):
            assert index in kept, text


@pytest.mark.req("REQ-CTX-005")
def test_the_sheet_index_leaves_out_rules_whose_every_selector_names_an_absent_class() -> None:
    """REQ-CTX-005: the index is not a no-op: of five rules, the three whose every
    selector needs an absent class or id are left out; only the first `count` are read."""
    sheet = _SheetRules(".a{x:1}.gone{x:1}.a .gone,#nope{x:1}.gone,.a>p{x:1}#i.gone p{x:1}")
    names = {".a": "", "#i": ""}
    assert sheet.viable(names, 5) == [0, 3]
    assert sheet.viable(names, 3) == [0]


@pytest.mark.req("REQ-CTX-005")
def test_the_sheet_index_remembers_only_what_the_pages_names_decide() -> None:
    """REQ-CTX-005: a sheet read by pages with different names (as a site's pages are)
    gives each page what a fresh sheet gives it, also when a page comes back."""
    css = ".a{x:1}.gone{x:1}.a .gone,#nope{x:1}.gone,.a>p{x:1}#i.gone p{x:1}.gone.a{x:1}"
    sheet = _SheetRules(css)
    pages = [{".a": "", "#i": ""}, {".gone": "", ".a": ""}, {".a": "", "#i": ""}, {}]
    for names in [*pages, *pages]:
        for count in (len(sheet.rules), 3):
            assert sheet.viable(names, count) == _SheetRules(css).viable(names, count)
    assert sheet.viable({".gone": "", ".a": ""}, 6) == [0, 1, 2, 3, 5]
    assert sheet.viable({}, 6) == []
