"""Bounded parsing: cancellation per slice, and no work past the point where parsing stops."""

from __future__ import annotations

import threading
import time

import pytest

from rypsok.core.fetch.parse import (
    MAX_TAG_ATTRIBUTES,
    ParseCancelled,
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
