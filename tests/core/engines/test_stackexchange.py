"""The Stack Exchange driver: request building and parsing of recorded answers."""

from __future__ import annotations

import gzip
import json

import pytest

from rypsok.core import limits
from rypsok.core.engines.base import (
    Category,
    EngineResponse,
    EngineSettings,
    FailureClass,
    PausingHits,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.stackexchange import StackExchange
from tests.core.engines.driver_support import (
    HTML,
    JSON,
    NOW,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route, load_fixture

PATH = "/2.3/search/advanced"


def _driver(settings: EngineSettings | None = None) -> StackExchange:
    return StackExchange(settings, clock=lambda: NOW)


_response = FixtureResponses("stackexchange")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002", "REQ-CMP-003")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002, REQ-CMP-003: code, English, serial, CC BY-SA."""
    assert StackExchange.id == "stackexchange"
    assert StackExchange.categories == frozenset({Category.CODE})
    assert StackExchange.languages == frozenset({"en"})
    assert StackExchange.time_ranges == frozenset(TimeRange)
    assert StackExchange.admission.min_interval_ms == 10_000
    assert StackExchange.admission.max_concurrency == 1
    assert StackExchange.admission.cacheable is True
    assert StackExchange.admission.attribution_required is True
    assert StackExchange.requires_key is False


@pytest.mark.req("REQ-ENG-011")
def test_request_searches_stack_overflow_by_relevance_with_bodies() -> None:
    """REQ-ENG-011: q, site, relevance, pagesize = count, the built-in withbody filter."""
    request = _driver().build_request(SearchParams(query="undo last commit", results=12))
    assert request.url == "https://api.stackexchange.com/2.3/search/advanced"
    assert request.params == (
        ("q", "undo last commit"),
        ("site", "stackoverflow"),
        ("sort", "relevance"),
        ("order", "desc"),
        ("pagesize", "12"),
        ("filter", "withbody"),
    )
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-ENG-011", "REQ-ENG-005")
def test_explicit_endpoint_keeps_the_parameters_and_pagesize_is_capped() -> None:
    """REQ-ENG-011, REQ-ENG-005: the endpoint replaces the URL only; pagesize stops at 100."""
    search = SearchParams(query="x", results=500)
    default = _driver().build_request(search)
    request = _driver(EngineSettings(endpoint="https://se.proxy.test/search")).build_request(search)
    assert request.url == "https://se.proxy.test/search"
    assert request.params == default.params
    assert dict(request.params)["pagesize"] == "100"


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "days"),
    [(TimeRange.DAY, 1), (TimeRange.WEEK, 7), (TimeRange.MONTH, 30), (TimeRange.YEAR, 365)],
)
def test_time_range_sets_fromdate(time_range: TimeRange, days: int) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: fromdate = now minus the range, in Unix seconds."""
    request = _driver().build_request(SearchParams(query="x", time_range=time_range))
    assert dict(request.params)["fromdate"] == str(int(NOW) - days * 86_400)


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_question_links_and_raw_html() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: link as given, escaped title and HTML body raw."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].url == (
        "https://stackoverflow.com/questions/927358/"
        "how-do-i-undo-the-most-recent-local-commits-in-git"
    )
    assert hits[0].title == "How do I undo the most recent local commits in Git?"
    assert hits[0].snippet.startswith("<p>I accidentally committed the wrong files")
    assert hits[0].date == "2009-05-29"
    assert hits[1].title == "How do I use &quot;git add -p&quot; with new files?"  # raw entities
    assert hits[2].title.startswith("Why does Git say &#39;Your branch")
    assert hits[3].title.endswith("&lt;HEAD~1&gt;")
    assert hits[4].title.startswith("Ümlaute in commit messages")
    assert "<script>alert('x')</script>" in hits[5].snippet  # raw: the pipeline cleans
    assert hits[8].title == "直前の git コミットを取り消す方法"
    assert hits[11].snippet == ""  # no body


@pytest.mark.req("REQ-TEST-002", "REQ-CMP-002")
def test_a_backoff_on_a_successful_answer_keeps_the_hits_and_asks_a_pause() -> None:
    """REQ-TEST-002, REQ-CMP-002: `backoff` with results: hits kept, the pause passed on."""
    hits = _driver().parse(_response("ok_with_backoff.json"))
    assert [hit.rank for hit in hits] == [1, 2, 3]
    assert isinstance(hits, PausingHits)
    backoff_s = json.loads(_response("ok_with_backoff.json").body)["backoff"]
    assert hits.pause_ms == backoff_s * 1000


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_answer_is_no_hits() -> None:
    """REQ-TEST-002, REQ-ERR-005: `items: []` with quota left is empty."""
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_questions_are_skipped_and_bad_dates_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no title or link skips a question; a bad date drops the date."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [hit.rank for hit in hits] == [1, 4, 5, 7]
    assert hits[1].date is None  # creation_date is a string
    assert hits[2].date is None  # creation_date is negative
    assert hits[3].date is None  # creation_date is `true`


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_questions_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable questions is format drift, not empty."""
    assert (
        parse_failure(_driver(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
@pytest.mark.parametrize(
    ("name", "wait_ms"),
    [("quota_exhausted.json", 30_000), ("quota_exhausted_no_backoff.json", None)],
)
def test_a_spent_daily_quota_is_rate_limited(name: str, wait_ms: int | None) -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: `quota_remaining: 0` waits for `backoff`."""
    failure = parse_failure(_driver(), _response(name))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == wait_ms


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
@pytest.mark.parametrize(
    ("name", "headers", "wait_ms"),
    [
        ("throttle_violation.json", {}, limits.RETRY_AFTER_MAX_MS),  # 82,626 s, capped
        ("throttle_violation_backoff.json", {"retry_after": "99"}, 12_000),
        ("throttle_violation_unnamed.json", {"retry_after": "20"}, 20_000),
        ("throttle_violation_unnamed.json", {}, None),
    ],
)
def test_throttle_violation_is_rate_limited_with_its_wait(
    name: str, headers: dict[str, str], wait_ms: int | None
) -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: error 502: backoff, named seconds, Retry-After."""
    failure = parse_failure(_driver(), _response(name, 400, **headers))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == wait_ms


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status", "expected"),
    [
        ("bad_parameter.json", 400, FailureClass.REQUEST_FAILURE),
        ("access_token_required.json", 401, FailureClass.AUTH_FAILURE),
        ("access_token_required.json", 400, FailureClass.AUTH_FAILURE),
        ("internal_error.json", 500, FailureClass.REQUEST_FAILURE),
        ("temporarily_unavailable.json", 503, FailureClass.REQUEST_FAILURE),
        ("error_not_a_number.json", 400, FailureClass.PARSE_FAILURE),
    ],
)
def test_error_documents_are_classified_by_error_id(
    name: str, status: int, expected: FailureClass
) -> None:
    """REQ-TEST-002, REQ-ENG-006: bad_parameter, credential errors, outages, a drifted error."""
    assert parse_failure(_driver(), _response(name, status)).failure_class is expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (gzip.compress(load_fixture("stackexchange", "ok.json"), mtime=0), JSON),
        (load_fixture("stackexchange", "server_error.html"), HTML),
    ],
)
def test_undecoded_gzip_or_an_html_page_under_200_is_a_parse_failure(
    body: bytes, content_type: str
) -> None:
    """REQ-ENG-006: a body egress did not decompress, or a page, is not the provider's answer."""
    failure = parse_failure(_driver(), EngineResponse(200, {"content-type": content_type}, body))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: neither the error name nor its message leaves the driver."""
    failure = parse_failure(_driver(), _response("throttle_violation.json", 400))
    assert str(failure) == "rate_limited"
    assert "throttle" not in repr(failure)
    assert "IP" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005")
async def test_fixture_served_gzipped_over_http_parses_and_the_wire_carries_the_request() -> None:
    """REQ-TEST-002, REQ-MAIN-005: a gzipped local answer parses; the wire carries the request."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(EngineSettings(endpoint=endpoint)),
        SearchParams(query="undo commit", time_range=TimeRange.YEAR),
        Route.fixture("stackexchange", "ok.json", gzip=True),
        path=PATH,
    )
    assert len(exchange.hits) == 12
    assert exchange.wire.param("fromdate") == str(int(NOW) - 365 * 86_400)
