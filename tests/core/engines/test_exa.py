"""The Exa driver: JSON POST with x-api-key, highlights as snippets, published dates."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    EngineSettings,
    FailureClass,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.exa import Exa, ExaConfig
from tests.core.engines.driver_support import NOW, FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY, assert_keyed, body

_response = FixtureResponses("exa")


def _driver() -> Exa:
    return Exa(
        EngineSettings(api_key=KEY, options=ExaConfig(search_type="fast")), clock=lambda: NOW
    )


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017")
def test_post_with_the_key_header_and_the_typed_search_type() -> None:
    """REQ-CFG-004, REQ-SEC-017: x-api-key declared; type from the typed settings."""
    request = assert_keyed(Exa)
    assert dict(request.headers)["x-api-key"] == KEY
    assert request.credential_headers == frozenset({"x-api-key"})
    assert body(request)["type"] == "auto"
    assert body(_driver().build_request(SearchParams(query="q")))["type"] == "fast"


@pytest.mark.req("REQ-SEARCH-005")
def test_time_range_and_safe_search_change_the_body() -> None:
    """REQ-SEARCH-005: startPublishedDate from the range; moderation off with safe search off."""
    plain = body(_driver().build_request(SearchParams(query="q")))
    ranged = body(_driver().build_request(
        SearchParams(query="q", time_range=TimeRange.DAY, safe_search=SafeSearch.OFF)))  # fmt: skip
    assert "startPublishedDate" not in plain and plain["moderation"] is True
    assert ranged["startPublishedDate"] == "2023-11-13T22:13:20Z"
    assert ranged["moderation"] is False


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_results_empty_and_refused_key() -> None:
    """REQ-TEST-002: highlight, else text; untitled skipped; 401 auth_failure."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == [1, 2]
    assert hits[0].snippet.startswith("Large Language Models") and hits[0].date == "2023-11-16"
    assert hits[1].snippet == "A shorter survey of language models."
    assert _driver().parse(_response("empty.json")) == []
    refused = parse_failure(_driver(), _response("error.json", 401))
    assert refused.failure_class is FailureClass.AUTH_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_highlights_as_one_string_is_the_snippet() -> None:
    """REQ-TEST-002: `highlights` is a list; a lone string is read as its one entry."""
    (hit,) = _driver().parse(_response("highlight_string.json"))
    assert hit.snippet == "An asynchronous runtime for the Rust programming language."
    assert hit.date == "2026-01-05"
