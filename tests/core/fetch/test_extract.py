"""Main-content extraction: the fixture corpus, Markdown, noise, bounds, hostile input."""

from __future__ import annotations

import json
import pathlib
import re
import tracemalloc
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.boundary.invisible import remove_invisible
from rypsok.core.fetch import parse as parse_module
from rypsok.core.fetch.decode import decode_body, media_type, sniff_kind
from rypsok.core.fetch.extract import (
    NO_CONTENT,
    UNPARSEABLE,
    Extracted,
    ExtractionFailed,
    extract_html,
    extract_text,
)
from rypsok.core.fetch.extract.cleaning import may_hold_invisible

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "fixtures" / "pages"
BASE = "https://site.example/dir/page.html"


@dataclass(frozen=True)
class Fixture:
    name: str
    body: bytes
    expect: dict[str, Any]

    def extract(self) -> tuple[Extracted, str]:
        content_type = self.expect["content_type"]
        kind = sniff_kind(media_type(content_type), self.body)
        text, charset = decode_body(self.body, content_type)
        if kind == "html":
            return extract_html(text, base_url=self.expect["base_url"]), charset
        assert kind in ("text", "markdown")
        return extract_text(text, kind=kind), charset


def _corpus() -> list[Fixture]:
    fixtures = []
    for sidecar in sorted(CORPUS.glob("*.expect.json")):
        name = sidecar.name.removesuffix(".expect.json")
        (page,) = (path for path in CORPUS.glob(f"{name}.*") if path != sidecar)
        expect = json.loads(sidecar.read_text(encoding="utf-8"))
        fixtures.append(Fixture(name, page.read_bytes(), expect))
    return fixtures


CORPUS_FIXTURES = _corpus()


def flat(text: str) -> str:
    return " ".join(text.split())


def html(body: str, head: str = "<title>Test page</title>") -> str:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>"


def md(body: str, **kwargs: Any) -> str:
    return extract_html(html(body), base_url=BASE, **kwargs).markdown


PARAGRAPH = "<p>This paragraph is long enough to count as content, with a comma, and more.</p>"


# -- the extraction fixture corpus (REQ-FETCH-002) --------------------------------------------


@pytest.mark.req("REQ-FETCH-002")
def test_corpus_covers_the_required_kinds_of_page() -> None:
    """REQ-FETCH-002: at least twelve fixtures, with HTML, text and Markdown among them."""
    assert len(CORPUS_FIXTURES) >= 12
    kinds = {sniff_kind(media_type(f.expect["content_type"]), f.body) for f in CORPUS_FIXTURES}
    assert kinds == {"html", "text", "markdown"}
    for fixture in CORPUS_FIXTURES:
        assert fixture.expect["present"] and fixture.expect["absent"], fixture.name


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002", "REQ-CTX-005")
@pytest.mark.parametrize("fixture", CORPUS_FIXTURES, ids=lambda fixture: fixture.name)
def test_corpus_main_text_present_in_order_and_chrome_absent(fixture: Fixture) -> None:
    """REQ-FETCH-002, REQ-PAGE-002, REQ-CTX-005: expected text present, first; chrome absent."""
    extracted, _ = fixture.extract()
    output = flat(extracted.markdown)
    position = -1
    for expected in fixture.expect["present"]:
        found = output.find(flat(expected), position + 1 if fixture.expect["ordered"] else 0)
        assert found >= 0, f"{fixture.name}: missing or out of order: {expected!r}"
        position = found
    assert output.startswith(flat(fixture.expect["first"])), output[:200]
    for unwanted in fixture.expect["absent"]:
        assert unwanted not in extracted.markdown, f"{fixture.name}: {unwanted!r}"
        if flat(unwanted):
            assert flat(unwanted) not in output, f"{fixture.name}: {unwanted!r}"
    assert extracted.partial is False


@pytest.mark.req("REQ-FETCH-004")
@pytest.mark.parametrize("fixture", CORPUS_FIXTURES, ids=lambda fixture: fixture.name)
def test_corpus_markdown_structure(fixture: Fixture) -> None:
    """REQ-FETCH-004: headings, lists, quotes, code fences, tables and absolute links."""
    extracted, _ = fixture.extract()
    for snippet in fixture.expect["markdown"]:
        assert snippet in extracted.markdown, f"{fixture.name}: {snippet!r}"


@pytest.mark.req("REQ-PAGE-007", "REQ-SEC-015")
@pytest.mark.parametrize("fixture", CORPUS_FIXTURES, ids=lambda fixture: fixture.name)
def test_corpus_title_charset_and_cleaning(fixture: Fixture) -> None:
    """REQ-PAGE-007, REQ-SEC-015: declared or detected charset, title, invisible characters."""
    extracted, charset = fixture.extract()
    assert extracted.title == fixture.expect["title"]
    if "charset" in fixture.expect:
        assert charset == fixture.expect["charset"]
    assert extracted.invisible_removed >= fixture.expect.get("invisible_removed_at_least", 0)
    assert remove_invisible(extracted.markdown)[1] == 0


# -- Markdown rendering (REQ-FETCH-004) -------------------------------------------------------


@pytest.mark.req("REQ-FETCH-004")
def test_headings_paragraphs_and_emphasis() -> None:
    """REQ-FETCH-004: ATX headings by level, paragraphs apart, strong and emphasis kept."""
    out = md("<h1>Top</h1><p>One <b>bold</b> and <em>soft </em>word.</p><h3>Sub <i>it</i></h3>")
    assert out == "# Top\n\nOne **bold** and *soft* word.\n\n### Sub *it*"


@pytest.mark.req("REQ-FETCH-004")
def test_links_become_absolute_markdown_links() -> None:
    """REQ-FETCH-004: relative, root-relative and protocol-relative links resolve to absolute."""
    out = md(
        '<p><a href="next.html">next</a> <a href="/root">root</a> '
        '<a href="//cdn.example/x">cdn</a> <a href="https://other.example/a b(c)">odd</a> '
        '<a href="#top">top</a> '
        '<a href="javascript:alert(1)">js</a> <a href="mailto:a@b.example">mail</a> '
        '<a href="data:text/html,x">data</a> <a href="http://[::1">broken</a> <a href="x"></a></p>'
    )
    assert out == (
        "[next](https://site.example/dir/next.html) [root](https://site.example/root) "
        "[cdn](https://cdn.example/x) [odd](https://other.example/a%20b%28c%29) top js mail "
        "data broken"
    )


@pytest.mark.req("REQ-FETCH-004")
def test_base_href_is_honoured_only_for_http() -> None:
    """REQ-FETCH-004: `<base href>` resolves links when it is http(s); otherwise the page URL."""
    page = '<p><a href="a">link</a></p>'
    based = html(page, '<base href="https://cdn.example/docs/"><title>t</title>')
    assert "(https://cdn.example/docs/a)" in extract_html(based, base_url=BASE).markdown
    hostile = html(page, '<base href="javascript:alert(1)//"><title>t</title>')
    assert "(https://site.example/dir/a)" in extract_html(hostile, base_url=BASE).markdown


@pytest.mark.req("REQ-FETCH-004")
def test_lists_nest_and_ordered_lists_count_from_start() -> None:
    """REQ-FETCH-004: `-` and `n.` items, nested by indentation, `start` honoured."""
    out = md(
        "<ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>"
        '<ol start="7"><li>seven</li><li>eight</li></ol><p>after</p>'
    )
    assert out == "- one\n- two\n  - nested\n\n7. seven\n8. eight\n\nafter"


@pytest.mark.req("REQ-FETCH-004")
def test_quotes_code_blocks_and_inline_code() -> None:
    """REQ-FETCH-004: `>` quotes; fenced code with language; backticks never break a fence."""
    out = md(
        "<blockquote><p>quoted</p><p>twice</p></blockquote>"
        '<pre><code class="language-rust">fn main() {\n    x(); // ```\n}\n</code></pre>'
        "<p>Use <code>a`b</code> here.</p>"
    )
    assert out == (
        "> quoted\n>\n> twice\n\n````rust\nfn main() {\n    x(); // ```\n}\n````\n\n"
        "Use ``a`b`` here."
    )


@pytest.mark.req("REQ-FETCH-004")
def test_tables_render_as_pipe_tables_and_layout_tables_as_text() -> None:
    """REQ-FETCH-004: a data table becomes a pipe table; a one-column table becomes text."""
    out = md(
        "<table><tr><th>Name</th><th>Value</th></tr><tr><td>a|b</td><td><b>2</b></td></tr>"
        "<tr><td>only</td></tr></table>"
        "<table><tr><td>Layout cell one</td></tr><tr><td>Layout cell two</td></tr></table>"
    )
    assert out == (
        "| Name | Value |\n| --- | --- |\n| a\\|b | **2** |\n| only |  |\n\n"
        "Layout cell one\n\nLayout cell two"
    )


@pytest.mark.req("REQ-FETCH-004")
def test_line_breaks_rules_and_images() -> None:
    """REQ-FETCH-004: `<br>` breaks a line, `<hr>` is a rule, an image keeps its alt text."""
    out = md('<p>line one<br>line two <img src="x.png" alt="ALT TEXT"></p><hr><p>end</p>')
    assert out == "line one\nline two ![ALT TEXT](https://site.example/dir/x.png)\n\n---\n\nend"


@pytest.mark.req("REQ-FETCH-004")
def test_plain_text_and_markdown_pass_through() -> None:
    """REQ-FETCH-004: text keeps its lines; Markdown keeps its structure and gets a title."""
    text = extract_text("line one\r\nline two\r\n\r\n\r\n\r\nlast  \n", kind="text")
    assert text == Extracted("line one\nline two\n\nlast", None, False, 0)
    markdown = extract_text("intro\n\n## Install\n\n```sh\nmake\n```\n", kind="markdown")
    assert markdown.title == "Install"
    assert markdown.markdown == "intro\n\n## Install\n\n```sh\nmake\n```"


# -- noise removal (REQ-CTX-005, REQ-FETCH-009) -----------------------------------------------


@pytest.mark.req("REQ-CTX-005")
def test_scripts_styles_comments_and_non_rendered_elements_are_removed() -> None:
    """REQ-CTX-005: script, style, noscript, template, comments, head, closed dialogs go."""
    out = md(
        "<script>var SCRIPT_TEXT = 1;</script><style>.STYLE_TEXT{}</style>"
        "<noscript>NOSCRIPT_TEXT</noscript><template><p>TEMPLATE_TEXT</p></template>"
        "<!-- COMMENT_TEXT --><?pi PI_TEXT?><dialog>DIALOG_TEXT</dialog>"
        "<dialog open><p>Open dialog text</p></dialog><p>Visible text</p>"
        "<svg><text>SVG_TEXT</text></svg><select><option>OPTION_TEXT</option></select>",
    )
    assert out == "Open dialog text\n\nVisible text"


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize(
    "hidden",
    [
        "<p hidden>HIDDEN</p>",
        '<p hidden="until-found">HIDDEN</p>',
        '<span aria-hidden="true">HIDDEN</span>',
        '<span aria-hidden=" TRUE ">HIDDEN</span>',
        '<div style="display:none">HIDDEN</div>',
        '<div style="color: red; DISPLAY : none !important">HIDDEN</div>',
        '<div style="display:/* x */none">HIDDEN</div>',
        '<div style="visibility: hidden">HIDDEN</div>',
        '<div style="visibility:collapse">HIDDEN</div>',
        '<span style="font-size:0">HIDDEN</span>',
        '<span style="font-size: 0px;">HIDDEN</span>',
        '<span style="opacity:0">HIDDEN</span>',
        '<div style="position:absolute;left:-9999px">HIDDEN</div>',
        '<div style="text-indent:-10000em">HIDDEN</div>',
        '<div style="clip: rect(0 0 0 0); position: absolute">HIDDEN</div>',
        '<div style="width:0;height:0;overflow:hidden">HIDDEN</div>',
        '<div class="sr-only">HIDDEN</div>',
        '<div class="x d-none">HIDDEN</div>',
        '<div class="ghost">HIDDEN</div>',
        '<div id="whisper">HIDDEN</div>',
        '<input type="hidden" value="HIDDEN">',
    ],
)
def test_content_a_browser_would_not_render_is_removed(hidden: str) -> None:
    """REQ-CTX-005: hidden attribute, aria-hidden, hiding styles and hiding classes."""
    head = "<title>t</title><style>.ghost { display: none } #whisper{visibility:hidden}</style>"
    page = html(f"<p>Before the hidden part.</p>{hidden}<p>After the hidden part.</p>", head)
    out = extract_html(page, base_url=BASE).markdown
    assert "HIDDEN" not in out
    assert "Before the hidden part." in out and "After the hidden part." in out


@pytest.mark.req("REQ-CTX-005")
def test_visible_styles_and_media_scoped_rules_keep_content() -> None:
    """REQ-CTX-005: only hiding declarations hide; a rule inside @media is not applied."""
    head = "<title>t</title><style>@media print { .screen { display: none } } .b{color:red}</style>"
    body = (
        '<div class="screen">SCREEN TEXT</div><div style="display:block;opacity:0.5">HALF</div>'
        '<div style="font-size:0.9em;left:-20px">SMALL</div><p class="b">RED</p>'
    )
    out = extract_html(html(body, head), base_url=BASE).markdown
    assert out == "SCREEN TEXT\n\nHALF\n\nSMALL\n\nRED"


@pytest.mark.req("REQ-CTX-005")
def test_site_chrome_goes_but_an_articles_own_header_stays() -> None:
    """REQ-CTX-005: nav, site header/footer/aside go; header inside an article stays."""
    out = md(
        "<header>SITE HEADER</header><nav>NAV LINKS</nav>"
        "<article><header><h1>Article title</h1></header>" + PARAGRAPH + "</article>"
        '<aside>SIDEBAR</aside><footer>SITE FOOTER</footer><div role="navigation">ROLE NAV</div>'
    )
    assert out.startswith("# Article title\n\nThis paragraph")
    for chrome in ("SITE HEADER", "NAV LINKS", "SIDEBAR", "SITE FOOTER", "ROLE NAV"):
        assert chrome not in out


@pytest.mark.req("REQ-CTX-005")
def test_forms_go_unless_they_wrap_the_page() -> None:
    """REQ-CTX-005: a search form goes; a page wrapped in one `<form>` keeps its content."""
    assert md(f'<form><input name="q"><p>SEARCH HELP</p></form>{PARAGRAPH}') == flat(
        PARAGRAPH.removeprefix("<p>").removesuffix("</p>")
    )
    wrapped = md(f"<form><div>{PARAGRAPH * 3}</div></form>")
    assert wrapped.count("This paragraph is long enough") == 3


@pytest.mark.req("REQ-CTX-005")
def test_named_chrome_goes_unless_it_holds_content() -> None:
    """REQ-CTX-005: cookie, share and related blocks go; a content-rich one is kept."""
    out = md(
        '<div class="cookie-banner"><p>We use cookies to improve things, please accept.</p></div>'
        '<div class="share-bar"><a href="/s">Share this</a></div>'
        f'<article>{PARAGRAPH}</article><div class="related-posts">{PARAGRAPH * 3}</div>'
    )
    assert "cookies" not in out and "Share this" not in out
    assert out.count("This paragraph is long enough") == 1  # the article was chosen


@pytest.mark.req("REQ-FETCH-009", "REQ-CTX-005")
def test_meta_refresh_is_not_followed_and_scripts_do_not_run() -> None:
    """REQ-FETCH-009: a refresh target and script output never appear; the page's own text does."""
    head = (
        '<title>t</title><meta http-equiv="refresh" content="0; url=https://evil.example/">'
        "<script>document.write('<p>WRITTEN BY SCRIPT</p>')</script>"
    )
    out = extract_html(html("<p>The page's own words.</p>", head), base_url=BASE)
    assert out.markdown == "The page's own words."


# -- main content (REQ-FETCH-002, REQ-PAGE-002) -----------------------------------------------


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
def test_main_is_preferred_over_larger_surrounding_text() -> None:
    """REQ-PAGE-002: `<main>` wins even when the chrome around it holds more text."""
    sidebar = "<div class='col'>" + "<p>Sidebar prose that goes on for a while, and on.</p>" * 6
    out = md(f"{sidebar}</div><main><h2>Real</h2>{PARAGRAPH}</main>{sidebar}</div>")
    assert out.startswith("## Real") and "Sidebar" not in out


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
def test_role_main_and_a_single_article_inside_main() -> None:
    """REQ-PAGE-002: role="main" is a main; main narrows to its only substantial article."""
    role = md(f'<div>Chrome words</div><div role="main">{PARAGRAPH}</div>')
    assert role.startswith("This paragraph") and "Chrome" not in role
    narrowed = md(
        f"<main><p>Kicker line that is short</p><article>{PARAGRAPH * 2}</article></main>"
    )
    assert "Kicker" not in narrowed


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
def test_without_landmarks_the_dense_text_wins_over_link_lists() -> None:
    """REQ-FETCH-002: the scoring picks prose over link-heavy blocks when no landmark exists."""
    links = "".join(f'<a href="/l{i}">Link number {i} text</a> ' for i in range(40))
    body = f'<div id="menu">{links}</div><div id="story"><h1>Headline</h1>{PARAGRAPH * 4}</div>'
    out = md(body + f'<div class="more">{links}</div>')
    assert out.startswith("# Headline") and "Link number" not in out


@pytest.mark.req("REQ-FETCH-002")
def test_posts_of_a_thread_are_gathered_under_their_container() -> None:
    """REQ-FETCH-002: near-equal candidates under one ancestor promote that ancestor."""
    post = "<div class='post'><div class='body'>{}</div></div>"
    posts = "".join(post.format(PARAGRAPH.replace("This", f"Post {i}:")) for i in range(4))
    out = md(f"<div id='nav'><a href='/'>Home</a></div><div id='thread'>{posts}</div>")
    assert [f"Post {i}:" in out for i in range(4)] == [True] * 4


# -- bounds enforced while parsing (REQ-PAGE-006, REQ-TEST-006) --------------------------------


@pytest.mark.req("REQ-PAGE-006", "REQ-TEST-006")
def test_node_bound_stops_the_parse_and_marks_partial() -> None:
    """REQ-PAGE-006: past LIM-F10 nodes parsing stops; content before the bound is kept."""
    items = "".join(f"<p>Item {i} of the list.</p>" for i in range(3_000))
    result = extract_html(html(items), base_url=BASE, max_nodes=1_000)
    assert result.partial is True
    assert "Item 0 of the list." in result.markdown
    # html, head, title and body, then 996 paragraphs make the 1,000 nodes.
    assert result.markdown.endswith("Item 995 of the list.")
    assert "Item 996 of the list." not in result.markdown
    within = extract_html(html(items), base_url=BASE, max_nodes=3_004)
    assert within.partial is False and "Item 2999 of the list." in within.markdown


@pytest.mark.req("REQ-PAGE-006", "REQ-TEST-006", "REQ-SEC-014")
def test_depth_bound_stops_the_parse_and_marks_partial() -> None:
    """REQ-PAGE-006: past LIM-F11 levels parsing stops; text before the deep part is kept."""
    deep = "<div>" * 400 + "DEEP TEXT" + "</div>" * 400
    result = extract_html(html(f"<p>Before the nest.</p>{deep}<p>AFTER</p>"), base_url=BASE)
    assert result.partial is True
    assert result.markdown == "Before the nest."
    shallow = "<div>" * 100 + "Deep but allowed." + "</div>" * 100
    assert extract_html(html(shallow), base_url=BASE) == Extracted(
        "Deep but allowed.", "Test page", False, 0
    )


@pytest.mark.req("REQ-PAGE-006", "REQ-TEST-006")
def test_unclosed_formatting_tags_report_the_loss_instead_of_hiding_it() -> None:
    """REQ-PAGE-006: 300 unclosed `<font>` reach the depth bound: partial, never silent."""
    result = extract_html(
        html("<p>Start of page.</p>" + "<font>" * 300 + "<p>x</p>"), base_url=BASE
    )
    assert result.partial is True and result.markdown == "Start of page."


class _CountingParser:
    """Wraps lxml's pull parser to record how many characters were fed to it."""

    fed = 0

    def __init__(self, real: Any, **kwargs: Any) -> None:
        self._parser = real(**kwargs)

    def feed(self, data: str) -> None:
        _CountingParser.fed += len(data)
        self._parser.feed(data)

    def read_events(self) -> Any:
        return self._parser.read_events()

    def close(self) -> Any:
        return self._parser.close()


@pytest.mark.req("REQ-PAGE-006", "REQ-TEST-006")
@pytest.mark.parametrize(
    "hostile",
    [
        pytest.param("<div>" * 10_000_000, id="50MB-nested-divs"),
        pytest.param("<p>x</p>" * 6_500_000, id="52MB-of-paragraphs"),
        pytest.param("<table><tr><td>" * 3_500_000, id="52MB-nested-tables"),
        pytest.param("<ul><li>" * 6_500_000, id="52MB-nested-lists"),
    ],
)
def test_bounds_are_enforced_during_the_parse(
    hostile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-PAGE-006, REQ-TEST-006: a bound stops the feed; a 50 MB page costs one bounded prefix."""
    real = parse_module.etree.HTMLPullParser
    monkeypatch.setattr(
        parse_module.etree,
        "HTMLPullParser",
        lambda **kwargs: _CountingParser(real, **kwargs),
    )
    _CountingParser.fed = 0
    result = extract_html(html("<p>Lead paragraph.</p>" + hostile), base_url=BASE)
    assert result.partial is True
    assert result.markdown.startswith("Lead paragraph.")
    # Stopped within one slice of the point where the bound was crossed.
    assert _CountingParser.fed <= 2_000_000


@pytest.mark.req("REQ-PAGE-006", "REQ-TEST-006")
@pytest.mark.timeout(10)
@pytest.mark.parametrize("depth", [10_000_000, 100])
def test_a_50mb_nested_page_takes_no_longer_than_a_shallow_one(depth: int) -> None:
    """REQ-PAGE-006: 50 MB of nesting and 50 MB of flat text both finish within the timeout."""
    nested = "<p>Lead text.</p>" + "<div>" * depth + "x"
    document = nested + "<span>flat text </span>" * ((50_000_000 - len(nested)) // 23)
    assert len(document) >= 49_000_000
    result = extract_html(document, base_url=BASE)
    assert result.partial is True  # the depth bound, or the node bound of the flat spans
    assert result.markdown


@pytest.mark.req("REQ-SEC-014", "REQ-TEST-006")
def test_rendering_is_iterative_and_its_nesting_bounded() -> None:
    """REQ-SEC-014: 1,000 nested quotes and lists render without recursion, indented to 8."""
    quotes = "<blockquote>" * 1_000 + "deep quote" + "</blockquote>" * 1_000
    lists = "<ul><li>" * 1_000 + "deep item"
    result = extract_html(html(quotes + lists), base_url=BASE, max_depth=4_000, max_nodes=9_000)
    assert "> " * 8 + "deep quote" in result.markdown
    assert "> " * 9 not in result.markdown
    assert max(len(line) for line in result.markdown.splitlines()) < 60


# -- hostile documents (REQ-SEC-014, REQ-TEST-006) --------------------------------------------


def _survives(document: str, **kwargs: Any) -> Extracted | None:
    """The result, or None on ExtractionFailed with a fixed code; anything else fails."""
    try:
        return extract_html(document, base_url=BASE, **kwargs)
    except ExtractionFailed as failure:
        assert failure.args in ((NO_CONTENT,), (UNPARSEABLE,))
        return None


@pytest.mark.req("REQ-SEC-014", "REQ-TEST-006", "REQ-PAGE-006")
@pytest.mark.parametrize(
    "document",
    [
        pytest.param(
            "<div><p>unclosed <b>bold <i>both</div></span></p></table>text", id="misnested"
        ),
        pytest.param("<<<>>><p <p =>= </ >text<!DOCTYPE x><html><html>", id="garbage"),
        pytest.param("<p>" + "&" * 10_000 + "&#x110000;&#0;&#xD800;&bogus;</p>", id="entities"),
        pytest.param("<p>unclosed comment <!-- and the rest " + "x" * 5_000, id="open-comment"),
        pytest.param("<![CDATA[<p>cdata</p>]]><p>after cdata</p>", id="cdata"),
        pytest.param("<frameset><frame src='a'></frameset>", id="frameset"),
        pytest.param("<p>nul\x00 bytes\x00 and \x01\x02\x7f controls\ud800</p>", id="controls"),
        pytest.param("<table>" * 2_000 + "cells" + "</table>" * 2_000, id="nested-tables"),
        pytest.param("<ol>" + "<li><ol>" * 2_000 + "items", id="nested-lists"),
        pytest.param("<a href='/x'>" * 3_000 + "links", id="nested-links"),
        pytest.param("<b>" * 3_000 + "bold" + "</b>" * 3_000, id="nested-bold"),
        pytest.param('<ol start="999999999999999999999999"><li>x</li></ol>', id="huge-start"),
        pytest.param("<pre>" + "`" * 20_000 + "</pre><code>" + "`" * 9_000, id="backticks"),
        pytest.param("<title>" + "t" * 100_000, id="unclosed-title"),
        pytest.param("<p>x</p><script>" + "var a;" * 5_000, id="unclosed-script"),
        pytest.param("", id="empty"),
        pytest.param(" \n\t ", id="whitespace"),
        pytest.param("\x00" * 1_000, id="only-nul"),
    ],
)
def test_hostile_documents_never_crash(document: str) -> None:
    """REQ-SEC-014, REQ-TEST-006: malformed input gives content or ExtractionFailed, no error."""
    result = _survives(html(document))
    if result is not None:
        assert remove_invisible(result.markdown)[1] == 0
    _survives(document)  # the same without a document shell


@pytest.mark.req("REQ-SEC-014", "REQ-TEST-006")
def test_billion_laughs_entities_are_not_expanded() -> None:
    """REQ-SEC-014: an entity bomb in a DOCTYPE stays literal text of bounded size."""
    entities = "".join(
        f'<!ENTITY lol{i} "{"&lol" + str(i - 1) + ";" * 1}' + f'{("&lol" + str(i - 1) + ";") * 9}">'
        for i in range(1, 10)
    )
    bomb = (
        f'<!DOCTYPE lolz [<!ENTITY lol0 "lol">{entities}]><html><body><p>&lol9;</p></body></html>'
    )
    result = _survives(bomb)
    assert result is not None
    assert len(result.markdown) < 2 * len(bomb)
    assert "lollol" not in result.markdown


@pytest.mark.req("REQ-SEC-014", "REQ-TEST-006")
@pytest.mark.timeout(20)
@pytest.mark.parametrize("attribute", ["class", "style", "href", "id", "hidden", "aria-hidden"])
def test_huge_attributes_are_harmless(attribute: str) -> None:
    """REQ-SEC-014: a 10 MB attribute value neither crashes nor leaks into the output."""
    value = "display:x;-" * 1_000_000
    page = html(f'<p><a {attribute}="{value}">anchor</a> Visible paragraph text.</p>')
    result = _survives(page)
    assert result is not None
    assert "display:x" not in result.markdown
    assert "Visible paragraph text." in result.markdown


@pytest.mark.req("REQ-SEC-014", "REQ-TEST-006")
def test_content_after_the_closing_html_tag_is_kept() -> None:
    """REQ-PAGE-006: libxml2 would drop text after `</html>`; it stays, as in browsers."""
    page = "<html><body><p>First part.</p></body></html><p>Second part.</p>"
    assert md_raw(page) == "First part.\n\nSecond part."


def md_raw(document: str) -> str:
    return extract_html(document, base_url=BASE).markdown


@pytest.mark.req("REQ-SEC-014", "REQ-CTX-006")
def test_output_cannot_be_amplified_by_a_long_base_url() -> None:
    """REQ-SEC-014: links resolved against a 2 KB base stop at twice the input: partial."""
    base = "https://amplify.example/" + "b" * 1_900 + "/"
    links = '<a href="x">y</a> ' * 60_000
    page = html(f"<p>{links}</p>", f'<base href="{base}"><title>t</title>')
    result = extract_html(page, base_url=BASE, max_nodes=100_000)
    assert result.partial is True
    assert len(result.markdown) <= 2 * len(page) + 64 * 1024 + limits.URL_MAX_CHARS * 2


@pytest.mark.req("REQ-FETCH-002", "REQ-SEC-014")
@pytest.mark.parametrize(
    "document",
    [
        '<html><head><title>App</title><script src="/app.js"></script></head>'
        '<body><div id="root"></div><noscript>Enable JavaScript</noscript></body></html>',
        "<html><body><nav><a href='/'>Home</a></nav><footer>© Site</footer></body></html>",
    ],
    ids=["spa-shell", "chrome-only"],
)
def test_nothing_to_extract_fails_with_a_fixed_code(document: str) -> None:
    """REQ-FETCH-002: a script shell or a page of pure chrome ends in ExtractionFailed."""
    with pytest.raises(ExtractionFailed) as failure:
        extract_html(document, base_url=BASE)
    assert failure.value.args == (NO_CONTENT,)


# -- cleaning (REQ-SEC-015) -------------------------------------------------------------------


@pytest.mark.req("REQ-SEC-015", "REQ-CTX-005")
def test_invisible_characters_are_removed_and_counted() -> None:
    """REQ-SEC-015: zero-width, bidi and tag characters go and are counted; joiners that carry
    orthography stay."""
    tags = "".join(chr(0xE0000 + ord(c)) for c in "hidden")
    page = html(
        f"<p>zero\u200bwidth \u202edrow\u202c {tags}tail</p>"
        f"<p><a href='/x'>\u200b\u200b</a> link vanished</p><p>می\u200cخواهم</p>"
    )
    result = extract_html(page, base_url=BASE)
    assert result.markdown == "zerowidth drow tail\n\nlink vanished\n\nمی\u200cخواهم"
    assert result.invisible_removed == 1 + 2 + 6 + 2


@pytest.mark.req("REQ-SEC-015", "REQ-CTX-005")
def test_text_and_markdown_cleaning() -> None:
    """REQ-SEC-015, REQ-CTX-005: invisible characters go; Markdown comments go outside code."""
    text = extract_text("a\u200bb\x00c\u2066d", kind="text")
    assert (text.markdown, text.invisible_removed) == ("abcd", 3)
    source = "# T\n<!-- hidden\nnote -->\n```html\n<!-- kept -->\n```\nend <!-- x --> ok\n~~~\n<!--"
    markdown = extract_text(source, kind="markdown").markdown
    assert markdown == "# T\n\n```html\n<!-- kept -->\n```\nend  ok\n~~~\n<!--"
    with pytest.raises(ExtractionFailed):
        extract_text(" \u200b\n\t", kind="text")


@pytest.mark.req("REQ-SEC-015")
def test_cleaning_gate_covers_every_removable_character() -> None:
    """REQ-SEC-015: the fast pre-check flags every character that remove_invisible removes."""
    planes = [*range(0x0000, 0x30000), *range(0xE0000, 0xF0000)]
    noncharacters = [plane << 16 | low for plane in range(17) for low in (0xFFFE, 0xFFFF)]
    missed = [
        hex(code_point)
        for code_point in (*planes, *noncharacters)
        if remove_invisible(f"a{chr(code_point)}a")[1] and not may_hold_invisible(chr(code_point))
    ]
    assert missed == []


# -- properties (REQ-TEST-013) ----------------------------------------------------------------

_TOKENS = st.sampled_from(
    [
        "<p>", "</p>", "<div>", "</div>", "<a href='/x'>", "</a>", "<b>", "</b>", "<ul>", "<li>",
        "</ul>", "<ol start='3'>", "<table>", "<tr>", "<td>", "<th>", "</table>", "<pre>", "</pre>",
        "<code>", "</code>", "<h2>", "</h2>", "<blockquote>", "<br>", "<hr>", "<main>", "</main>",
        "<article>", "<nav>", "<script>", "</script>", "<style>", "<!--", "-->", "<span hidden>",
        "<i style='display:none'>", "</body></html>", "<html>", "&amp;", "&#0;", "\x00", "\u200b",
        "\u202e", "\u200d", "\U000e0041", "\ud800", "`", "|", "[", "]", "*", "\n", " ", "text",
        "字", "نص", "<![CDATA[", "]]>", "<?x", "?>", "<base href='https://b.example/'>",
    ]
)  # fmt: skip


def _assert_clean(result: Extracted) -> None:
    assert result.markdown and result.markdown == result.markdown.strip()
    assert remove_invisible(result.markdown)[1] == 0
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", result.markdown)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-014", "REQ-SEC-015")
@settings(max_examples=150, deadline=None, database=None)
@given(document=st.text(max_size=400))
def test_arbitrary_text_yields_clean_markdown_or_extraction_failed(document: str) -> None:
    """REQ-TEST-013: any text gives clean Markdown or ExtractionFailed, never another error."""
    result = _survives(document, max_nodes=200, max_depth=16)
    if result is not None:
        _assert_clean(result)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-014", "REQ-SEC-015")
@settings(max_examples=150, deadline=None, database=None)
@given(tokens=st.lists(_TOKENS, max_size=80))
def test_arbitrary_markup_yields_clean_markdown_or_extraction_failed(tokens: list[str]) -> None:
    """REQ-TEST-013: any mix of tags and text gives clean Markdown or ExtractionFailed."""
    result = _survives("".join(tokens), max_nodes=60, max_depth=16)
    if result is not None:
        _assert_clean(result)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-015")
@settings(max_examples=150, deadline=None, database=None)
@given(text=st.text(max_size=300), kind=st.sampled_from(["text", "markdown"]))
def test_arbitrary_text_and_markdown_pass_through_cleanly(text: str, kind: str) -> None:
    """REQ-TEST-013: plain text and Markdown come out clean or fail with ExtractionFailed."""
    try:
        result = extract_text(text, kind="markdown" if kind == "markdown" else "text")
    except ExtractionFailed as failure:
        assert failure.args == (NO_CONTENT,)
        return
    assert remove_invisible(result.markdown)[1] == 0
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\r]", result.markdown)


@pytest.mark.req("REQ-PAGE-006", "REQ-TEST-006", "REQ-SEC-014")
@pytest.mark.timeout(10)
def test_a_tag_with_too_many_attributes_ends_the_document_there() -> None:
    """REQ-PAGE-006: libxml2 is quadratic in one tag's attributes; such a tag is cut off."""
    many = " ".join(f"a{i}=x" for i in range(160_000))  # ~29 s for libxml2 uncut
    page = html(f"<p>Before the tag.</p><div {many}>inside</div><p>After the tag.</p>")
    result = extract_html(page, base_url=BASE)
    assert result.partial
    assert "Before the tag." in result.markdown and "After the tag." not in result.markdown
    # A script start tag inside a comment opens no raw text that could hide the tag.
    hidden = html(f"<p>Before the tag.</p><!-- <script> --><div {many}>inside</div><p>After.</p>")
    assert "After." not in extract_html(hidden, base_url=BASE).markdown
    few = " ".join(f"a{i}=x" for i in range(200))
    fine = extract_html(html(f"<p>Before.</p><div {few}>inside</div><p>After.</p>"), base_url=BASE)
    assert not fine.partial and "After." in fine.markdown


@pytest.mark.req("REQ-PAGE-006", "REQ-FETCH-002")
@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("<script type='application/ld+json'><![CDATA[{}]]></script>", id="json-ld"),
        pytest.param("<script>var markup = '<a {}';</script>", id="markup-in-script"),
        pytest.param("<style><![CDATA[{}]]></style>", id="cdata-in-style"),
        pytest.param("<![CDATA[{}]]>", id="cdata-as-bogus-comment"),
    ],
)
def test_text_that_looks_like_a_long_tag_does_not_cut_the_page(raw: str) -> None:
    """REQ-PAGE-006, REQ-FETCH-002: only a start tag has attributes; raw text is not one.

    A JSON-LD block of news sites holds thousands of `"key":"value"` pairs and
    no `>`; read as a tag it cut the page before its body (extraction_failed).
    """
    pairs = ", ".join(f'"k{i}": "a value {i}"' for i in range(3_000))
    head = "<title>Test page</title>" + raw.format("{" + pairs + "}")
    result = extract_html(html("<p>The article text after the metadata.</p>", head), base_url=BASE)
    assert not result.partial
    assert "The article text after the metadata." in result.markdown
    body = html(f"<p>Before.</p>{raw.format('{' + pairs + '}')}<p>After the block.</p>")
    assert "After the block." in extract_html(body, base_url=BASE).markdown


@pytest.mark.req("REQ-PAGE-006")
def test_attributes_count_toward_the_node_bound() -> None:
    """REQ-PAGE-006: attributes cost tree memory, so they count toward LIM-F10."""
    attrs = " ".join(f"a{i}=x" for i in range(9))
    page = html("".join(f"<p {attrs}>para {i}</p>" for i in range(200)))
    bounded = extract_html(page, base_url=BASE, max_nodes=1_000)
    assert bounded.partial  # 200 elements but 2,000 nodes with their attributes
    assert extract_html(page, base_url=BASE, max_nodes=5_000).partial is False


@pytest.mark.req("REQ-CTX-005", "REQ-FETCH-002")
def test_a_property_that_ends_in_visibility_hides_nothing() -> None:
    """REQ-CTX-005, REQ-FETCH-002: `backface-visibility: hidden` is not `visibility: hidden`."""
    style = (
        "<style>.card { backface-visibility: hidden; -webkit-backface-visibility: hidden }"
        " .gone { visibility: hidden }</style>"
    )
    page = html(f"<div class='card'>{PARAGRAPH}</div><p class='gone'>Hidden words.</p>", style)
    out = extract_html(page, base_url=BASE).markdown
    assert "This paragraph is long enough" in out
    assert "Hidden words." not in out
    inline = html(f"<div style='backface-visibility:hidden'>{PARAGRAPH}</div>")
    assert "This paragraph is long enough" in extract_html(inline, base_url=BASE).markdown


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
def test_an_article_split_into_wrapped_parts_comes_back_whole() -> None:
    """REQ-FETCH-002, REQ-PAGE-002: parts of one article in separate wrappers are all kept.

    Without landmarks the best-scored part is only the first; an ancestor
    that adds as much prose again (few links) is the article.
    """

    def part(name: str, count: int) -> str:
        paragraphs = "".join(
            f"<p>{name} paragraph {n}, which carries enough words, commas, and text to count.</p>"
            for n in range(count)
        )
        return f"<div class='part'><div class='lines'>{paragraphs}</div></div>"

    links = "".join(f"<li><a href='/t{n}'>Teaser headline number {n}</a></li>" for n in range(12))
    page = html(
        f"<div class='column'>{part('First', 6)}{part('Second', 3)}{part('Third', 3)}</div>"
        f"<div class='more'><ul>{links}</ul></div>"
    )
    out = extract_html(page, base_url=BASE).markdown
    for name in ("First", "Second", "Third"):
        assert f"{name} paragraph 2," in out
    assert "Teaser headline" not in out


def traced_peak(page: str) -> int:
    """Peak of Python-allocated memory while `page` is extracted (after one warm-up run)."""
    extract_html(page, base_url=BASE)  # caches and imports out of the measure
    tracemalloc.start()
    try:
        extract_html(page, base_url=BASE)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.req("REQ-PERF-003", "REQ-PAGE-006")
def test_extraction_memory_grows_linearly_with_the_page() -> None:
    """REQ-PERF-003: the parse cost per tree is derivable, because an extraction's peak
    memory is proportional to the page: four times the paragraphs (and a hidden element
    for the CSS engine) cost about four times the memory, and a bounded amount per byte.

    tracemalloc sees Python's allocations (text, measures, Markdown), not libxml2's
    tree, whose size LIM-F10 bounds by node count.
    """
    paragraph = "<p>A paragraph of the article, with a comma, and some words to count.</p>"

    def page(paragraphs: int) -> str:
        return html(
            paragraph * paragraphs + "<p class='x'>hidden</p>", "<style>.x{display:none}</style>"
        )

    small, large = page(2_000), page(8_000)
    small_peak, large_peak = traced_peak(small), traced_peak(large)
    assert 3.0 < large_peak / small_peak < 5.0  # linear: a quadratic cost would be ~16
    assert large_peak < 12 * len(large)  # measured: about 5.5 bytes per byte of page
