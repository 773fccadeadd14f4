"""The Brave driver: request building, key handling and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.engines.base import (
    Category,
    EngineResponse,
    EngineSettings,
    FailureClass,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.brave import Brave
from tests.core.engines.driver_support import HTML, FixtureResponses, fetch_over_http, parse_failure
from tests.fakes.provider_server import Route, load_fixture

JSON = "application/json"
KEY = "canary-key-7f3a"
WEB = "https://api.search.brave.com/res/v1/web/search"
NEWS = "https://api.search.brave.com/res/v1/news/search"


def _driver(api_key: str | None = KEY, endpoint: str | None = None) -> Brave:
    return Brave(EngineSettings(endpoint=endpoint, api_key=api_key))


_response = FixtureResponses("brave", content_type=JSON)


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002", "REQ-CMP-007", "REQ-CFG-004")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002, REQ-CMP-007, REQ-CFG-004: keyed, 1 rps, no storage."""
    assert Brave.id == "brave"
    assert Brave.categories == frozenset({Category.GENERAL, Category.NEWS})
    assert {"en", "de", "ja", "zh", "pt", "no"} <= Brave.languages
    assert Brave.time_ranges == frozenset(TimeRange)
    assert Brave.max_query_chars == 400
    assert Brave.admission.min_interval_ms >= 1_000
    assert Brave.admission.max_concurrency == 1
    assert Brave.admission.cacheable is False
    assert Brave.admission.attribution_required is True
    assert Brave.requires_key is True
    assert not _driver(api_key=None).active
    assert _driver().active


@pytest.mark.req("REQ-ENG-011")
def test_web_request_asks_for_the_count_and_the_web_block() -> None:
    """REQ-ENG-011: q, count, safesearch, web block only, no highlight markers."""
    request = _driver().build_request(SearchParams(query="http client", results=10))
    assert request.url == WEB
    assert request.params == (
        ("q", "http client"),
        ("count", "10"),
        ("safesearch", "moderate"),
        ("result_filter", "web"),
        ("text_decorations", "false"),
    )
    assert dict(request.headers)["Accept"] == "application/json"


@pytest.mark.req("REQ-ENG-011", "REQ-ENG-007")
def test_news_uses_the_news_path_and_its_own_ceiling() -> None:
    """REQ-ENG-011, REQ-ENG-007: news goes to /news/search; count stops at 50 there, 20 on web."""
    news = _driver().build_request(SearchParams(query="x", category=Category.NEWS, results=80))
    assert news.url == NEWS
    assert dict(news.params)["count"] == "50"
    assert "result_filter" not in dict(news.params)
    web = _driver().build_request(SearchParams(query="x", results=80))
    assert dict(web.params)["count"] == "20"


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "freshness"),
    [
        (TimeRange.DAY, "pd"),
        (TimeRange.WEEK, "pw"),
        (TimeRange.MONTH, "pm"),
        (TimeRange.YEAR, "py"),
    ],
)
def test_time_range_is_freshness(time_range: TimeRange, freshness: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: day/week/month/year are pd/pw/pm/py."""
    request = _driver().build_request(SearchParams(query="x", time_range=time_range))
    assert dict(request.params)["freshness"] == freshness


@pytest.mark.req("REQ-SEARCH-004", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("language", "search_lang"),
    [("de", "de"), ("ja", "jp"), ("zh", "zh-hans"), ("pt", "pt-br"), ("no", "nb")],
)
def test_language_is_brave_search_lang(language: str, search_lang: str) -> None:
    """REQ-SEARCH-004, REQ-ENG-010: ISO 639-1 codes map to Brave's own spellings."""
    request = _driver().build_request(SearchParams(query="x", language=language))
    assert dict(request.params)["search_lang"] == search_lang


@pytest.mark.req("REQ-ENG-010")
@pytest.mark.parametrize(
    ("region", "country"),
    [("gb", "GB"), (" US ", "US"), ("xx", None), ("en-GB", None), (None, None)],
)
def test_region_is_country_only_where_brave_has_that_market(
    region: str | None, country: str | None
) -> None:
    """REQ-ENG-010: a supported region is sent upper-case; any other is left out, not refused."""
    params = dict(_driver().build_request(SearchParams(query="x", region=region)).params)
    assert params.get("country") == country
    assert "search_lang" not in params  # no language asked: none sent


@pytest.mark.req("REQ-ENG-010")
@pytest.mark.parametrize("level", list(SafeSearch))
def test_safe_search_level_is_passed_as_is(level: SafeSearch) -> None:
    """REQ-ENG-010: off, moderate and strict are Brave's own values."""
    request = _driver().build_request(SearchParams(query="x", safe_search=level))
    assert dict(request.params)["safesearch"] == level.value


@pytest.mark.req("REQ-ENG-005")
def test_explicit_endpoint_replaces_the_base_url() -> None:
    """REQ-ENG-005: the operator's endpoint is the base; the category picks the path."""
    driver = _driver(endpoint="https://proxy.example.test/brave/res/v1/")
    assert driver.build_request(SearchParams(query="x")).url == (
        "https://proxy.example.test/brave/res/v1/web/search"
    )
    news = driver.build_request(SearchParams(query="x", category=Category.NEWS))
    assert news.url == "https://proxy.example.test/brave/res/v1/news/search"


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017", "REQ-ERR-004", "REQ-SEC-020")
def test_the_key_is_only_in_its_declared_credential_header() -> None:
    """REQ-CFG-004, REQ-SEC-017, REQ-ERR-004, REQ-SEC-020: one declared header, nothing else."""
    driver = _driver()
    request = driver.build_request(SearchParams(query="x", category=Category.NEWS))
    assert [name for name, value in request.headers if KEY in value] == ["X-Subscription-Token"]
    assert dict(request.headers)["X-Subscription-Token"] == KEY
    assert request.credential_headers == frozenset({"X-Subscription-Token"})
    assert KEY not in request.url
    assert not [pair for pair in request.params if KEY in pair[0] or KEY in pair[1]]
    shown = repr(driver) + repr(driver.settings) + str(driver.settings) + repr(request)
    assert KEY not in shown


@pytest.mark.req("REQ-CFG-004")
def test_without_a_key_no_credential_header_is_built() -> None:
    """REQ-CFG-004: an inactive engine asked anyway sends no empty or placeholder key."""
    request = _driver(api_key=None).build_request(SearchParams(query="x"))
    assert "X-Subscription-Token" not in dict(request.headers)
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_web_success_keeps_order_urls_raw_descriptions_and_page_age() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: title, url as given, raw description, page_age."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == [1, 2, 3, 4, 5]
    assert hits[0].title == "HTTPX"
    assert hits[0].url == "https://www.python-httpx.org/"
    assert hits[0].snippet.startswith("HTTPX is a fully featured <strong>HTTP</strong>")
    assert hits[0].date == "2026-09-14"
    assert "&gt;&gt;&gt;" in hits[1].snippet  # raw: the pipeline decodes
    assert hits[2].title == "Ein HTTP-Client für Rust – reqwest & hyper"
    assert hits[2].date is None  # only the text `age`: no date
    assert hits[3].title == "<script>alert(1)</script> curl"
    assert hits[3].date is None  # a page_age that is not a date is dropped


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_news_success_is_read_from_the_news_answer() -> None:
    """REQ-TEST-002, REQ-ENG-012: the news answer's own results, dates from page_age."""
    hits = _driver().parse(_response("news_ok.json"))
    assert [(hit.rank, hit.date) for hit in hits] == [
        (1, "2026-10-02"),
        (2, "2026-10-01"),
        (3, None),
    ]
    assert hits[1].snippet == "Major CDNs enabled HTTP/3 by default &amp; report lower latency."
    assert hits[2].snippet == ""


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
@pytest.mark.parametrize("name", ["web_empty.json", "news_empty.json"])
def test_empty_answers_are_no_hits(name: str) -> None:
    """REQ-TEST-002, REQ-ERR-005: a web answer without `web`, or news `results: []`, is empty."""
    assert _driver().parse(_response(name)) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_hits_are_skipped_and_bad_optional_fields_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no url or title skips a result; a bad description is dropped."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [(hit.rank, hit.title) for hit in hits] == [(1, "HTTPX"), (4, "urllib3")]
    assert (hits[1].snippet, hits[1].date) == ("", None)


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_hits_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable results is format drift, not empty."""
    assert (
        parse_failure(_driver(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_a_spent_second_window_waits_for_its_reset() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: 429 waits for the exhausted window's reset."""
    response = _response(
        "rate_limited.json",
        status=429,
        x_ratelimit_limit="1, 15000",
        x_ratelimit_remaining="0, 990",
        x_ratelimit_reset="1, 1419704",
    )
    failure = parse_failure(_driver(), response)
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 1_000


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002")
def test_a_spent_monthly_quota_waits_at_most_lim_b4() -> None:
    """REQ-RES-002, REQ-CMP-002: the month window's reset is capped at LIM-B4."""
    response = _response(
        "quota_limited.json",
        status=429,
        x_ratelimit_remaining="1, 0",
        x_ratelimit_reset="1, 1419704",
    )
    assert parse_failure(_driver(), response).retry_after_ms == limits.RETRY_AFTER_MAX_MS


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002")
@pytest.mark.parametrize(
    ("name", "headers", "expected"),
    [
        ("rate_limited.json", {"retry-after": "7", "x-ratelimit-reset": "1, 9"}, 7_000),
        ("rate_limited.json", {"x-ratelimit-reset": "3, 1419704"}, 3_000),
        ("rate_limited.json", {"x-ratelimit-reset": "soon", "x-ratelimit-remaining": "0"}, None),
        ("rate_limited.json", {}, None),
        ("quota_limited.json", {}, limits.RETRY_AFTER_MAX_MS),
    ],
)
def test_the_wait_comes_from_retry_after_then_reset_then_the_code(
    name: str, headers: dict[str, str], expected: int | None
) -> None:
    """REQ-RES-002, REQ-CMP-002: Retry-After wins; else the soonest reset; else QUOTA_LIMITED."""
    response = EngineResponse(429, {"content-type": JSON, **headers}, load_fixture("brave", name))
    failure = parse_failure(_driver(), response)
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status"),
    [("token_invalid.json", 422), ("subscription_not_found.json", 404)],
)
def test_refused_keys_are_auth_failure_whatever_the_status(name: str, status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: 422 SUBSCRIPTION_TOKEN_INVALID, 404 _NOT_FOUND refuse a key."""
    assert (
        parse_failure(_driver(), _response(name, status=status)).failure_class
        is FailureClass.AUTH_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("status", [401, 403])
def test_401_and_403_with_a_key_are_auth_failure(status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: the key was sent, so a 401 or 403 refuses it."""
    failure = parse_failure(_driver(), EngineResponse(status, {"content-type": JSON}, b"{}"))
    assert failure.failure_class is FailureClass.AUTH_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status", "content_type", "expected"),
    [
        ("validation.json", 422, JSON, FailureClass.REQUEST_FAILURE),
        ("bad_gateway.html", 200, HTML, FailureClass.PARSE_FAILURE),
    ],
)
def test_other_answers_are_classified(
    name: str, status: int, content_type: str, expected: FailureClass
) -> None:
    """REQ-TEST-002, REQ-ENG-006: bad request, outage, gateway timeout, HTML under 200."""
    response = _response(name, status=status, content_type=content_type)
    assert parse_failure(_driver(), response).failure_class is expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json", "unknown_type.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: misshapen or foreign answers are parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ERR-004", "REQ-ENG-006", "REQ-SEC-016")
@pytest.mark.parametrize("status", [401, 422])
def test_an_error_body_echoing_the_key_puts_it_nowhere(status: int) -> None:
    """REQ-ERR-004, REQ-ENG-006, REQ-SEC-016: the echoed key is in no failure text or attribute."""
    failure = parse_failure(_driver(), _response("token_invalid_echo.json", status=status))
    assert failure.failure_class is FailureClass.AUTH_FAILURE
    shown = str(failure) + repr(failure) + repr(failure.args) + repr(vars(failure))
    assert KEY not in shown
    assert "subscription token" not in shown.lower()


@pytest.mark.req("REQ-TEST-002", "REQ-TEST-015", "REQ-SEC-017", "REQ-MAIN-005")
@pytest.mark.parametrize(
    ("category", "path", "fixture"),
    [
        (Category.GENERAL, "/res/v1/web/search", "ok.json"),
        (Category.NEWS, "/res/v1/news/search", "news_ok.json"),
    ],
)
async def test_fixture_served_over_http_with_the_key_in_its_header_only(
    category: Category, path: str, fixture: str
) -> None:
    """REQ-TEST-002, REQ-TEST-015, REQ-SEC-017, REQ-MAIN-005: wire = request; key in its header."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(endpoint=endpoint),
        SearchParams(query="http client", category=category),
        Route.fixture("brave", fixture),
        path=path,
        endpoint_path="/res/v1",
    )
    hits, received = exchange.hits, exchange.received
    assert len(received) == 1 and received[0].path == path
    assert received[0].header("x-subscription-token") == KEY
    assert received[0].header("accept") == "application/json"
    assert [name for name, value in received[0].headers if KEY in value] == ["x-subscription-token"]
    assert KEY not in received[0].path
    assert hits and hits[0].url.startswith("https://")
