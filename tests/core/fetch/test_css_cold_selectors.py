"""The plain-selector reader gives exactly what cssselect's path gives (REQ-CTX-005).

`matching._plain_group` reads selector groups of tags, classes, ids and
combinators without cssselect, on a first visit's hot path. A field that
differed (specificity, the subject's key, the XPath steps) would change
which rules match and win, so hidden text could come back: each group it
accepts is compared with cssselect's parse and translation, field by field
and by the elements matched on a generated document.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lxml import html as lxml_html

from rypsok.core.fetch.css_visibility import matching
from rypsok.core.fetch.css_visibility.matching import _plain_group, _Selector
from rypsok.core.fetch.css_visibility.sheets import _uncached_split

_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _cssselect_path(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[_Selector, ...]:
    with monkeypatch.context() as patched:
        patched.setattr(matching, "_plain_group", lambda _text: None)
        return matching._uncached_selectors(text)


def _fields(selector: _Selector) -> tuple[object, ...]:
    steps = selector._steps
    if steps is None:
        assert selector.tree is not None
        steps = matching._from_subject(selector.tree)
    return (
        selector.specificity,
        selector.classes,
        selector.ids,
        selector.key,
        selector.tag,
        selector.plain,
        steps,
    )


_NAMES = st.sampled_from(["a", "b", "B", "x-1", "_u", "-v", "1d", "--w", "a_b", "é"])
_TAGS = st.sampled_from(["", "*", "div", "DIV", "p", "h1", "span", "_t", "-t", "1t", "di-v"])


@st.composite
def _compounds(draw: st.DrawFn) -> str:
    names = draw(st.lists(st.tuples(st.sampled_from([".", "#"]), _NAMES), max_size=4))
    text = draw(_TAGS) + "".join(mark + name for mark, name in names)
    text = text or draw(st.sampled_from(["*", "div", ".a", ":hover"]))
    return text + draw(st.sampled_from(["", "", ":hover", ":focus:active", "::before", ":after"]))


_JOINS = st.sampled_from([" ", "  ", "\n", "\t", "\f", "\r\n", ">", " > ", "+", " ~ ", "~"])
_ODD = st.sampled_from(
    [
        *("", " ", ",", ">", ":hover", ":focus", ":HOVER", ":hovered", ":before", "::after"),
        *("::x", ":first-line", ":visited", ":active", ":link", "[x]", "\\61", "/* c */"),
        *("::before", "|"),
    ]
)


@st.composite
def _groups(draw: st.DrawFn) -> str:
    selectors = []
    for _ in range(draw(st.integers(1, 3))):
        parts = [draw(_compounds())]
        for _ in range(draw(st.integers(0, 3))):
            parts += [draw(_JOINS), draw(_compounds())]
        selectors.append("".join(parts))
    text = draw(st.sampled_from([",", ", ", " ,\n"])).join(selectors)
    if draw(st.booleans()):  # a near miss: something outside the subset, or an error
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(_ODD) + text[at:]
    return draw(st.sampled_from(["", " ", "\n  "])) + text + draw(st.sampled_from(["", " "]))


_DOCUMENT = lxml_html.fromstring(
    "<div id='a' class='a b'><p class='B x-1'><span id='b' class='_u'>1</span>"
    "<span class='-v a'>2</span></p><h1 id='x-1' class='a'><div class='b'>3</div></h1>"
    "<p id='_u'><span class='a a_b'>4</span></p><di-v class='a'>5</di-v></div>"
)


@pytest.mark.req("REQ-CTX-005")
@settings(max_examples=600, deadline=None)
@given(_groups())
@example("div.a > p#b .c, *")
@example("#a#b")
@example("a#x.b#y.c")
@example(".a ~ .b + p")
@example(".a:hover .b:focus.c, a::after, :visited")
@example("a > > b")
@example("DIV")
def test_plain_reader_equals_cssselect(text: str) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        expected = _cssselect_path(text, monkeypatch)
    read = _plain_group(text)
    if read is None:
        return  # cssselect's path, unchanged
    assert [_fields(selector) for selector in read] == [_fields(s) for s in expected]
    for mine, theirs in zip(read, expected, strict=True):
        assert mine.over_tree(_DOCUMENT) == theirs.over_tree(_DOCUMENT)
        every = list(_DOCUMENT.iter())
        assert mine.among(every) == theirs.among(every)


def test_the_generator_reaches_the_reader() -> None:
    """The property above is not vacuous: plain groups are read, others are declined."""
    assert _plain_group("div.a > p#b .c, *") is not None
    assert _plain_group(".a ~ .b + p") is not None
    assert _plain_group("a:hover, .b::before") is not None
    for outside in (
        "a:link",
        "a::before .b",
        "a:hovered",
        "a[x]",
        "\\61",
        "a > > b",
        "",
        "a,",
        ".1a",
        "p/**/",
    ):
        assert _plain_group(outside) is None


def _fixture_selectors() -> list[str]:
    style = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL | re.IGNORECASE)
    found: dict[str, None] = {}
    for path in sorted(_FIXTURES.rglob("*.html")):
        for css in style.findall(path.read_text(encoding="utf-8", errors="replace")):
            for text, brace in _uncached_split(css):
                found[text[:brace]] = None
    return list(found)


@pytest.mark.req("REQ-CTX-005")
def test_plain_reader_equals_cssselect_on_the_fixtures_sheets() -> None:
    texts = _fixture_selectors()
    read = 0
    with pytest.MonkeyPatch.context() as monkeypatch:
        for text in texts:
            mine = _plain_group(text)
            if mine is None:
                continue
            read += 1
            theirs = _cssselect_path(text, monkeypatch)
            assert [_fields(s) for s in mine] == [_fields(s) for s in theirs], text
    assert read >= 20, (read, len(texts))
