"""The DuckDuckGo scraping driver on hand-written pages (REQ-TEST-018, RFC 015)."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from rypsok.core.engines.base import (
    EngineResponse,
    EngineSettings,
    FailureClass,
    FollowUp,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.duckduckgo import DuckDuckGo, DuckDuckGoConfig
from rypsok.core.engines.scrape import PAGE_MAX_NODES
from tests.core.engines.driver_support import HTML, FixtureResponses, parse_failure

_response = FixtureResponses("duckduckgo", content_type=HTML)
BROWSER_HEADERS = ("accept-language", "sec-fetch-", "sec-ch-", "user-agent", "referer", "cookie")


def _lite() -> DuckDuckGo:
    return DuckDuckGo(EngineSettings(options=DuckDuckGoConfig(variant="lite")))


@pytest.mark.req("REQ-ENG-013", "REQ-ENG-014")
def test_a_scraping_engine_outside_the_default_set_sending_no_browser_header() -> None:
    """REQ-ENG-013, REQ-ENG-014: scraping, never default; a form POST, no browser headers."""
    assert DuckDuckGo.scraping and not DuckDuckGo.default_enabled
    request = DuckDuckGo().build_request(SearchParams(query="rust !w async"))
    assert request.method == "POST" and request.url == "https://html.duckduckgo.com/html/"
    assert dict(request.headers) == {"Content-Type": "application/x-www-form-urlencoded"}
    assert not any(name.lower().startswith(BROWSER_HEADERS) for name, _ in request.headers)
    form = dict(parse_qsl(request.body.decode(), keep_blank_values=True))
    assert form == {"q": "rust '!w' async", "b": "", "kl": "wt-wt"}  # a bang never redirects


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
def test_time_range_and_region_change_the_form_and_lite_has_its_own_page() -> None:
    """REQ-SEARCH-005: df = d|w|m|y; kl from the region; the lite variant's URL."""
    search = SearchParams(query="q", time_range=TimeRange.MONTH, region="de")
    form = dict(parse_qsl(DuckDuckGo().build_request(search).body.decode()))
    assert (form["df"], form["kl"]) == ("m", "de-de")
    assert _lite().build_request(search).url == "https://lite.duckduckgo.com/lite/"


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-012")
def test_results_in_page_order_unwrapped_without_ads() -> None:
    """REQ-TEST-018: organic results in order, `uddg` links unwrapped, the ad dropped."""
    hits = DuckDuckGo().parse(_response("ok.html"))
    assert [(hit.rank, hit.url) for hit in hits] == [
        (1, "https://tokio.rs/"),
        (2, "https://async.rs/docs?v=1&lang=en"),
        (3, "https://smol.example/"),
    ]
    assert hits[0].title == "Tokio - An asynchronous Rust runtime"
    assert hits[0].snippet == "Tokio is an asynchronous runtime for the Rust programming language."
    assert hits[2].title == "smol & friends" and hits[2].snippet == ""
    lite = _lite().parse(_response("lite_ok.html"))
    assert [hit.url for hit in lite] == ["https://tokio.rs/", "https://async.rs/"]
    assert lite[1].snippet == "Async version of the Rust standard library."


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_only_the_no_results_marker_makes_an_empty_answer() -> None:
    """REQ-TEST-018, REQ-ENG-015: the marker is empty; a drifted page is parse_failure."""
    assert DuckDuckGo().parse(_response("empty.html")) == []
    assert _lite().parse(_response("lite_empty.html")) == []
    drifted = parse_failure(DuckDuckGo(), _response("drifted.html"))
    assert drifted.failure_class is FailureClass.PARSE_FAILURE
    wrong_variant = parse_failure(_lite(), _response("ok.html"))
    assert wrong_variant.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_the_marker_in_a_result_item_of_its_own_is_empty_but_not_beside_a_lost_result() -> None:
    """REQ-TEST-018, REQ-ENG-015: DDG's "No results." item is a `web-result` div itself.

    That item is the marker, not a result the driver lost; a result item
    without a readable link beside it is drift, whatever marker follows.
    """
    assert DuckDuckGo().parse(_response("empty_item.html")) == []
    lost = parse_failure(DuckDuckGo(), _response("drifted_item.html"))
    assert lost.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-014", "REQ-ENG-009")
@pytest.mark.parametrize("status", [200, 202, 403, 429, 503])
def test_the_challenge_page_is_blocked_whatever_its_status(status: int) -> None:
    """REQ-TEST-018, REQ-ENG-014: the anomaly page (DDG sends 202 or 200) is blocked.

    429 alone is read first, as a throttle, like every engine's 429.
    """
    failure = parse_failure(DuckDuckGo(), _response("challenge.html", status))
    expected = FailureClass.RATE_LIMITED if status == 429 else FailureClass.BLOCKED
    assert failure.failure_class is expected


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-014")
@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (202, FailureClass.BLOCKED),
        (403, FailureClass.BLOCKED),
        (429, FailureClass.RATE_LIMITED),
        (503, FailureClass.RATE_LIMITED),
    ],
)
def test_blocking_statuses_classify_even_a_page_that_would_parse(
    status: int, expected: FailureClass
) -> None:
    """REQ-TEST-018, REQ-ENG-014: 202, 403, 429 and 503 are never read as results."""
    assert parse_failure(DuckDuckGo(), _response("ok.html", status)).failure_class is expected


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_redirects_are_followed_on_the_providers_host_only() -> None:
    """REQ-TEST-018, REQ-ENG-015: on-host 3xx is a follow-up GET; off-host is blocked."""
    on_host = EngineResponse(303, {"location": "/html/?q=rust&s=0"}, b"")
    follow_up = DuckDuckGo().parse(on_host)
    assert isinstance(follow_up, FollowUp)
    assert follow_up.request.url == "https://html.duckduckgo.com/html/"
    assert follow_up.request.params == (("q", "rust"), ("s", "0"))
    for location in ("https://duckduckgo.com/anomaly", "http://html.duckduckgo.com/html/",
                     "https://evil.example/html/", "//evil.example/", ""):  # fmt: skip
        refused = parse_failure(DuckDuckGo(), EngineResponse(302, {"location": location}, b""))
        assert refused.failure_class is FailureClass.BLOCKED
    # On the provider's host, a challenge path is never requested either; the
    # caller's words in the query ("captcha") do not make a redirect a challenge.
    anomaly = EngineResponse(302, {"location": "/anomaly.js?sv=html&cc=botnet"}, b"")
    assert parse_failure(DuckDuckGo(), anomaly).failure_class is FailureClass.BLOCKED
    words = EngineResponse(303, {"location": "/html/?q=captcha+solver"}, b"")
    assert isinstance(DuckDuckGo().parse(words), FollowUp)


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015", "REQ-TEST-006")
def test_parsing_stops_at_the_depth_bound_of_web_fetch() -> None:
    """REQ-TEST-018, REQ-ENG-015: a result past LIM-F11 is never read; only-deep is a failure."""
    hits = DuckDuckGo().parse(_response("deep.html"))
    assert [hit.url for hit in hits] == ["https://shallow.example/"]
    deep_only = parse_failure(DuckDuckGo(), _response("deep_only.html"))
    assert deep_only.failure_class is FailureClass.PARSE_FAILURE
    assert DuckDuckGo.admission.max_body_bytes <= 2 * 1024 * 1024


def _result(url: str) -> str:
    return (
        '<div class="result results_links web-result"><h2 class="result__title">'
        f'<a class="result__a" href="{url}">Title</a></h2>'
        '<a class="result__snippet">Snippet</a></div>'
    )


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_parsing_stops_at_the_node_bound_of_web_fetch() -> None:
    """REQ-TEST-018, REQ-ENG-015: a result past LIM-F10 nodes is never read; none before fails."""
    filler = "<p>" * (PAGE_MAX_NODES + 10)
    page = (
        '<!DOCTYPE html><html><body><div id="links">'
        f"{_result('https://first.example/')}{filler}{_result('https://late.example/')}"
        "</div></body></html>"
    )
    hits = DuckDuckGo().parse(EngineResponse(200, {"content-type": HTML}, page.encode()))
    assert [hit.url for hit in hits] == ["https://first.example/"]
    late_only = page.replace(_result("https://first.example/"), "")
    response = EngineResponse(200, {"content-type": HTML}, late_only.encode())
    assert parse_failure(DuckDuckGo(), response).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-018", "REQ-ENG-015")
def test_a_non_html_or_truncated_page_is_a_parse_failure() -> None:
    """REQ-TEST-018, REQ-ENG-015: JSON instead of the page, or a page cut short, is no answer."""
    failure = parse_failure(DuckDuckGo(), _response("empty.html", content_type="application/json"))
    assert failure.failure_class is FailureClass.PARSE_FAILURE
    whole = _response("ok.html")
    cut = EngineResponse(200, whole.headers, whole.body[: len(whole.body) * 2 // 3])
    assert b"tokio.rs" in cut.body  # results before the cut would parse...
    assert parse_failure(DuckDuckGo(), cut).failure_class is FailureClass.PARSE_FAILURE
