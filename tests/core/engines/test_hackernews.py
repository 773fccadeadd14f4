"""The Hacker News driver: request building and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.hackernews import HackerNews
from tests.core.engines.driver_support import (
    HTML,
    JSON,
    NOW,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/api/v1/search"


def _driver(settings: EngineSettings | None = None) -> HackerNews:
    return HackerNews(settings, clock=lambda: NOW)


_response = FixtureResponses("hackernews")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010: news and code, every time range, English, 10k/h."""
    assert HackerNews.id == "hackernews"
    assert HackerNews.categories == frozenset({Category.NEWS, Category.CODE})
    # An English-language index: English honoured without a parameter.
    assert HackerNews.languages == frozenset({"en"}) == {HackerNews.default_language}
    assert HackerNews.time_ranges == frozenset(TimeRange)
    assert HackerNews.admission.min_interval_ms * 10_000 >= 3_600_000
    assert HackerNews.requires_key is False


@pytest.mark.req("REQ-ENG-011")
def test_request_asks_for_stories_and_the_result_count() -> None:
    """REQ-ENG-011: query, stories only, hitsPerPage = count, no time filter unasked."""
    request = _driver().build_request(SearchParams(query="rust async", results=9))
    assert request.url == "https://hn.algolia.com/api/v1/search"
    assert request.params == (("query", "rust async"), ("tags", "story"), ("hitsPerPage", "9"))


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "days"),
    [(TimeRange.DAY, 1), (TimeRange.WEEK, 7), (TimeRange.MONTH, 30), (TimeRange.YEAR, 365)],
)
def test_time_range_filters_on_creation_time(time_range: TimeRange, days: int) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: numericFilters=created_at_i> now minus the range."""
    params = dict(_driver().build_request(SearchParams(query="q", time_range=time_range)).params)
    assert params["numericFilters"] == f"created_at_i>{int(NOW) - days * 86_400}"


@pytest.mark.req("REQ-ENG-005", "REQ-SEC-017")
def test_explicit_endpoint_keeps_the_query_parameters() -> None:
    """REQ-ENG-005, REQ-SEC-017: an operator endpoint replaces the URL only."""
    search = SearchParams(query="rust", time_range=TimeRange.WEEK)
    default = _driver().build_request(search)
    request = _driver(EngineSettings(endpoint="https://hn.proxy.test/s")).build_request(search)
    assert request.url == "https://hn.proxy.test/s"
    assert request.params == default.params


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_urls_item_pages_and_raw_text() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: story URL or item page, raw story_text, dates."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].title == "Async Rust is not safe with io_uring"
    assert hits[0].url == "https://example.com/blog/async-rust-io-uring"
    assert hits[0].snippet == ""
    assert hits[0].date == "2024-08-14"
    assert hits[1].url == "https://news.ycombinator.com/item?id=40111222"
    assert hits[1].snippet.startswith("<p>We have ~40 crates &amp; a tokio runtime")
    assert hits[4].title.startswith("Show HN: Zündkerze")
    assert hits[4].url == "https://news.ycombinator.com/item?id=37555666"
    assert hits[11].title == "A 非同期 Rust primer (Japanese)"
    assert all(hit.date is not None for hit in hits)


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_answer_is_no_hits() -> None:
    """REQ-TEST-002, REQ-ERR-005: `hits: []` is empty."""
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_hits_are_skipped_and_bad_optional_fields_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no title or id skips a hit; a bad date only drops the date."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [hit.rank for hit in hits] == [1, 5, 6]
    assert hits[1].url == "https://news.ycombinator.com/item?id=35444333"
    assert hits[1].date == "2023-04-05"  # from created_at_i, created_at was garbled
    assert hits[2].url == "https://news.ycombinator.com/item?id=34222111"  # empty url
    assert hits[2].date == "2023-01-02"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_hits_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable hits is format drift, not empty."""
    assert (
        parse_failure(_driver(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_http_429_is_rate_limited_with_retry_after() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: Algolia's 429 keeps its Retry-After."""
    failure = parse_failure(
        _driver(), _response("error_rate_limited.json", status=429, retry_after="60")
    )
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 60_000


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status", "content_type", "expected"),
    [
        ("error_bad_request.json", 400, JSON, FailureClass.REQUEST_FAILURE),
    ],
)
def test_http_statuses_are_classified(
    name: str, status: int, content_type: str, expected: FailureClass
) -> None:
    """REQ-TEST-002, REQ-ENG-006: each status maps to exactly one class."""
    assert (
        parse_failure(
            _driver(), _response(name, status=status, content_type=content_type)
        ).failure_class
        is expected
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_an_html_page_without_challenge_under_200_is_a_parse_failure() -> None:
    """REQ-ENG-006: a proxy's HTML page under 200 is not the provider's answer."""
    failure = parse_failure(_driver(), _response("bad_gateway.html", content_type=HTML))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: the failure's text is its class, nothing else."""
    failure = parse_failure(_driver(), _response("error_blocked.json", status=403))
    assert str(failure) == "blocked"
    assert "algolia" not in repr(failure).lower()


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005")
async def test_fixture_served_over_http_parses() -> None:
    """REQ-TEST-002, REQ-MAIN-005: a gzipped local answer; the wire carries the time filter."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(EngineSettings(endpoint=endpoint)),
        SearchParams(query="rust async", time_range=TimeRange.DAY),
        Route.fixture("hackernews", "ok.json", gzip=True),
        path=PATH,
    )
    assert len(exchange.hits) == 12
    assert exchange.wire.param("numericFilters") == f"created_at_i>{int(NOW) - 86_400}"
