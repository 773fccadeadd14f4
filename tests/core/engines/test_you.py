"""The You.com driver: key header, language/freshness parameters, web and news blocks."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import EngineSettings, FailureClass, SearchParams, TimeRange
from rypsok.core.engines.you import You
from tests.core.engines.driver_support import FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY, assert_keyed

_response = FixtureResponses("you")


def _driver() -> You:
    return You(EngineSettings(api_key=KEY))


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017")
def test_the_key_is_a_declared_header() -> None:
    """REQ-CFG-004, REQ-SEC-017: X-API-Key, declared a credential; never a parameter."""
    request = assert_keyed(You)
    assert dict(request.headers)["X-API-Key"] == KEY
    assert request.credential_headers == frozenset({"X-API-Key"})
    assert KEY not in dict(request.params).values()


@pytest.mark.req("REQ-SEARCH-004", "REQ-SEARCH-005")
def test_language_and_time_range_change_the_request() -> None:
    """REQ-SEARCH-004, REQ-SEARCH-005: `language` upper-case, `freshness`."""
    plain = dict(_driver().build_request(SearchParams(query="q")).params)
    search = SearchParams(query="q", language="de", time_range=TimeRange.WEEK, region="at")
    asked = dict(_driver().build_request(search).params)
    assert "language" not in plain and "freshness" not in plain
    assert (asked["language"], asked["freshness"], asked["country"]) == ("DE", "week", "AT")


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_web_and_news_blocks_and_the_empty_answer() -> None:
    """REQ-TEST-002: description, else the first snippet; news block; no block is empty."""
    hits = _driver().parse(_response("ok.json"))
    assert hits[0].snippet == "The official home of the Python Programming Language"
    assert hits[1].snippet.startswith("Welcome! This is the official documentation")
    assert hits[0].date == "2026-09-30"
    assert _driver().parse(_response("news.json"))[0].title == "Python 3.14 released"
    assert _driver().parse(_response("empty.json")) == []
    refused = parse_failure(_driver(), _response("error.json", 403))
    assert refused.failure_class is FailureClass.AUTH_FAILURE


@pytest.mark.req("REQ-TEST-002")
def test_a_reply_with_web_and_news_gives_both_web_first() -> None:
    """REQ-TEST-002: You.com adds `news` when it sees news intent; neither block is dropped."""
    hits = _driver().parse(_response("web_and_news.json"))
    assert [hit.url for hit in hits] == [
        "https://www.python.org/downloads/release/python-3140/",
        "https://news.example/python-314",
    ]
    assert [hit.rank for hit in hits] == [1, 2]
