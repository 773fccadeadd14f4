"""Fast paths of extraction outside the CSS engine (branch mdfast): each equals what it replaced.

The long-run search of the parser's tag scanner is compared with the regular
expression it replaces on random documents; the noise pass's attribute reads
are checked on the inline elements whose measure they decide.
"""

from __future__ import annotations

import random
import re

import pytest

from rypsok.core.fetch.extract import extract_html
from rypsok.core.fetch.extract.markdown import _NOT_A_DESCRIPTION, _names_nothing
from rypsok.core.fetch.extract.noise import (
    CLASS_CHROME,
    CONDITIONAL,
    analyse,
    chrome_naming,
)
from rypsok.core.fetch.extract.page import body_of
from rypsok.core.fetch.parse import _LONG_RUN, _LONG_TAG_CHARS, long_run_start, parse_bounded

URL = "https://example.test/page.html"


def _document(rng: random.Random) -> str:
    """Runs of text with and without `>`, some about as long as a long span."""
    lengths = (0, 1, 2, 50, 2_047, 2_048, 2_049, 2_050, 4_095, 4_096, 4_097, 4_098, 4_099, 9_000)
    pieces = []
    for _ in range(rng.randint(1, 8)):
        pieces.append(">" * rng.randint(0, 3))
        pieces.append("a<" * rng.randint(0, 2) + "x" * rng.choice(lengths))
    return "".join(pieces)


@pytest.mark.req("REQ-PAGE-006")
def test_the_long_run_search_finds_what_the_regular_expression_finds() -> None:
    """REQ-PAGE-006: the scanner that cuts before a tag with many attributes sees the same spans."""
    rng = random.Random(20261202)  # noqa: S311 - seeded test data, not security
    found = 0
    for _ in range(3_000):
        html = _document(rng)
        start = rng.randint(0, len(html))
        stop = rng.choice((len(html), len(html) + 5_000, rng.randint(start, len(html) + 10)))
        match = _LONG_RUN.search(html, start, stop)
        expected = -1 if match is None else match.start()
        assert long_run_start(html, start, stop) == expected, (len(html), start, stop)
        found += expected != -1
    assert 300 < found < 2_700  # both outcomes are exercised


@pytest.mark.req("REQ-PAGE-006")
def test_the_long_run_search_is_exact_at_the_run_length() -> None:
    """REQ-PAGE-006: a run one character short of a long span is not one; at the length it is."""
    needed = _LONG_TAG_CHARS + 1
    for offset in range(5):
        html = "y" * offset + ">" + "x" * needed
        assert long_run_start(html, 0, len(html)) == offset
        assert long_run_start(html, 0, len(html) - 1) == -1
        assert long_run_start(html[:-1], 0, len(html)) == -1
        assert long_run_start(html, offset + 1, len(html)) == -1


def _stats_by_text(html: str) -> dict[str, tuple[bool, int]]:
    """Each `<a>`, `<span>` and `<img>`, by id or alt: whether it has a measure, and its flags."""
    body = body_of(parse_bounded(html, max_nodes=10_000, max_depth=64).root)
    analysis = analyse(body)
    shown: dict[str, tuple[bool, int]] = {}
    for element in body.iter("a", "span", "img"):
        stat = analysis.stats.get(element)
        key = element.get("id") or element.get("alt") or ""
        shown[key] = (stat is not None, 0 if stat is None else stat.flags)
    return shown


@pytest.mark.req("REQ-FETCH-002")
def test_inline_elements_share_their_parent_measure_unless_named_as_chrome() -> None:
    """REQ-FETCH-002: a span or link named as chrome is measured on its own, conditionally."""
    html = (
        "<body><div><p>text "
        '<span id="plain-span">a</span> '
        '<span class="share-bar" id="named">b</span> '
        '<a href="/x" class="related-posts" id="named-link">c</a> '
        '<a href="/y" id="plain-link" title="t">d</a> '
        '<img alt="chart" class="share-icon" src="/i.png">'
        "</p></div></body>"
    )
    stats = _stats_by_text(html)
    assert stats["plain-span"] == (False, 0)
    assert stats["plain-link"] == (False, 0)
    assert stats["chart"] == (False, 0)  # an image always shares: its alt text is the renderer's
    assert stats["named"][0]
    assert stats["named"][1] & (CONDITIONAL | CLASS_CHROME) == CONDITIONAL | CLASS_CHROME
    assert stats["named-link"][0]


@pytest.mark.req("REQ-FETCH-002")
def test_link_text_of_shared_links_counts_as_link_text() -> None:
    """REQ-FETCH-002: the link density that drops link lists counts links that share a measure."""
    body = body_of(
        parse_bounded(
            '<body><div id="d"><a href="/a" title="t">12345</a> and 67890</div></body>',
            max_nodes=1_000,
            max_depth=32,
        ).root
    )
    analysis = analyse(body)
    stat = analysis.stats[body.find(".//div")]
    assert (stat.chars, stat.link_chars) == (14, 5)  # "and 67890" stripped


@pytest.mark.req("REQ-FETCH-002")
def test_chrome_naming_reads_class_then_id() -> None:
    """REQ-FETCH-002: the class names chrome for good, an id only conditionally."""
    assert chrome_naming({"class": "share-bar"}) == CONDITIONAL | CLASS_CHROME
    assert chrome_naming({"class": "post-content share-enabled"}) == CONDITIONAL
    assert chrome_naming({"id": "related-articles"}) == CONDITIONAL
    assert chrome_naming({"class": "prose", "id": "sharepoint"}) == 0
    assert chrome_naming({"class": "", "id": ""}) == 0
    assert chrome_naming({}) == 0


@pytest.mark.req("REQ-FETCH-002", "REQ-SEC-015")
def test_edit_links_and_hidden_inline_elements_stay_out() -> None:
    """REQ-FETCH-002: an edit link and an inline element hidden by its class leave no text."""
    html = (
        "<body><article><h1>Title</h1><p>Body text that is long enough to be a paragraph here "
        '<a href="https://example.test/edit/main/page.md" title="e">Edit this page</a> '
        '<span class="sr-only">secret words</span> '
        '<a href="https://example.test/other">kept link</a>.</p></article></body>'
    )
    extracted = extract_html(html, base_url=URL)
    assert "Edit this page" not in extracted.markdown
    assert "secret words" not in extracted.markdown
    assert "[kept link](https://example.test/other)" in extracted.markdown
    assert extracted.hidden_chars == len("secret words")


@pytest.mark.req("REQ-FETCH-004")
def test_alt_text_of_several_words_is_a_description_as_the_pattern_says() -> None:
    """REQ-FETCH-004: the word-count shortcut before the placeholder pattern decides as it does."""
    spaces = re.compile(r"\s")
    assert all(bool(spaces.fullmatch(char)) == char.isspace() for char in map(chr, range(0x110000)))
    words = [
        "logo",
        "IMG_2041.jpg",
        "photo",
        "a",
        "The",
        "chart.png",
        "x-1",
        "\u00a0",
        " ",
        "\u2003",
    ]
    rng = random.Random(7)  # noqa: S311 - seeded test data, not security
    for _ in range(5_000):
        alt = "".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
        assert _names_nothing(alt) == (_NOT_A_DESCRIPTION.fullmatch(alt) is not None), alt
    assert _names_nothing(" logo ")
    assert not _names_nothing("logo of the company")
