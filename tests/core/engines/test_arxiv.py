"""The arXiv driver: request building and parsing of recorded Atom answers."""

from __future__ import annotations

import pytest

from rypsok.core.engines.arxiv import ArXiv
from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SearchParams,
    TimeRange,
)
from tests.core.engines.driver_support import (
    HTML,
    NOW,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route, Trickle

ATOM = "application/atom+xml; charset=utf-8"
PATH = "/api/query"


def _driver(settings: EngineSettings | None = None) -> ArXiv:
    return ArXiv(settings, clock=lambda: NOW)


_response = FixtureResponses("arxiv", content_type=ATOM)


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002")
def test_declares_one_request_every_three_seconds_on_one_connection() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002: science, 3 s spacing, concurrency 1."""
    assert ArXiv.id == "arxiv"
    assert ArXiv.categories == frozenset({Category.SCIENCE})
    assert ArXiv.languages == frozenset()
    assert ArXiv.time_ranges == frozenset(TimeRange)
    assert ArXiv.admission.min_interval_ms == 3_000
    assert ArXiv.admission.max_concurrency == 1
    assert ArXiv.default_endpoint == "https://export.arxiv.org/api/query"
    assert ArXiv.requires_key is False


@pytest.mark.req("REQ-ENG-011")
def test_request_searches_all_fields_by_relevance_for_the_result_count() -> None:
    """REQ-ENG-011: all:<query>, start 0, max_results = count, relevance first."""
    request = _driver().build_request(SearchParams(query="attention transformer", results=11))
    assert request.url == "https://export.arxiv.org/api/query"
    assert request.params == (
        ("search_query", "all:attention transformer"),
        ("start", "0"),
        ("max_results", "11"),
        ("sortBy", "relevance"),
        ("sortOrder", "descending"),
    )


@pytest.mark.req("REQ-SEARCH-005", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("time_range", "start"),
    [
        (TimeRange.DAY, "202311132213"),
        (TimeRange.WEEK, "202311072213"),
        (TimeRange.MONTH, "202310152213"),
        (TimeRange.YEAR, "202211142213"),
    ],
)
def test_time_range_restricts_the_submission_date(time_range: TimeRange, start: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: submittedDate:[start TO now] in UTC minutes."""
    search = SearchParams(query="attention", time_range=time_range)
    params = dict(_driver().build_request(search).params)
    assert params["search_query"] == (
        f"(all:attention) AND submittedDate:[{start} TO 202311142213]"
    )


@pytest.mark.req("REQ-ENG-005", "REQ-SEC-017")
def test_explicit_endpoint_keeps_the_query_parameters() -> None:
    """REQ-ENG-005, REQ-SEC-017: an operator endpoint replaces the URL only."""
    search = SearchParams(query="graphene", time_range=TimeRange.MONTH)
    default = _driver().build_request(search)
    request = _driver(EngineSettings(endpoint="https://arxiv.proxy.test/api/query")).build_request(
        search
    )
    assert request.url == "https://arxiv.proxy.test/api/query"
    assert request.params == default.params


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_abs_pages_raw_text_and_published_dates() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: abs page as given, raw text, first-version date."""
    hits = _driver().parse(_response("ok.xml"))
    assert [hit.rank for hit in hits] == list(range(1, 12))
    assert hits[0].title == "Attention Is All You Need"
    assert hits[0].url == "https://arxiv.org/abs/1706.03762v7"
    assert hits[0].date == "2017-06-12"  # published, not updated (2023)
    assert "\n" in hits[0].snippet  # wrapped as arXiv wraps it
    assert hits[3].snippet.count("$\\mathcal{O}") == 2  # TeX kept
    assert "reads & writes" in hits[4].snippet  # XML entity decoded by the parser, no markup added
    assert (
        hits[5].title == "Neural Machine Translation by Jointly Learning to Align and\n  Translate"
    )
    assert hits[9].title.startswith("Attention for Schrödinger Bridges")
    assert "<i>helps</i>" in hits[9].snippet  # escaped markup in the feed arrives as raw markup
    assert all(hit.url.startswith("https://arxiv.org/abs/") for hit in hits)


@pytest.mark.req("REQ-RANK-003")
def test_result_urls_come_from_the_feed_not_the_endpoint() -> None:
    """REQ-RANK-003: with a local endpoint, URLs are still arXiv's public abs pages."""
    driver = ArXiv(EngineSettings(endpoint="http://127.0.0.1:9/api/query"))
    hits = driver.parse(_response("ok.xml"))
    assert all(hit.url.startswith("https://arxiv.org/abs/") for hit in hits)


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_a_feed_with_zero_total_results_is_empty() -> None:
    """REQ-TEST-002, REQ-ERR-005: no entries and totalResults 0 is a true empty answer."""
    assert _driver().parse(_response("empty.xml")) == []


@pytest.mark.req("REQ-ERR-005", "REQ-ENG-006")
def test_the_transient_empty_page_is_a_failure_not_empty() -> None:
    """REQ-ERR-005, REQ-ENG-006: no entries although totalResults > 0 is request_failure."""
    failure = parse_failure(_driver(), _response("transient_empty.xml"))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_a_feed_without_entries_or_total_is_a_parse_failure() -> None:
    """REQ-ENG-006: emptiness cannot be told from a missing count."""
    failure = parse_failure(_driver(), _response("empty_without_total.xml"))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("status", [400, 200])
def test_the_error_feed_is_a_request_failure(status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: arXiv's error entry (under /api/errors) is request_failure."""
    failure = parse_failure(_driver(), _response("error.xml", status=status))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_a_paper_titled_error_is_a_result() -> None:
    """REQ-ENG-006: errors are recognised by their id, not by the title "Error"."""
    hits = _driver().parse(_response("paper_titled_error.xml"))
    assert [(hit.title, hit.url) for hit in hits] == [
        ("Error", "https://arxiv.org/abs/2301.00001v1")
    ]


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_entries_are_skipped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no title or no URL skips an entry; a bad date drops the date."""
    hits = _driver().parse(_response("partial_entries.xml"))
    assert [(hit.rank, hit.url) for hit in hits] == [
        (1, "https://arxiv.org/abs/1706.03762v7"),
        (4, "http://arxiv.org/abs/2004.05150v2"),  # no alternate link: the id, as given
    ]
    assert hits[1].date is None


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_entries_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable entries is format drift, not empty."""
    failure = parse_failure(_driver(), _response("all_entries_invalid.xml"))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, FailureClass.PARSE_FAILURE),
    ],
)
def test_an_html_answer_is_classified_by_status(status: int, expected: FailureClass) -> None:
    """REQ-TEST-002, REQ-ENG-006: arXiv never answers the API in HTML; the status decides."""
    response = _response("server_error.html", status=status, content_type=HTML)
    assert parse_failure(_driver(), response).failure_class is expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_root.xml"])
def test_bodies_not_in_the_atom_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed XML that is not Atom is parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-014")
@pytest.mark.parametrize("name", ["entity_bomb.xml", "dtd_entities.xml", "dtd_entities_late.xml"])
def test_a_document_with_a_dtd_is_refused_without_expanding_entities(name: str) -> None:
    """REQ-ENG-006, REQ-SEC-014: an entity bomb with an external entity is parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
@pytest.mark.parametrize("content_type", ["application/json", "text/plain"])
def test_a_wrong_content_type_is_a_parse_failure(content_type: str) -> None:
    """REQ-ENG-006: a feed labelled as JSON or text is not the provider's answer."""
    failure = parse_failure(_driver(), _response("ok.xml", content_type=content_type))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_plain_xml_types_and_a_missing_content_type_are_accepted() -> None:
    """REQ-ENG-006: Atom served as application/xml, text/xml or untyped still parses."""
    for content_type in ("application/xml", "text/xml; charset=utf-8", None):
        assert len(_driver().parse(_response("ok.xml", content_type=content_type))) == 11


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: the error summary never appears in the failure."""
    failure = parse_failure(_driver(), _response("error.xml", status=400))
    assert str(failure) == "request_failure"
    assert "max_results" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005")
async def test_fixture_served_over_http_parses() -> None:
    """REQ-TEST-002, REQ-MAIN-005: a trickled local Atom answer parses; the wire has the query."""
    route = Route.fixture("arxiv", "ok.xml", trickle=Trickle(chunk_bytes=1024, interval_s=0.001))
    exchange = await fetch_over_http(
        lambda endpoint: _driver(EngineSettings(endpoint=endpoint)),
        SearchParams(query="attention transformer", results=11),
        route,
        path=PATH,
    )
    assert len(exchange.hits) == 11
    assert exchange.wire.param("search_query") == "all:attention transformer"
