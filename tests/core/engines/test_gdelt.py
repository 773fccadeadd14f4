"""The GDELT driver: request building and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineResponse,
    EngineSettings,
    FailureClass,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.gdelt import Gdelt
from tests.core.engines.driver_support import (
    HTML,
    JSON,
    TEXT,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/api/v2/doc/doc"


_response = FixtureResponses("gdelt")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002")
def test_declares_one_request_every_five_seconds() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002: news, 5 s spacing, one at a time, sourcelang."""
    assert Gdelt.id == "gdelt"
    assert Gdelt.categories == frozenset({Category.NEWS})
    assert {"en", "fr", "de", "zh"} <= Gdelt.languages
    assert Gdelt.default_language is None  # no selection: every language
    assert Gdelt.time_ranges == frozenset(TimeRange)
    assert Gdelt.admission.min_interval_ms == 5_000
    assert Gdelt.admission.max_concurrency == 1
    assert Gdelt.admission.cacheable is True
    assert Gdelt.admission.attribution_required is False
    assert Gdelt.requires_key is False


@pytest.mark.req("REQ-ENG-011")
def test_request_asks_for_an_article_list_by_relevance() -> None:
    """REQ-ENG-011: artlist, JSON, maxrecords = count, hybrid relevance, no timespan unasked."""
    request = Gdelt().build_request(SearchParams(query="climate summit", results=12))
    assert request.url == "https://api.gdeltproject.org/api/v2/doc/doc"
    assert request.params == (
        ("query", "climate summit"),
        ("mode", "artlist"),
        ("format", "json"),
        ("maxrecords", "12"),
        ("sort", "hybridrel"),
    )


@pytest.mark.req("REQ-ENG-011", "REQ-ENG-005")
def test_explicit_endpoint_keeps_the_parameters_and_maxrecords_is_capped() -> None:
    """REQ-ENG-011, REQ-ENG-005: the endpoint replaces the URL only; maxrecords stops at 250."""
    search = SearchParams(query="x", results=1000, time_range=TimeRange.DAY)
    default = Gdelt().build_request(search)
    request = Gdelt(EngineSettings(endpoint="https://gdelt.proxy.test/doc")).build_request(search)
    assert request.url == "https://gdelt.proxy.test/doc"
    assert request.params == default.params
    assert dict(request.params)["maxrecords"] == "250"


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "timespan"),
    [
        (TimeRange.DAY, "1d"),
        (TimeRange.WEEK, "7d"),
        (TimeRange.MONTH, "30d"),
        (TimeRange.YEAR, None),  # GDELT's whole window (about three months) lies within it
    ],
)
def test_time_range_becomes_a_timespan(time_range: TimeRange, timespan: str | None) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: timespan for day, week, month; a year needs none."""
    request = Gdelt().build_request(SearchParams(query="x", time_range=time_range))
    assert dict(request.params).get("timespan") == timespan


@pytest.mark.req("REQ-SEARCH-004", "REQ-ENG-010")
@pytest.mark.parametrize(("language", "name"), [("fr", "french"), ("en", "english")])
def test_a_language_becomes_a_sourcelang_operator(language: str, name: str) -> None:
    """REQ-SEARCH-004, REQ-ENG-010: GDELT selects the language by `sourcelang:` in the query."""
    request = Gdelt().build_request(SearchParams(query="climate summit", language=language))
    assert dict(request.params)["query"] == f"climate summit sourcelang:{name}"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_urls_raw_titles_and_seen_dates() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: URL as given, raw title, no snippet, seendate."""
    hits = Gdelt().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].url == "https://www.example-news.com/world/2024/11/14/climate-summit-baku-talks"
    assert hits[0].title == "Climate summit in Baku: negotiators clash over finance goal"
    assert hits[0].date == "2024-11-14"
    assert hits[1].title.startswith("Klimagipfel in Baku: Streit über")
    assert hits[3].title == "Energy markets shrug off climate talks &amp; oil prices rise"  # raw
    assert hits[4].title == "COP29、資金目標めぐり交渉難航"
    assert hits[5].title.startswith("قمة المناخ")
    assert hits[9].date == "2024-11-13"
    assert all(hit.snippet == "" for hit in hits)  # GDELT gives titles only


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
@pytest.mark.parametrize("name", ["empty.json", "empty_list.json"])
def test_empty_answer_is_no_hits(name: str) -> None:
    """REQ-TEST-002, REQ-ERR-005: `{}` (GDELT's no-match answer) or an empty list is empty."""
    assert Gdelt().parse(_response(name)) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_articles_are_skipped_and_bad_dates_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no URL or title skips an article; a bad seendate, its date."""
    hits = Gdelt().parse(_response("partial_hits.json"))
    assert [hit.rank for hit in hits] == [1, 4, 5]
    assert hits[1].date is None  # "2024-11-14 08:15"
    assert hits[2].date is None  # month 13


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_articles_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable articles is format drift, not empty."""
    assert (
        parse_failure(Gdelt(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
@pytest.mark.parametrize(
    ("status", "content_type", "wait_ms"),
    [(200, TEXT, None), (200, HTML, None), (200, JSON, None), (429, TEXT, 10_000)],
)
def test_the_throttle_message_is_rate_limited_with_200_or_429(
    status: int, content_type: str, wait_ms: int | None
) -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: GDELT's throttle text, whatever status or type."""
    headers = {"retry_after": "10"} if status == 429 else {}
    failure = parse_failure(Gdelt(), _response("throttle.txt", status, content_type, **headers))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == wait_ms


@pytest.mark.req("REQ-RES-002")
def test_an_article_titled_like_the_throttle_message_is_a_hit() -> None:
    """REQ-RES-002: the throttle words inside a JSON answer are an article, not a throttle."""
    body = (
        b'{"articles": [{"url": "https://example.org/a", "title": "Why APIs say: please'
        b' limit requests to one every 5 seconds", "seendate": "20241114T093000Z"}]}'
    )
    hits = Gdelt().parse(EngineResponse(200, {"content-type": JSON}, body))
    assert [hit.url for hit in hits] == ["https://example.org/a"]


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("content_type", [HTML, TEXT])
def test_a_refused_query_under_200_is_a_request_failure(content_type: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: GDELT's message for a query it refuses is not format drift."""
    failure = parse_failure(Gdelt(), _response("bad_query.html", 200, content_type))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-005")
def test_invalid_escapes_and_control_characters_are_repaired() -> None:
    """REQ-TEST-002, REQ-ENG-005: GDELT's broken escaping costs no results."""
    hits = Gdelt().parse(_response("invalid_escapes.json"))
    assert [hit.rank for hit in hits] == [1, 2, 3]
    assert hits[0].title == "Climate summit in Baku: negotiators\\' clash over finance goal"
    assert hits[1].title.startswith("Klimagipfel in Baku: Streit über")  # tab became a space
    assert hits[2].title == "Cumbre del clima: los países piden más financiación"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, FailureClass.REQUEST_FAILURE),
    ],
)
def test_http_statuses_are_classified(status: int, expected: FailureClass) -> None:
    """REQ-TEST-002, REQ-ENG-006: a status beyond the shared ones (400) is request_failure."""
    assert (
        parse_failure(Gdelt(), _response("server_error.html", status, HTML)).failure_class
        is expected
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(Gdelt(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_json_under_another_media_type_is_a_parse_failure() -> None:
    """REQ-ENG-006: the answer must be labelled JSON, even when the body looks like it."""
    assert (
        parse_failure(Gdelt(), _response("ok.json", 200, HTML)).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: neither the throttle text nor its contact leaves the driver."""
    failure = parse_failure(Gdelt(), _response("throttle.txt", 200, TEXT))
    assert str(failure) == "rate_limited"
    assert "example.org" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005")
async def test_fixture_served_over_http_parses_and_the_wire_carries_the_request() -> None:
    """REQ-TEST-002, REQ-MAIN-005: a local answer parses; the query on the wire is the request's."""
    exchange = await fetch_over_http(
        lambda endpoint: Gdelt(EngineSettings(endpoint=endpoint)),
        SearchParams(query="climate", time_range=TimeRange.WEEK),
        Route.fixture("gdelt", "ok.json"),
        path=PATH,
    )
    assert len(exchange.hits) == 12
    assert exchange.wire.param("timespan") == "7d"
