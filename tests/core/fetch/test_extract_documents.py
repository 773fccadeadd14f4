"""Documentation stays whole: chrome names are whole words, sections with prose are content.

The generator-shaped fixtures (docs-sphinx, docs-mkdocs, docs-docusaurus,
docs-mdn, docs-github-readme, docs-readthedocs) live in tests/fixtures/pages
and run through the corpus tests of test_extract.py and, over HTTPS, through
the MCP corpus test of tests/mcp/test_fetch_session.py. The tests here pin
the rules those fixtures rely on, one at a time.
"""

from __future__ import annotations

import pytest

from rypsok.core.fetch.extract import extract_html

BASE = "https://docs.example/guide/page.html"
PROSE = "This sentence is long enough to be a paragraph of the section, with a comma."
ARTICLE = "".join(
    f"<p>Paragraph {n} of the article body holds enough text to count, and a comma.</p>"
    for n in range(4)
)


def md(body: str) -> str:
    page = f"<!DOCTYPE html><html><head><title>Guide</title></head><body>{body}</body></html>"
    return extract_html(page, base_url=BASE).markdown


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
@pytest.mark.parametrize(
    "attributes",
    [
        'class="sharepoint-guide"',  # "share" is only a substring
        'class="unrelated-notes"',
        'class="socialism-history"',
        'id="comments-in-config-files"',  # an id: a heading slug, not a template's name
        'id="related-topics"',
        'class="section" id="share-your-config"',
    ],
)
def test_a_substring_or_an_id_alone_does_not_drop_a_section(attributes: str) -> None:
    """REQ-FETCH-002, REQ-PAGE-002: a section with a heading and prose survives its name."""
    out = md(
        f"<main><h1>Guide</h1><p>{PROSE}</p>"
        f"<div {attributes}><h2>Section heading</h2><p>{PROSE} Unique words here.</p></div></main>"
    )
    assert "## Section heading" in out
    assert "Unique words here." in out


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
@pytest.mark.parametrize(
    "attributes",
    [
        'class="share-bar"',
        'class="social_share"',
        'class="jp-relatedposts"',  # a compound: related + posts
        'class="newsletterSignup"',
        'class="cookie-consent"',
        'class="comments-area"',
    ],
)
def test_a_class_word_naming_chrome_drops_the_block(attributes: str) -> None:
    """REQ-FETCH-002, REQ-PAGE-002: a whole word of the class names chrome, even with prose."""
    out = md(
        f"<article><h1>Guide</h1>{ARTICLE}"
        f"<div {attributes}><h3>Chrome heading</h3><p>{PROSE} Chrome words.</p></div></article>"
    )
    assert "Paragraph 3 of the article body" in out
    assert "Chrome heading" not in out and "Chrome words." not in out


@pytest.mark.req("REQ-FETCH-002", "REQ-FETCH-004")
def test_heading_ids_and_permalinks_do_not_drop_or_decorate_headings() -> None:
    """REQ-FETCH-002, REQ-FETCH-004: MkDocs/GitHub heading ids keep the heading; ¶ signs go."""
    out = md(
        "<article><h1 id='share'>Sharing<a class='headerlink' href='#share'>¶</a></h1>"
        f"<p>{PROSE}</p><h2 id='related-options'>Related options"
        "<a class='anchor' href='#related-options'>#</a></h2>"
        f"<p>{PROSE}</p><p>See <a href='#sharing'>the first section</a>.</p></article>"
    )
    assert out.startswith("# Sharing\n")
    assert "## Related options\n" in out
    assert "See the first section." in out


@pytest.mark.req("REQ-FETCH-002")
def test_a_link_list_of_a_document_section_stays_and_a_bare_one_goes() -> None:
    """REQ-FETCH-002: "See also" links belong to their section; a list of only links is chrome."""
    links = "<ul><li><a href='a.html'>First page</a></li><li><a href='b.html'>Second</a></li></ul>"
    out = md(
        f"<main><h1>Guide</h1><p>{PROSE}</p>"
        f"<section><h2>See also</h2><p>{PROSE}</p>{links}</section>"
        f"<div>{links.replace('First page', 'Lone list')}</div></main>"
    )
    assert "- [First page](https://docs.example/guide/a.html)" in out
    assert "Lone list" not in out


@pytest.mark.req("REQ-FETCH-002", "REQ-PAGE-002")
@pytest.mark.parametrize(
    "href",
    [
        "https://forge.example/org/repo/edit/main/docs/page.md",
        "https://wiki.example/index.php?title=Page&action=edit",
        "https://forge.example/org/repo/-/edit",
    ],
)
def test_edit_this_page_links_stay_out(href: str) -> None:
    """REQ-FETCH-002, REQ-PAGE-002: a link to the page's source editor is chrome."""
    out = md(f"<article><a href='{href}'>Edit this page</a><h1>Guide</h1>{ARTICLE}</article>")
    assert "Edit this page" not in out
    assert out.startswith("# Guide")
