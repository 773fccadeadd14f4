"""The Bing scraping driver on hand-written pages (REQ-TEST-018, RFC 015)."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    EngineResponse,
    FailureClass,
    FollowUp,
    SafeSearch,
    SearchParams,
)
from rypsok.core.engines.bing import Bing, unwrap
from tests.core.engines.driver_support import HTML, FixtureResponses, parse_failure

_response = FixtureResponses("bing", content_type=HTML)


@pytest.mark.req("REQ-ENG-013", "REQ-ENG-014", "REQ-ENG-011")
def test_request_is_a_plain_get_without_browser_headers() -> None:
    """REQ-ENG-013, REQ-ENG-014: scraping, never default; q, count, adlt, cc; no headers."""
    assert Bing.scraping and not Bing.default_enabled
    assert Bing.languages == frozenset() and Bing.time_ranges == frozenset()
    request = Bing().build_request(
        SearchParams(query="rust", results=80, safe_search=SafeSearch.STRICT, region="gb")
    )
    assert request.method == "GET" and request.headers == ()
    assert request.params == (("q", "rust"), ("count", "50"), ("adlt", "strict"), ("cc", "GB"))


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-012")
def test_results_in_order_with_redirect_links_unwrapped_in_the_driver() -> None:
    """REQ-TEST-018: li.b_algo in order; ck/a links decoded; icon span gone; ad absent."""
    hits = Bing().parse(_response("ok.html"))
    assert [(hit.rank, hit.url) for hit in hits] == [
        (1, "https://tokio.rs/"),
        (2, "https://async.rs/"),
        (3, "https://smol.example/path?a=1&b=2"),
    ]
    assert hits[0].snippet == "Tokio is an asynchronous runtime for the Rust programming language."
    assert unwrap("https://www.bing.com/ck/a?u=a1bm90LWEtdXJs") is None  # "not-a-url"
    assert unwrap("https://www.bing.com/ck/a?u=b2aHR0cHM6Ly94Lw") is None  # no a1 prefix


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_only_the_no_results_marker_is_empty_and_silent_degradation_is_a_failure() -> None:
    """REQ-TEST-018, REQ-ENG-015: li.b_no is empty; 200 with neither is parse_failure."""
    assert Bing().parse(_response("empty.html")) == []
    drifted = parse_failure(Bing(), _response("drifted.html"))
    assert drifted.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-014", "REQ-ENG-009")
@pytest.mark.parametrize(
    ("name", "status", "expected"),
    [
        ("challenge.html", 200, FailureClass.BLOCKED),
        ("ok.html", 403, FailureClass.BLOCKED),
        ("ok.html", 429, FailureClass.RATE_LIMITED),
        ("ok.html", 503, FailureClass.RATE_LIMITED),
    ],
)
def test_captcha_and_blocking_statuses(name: str, status: int, expected: FailureClass) -> None:
    """REQ-TEST-018, REQ-ENG-014: CAPTCHA, 403, 429 and 503 are never worked around."""
    assert parse_failure(Bing(), _response(name, status)).failure_class is expected


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_redirect_rule() -> None:
    """REQ-TEST-018, REQ-ENG-015: www.bing.com redirects are followed; others are blocked."""
    on_host = Bing().parse(
        EngineResponse(302, {"location": "https://www.bing.com/search?q=x"}, b"")
    )
    assert isinstance(on_host, FollowUp) and on_host.request.params == (("q", "x"),)
    off_host = EngineResponse(302, {"location": "https://cn.bing.com/search?q=x"}, b"")
    assert parse_failure(Bing(), off_host).failure_class is FailureClass.BLOCKED
    # Bing's CAPTCHA lives on its own host: the redirect to it is blocked, not followed.
    captcha = EngineResponse(302, {"location": "/turing/captcha/challenge?q=x"}, b"")
    assert parse_failure(Bing(), captcha).failure_class is FailureClass.BLOCKED
