"""The strict-mode store at its edges: the cases its mutation run needs (REQ-SEC-021).

`BoundedReturnedUrls` (rypsok.core.fetch.returned) is what strict fetch mode
consults: a URL is fetchable only while the store remembers that web_search
returned it. These cases pin its bound exactly (a store of one, the oldest
forgotten first, a URL returned again made the newest) and the refusal of a
store that could hold nothing, so that a mutant changing any of them fails.
The pipeline's use of the store is tested through MCP calls in
tests/core/fetch/test_strict_mode_mutants.py.
"""

from __future__ import annotations

import pytest

from rypsok.core.fetch.returned import RETURNED_URLS_KEPT, BoundedReturnedUrls


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
def test_a_store_of_one_keeps_the_last_url_only() -> None:
    """REQ-SEC-021: capacity 1 is allowed, and holds the most recent URL alone."""
    store = BoundedReturnedUrls(1)
    store.remember(["https://a.test/", "https://b.test/"])
    assert (store.contains("https://a.test/"), store.contains("https://b.test/")) == (False, True)
    assert len(store) == 1


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
@pytest.mark.parametrize("capacity", [0, -1])
def test_a_store_that_could_hold_nothing_is_refused(capacity: int) -> None:
    """REQ-SEC-021: a store of no URL would refuse every fetch in strict mode: refused, with
    the reason."""
    with pytest.raises(ValueError, match=r"^the store must hold at least one URL$"):
        BoundedReturnedUrls(capacity)


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
def test_the_oldest_url_is_forgotten_first_and_a_repeat_becomes_the_newest() -> None:
    """REQ-SEC-021: at its bound the store forgets the URL returned longest ago; a URL
    returned again moves to the newest end instead of keeping its old place."""
    store = BoundedReturnedUrls(3)
    store.remember(["https://1.test/", "https://2.test/", "https://3.test/"])
    assert len(store) == 3  # exactly at the bound, nothing is forgotten
    store.remember(["https://1.test/"])  # returned again: 2 is now the oldest
    store.remember(["https://4.test/"])
    kept = [url for url in ("1", "2", "3", "4") if store.contains(f"https://{url}.test/")]
    assert kept == ["1", "3", "4"]
    assert len(store) == 3


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
def test_only_the_exact_url_is_remembered() -> None:
    """REQ-SEC-021: membership is of the exact URL returned, not of a prefix or its host."""
    store = BoundedReturnedUrls()
    store.remember(["https://a.test/page"])
    assert store.contains("https://a.test/page")
    assert not store.contains("https://a.test/")
    assert not store.contains("https://a.test/page2")


@pytest.mark.req("REQ-SEC-021", "REQ-TEST-019")
def test_the_default_bound_is_the_documented_count() -> None:
    """REQ-SEC-021: a store made without a capacity holds RETURNED_URLS_KEPT URLs, then
    forgets the oldest."""
    store = BoundedReturnedUrls()
    store.remember(f"https://a.test/{i}" for i in range(RETURNED_URLS_KEPT + 1))
    assert len(store) == RETURNED_URLS_KEPT
    assert not store.contains("https://a.test/0")
    assert store.contains("https://a.test/1")
