"""The Tavily driver: JSON POST, typed search depth, budget statuses."""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.config import ConfigError, parse_config
from rypsok.core.engines.base import Category, EngineSettings, FailureClass, SearchParams, TimeRange
from rypsok.core.engines.registry import engine_models
from rypsok.core.engines.tavily import Tavily, TavilyConfig
from tests.core.engines.driver_support import FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY, assert_keyed, body

_response = FixtureResponses("tavily")


def _driver(depth: str = "basic") -> Tavily:
    return Tavily(
        EngineSettings(api_key=KEY, options=TavilyConfig.model_validate({"search_depth": depth}))
    )


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017")
def test_post_with_bearer_key_and_the_typed_search_depth() -> None:
    """REQ-CFG-004: Bearer credential; search_depth from the typed settings."""
    request = assert_keyed(Tavily)
    assert request.credential_headers == frozenset({"Authorization"})
    sent = body(request)
    assert sent["query"] == "q" and sent["topic"] == "general" and sent["search_depth"] == "basic"
    assert sent["max_results"] == 10 and "time_range" not in sent
    assert body(_driver("advanced").build_request(SearchParams(query="q")))["search_depth"] == (
        "advanced"
    )


@pytest.mark.req("REQ-CFG-005")
def test_an_unknown_search_depth_is_refused_naming_the_key() -> None:
    """REQ-CFG-005: engines.tavily.search_depth must be one of its values."""
    data = {"schema_version": 1, "engines": {"tavily": {"search_depth": "ultra"}}}
    with pytest.raises(ConfigError, match=r"engines\.tavily\.search_depth"):
        parse_config(data, engine_models())


@pytest.mark.req("REQ-SEARCH-005")
def test_news_and_time_range_change_the_body() -> None:
    """REQ-SEARCH-005: topic news, time_range week; max_results stops at 20."""
    search = SearchParams(query="q", category=Category.NEWS, time_range=TimeRange.WEEK, results=50)
    sent = body(_driver().build_request(search))
    assert (sent["topic"], sent["time_range"], sent["max_results"]) == ("news", "week", 20)


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_results_empty_and_budget_statuses() -> None:
    """REQ-TEST-002: content is the snippet; 432/433 spent budgets are rate_limited."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == [1, 2]
    assert hits[0].snippet.startswith("Lionel Messi, an Argentine footballer")
    assert _driver().parse(_response("news.json"))[0].date == "2026-10-02"
    assert _driver().parse(_response("empty.json")) == []
    for status in (432, 433):
        spent = parse_failure(_driver(), _response("error.json", status))
        assert spent.failure_class is FailureClass.RATE_LIMITED
        assert spent.retry_after_ms == limits.RETRY_AFTER_MAX_MS
    refused = parse_failure(_driver(), _response("error.json", 401))
    assert refused.failure_class is FailureClass.AUTH_FAILURE


@pytest.mark.req("REQ-TEST-002")
def test_a_news_date_in_rfc_2822_form_is_read() -> None:
    """REQ-TEST-002: `published_date` "Wed, 23 Oct 2024 19:45:00 GMT" is 2024-10-23."""
    (hit,) = _driver().parse(_response("news_rfc2822.json"))
    assert hit.date == "2024-10-23"
