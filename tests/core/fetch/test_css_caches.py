"""The hidden-text check's process-wide caches: bounded in characters, and read once.

REQ-PERF-003: what the caches keep is a fixed base whatever the pages hold. A
compiled XPath costs libxml2 memory in proportion to its expression, so the
caches of selector groups and of compiled expressions are bounded in
characters, not only in entries (before, 2,000 groups of 1 KiB held more than
a gigabyte). REQ-CTX-005: a long text is read once per process like a short
one, and what an evicted entry gave is given again when it is recomputed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import HiddenStats, clear_caches, drop_hidden
from rypsok.core.fetch.css_visibility.matching import _cached_selectors, _compiled_xpath
from rypsok.core.fetch.css_visibility.properties import _long_block
from rypsok.core.fetch.css_visibility.sheets import _long_sketch
from rypsok.core.fetch.css_visibility.textcache import TextCache
from rypsok.core.fetch.parse import parse_bounded


def _visible(html: str) -> tuple[str, HiddenStats]:
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    stats = drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split()), stats


def _hostile_group(page: int, selectors: int) -> str:
    """A group of selectors that all need XPath (attributes, negation, nth-child)."""
    return ", ".join(
        f"div[data-p='{page}'][data-n='{n}']:not(.keep{n}) a:nth-child(2n+1)"
        for n in range(selectors)
    )


def _hostile_page(page: int, groups: int) -> str:
    """A page whose sheet holds `groups` long groups that each hide one of its links."""
    rules = "".join(_hostile_group(page * 1000 + g, 12) + "{display:none}" for g in range(groups))
    body = "".join(
        f"<div data-p='{page * 1000 + g}' data-n='3'><a>HIDDEN-{page}-{g}</a></div>"
        for g in range(groups)
    )
    return f"<html><head><style>{rules}</style></head><body><p>shown {page}</p>{body}</body></html>"


@pytest.mark.req("REQ-PERF-003")
def test_a_text_cache_keeps_at_most_its_texts_and_its_characters_least_recent_out() -> None:
    computed: list[str] = []

    def length(text: str) -> int:
        computed.append(text)
        return len(text)

    cache = TextCache(length, max_texts=3, max_chars=10)
    assert [cache(text) for text in ("a", "bb", "ccc")] == [1, 2, 3]
    assert cache("a") == 1 and computed == ["a", "bb", "ccc"]  # a hit computes nothing
    cache("dd")  # four texts: the least recently used ("bb") goes
    assert list(cache._entries) == ["ccc", "a", "dd"] and cache._chars == 6
    cache("eeeee")  # 11 characters: "ccc" goes, then the count is within its bound
    assert list(cache._entries) == ["a", "dd", "eeeee"] and cache._chars == 8
    assert cache("x" * 11) == 11  # longer than the whole budget: computed, not kept
    assert "x" * 11 not in cache._entries and cache._chars == 8
    cache.cache_clear()
    assert not cache._entries and cache._chars == 0


@pytest.mark.req("REQ-PERF-003")
def test_a_text_cache_shared_by_threads_stays_within_its_bounds_and_answers_right() -> None:
    """Hits take no lock: eight threads hitting and evicting one small cache never see
    a wrong value or an error, and the bounds hold once they are done."""
    cache = TextCache(len, max_texts=16, max_chars=64)
    texts = [chr(97 + n % 26) * (1 + n % 7) for n in range(200)]
    failures: list[str] = []

    def hammer(offset: int) -> None:
        for round_ in range(300):
            text = texts[(offset * 31 + round_) % len(texts)]
            if cache(text) != len(text):
                failures.append(text)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    assert len(cache._entries) <= 16 and cache._chars <= 64
    assert cache._chars == sum(len(text) for text in cache._entries)


@pytest.mark.req("REQ-CTX-005", "REQ-PERF-003")
def test_long_selector_groups_and_blocks_are_read_once_and_hide_alike() -> None:
    clear_caches()
    group = ", ".join(f".promo-{n} .slot" for n in range(120))  # about 2 KiB
    block = "display:none;" + "".join(f"margin-{n}:0;" for n in range(150))
    assert len(group) > 1024 and len(block) > 1024
    html = (
        f"<html><head><style>{group}{{{block}}}</style></head><body>"
        "<p>kept text</p><div class='promo-7'><p class='slot'>HIDDEN-LONG</p></div>"
        "</body></html>"
    )
    first = _visible(html)
    assert first[0] == "kept text" and first[1].elements_removed == 1
    assert group in _cached_selectors._entries and group in _long_sketch._entries
    assert block in _long_block._entries
    assert _visible(html) == first  # read from the caches: the same verdicts


@pytest.mark.req("REQ-PERF-003", "REQ-CTX-005")
def test_hostile_selector_groups_leave_the_caches_within_their_character_bounds() -> None:
    clear_caches()
    first_page = _hostile_page(0, 30)
    before = _visible(first_page)
    assert "HIDDEN" not in before[0] and before[0].startswith("shown 0")
    for page in range(1, 40):
        text, _ = _visible(_hostile_page(page, 30))
        assert "HIDDEN" not in text
        assert _cached_selectors._chars <= _cached_selectors.max_chars
        assert _compiled_xpath._chars <= _compiled_xpath.max_chars
        assert len(_compiled_xpath._entries) <= _compiled_xpath.max_texts
    # The first page's groups and expressions were evicted; read again, they hide alike.
    assert _hostile_group(0, 12) not in _cached_selectors._entries
    assert _visible(first_page) == before


_RSS_CHILD = textwrap.dedent(
    """
    import gc, random
    from lxml import etree
    from rypsok.core.fetch.css_visibility.matching import _compile_selectors

    def rss_mib():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * 4096 / 2**20

    root = etree.fromstring("<html><body><div data-x='1'><a>x</a></div></body></html>",
                            etree.HTMLParser())
    elements = list(root.iter())
    random.seed(7)
    start = rss_mib()
    for _ in range(1500):
        group = ", ".join(
            f"div[data-x='{random.randrange(10**6)}']:not(.e{random.randrange(10**6)}) "
            "a:nth-child(2n)" for _ in range(20)
        )[:1024]
        for selector in _compile_selectors(group[: group.rfind(",")]):
            # every way a selector is evaluated, so every expression is compiled
            selector.over_tree(root)
            selector.among(elements * 3)
            selector.on(elements[0])
    gc.collect()
    print(round(rss_mib() - start))
    """
)


@pytest.mark.req("REQ-PERF-003")
def test_compiled_selectors_of_1500_hostile_groups_stay_a_small_fixed_base() -> None:
    """Measured in a child process (RSS includes libxml2's compiled expressions, which
    tracemalloc cannot see): 1,500 groups of 1 KiB, every expression compiled. Before
    the caches were bounded in characters this grew by about 860 MiB; now by about 30."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    grown = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    )
    assert int(grown.stdout.strip()) < 96
