"""The OpenAlex driver: key as a parameter, filters, abstract rebuilt, budget answers."""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.engines.base import (
    EngineSettings,
    FailureClass,
    PausingHits,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.openalex import OpenAlex
from tests.core.engines.driver_support import NOW, FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY, assert_keyed

_response = FixtureResponses("openalex")


def _driver() -> OpenAlex:
    return OpenAlex(EngineSettings(api_key=KEY), clock=lambda: NOW)


@pytest.mark.req("REQ-CFG-004", "REQ-ENG-011")
def test_inactive_without_key_and_the_key_is_the_api_key_parameter() -> None:
    """REQ-CFG-004: keyed; `api_key`, `search`, `per_page` at most 200."""
    request = assert_keyed(OpenAlex)
    params = dict(request.params)
    assert params["api_key"] == KEY and params["search"] == "q"
    many = dict(_driver().build_request(SearchParams(query="q", results=900)).params)
    assert many["per_page"] == "200" and "filter" not in many


@pytest.mark.req("REQ-SEARCH-004", "REQ-SEARCH-005")
def test_language_and_time_range_are_filters() -> None:
    """REQ-SEARCH-004, REQ-SEARCH-005: `language:` and publication-date bounds in `filter`."""
    search = SearchParams(query="q", language="de", time_range=TimeRange.YEAR)
    params = dict(_driver().build_request(search).params)
    assert params["filter"] == (
        "language:de,from_publication_date:2022-11-14,to_publication_date:2023-11-14"
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_urls_prefer_doi_then_landing_page_then_openalex_and_abstract_is_rebuilt() -> None:
    """REQ-TEST-002: DOI, publisher, catalogue; snippet from abstract_inverted_index."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.url for hit in hits] == [
        "https://doi.org/10.48550/arxiv.1706.03762",
        "https://publisher.example/article/42",
        "https://openalex.org/W3456789012",
    ]
    assert hits[0].snippet == (
        "The dominant sequence transduction models are based on complex recurrent sequence"
    )
    assert hits[0].date == "2017-06-12"
    assert hits[1].snippet == "Journal of Examples" and hits[1].date is None  # Feb 30
    assert hits[2].snippet == ""  # a position past the bound is not rebuilt


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006", "REQ-CMP-002")
def test_empty_and_the_rate_and_budget_answers() -> None:
    """REQ-TEST-002, REQ-CMP-002: 403 rate limit and 429 daily budget are rate_limited."""
    assert _driver().parse(_response("empty.json")) == []
    slow = parse_failure(_driver(), _response("rate_limit.json", 403))
    assert slow.failure_class is FailureClass.RATE_LIMITED
    daily = parse_failure(_driver(), _response("daily_limit.json", 429))
    assert daily.failure_class is FailureClass.RATE_LIMITED
    refused = parse_failure(_driver(), _response("bad_key.json", 403))
    assert refused.failure_class is FailureClass.AUTH_FAILURE


@pytest.mark.req("REQ-CMP-002")
def test_a_spent_daily_budget_pauses_the_engine_after_its_answer() -> None:
    """REQ-CMP-002: X-RateLimit-Remaining 0 keeps the hits and asks the queue to pause."""
    assert not isinstance(_driver().parse(_response("ok.json")), PausingHits)
    spent = _driver().parse(_response("ok.json", x_ratelimit_remaining="0"))
    assert isinstance(spent, PausingHits) and len(spent) == 3
    assert spent.pause_ms == limits.RETRY_AFTER_MAX_MS


@pytest.mark.req("REQ-TEST-002")
def test_an_answer_without_results_is_empty_only_when_its_count_is_zero() -> None:
    """REQ-TEST-002: `meta.count` 0 and no `results` key is the empty answer."""
    assert _driver().parse(_response("empty_no_list.json")) == []
