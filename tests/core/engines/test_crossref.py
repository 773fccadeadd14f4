"""The Crossref driver: request building and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.crossref import Crossref
from tests.core.engines.driver_support import (
    HTML,
    NOW,
    TEXT,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/works"
SELECT = "DOI,title,container-title,abstract,published,issued"


def _driver(settings: EngineSettings | None = None) -> Crossref:
    return Crossref(settings, clock=lambda: NOW)


_response = FixtureResponses("crossref")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002")
def test_declares_the_public_pool_limits() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002: science, time ranges, 5 requests/s, 1 at a time."""
    assert Crossref.id == "crossref"
    assert Crossref.categories == frozenset({Category.SCIENCE})
    assert Crossref.languages == frozenset()
    assert Crossref.time_ranges == frozenset(TimeRange)
    assert Crossref.admission.min_interval_ms >= 1000 // 5
    assert Crossref.admission.max_concurrency == 1
    assert Crossref.admission.cacheable is True
    assert Crossref.admission.attribution_required is False
    assert Crossref.requires_key is False


@pytest.mark.req("REQ-ENG-011")
def test_request_selects_the_read_fields_for_the_result_count() -> None:
    """REQ-ENG-011: query, rows = count, select = the fields read; no mailto without a contact."""
    request = _driver().build_request(SearchParams(query="tree search go", results=12))
    assert request.url == "https://api.crossref.org/works"
    assert request.params == (("query", "tree search go"), ("rows", "12"), ("select", SELECT))
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-CMP-004", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("contact", "mailto"),
    [
        ("ops@example.org", "ops@example.org"),
        ("mailto:ops@example.org", "ops@example.org"),
        ("https://example.org/contact", None),
        ("mailto:not an address", None),
        (None, None),
    ],
)
def test_an_operator_email_joins_the_polite_pool(contact: str | None, mailto: str | None) -> None:
    """REQ-CMP-004, REQ-ENG-010: an e-mail or mailto contact becomes `mailto=`; a URL does not."""
    request = _driver().build_request(SearchParams(query="x", contact=contact))
    assert dict(request.params).get("mailto") == mailto


@pytest.mark.req("REQ-ENG-011", "REQ-ENG-005")
def test_explicit_endpoint_keeps_the_parameters_and_rows_are_capped() -> None:
    """REQ-ENG-011, REQ-ENG-005: the endpoint replaces the URL only; rows stops at 1000."""
    search = SearchParams(query="x", results=5000, contact="ops@example.org")
    default = _driver().build_request(search)
    request = _driver(EngineSettings(endpoint="https://cr.proxy.test/works")).build_request(search)
    assert request.url == "https://cr.proxy.test/works"
    assert request.params == default.params
    assert dict(request.params)["rows"] == "1000"


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
def test_time_range_filters_on_the_publication_date(time_range: TimeRange, since: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: from-pub-date the start of the range, until-pub-date today."""
    request = _driver().build_request(SearchParams(query="x", time_range=time_range))
    assert dict(request.params)["filter"] == f"from-pub-date:{since},until-pub-date:2023-11-14"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_doi_urls_first_titles_and_complete_dates() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: doi.org URLs, title[0] raw, JATS abstract raw."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].url == "https://doi.org/10.5555/cr.2016.001"
    assert hits[0].title == "Mastering self-play with deep <i>Q</i>-networks and tree search"
    assert hits[0].snippet.startswith("<jats:title>Abstract</jats:title><jats:p>We combine")
    assert hits[0].date == "2016-01-28"
    assert hits[1].title == "Reinforcement learning &amp; planning: a survey"  # raw entity
    assert hits[2].title == "Étude des réseaux de neurones pour le jeu de Go"
    assert hits[2].snippet == "Revue d’intelligence artificielle"  # no abstract: container title
    assert hits[4].date == "2019-03-12"  # published is a bare year: issued is complete
    assert hits[5].date is None  # year and month only: not invented
    assert hits[6].date == "2017-09-30"  # no published: issued
    assert hits[7].url == "https://doi.org/10.5555/cr.2021.upper"  # DOIs are case-insensitive
    assert hits[7].date == "2021-02-01"  # published before issued
    assert hits[8].url == (
        "https://doi.org/10.1002/(sici)1097-0000(199711)37:2%3C1::aid-ex1%3E3.0.co;2-%23"
    )
    assert hits[9].title == "Monte-Carlo-Baumsuche für Go"  # the first of several titles
    assert hits[10].date is None  # date-parts [[null]]
    assert hits[11].title == "囲碁AIの探索手法に関する研究"
    assert hits[11].snippet == ""
    assert hits[11].date == "2024-02-29"


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_answer_is_no_hits() -> None:
    """REQ-TEST-002, REQ-ERR-005: `total-results: 0`, `items: []` is empty."""
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_works_are_skipped_and_bad_dates_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no usable title or DOI skips a work; a bad date drops the date."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [hit.rank for hit in hits] == [1, 7, 8]
    assert hits[1].date is None  # date-parts is a string
    assert hits[2].date is None  # 30 February


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_works_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable works is format drift, not empty."""
    assert (
        parse_failure(_driver(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
@pytest.mark.parametrize(
    ("headers", "wait_ms"),
    [
        ({"retry_after": "30", "x_rate_limit_interval": "1s"}, 30_000),
        ({"x_rate_limit_limit": "5", "x_rate_limit_interval": "1s"}, 1_000),
        ({"x_rate_limit_interval": "soon"}, None),
        ({}, None),
    ],
)
def test_http_429_is_rate_limited_with_retry_after_else_one_interval(
    headers: dict[str, str], wait_ms: int | None
) -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: Retry-After, else one x-rate-limit-interval."""
    failure = parse_failure(_driver(), _response("rate_limited.txt", 429, TEXT, **headers))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == wait_ms


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("status", [400, 200])
def test_an_error_document_is_a_request_failure(status: int) -> None:
    """REQ-TEST-002, REQ-ENG-006: `status: failed` (a validation failure) is request_failure."""
    failure = parse_failure(_driver(), _response("validation_failure.json", status))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_an_html_page_without_challenge_under_200_is_a_parse_failure() -> None:
    """REQ-ENG-006: an outage page under 200 is not the provider's answer."""
    failure = parse_failure(_driver(), _response("server_error.html", 200, HTML))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: the validation message stays in the driver."""
    failure = parse_failure(_driver(), _response("validation_failure.json", 400))
    assert str(failure) == "request_failure"
    assert "sort-of" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005", "REQ-CMP-004")
async def test_fixture_served_over_http_parses_and_the_wire_carries_the_request() -> None:
    """REQ-TEST-002, REQ-MAIN-005, REQ-CMP-004: a gzipped answer parses; mailto is on the wire."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(EngineSettings(endpoint=endpoint)),
        SearchParams(query="tree search", time_range=TimeRange.MONTH, contact="ops@example.org"),
        Route.fixture("crossref", "ok.json", gzip=True),
        path=PATH,
    )
    assert len(exchange.hits) == 12
    assert exchange.wire.param("mailto") == "ops@example.org"
    assert exchange.wire.param("select") == SELECT
