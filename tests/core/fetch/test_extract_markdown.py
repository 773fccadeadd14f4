"""Markdown structure (REQ-FETCH-004): one test per construct the page's structure names."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest

from rypsok.core.fetch.extract import extract_html
from rypsok.core.fetch.extract.page import resolve

BASE = "https://site.example/docs/guide/page.html"
LEAD = "<p>A lead paragraph long enough to count as the content of this page, with commas.</p>"


def md(body: str, head: str = "<title>Page</title>") -> str:
    page = f"<!DOCTYPE html><html><head>{head}</head><body><main>{LEAD}{body}</main></body></html>"
    return extract_html(page, base_url=BASE).markdown


@pytest.mark.req("REQ-FETCH-004")
def test_headings_keep_their_levels() -> None:
    """REQ-FETCH-004: h1 to h6 become ATX headings of the same level."""
    out = md("".join(f"<h{n}>Level {n} <em>title</em></h{n}><p>Text {n}.</p>" for n in range(1, 7)))
    for level in range(1, 7):
        assert f"\n{'#' * level} Level {level} *title*\n" in out


@pytest.mark.req("REQ-FETCH-004")
def test_lists_keep_their_nesting_kind_and_start() -> None:
    """REQ-FETCH-004: nested lists are indented under their item; ol keeps `start`."""
    out = md(
        "<ul><li>fruit<ul><li>apple<ol start='3'><li>peel</li><li>slice</li></ol></li>"
        "<li>pear</li></ul></li><li>bread</li></ul>"
    )
    assert "- fruit\n  - apple\n    3. peel\n    4. slice\n  - pear\n- bread" in out


@pytest.mark.req("REQ-FETCH-004")
def test_a_data_table_is_a_pipe_table() -> None:
    """REQ-FETCH-004: header row, separator, one line per row, `|` in a cell escaped."""
    out = md(
        "<table><caption>Limits</caption><thead><tr><th>Name</th><th>Value</th></tr></thead>"
        "<tbody><tr><td>a|b</td><td><code>10</code></td></tr><tr><td>c</td><td>20</td></tr>"
        "</tbody></table>"
    )
    assert "Limits\n\n| Name | Value |\n| --- | --- |\n| a\\|b | `10` |\n| c | 20 |" in out


@pytest.mark.req("REQ-FETCH-004")
def test_a_table_whose_cells_hold_blocks_falls_back_to_a_list() -> None:
    """REQ-FETCH-004: a cell with a list or code cannot be one pipe-table line: rows are items."""
    out = md(
        "<table><tr><th>Option</th><th>Effect</th></tr>"
        "<tr><td>retry</td><td><p>Retries on:</p><ul><li>timeouts</li><li>resets</li></ul>"
        "</td></tr>"
        "<tr><td>log</td><td><pre class='language-toml'>level = 1</pre></td></tr></table>"
    )
    assert "|" not in out
    assert "- retry\n\n  Retries on:\n\n  - timeouts\n  - resets" in out
    assert "- log\n\n  ```toml\n  level = 1\n  ```" in out


@pytest.mark.req("REQ-FETCH-004")
@pytest.mark.parametrize(
    ("markup", "language"),
    [
        ("<pre><code class='language-rust'>fn main() {}</code></pre>", "rust"),
        ("<div class='highlight-python notranslate'><div class='highlight'><pre>x = 1</pre>"
         "</div></div>", "python"),
        ("<div class='highlight highlight-source-shell'><pre>make</pre></div>", "shell"),
        ("<pre data-lang='go'><code>package main</code></pre>", "go"),
        ("<div data-language='sql'><pre>select 1</pre></div>", "sql"),
        ("<pre class='nohighlight'>plain</pre>", ""),
    ],
)  # fmt: skip
def test_code_blocks_keep_the_language_the_page_names(markup: str, language: str) -> None:
    """REQ-FETCH-004: language-x, highlight-x, highlight-source-x, data-lang, data-language."""
    out = md(markup)
    assert f"\n```{language}\n" in out


@pytest.mark.req("REQ-FETCH-004")
def test_links_are_absolute() -> None:
    """REQ-FETCH-004: relative, root- and scheme-relative links resolve; others keep text."""
    out = md(
        "<p><a href='next.html'>next</a>, <a href='/top'>top</a>, "
        "<a href='//cdn.example/x'>cdn</a>, <a href='mailto:a@b.example'>mail</a>, "
        "<a href='javascript:void(0)'>script</a>.</p>"
    )
    assert "[next](https://site.example/docs/guide/next.html)" in out
    assert "[top](https://site.example/top)" in out
    assert "[cdn](https://cdn.example/x)" in out
    assert "mail, script." in out


@pytest.mark.req("REQ-FETCH-004")
def test_links_resolve_against_the_base_element() -> None:
    """REQ-FETCH-004: an http(s) `<base href>` is the base of relative links."""
    out = md(
        "<p><a href='a.html'>a</a></p>", head="<title>P</title><base href='https://b.example/d/'>"
    )
    assert "[a](https://b.example/d/a.html)" in out


@pytest.mark.req("REQ-FETCH-004")
def test_images_keep_their_alt_text() -> None:
    """REQ-FETCH-004: ![alt](absolute URL); lazy data-src; decorative and file-name alts go."""
    out = md(
        "<figure><img src='img/kite.png' alt='A red kite over the [dunes]'>"
        "<figcaption>The kite.</figcaption></figure>"
        "<p><img src='data:image/gif;base64,R0lGOD' data-src='/lazy/tern.jpg' alt='A tern'>"
        "<img src='spacer.gif' alt=''><img src='x.jpg' alt='IMG_2231.jpg'>"
        "<a href='/big.png'><img src='small.png' alt='Zoomed map'></a></p>"
    )
    assert "![A red kite over the \\[dunes\\]](https://site.example/docs/guide/img/kite.png)" in out
    assert "![A tern](https://site.example/lazy/tern.jpg)" in out
    assert (
        "[![Zoomed map](https://site.example/docs/guide/small.png)](https://site.example/big.png)"
        in out
    )
    assert "spacer" not in out and "IMG_2231" not in out


@pytest.mark.req("REQ-FETCH-004")
@pytest.mark.parametrize(
    "base",
    [
        "https://e.example/a/b.html",
        "https://e.example",
        "https://e.example/a/",
        "http://e.example:8080/x/y?q=1#f",
        "https://e.example/a/b.html?x=/y/z",
    ],
)
def test_fast_link_resolution_agrees_with_urljoin(base: str) -> None:
    """REQ-FETCH-004: the plain-shape shortcut gives what urljoin gives, every shape."""
    hrefs = ["c.html", "c/d.html", "/root", "/root?x#y", "//cdn.example/x", "../up", "./same"]
    hrefs += ["?q=1", "~user/x", "%41b", "c.html#frag", "x/..", "..", "a%20b/c"]
    for href in hrefs:
        expected = urljoin(base, href).translate(str.maketrans({" ": "%20"}))
        assert resolve(base, href) == expected, (base, href)
