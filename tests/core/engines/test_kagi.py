"""The Kagi driver: the pinned v1 POST, its workflows and its error envelope."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.kagi import Kagi
from tests.core.engines.driver_support import NOW, FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY, assert_keyed, body

_response = FixtureResponses("kagi")


def _driver() -> Kagi:
    return Kagi(EngineSettings(api_key=KEY), clock=lambda: NOW)


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017")
def test_v1_post_with_a_bearer_credential_header() -> None:
    """REQ-CFG-004, REQ-SEC-017: POST /api/v1/search, Bearer key declared a credential."""
    request = assert_keyed(Kagi)
    assert request.url == "https://kagi.com/api/v1/search"
    assert dict(request.headers)["Authorization"] == f"Bearer {KEY}"
    assert request.credential_headers == frozenset({"Authorization"})
    assert body(request) == {"query": "q", "workflow": "search", "limit": 10, "safe_search": True}


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
def test_news_time_range_region_and_safe_search_change_the_body() -> None:
    """REQ-SEARCH-005: workflow news, filters.after, filters.region, safe_search off."""
    search = SearchParams(
        query="q", category=Category.NEWS, time_range=TimeRange.MONTH, region="de",
        safe_search=SafeSearch.OFF,
    )  # fmt: skip
    sent = body(_driver().build_request(search))
    assert sent["workflow"] == "news" and sent["safe_search"] is False
    assert sent["filters"] == {"region": "DE", "after": "2023-10-15"}


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_search_and_news_results_and_the_empty_answer() -> None:
    """REQ-TEST-002: data.search or data.news; data without the list is empty."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.title for hit in hits][:2] == [
        "Rust Programming Language", "The Rust Programming Language - The Rust Book"]  # fmt: skip
    assert len(hits) == 2 and hits[0].date == "2026-09-01" and hits[1].date is None
    assert _driver().parse(_response("news.json"))[0].url == "https://news.example/rust-2026"
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_error_envelope_and_refusals() -> None:
    """REQ-TEST-002, REQ-ENG-006: error list under 200; 403 with the key; 429 usage limit."""
    failed = parse_failure(_driver(), _response("error.json"))
    assert failed.failure_class is FailureClass.REQUEST_FAILURE
    refused = parse_failure(_driver(), _response("forbidden.json", 403))
    assert refused.failure_class is FailureClass.AUTH_FAILURE
    limited = parse_failure(_driver(), _response("error.json", 429))
    assert limited.failure_class is FailureClass.RATE_LIMITED
