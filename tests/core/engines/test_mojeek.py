"""The Mojeek driver: request building, key handling and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.mojeek import Mojeek
from tests.core.engines.driver_support import (
    HTML,
    NOW,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

JSON = "application/json"
KEY = "canary-key-7f3a"


def _driver(api_key: str | None = KEY, endpoint: str | None = None) -> Mojeek:
    return Mojeek(EngineSettings(endpoint=endpoint, api_key=api_key), clock=lambda: NOW)


_response = FixtureResponses("mojeek", content_type=JSON)


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002", "REQ-CMP-007", "REQ-CFG-004")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002, REQ-CMP-007, REQ-CFG-004: keyed, 1 rps, no storage."""
    assert Mojeek.id == "mojeek"
    assert Mojeek.categories == frozenset({Category.GENERAL})
    assert "en" in Mojeek.languages
    assert Mojeek.time_ranges == frozenset(TimeRange)
    assert Mojeek.admission.min_interval_ms >= 1_000
    assert Mojeek.admission.max_concurrency == 1
    assert Mojeek.admission.cacheable is False
    assert Mojeek.admission.attribution_required is True
    assert Mojeek.requires_key is True
    assert Mojeek.default_endpoint == "https://www.mojeek.com/search"
    assert not _driver(api_key=None).active
    assert _driver().active


@pytest.mark.req("REQ-ENG-011")
def test_request_asks_for_json_and_the_count() -> None:
    """REQ-ENG-011: q, fmt=json, t = count (at most 20), safe, then the key; no `s`."""
    request = _driver().build_request(SearchParams(query="http client", results=10))
    assert request.url == "https://www.mojeek.com/search"
    assert request.params == (
        ("q", "http client"),
        ("fmt", "json"),
        ("t", "10"),
        ("safe", "1"),
        ("api_key", KEY),
    )
    assert dict(request.headers) == {"Accept": "application/json"}
    assert request.credential_headers == frozenset()
    wide = _driver().build_request(SearchParams(query="x", results=500))
    assert dict(wide.params)["t"] == "20"


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "since"),
    [
        (TimeRange.DAY, "20231113"),
        (TimeRange.WEEK, "20231107"),
        (TimeRange.MONTH, "20231015"),
        (TimeRange.YEAR, "20221114"),
    ],
)
def test_time_range_is_a_since_date(time_range: TimeRange, since: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: `since=YYYYMMDD`, now minus the range, in UTC."""
    request = _driver().build_request(SearchParams(query="x", time_range=time_range))
    assert dict(request.params)["since"] == since


@pytest.mark.req("REQ-SEARCH-004", "REQ-ENG-010")
def test_language_region_and_safe_search() -> None:
    """REQ-SEARCH-004, REQ-ENG-010: lb = language, rb = a two-letter region, safe 0 for off."""
    params = dict(
        _driver()
        .build_request(
            SearchParams(query="x", language="de", region="ch", safe_search=SafeSearch.OFF)
        )
        .params
    )
    assert (params["lb"], params["rb"], params["safe"]) == ("de", "CH", "0")
    strict = dict(
        _driver().build_request(SearchParams(query="x", safe_search=SafeSearch.STRICT)).params
    )
    assert strict["safe"] == "1"
    assert "lb" not in strict and "rb" not in strict
    odd = dict(_driver().build_request(SearchParams(query="x", region="en-GB")).params)
    assert "rb" not in odd


@pytest.mark.req("REQ-ENG-005")
def test_explicit_endpoint_keeps_the_parameters() -> None:
    """REQ-ENG-005: the endpoint replaces the URL only."""
    search = SearchParams(query="x")
    request = _driver(endpoint="https://api.mojeek.com/search").build_request(search)
    assert request.url == "https://api.mojeek.com/search"
    assert request.params == _driver().build_request(search).params


@pytest.mark.req("REQ-CFG-004", "REQ-ERR-004", "REQ-SEC-020")
def test_the_key_is_only_in_the_api_key_parameter() -> None:
    """REQ-CFG-004, REQ-ERR-004, REQ-SEC-020: only `api_key`; not in the URL, headers or reprs."""
    driver = _driver()
    request = driver.build_request(
        SearchParams(query="x", language="en", region="GB", time_range=TimeRange.DAY)
    )
    assert [name for name, value in request.params if KEY in value] == ["api_key"]
    assert KEY not in request.url
    assert not [pair for pair in request.headers if KEY in pair[0] or KEY in pair[1]]
    shown = repr(driver) + repr(driver.settings) + str(driver.settings) + repr(request)
    assert KEY not in shown


@pytest.mark.req("REQ-CFG-004")
def test_without_a_key_no_key_parameter_is_built() -> None:
    """REQ-CFG-004: an inactive engine asked anyway sends no empty or placeholder key."""
    request = _driver(api_key=None).build_request(SearchParams(query="x"))
    assert "api_key" not in dict(request.params)


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_urls_and_raw_descriptions() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: title, url as given, raw desc; no date mapped."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == [1, 2, 3, 4]
    assert hits[0].url == "https://www.python-httpx.org/"
    assert hits[1].title == "Requests: HTTP for Humans™ — Requests documentation"
    assert hits[1].snippet.endswith("&lt;b&gt;Beta&lt;/b&gt;")  # raw: the pipeline decodes
    assert hits[2].title == "reqwest – Ein HTTP-Client für Rust"
    assert hits[3].title == "<b>libcurl</b> - the multiprotocol file transfer library"
    assert hits[3].snippet == ""  # no desc
    assert all(hit.date is None for hit in hits)


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
@pytest.mark.parametrize("name", ["empty.json", "empty_without_results.json"])
def test_empty_answers_are_no_hits(name: str) -> None:
    """REQ-TEST-002, REQ-ERR-005: `results: []`, or no results with `return: 0`, is empty."""
    assert _driver().parse(_response(name)) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_hits_are_skipped_and_bad_snippets_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no url or title skips a result; a non-text desc is dropped."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [(hit.rank, hit.title, hit.snippet) for hit in hits] == [
        (1, "HTTPX", "HTTPX is a fully featured HTTP client."),
        (4, "urllib3", ""),
    ]


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_daily_limit_with_http_200_is_rate_limited_for_lim_b4() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: `ERROR: Daily Limit Reached` waits LIM-B4."""
    failure = parse_failure(_driver(), _response("daily_limit.json"))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == limits.RETRY_AFTER_MAX_MS


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_429_is_rate_limited_with_retry_after() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: HTTP 429 honours Retry-After."""
    failure = parse_failure(_driver(), _response("daily_limit.json", status=429, retry_after="120"))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 120_000


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status"), [("invalid_key.json", 200), ("ok.json", 401), ("ok.json", 403)]
)
def test_a_refused_key_is_auth_failure(name: str, status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: an error status naming the key, or 401/403 with the key sent."""
    assert (
        parse_failure(_driver(), _response(name, status=status)).failure_class
        is FailureClass.AUTH_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status", "content_type", "expected"),
    [
        ("other_error.json", 200, JSON, FailureClass.REQUEST_FAILURE),
        ("unknown_status.json", 200, JSON, FailureClass.PARSE_FAILURE),
        ("missing_results.json", 200, JSON, FailureClass.PARSE_FAILURE),
        ("unavailable.html", 200, HTML, FailureClass.PARSE_FAILURE),
    ],
)
def test_other_answers_are_classified(
    name: str, status: int, content_type: str, expected: FailureClass
) -> None:
    """REQ-TEST-002, REQ-ENG-006: other errors, unknown status, lost results, outages, HTML."""
    response = _response(name, status=status, content_type=content_type)
    assert parse_failure(_driver(), response).failure_class is expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json", "all_hits_invalid.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: misshapen or all-unusable answers are parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ERR-004", "REQ-ENG-006", "REQ-SEC-016")
def test_an_error_status_echoing_the_key_puts_it_nowhere() -> None:
    """REQ-ERR-004, REQ-ENG-006, REQ-SEC-016: the echoed key is in no failure text or attribute."""
    failure = parse_failure(_driver(), _response("invalid_key_echo.json"))
    assert failure.failure_class is FailureClass.AUTH_FAILURE
    shown = str(failure) + repr(failure) + repr(failure.args) + repr(vars(failure))
    assert KEY not in shown
    assert "invalid api key" not in shown.lower()


@pytest.mark.req("REQ-TEST-002", "REQ-CFG-004", "REQ-MAIN-005")
async def test_fixture_served_over_http_with_the_key_in_its_parameter_only() -> None:
    """REQ-TEST-002, REQ-CFG-004, REQ-MAIN-005: wire = build_request; the key only as api_key."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(endpoint=endpoint),
        SearchParams(query="http client", language="en"),
        Route.fixture("mojeek", "ok.json"),
        path="/search",
    )
    hits, received = exchange.hits, exchange.received
    assert len(received) == 1 and received[0].path == "/search"
    assert received[0].param("api_key") == KEY
    assert [name for name, value in received[0].query if KEY in value] == ["api_key"]
    assert not [name for name, value in received[0].headers if KEY in value]
    assert received[0].header("accept") == "application/json"
    assert hits[0].url == "https://www.python-httpx.org/"
