"""The GitHub driver: request building and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.engines.base import (
    Category,
    EngineResponse,
    EngineSettings,
    FailureClass,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.github import GitHub
from tests.core.engines.driver_support import (
    HTML,
    JSON,
    NOW,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/search/repositories"
DATE = "Tue, 14 Nov 2023 22:13:20 GMT"  # the same instant as an HTTP date


def _driver(api_key: str | None = None, endpoint: str | None = None) -> GitHub:
    return GitHub(EngineSettings(endpoint=endpoint, api_key=api_key), clock=lambda: NOW)


_response = FixtureResponses("github")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002: code, keyless, 10 requests a minute, serial."""
    assert GitHub.id == "github"
    assert GitHub.categories == frozenset({Category.CODE})
    assert GitHub.languages == frozenset()
    assert GitHub.time_ranges == frozenset(TimeRange)
    assert GitHub.max_query_chars == 256
    assert GitHub.admission.min_interval_ms >= 60_000 // 10
    assert GitHub.admission.max_concurrency == 1
    assert GitHub.requires_key is False
    assert GitHub().active


@pytest.mark.req("REQ-ENG-011", "REQ-TEST-015")
def test_keyless_request_sends_no_credential() -> None:
    """REQ-ENG-011, REQ-TEST-015: q, per_page = count, API headers, no Authorization."""
    request = _driver().build_request(SearchParams(query="http client", results=10))
    assert request.url == "https://api.github.com/search/repositories"
    assert request.params == (("q", "http client"), ("per_page", "10"))
    headers = dict(request.headers)
    assert headers["Accept"] == "application/vnd.github+json"
    assert headers["X-GitHub-Api-Version"] == "2022-11-28"
    assert "Authorization" not in headers
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-TEST-015", "REQ-SEC-017")
def test_a_token_is_sent_as_a_declared_credential_header() -> None:
    """REQ-TEST-015, REQ-SEC-017: Bearer token, named in credential_headers for egress."""
    request = _driver(api_key="ghp_exampleexampleexample").build_request(SearchParams(query="x"))
    assert dict(request.headers)["Authorization"] == "Bearer ghp_exampleexampleexample"
    assert request.credential_headers == frozenset({"Authorization"})


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "since"),
    [
        (TimeRange.DAY, "2023-11-13"),
        (TimeRange.WEEK, "2023-11-07"),
        (TimeRange.MONTH, "2023-10-15"),
        (TimeRange.YEAR, "2022-11-14"),
    ],
)
def test_time_range_adds_a_pushed_qualifier(time_range: TimeRange, since: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: `pushed:>=` the start of the range, in UTC."""
    request = _driver().build_request(SearchParams(query="http client", time_range=time_range))
    assert dict(request.params)["q"] == f"http client pushed:>={since}"


@pytest.mark.req("REQ-ENG-005", "REQ-ENG-011")
def test_explicit_endpoint_keeps_the_query_parameters_and_caps_the_count() -> None:
    """REQ-ENG-005, REQ-ENG-011: the endpoint replaces the URL only; per_page stops at 100."""
    search = SearchParams(query="x", results=250)
    default = _driver().build_request(search)
    request = _driver(endpoint="https://ghe.example.test/api/v3/search/repositories").build_request(
        search
    )
    assert request.url == "https://ghe.example.test/api/v3/search/repositories"
    assert request.params == default.params
    assert dict(request.params)["per_page"] == "100"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_urls_raw_descriptions_and_push_dates() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: full_name, html_url, raw description, pushed_at."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].title == "psf/requests"
    assert hits[0].url == "https://github.com/psf/requests"
    assert hits[0].date == "2026-11-27"  # pushed_at, not updated_at
    assert hits[1].snippet == "A next generation HTTP client for Python. 🦋"
    assert "<script>alert(1)</script>" in hits[10].snippet  # raw: the pipeline cleans
    assert hits[11].title == "jürgen-ødegård/http-klient"
    assert hits[11].snippet == ""
    assert hits[11].date == "2025-03-14"  # no pushed_at: updated_at


@pytest.mark.req("REQ-TEST-002")
def test_incomplete_results_are_still_results() -> None:
    """REQ-TEST-002: `incomplete_results: true` (GitHub's own timeout) keeps what came."""
    assert len(_driver().parse(_response("incomplete.json"))) == 3


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_answer_is_no_hits() -> None:
    """REQ-TEST-002, REQ-ERR-005: `items: []` is empty."""
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_hits_are_skipped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no html_url or no full_name skips that repository only."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [(hit.rank, hit.title) for hit in hits] == [(1, "psf/requests"), (4, "aio-libs/aiohttp")]
    assert hits[1].date == "2026-11-30"  # garbled pushed_at falls back to updated_at


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_hits_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable hits is format drift, not empty."""
    assert (
        parse_failure(_driver(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_primary_limit_403_is_rate_limited_until_the_reset() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: 403 + remaining 0 waits for x-ratelimit-reset."""
    response = _response(
        "rate_limit_primary.json",
        status=403,
        x_ratelimit_remaining="0",
        x_ratelimit_reset=str(int(NOW) + 42),
        date=DATE,
    )
    failure = parse_failure(_driver(), response)
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 42_000


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002")
def test_a_distant_reset_is_capped_and_a_missing_date_gives_no_wait() -> None:
    """REQ-RES-002, REQ-CMP-002: the wait is capped at LIM-B4; without Date it is unknown."""
    far = _response(
        "rate_limit_primary.json",
        status=403,
        x_ratelimit_remaining="0",
        x_ratelimit_reset=str(int(NOW) + 86_400),
        date=DATE,
    )
    assert parse_failure(_driver(), far).retry_after_ms == limits.RETRY_AFTER_MAX_MS
    undated = _response(
        "rate_limit_primary.json", status=403, x_ratelimit_remaining="0", x_ratelimit_reset="1"
    )
    failure = parse_failure(_driver(), undated)
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms is None


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002")
@pytest.mark.parametrize("status", [403, 429])
def test_secondary_limit_is_rate_limited_with_retry_after(status: int) -> None:
    """REQ-TEST-002, REQ-RES-002: the secondary limit (403 or 429) honours Retry-After."""
    failure = parse_failure(
        _driver(), _response("rate_limit_secondary.json", status=status, retry_after="60")
    )
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 60_000


@pytest.mark.req("REQ-RES-002")
def test_a_rate_limit_message_alone_makes_a_403_rate_limited() -> None:
    """REQ-RES-002: without headers, the body's rate-limit message decides."""
    failure = parse_failure(_driver(), _response("rate_limit_secondary.json", status=403))
    assert failure.failure_class is FailureClass.RATE_LIMITED


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_bad_credentials_are_auth_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: 401 is auth_failure."""
    failure = parse_failure(_driver(api_key="ghp_x"), _response("bad_credentials.json", status=401))
    assert failure.failure_class is FailureClass.AUTH_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-ENG-009")
def test_a_plain_403_is_auth_failure_with_a_token_and_blocked_without() -> None:
    """REQ-ENG-006, REQ-ENG-009: no rate-limit signal: a token's refusal, or the client's."""
    forbidden = _response("forbidden.json", status=403)
    assert (
        parse_failure(_driver(api_key="ghp_x"), forbidden).failure_class
        is FailureClass.AUTH_FAILURE
    )
    refused = _response("missing_user_agent.txt", status=403, content_type="text/plain")
    assert parse_failure(_driver(), refused).failure_class is FailureClass.BLOCKED


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("name", "status", "content_type", "expected"),
    [
        ("validation_failed.json", 422, JSON, FailureClass.REQUEST_FAILURE),
        ("unicorn.html", 200, HTML, FailureClass.PARSE_FAILURE),
    ],
)
def test_other_answers_are_classified(
    name: str, status: int, content_type: str, expected: FailureClass
) -> None:
    """REQ-TEST-002, REQ-ENG-006: bad query, outage page, gateway timeout, HTML under 200."""
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


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: neither the message nor the address appears in the failure."""
    failure = parse_failure(
        _driver(), _response("rate_limit_primary.json", status=403, x_ratelimit_remaining="0")
    )
    assert str(failure) == "rate_limited"
    assert "192.0.2.10" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005", "REQ-TEST-015")
async def test_fixture_served_over_http_parses_and_keyless_sends_no_authorization() -> None:
    """REQ-TEST-002, REQ-MAIN-005, REQ-TEST-015: real local answer; no credential on the wire."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(endpoint=endpoint),
        SearchParams(query="http client"),
        Route.fixture("github", "ok.json"),
        path=PATH,
    )
    assert exchange.hits[0].url == "https://github.com/psf/requests"
    assert exchange.wire.header("accept") == "application/vnd.github+json"
    assert exchange.wire.header("authorization") is None


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002")
def test_a_403_with_retry_after_is_rate_limited_whatever_the_body() -> None:
    """REQ-RES-002, REQ-CMP-002: Retry-After on a 403 is GitHub's secondary-limit signal."""
    failure = parse_failure(_driver(), EngineResponse(403, {"retry-after": "30"}, b""))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 30_000


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002")
def test_a_429_without_retry_after_waits_for_the_reset_too() -> None:
    """REQ-RES-002, REQ-CMP-002: a 429 reads x-ratelimit-reset like a rate-limit 403 does."""
    response = _response(
        "rate_limit_primary.json", status=429, x_ratelimit_reset=str(int(NOW) + 42), date=DATE
    )
    failure = parse_failure(_driver(), response)
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 42_000
