"""Bounded parsing: cancellation per slice, and no work past the point where parsing stops."""

from __future__ import annotations

import random
import threading
import time

import pytest

from rypsok.core.fetch.parse import (
    _ATTRIBUTE,
    _CONTROLS,
    _LONG_TAG_CHARS,
    _START_TAG,
    MAX_TAG_ATTRIBUTES,
    ParseCancelled,
    _TagScanner,
    cancellable,
    check_cancelled,
    parse_bounded,
)


def many_nodes(count: int) -> str:
    return "<html><body><main>" + "<b>x</b>" * count + "</main></body></html>"


@pytest.mark.req("REQ-PAGE-008", "REQ-SEC-012")
def test_a_set_cancel_flag_stops_the_parse_at_the_next_slice() -> None:
    """REQ-PAGE-008: a parse whose call was abandoned stops before its next slice."""
    flag = threading.Event()
    with cancellable(flag):
        parse_bounded(many_nodes(10), max_nodes=1_000, max_depth=64)  # not set: parses
        flag.set()
        started = time.perf_counter()
        with pytest.raises(ParseCancelled):
            parse_bounded(many_nodes(2_000_000), max_nodes=2_000_000, max_depth=64)
        assert time.perf_counter() - started < 0.5  # one slice at most, not 16 MB
    check_cancelled()  # outside the block the flag no longer applies


@pytest.mark.req("REQ-PAGE-006", "REQ-PAGE-008")
def test_a_document_cut_at_lim_f10_costs_no_more_than_a_small_one() -> None:
    """REQ-PAGE-006: nothing past the node bound is scanned, so size beyond it costs nothing."""
    small, large = many_nodes(100_000), many_nodes(5_000_000)  # 0.8 MB and 40 MB

    def seconds(html: str) -> float:
        started = time.perf_counter()
        tree = parse_bounded(html, max_nodes=50_000, max_depth=64)
        assert tree.partial
        return time.perf_counter() - started

    seconds(small)  # warm-up
    assert seconds(large) < 3 * seconds(small) + 0.2


@pytest.mark.req("REQ-PAGE-006")
def test_a_tag_with_too_many_attributes_is_cut_in_a_later_slice() -> None:
    """REQ-PAGE-006: the attribute bound still applies to a tag far into the document."""
    attributes = " ".join(f"a{i}=1" for i in range(MAX_TAG_ATTRIBUTES + 1))
    html = "<html><body>" + "<p>fine</p>" * 20_000 + f"<p {attributes}>late</p></body></html>"
    tree = parse_bounded(html, max_nodes=1_000_000, max_depth=64)
    assert tree.partial
    assert "late" not in "".join(tree.root.itertext())
    assert "fine" in "".join(tree.root.itertext())


# -- the C-speed forms of the bounds' checks give what the plain forms give ----------------


class _StepPerTag:
    """The tag scanner as it was before the run search: one Python step per tag (the oracle)."""

    def __init__(self, html: str) -> None:
        self._scanner = _TagScanner(html)  # for its raw-text spans only
        self._html = html
        self._position = html.find("<")

    def first_long_tag_before(self, end: int) -> int:
        html, position = self._html, self._position
        while position != -1 and position < end:
            close = html.find(">", position)
            stop = len(html) if close == -1 else close
            if stop - position > _LONG_TAG_CHARS and _START_TAG.match(html, position):
                inside = self._scanner._raw_text_end(position)
                if inside is not None:
                    position = html.find("<", inside)
                    continue
                attributes = sum(1 for _ in _ATTRIBUTE.finditer(html, position + 1, stop))
                if attributes > MAX_TAG_ATTRIBUTES:
                    return position
            position = -1 if close == -1 else html.find("<", close)
        self._position = position
        return -1


def _tag_soup(rng: random.Random) -> str:
    """Long and short tags, runs with and without `>`, raw text, comments, stray brackets."""
    pieces = [
        lambda: "<p " + " ".join(f"a{i}" for i in range(rng.choice([10, 999, 1000, 1001]))) + ">",
        lambda: "x" * rng.choice([10, _LONG_TAG_CHARS - 1, _LONG_TAG_CHARS, _LONG_TAG_CHARS + 1]),
        lambda: "<script>" + "a>b<c " * rng.randint(0, 900) + "</script>",
        lambda: "<!-- " + "<p " * rng.randint(0, 3_000) + "-->",
        lambda: ">" * rng.randint(1, 5),
        lambda: "<" * rng.randint(1, 5),
        lambda: '<div title="' + "q " * rng.randint(1_000, 2_500) + '">',
        lambda: "<style " + "z " * rng.randint(0, 3_000),
        lambda: rng.choice(["<b>", "</b>", "text ", "<a href='x'>", "<br/>", "<![CDATA[", "</"]),
    ]
    return "".join(rng.choice(pieces)() for _ in range(rng.randint(1, 100)))


@pytest.mark.req("REQ-PAGE-006")
def test_the_run_search_finds_the_tag_a_step_per_tag_finds() -> None:
    """REQ-PAGE-006: the attribute bound cuts where the step-per-tag scan cut, slice by slice.

    Random tag soup around the edges (1,000 and 1,001 attributes, runs of
    4,096 and 4,097 characters without `>`, raw text and comments holding
    long fake tags), scanned with random slice ends.
    """
    rng = random.Random(20261202)  # noqa: S311 - seeded test data, not security
    cuts = 0
    for _ in range(300):
        html = _tag_soup(rng)
        ends = [*sorted(rng.sample(range(len(html) + 2), min(6, len(html) + 1))), len(html) + 1]
        old, new = _StepPerTag(html), _TagScanner(html)
        for end in ends:
            found = old.first_long_tag_before(end)
            assert new.first_long_tag_before(end) == found, (html[:200], end)
            if found != -1:
                cuts += 1
                break
    assert cuts > 30  # the soup does reach the bound, often


@pytest.mark.req("REQ-PAGE-006", "REQ-SEC-015")
def test_controls_are_removed_and_counted_as_the_text_pattern_does() -> None:
    """REQ-PAGE-006, REQ-SEC-015: the byte deletion removes exactly the C0 controls and DEL.

    Every code point below 0x100 and a few beyond, with and without a lone
    surrogate (which takes the text pattern instead).
    """
    characters = "".join(chr(code) for code in range(1, 0x100) if chr(code) not in "<&\r")
    characters += "\u2028\u3000é中\U0001f600"
    for extra in ("", "\ud800"):
        text = f"a{characters}b{extra}"
        tree = parse_bounded(f"<p>{text}</p>", max_nodes=100, max_depth=16)
        kept, removed = _CONTROLS.subn("", text)
        assert tree.controls_removed == removed == 28 + len(extra)
        assert "".join(tree.root.itertext()) == kept


@pytest.mark.req("REQ-PAGE-006")
@pytest.mark.parametrize("end_tag", ["</body>", "</BODY \u3000>", "</Html\xa0\n>", "</hTmL>"])
def test_root_end_tags_go_whatever_their_case_and_spaces(end_tag: str) -> None:
    """REQ-PAGE-006: text after `</body>` or `</html>` stays, however the end tag is spelt."""
    tree = parse_bounded(
        f"<html><body><p>before</p>{end_tag}<p>after é</p>", max_nodes=100, max_depth=16
    )
    body = tree.root.find("body")
    assert [p.text for p in body.iter("p")] == ["before", "after é"]
