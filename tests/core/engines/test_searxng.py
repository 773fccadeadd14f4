"""The SearXNG driver: the operator's own instance, its JSON format and its failures."""

from __future__ import annotations

import json

import pytest

from rypsok.core import limits
from rypsok.core.egress.errors import EgressDenied
from rypsok.core.egress.policy import EngineProfile
from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    RawHit,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.searxng import SearXNG
from tests.core.engines.driver_support import HTML, FixtureResponses, fetch_over_http, parse_failure
from tests.fakes.provider_server import Route, load_fixture

JSON = "application/json"
INSTANCE = "https://searx.example.internal/search"
KEY = "canary-key-7f3a"


def _driver(endpoint: str | None = INSTANCE, api_key: str | None = None) -> SearXNG:
    return SearXNG(EngineSettings(endpoint=endpoint, api_key=api_key))


_response = FixtureResponses("searxng", content_type=JSON)


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002", "REQ-CMP-007")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002, REQ-CMP-007: every category, no spacing, LIM-C2."""
    assert SearXNG.id == "searxng"
    assert SearXNG.categories == frozenset(Category)
    assert {"en", "de", "ja", "zh", "nb"} <= SearXNG.languages
    assert SearXNG.time_ranges == frozenset(TimeRange)
    assert SearXNG.admission.min_interval_ms == 0
    assert SearXNG.admission.max_concurrency == limits.REQUESTS_PER_ENGINE_IN_FLIGHT
    assert SearXNG.admission.cacheable is False
    assert SearXNG.admission.attribution_required is False
    assert SearXNG.requires_key is False


@pytest.mark.req("REQ-ENG-003", "REQ-CFG-003")
def test_only_an_instance_the_operator_named_is_active() -> None:
    """REQ-ENG-003, REQ-CFG-003: no endpoint, no engine; a key alone does not make one."""
    assert not SearXNG().active
    assert not _driver(endpoint=None, api_key=KEY).active
    assert not _driver(endpoint="").active
    assert _driver().active


@pytest.mark.req("REQ-ENG-003", "REQ-SEC-017")
def test_without_an_endpoint_nothing_can_be_requested() -> None:
    """REQ-ENG-003, REQ-SEC-017: build_request refuses, and egress refuses the empty default."""
    with pytest.raises(RuntimeError) as caught:
        SearXNG().build_request(SearchParams(query="x"))
    assert str(caught.value) == "searxng has no endpoint and is inactive"
    for explicit in (False, True):
        with pytest.raises(EgressDenied):
            EngineProfile().check(SearXNG.default_endpoint, explicit_endpoint=explicit)


@pytest.mark.req("REQ-ENG-007", "REQ-ENG-011")
@pytest.mark.parametrize(
    ("category", "name"),
    [
        (Category.GENERAL, "general"),
        (Category.NEWS, "news"),
        (Category.SCIENCE, "science"),
        (Category.CODE, "it"),
    ],
)
def test_request_asks_the_instance_for_json_in_the_category(category: Category, name: str) -> None:
    """REQ-ENG-007, REQ-ENG-011: q, format=json, the category (code is `it`), page 1, safesearch."""
    request = _driver().build_request(SearchParams(query="http client", category=category))
    assert request.url == INSTANCE
    assert request.params == (
        ("q", "http client"),
        ("format", "json"),
        ("categories", name),
        ("pageno", "1"),
        ("safesearch", "1"),
    )
    assert dict(request.headers) == {"Accept": "application/json"}
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-SEARCH-004", "REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "safe_search", "safe"),
    [
        (TimeRange.DAY, SafeSearch.OFF, "0"),
        (TimeRange.WEEK, SafeSearch.MODERATE, "1"),
        (TimeRange.MONTH, SafeSearch.STRICT, "2"),
        (TimeRange.YEAR, SafeSearch.OFF, "0"),
    ],
)
def test_language_time_range_and_safe_search(
    time_range: TimeRange, safe_search: SafeSearch, safe: str
) -> None:
    """REQ-SEARCH-004, REQ-SEARCH-005, REQ-ENG-010: language, time_range, safesearch 0/1/2."""
    params = dict(
        _driver()
        .build_request(
            SearchParams(query="x", language="de", time_range=time_range, safe_search=safe_search)
        )
        .params
    )
    assert (params["language"], params["time_range"], params["safesearch"]) == (
        "de",
        time_range.value,
        safe,
    )


@pytest.mark.req("REQ-CFG-004", "REQ-ERR-004")
def test_a_configured_key_is_never_sent() -> None:
    """REQ-CFG-004, REQ-ERR-004: SearXNG has no key; one configured anyway goes nowhere."""
    driver = _driver(api_key=KEY)
    request = driver.build_request(SearchParams(query="x", language="en"))
    wire = request.url + repr(request.params) + repr(request.headers)
    assert KEY not in wire
    assert request.credential_headers == frozenset()
    assert KEY not in repr(driver) + repr(driver.settings) + repr(request)


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_the_instance_order_raw_content_and_dates() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: url as given, title, raw content, publishedDate."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == [1, 2, 3, 4]
    assert hits[0].url == "https://www.python-httpx.org/"
    assert hits[1].snippet.endswith("<b>Beta</b> &amp; more")  # raw: the pipeline cleans
    assert hits[2].title == "reqwest – Ein HTTP-Client für Rust"
    assert (hits[2].snippet, hits[2].date) == ("", "2026-09-30")
    assert hits[3].title == "<script>alert(1)</script> libcurl"
    assert hits[0].date is None  # publishedDate null


@pytest.mark.req("REQ-ENG-005", "REQ-ARCH-002", "REQ-ERR-004")
@pytest.mark.parametrize("name", ["ok.json", "news_ok.json"])
def test_the_instance_bookkeeping_never_reaches_a_hit(name: str) -> None:
    """REQ-ENG-005, REQ-ARCH-002, REQ-ERR-004: engine(s), score, positions, category stay behind."""
    assert list(RawHit._fields) == [
        "rank",
        "url",
        "title",
        "snippet",
        "date",
    ]
    hits = _driver().parse(_response(name))
    shown = repr(hits)
    results = json.loads(load_fixture("searxng", name))["results"]
    for result in results:
        for upstream in [result["engine"], *result["engines"]]:
            assert upstream not in shown
        assert str(result["score"]) not in shown
        assert f"'{result['category']}'" not in shown
        assert result["template"] not in shown
    assert "unresponsive" not in shown and "CAPTCHA" not in shown


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_answer_without_number_of_results_is_read_and_bad_dates_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-012: the 2026-05 format parses; bad and null dates are no date."""
    hits = _driver().parse(_response("news_ok.json"))
    assert [(hit.rank, hit.date) for hit in hits] == [(1, "2026-10-02"), (2, None), (3, None)]
    assert hits[2].snippet == ""  # content null


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_results_are_no_hits_whatever_unresponsive_engines_say() -> None:
    """REQ-TEST-002, REQ-ERR-005: `results: []` is empty; unresponsive_engines is informational."""
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-ENG-011")
def test_at_most_lim_s3_results_are_kept() -> None:
    """REQ-ENG-011: SearXNG has no count parameter, so its first LIM-S3 results are kept."""
    hits = _driver().parse(_response("many_results.json"))
    assert [hit.rank for hit in hits] == list(range(1, limits.RESULTS_PER_ENGINE + 1))


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_hits_are_skipped_and_bad_optional_fields_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no url or title skips a result; bad content and date dropped."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [(hit.rank, hit.title, hit.snippet, hit.date) for hit in hits] == [
        (1, "HTTPX", "HTTPX is a fully featured HTTP client.", None),
        (4, "urllib3", "", None),
    ]


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("status", [401, 403])
def test_the_instance_refusing_us_is_a_request_failure(status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: JSON disabled (403) or a proxy login (401): no key was sent."""
    name = "format_disabled.html" if status == 403 else "unauthorized.html"
    failure = parse_failure(_driver(), _response(name, status=status, content_type=HTML))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_an_html_page_instead_of_json_is_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: the endpoint answered its HTML results page."""
    failure = parse_failure(_driver(), _response("html_results.html", content_type=HTML))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_the_limiter_429_is_rate_limited_with_retry_after() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: SearXNG's limiter answers 429 in plain text."""
    response = _response("limiter.txt", status=429, content_type="text/plain", retry_after="30")
    failure = parse_failure(_driver(), response)
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 30_000


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-009")
@pytest.mark.parametrize(
    ("name", "status"), [("anubis.html", 200), ("challenge.html", 403), ("challenge.html", 503)]
)
def test_a_challenge_in_front_of_the_instance_is_blocked(name: str, status: int) -> None:
    """REQ-TEST-002, REQ-ENG-009: a proof-of-work gate or CAPTCHA page is blocked."""
    failure = parse_failure(_driver(), _response(name, status=status, content_type=HTML))
    assert failure.failure_class is FailureClass.BLOCKED


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status", "content_type", "expected"),
    [
        ("no_query.json", 400, JSON, FailureClass.REQUEST_FAILURE),
        ("search_error.json", 200, JSON, FailureClass.PARSE_FAILURE),
        ("unauthorized.html", 302, HTML, FailureClass.REQUEST_FAILURE),
    ],
)
def test_other_answers_are_classified(
    name: str, status: int, content_type: str, expected: FailureClass
) -> None:
    """REQ-TEST-002, REQ-ENG-006: JSON errors, a redirect (external bang), a gateway timeout."""
    response = _response(name, status=status, content_type=content_type)
    assert parse_failure(_driver(), response).failure_class is expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json", "all_hits_invalid.json"])
def test_bodies_not_in_the_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: misshapen or all-unusable answers are parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_instance_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: the instance's error message is not in the failure."""
    failure = parse_failure(_driver(), _response("search_error.json", status=500))
    assert str(failure) == "request_failure"
    assert "search error" not in repr(failure) + repr(vars(failure))


@pytest.mark.req("REQ-TEST-002", "REQ-TEST-015", "REQ-MAIN-005")
async def test_fixture_served_over_http_matches_build_request() -> None:
    """REQ-TEST-002, REQ-TEST-015, REQ-MAIN-005: the wire = build_request, and no credential."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(endpoint=endpoint, api_key=KEY),
        SearchParams(query="http client", language="en", time_range=TimeRange.WEEK),
        Route.fixture("searxng", "ok.json"),
        path="/search",
    )
    hits, received = exchange.hits, exchange.received
    assert len(received) == 1 and received[0].path == "/search"
    assert received[0].header("accept") == "application/json"
    assert not [name for name, value in received[0].headers + received[0].query if KEY in value]
    assert [hit.url for hit in hits][:2] == [
        "https://www.python-httpx.org/",
        "https://requests.readthedocs.io/en/latest/",
    ]
