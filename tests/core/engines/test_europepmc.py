"""The Europe PMC driver: request building and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.europepmc import EuropePmc
from tests.core.engines.driver_support import (
    HTML,
    NOW,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/europepmc/webservices/rest/search"


def _driver(settings: EngineSettings | None = None) -> EuropePmc:
    return EuropePmc(settings, clock=lambda: NOW)


_response = FixtureResponses("europepmc")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010", "REQ-CMP-002")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010, REQ-CMP-002: science, time ranges, no language, 5/s serial."""
    assert EuropePmc.id == "europepmc"
    assert EuropePmc.categories == frozenset({Category.SCIENCE})
    assert EuropePmc.languages == frozenset()
    assert EuropePmc.time_ranges == frozenset(TimeRange)
    assert EuropePmc.admission.min_interval_ms == 200
    assert EuropePmc.admission.max_concurrency == 1
    assert EuropePmc.admission.cacheable is True
    assert EuropePmc.admission.attribution_required is False
    assert EuropePmc.requires_key is False


@pytest.mark.req("REQ-ENG-011")
def test_request_asks_for_core_records_and_the_result_count() -> None:
    """REQ-ENG-011: query, JSON, resultType=core (abstracts), pageSize = count."""
    request = _driver().build_request(SearchParams(query="malaria vaccine", results=12))
    assert request.url == "https://www.ebi.ac.uk/europepmc/webservices/rest/search"
    assert request.params == (
        ("query", "malaria vaccine"),
        ("format", "json"),
        ("resultType", "core"),
        ("pageSize", "12"),
    )
    assert request.headers == ()
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-ENG-011", "REQ-ENG-005")
def test_explicit_endpoint_keeps_the_parameters_and_the_count_is_capped() -> None:
    """REQ-ENG-011, REQ-ENG-005: the endpoint replaces the URL only; pageSize stops at 1000."""
    search = SearchParams(query="x", results=2500)
    default = _driver().build_request(search)
    request = _driver(EngineSettings(endpoint="https://epmc.proxy.test/search")).build_request(
        search
    )
    assert request.url == "https://epmc.proxy.test/search"
    assert request.params == default.params
    assert dict(request.params)["pageSize"] == "1000"


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
def test_time_range_restricts_the_first_publication_date(time_range: TimeRange, since: str) -> None:
    """REQ-SEARCH-005, REQ-ENG-010: FIRST_PDATE from the start of the range to today (UTC)."""
    request = _driver().build_request(SearchParams(query="malaria", time_range=time_range))
    assert dict(request.params)["query"] == f"(malaria) AND FIRST_PDATE:[{since} TO 2023-11-14]"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_doi_or_record_urls_raw_text_and_dates() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: DOI URL first, record page without; raw markup."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].url == "https://doi.org/10.5555/epmc.2024.0001"
    assert hits[0].date == "2024-02-01"
    assert hits[0].snippet.startswith("<h4>Background</h4>Malaria remains")
    assert "&amp;" in hits[0].snippet  # raw: the pipeline decodes entities
    assert (
        hits[1].title == "Single-cell atlas of <i>Plasmodium falciparum</i> gametocyte development"
    )
    assert hits[1].url == "https://doi.org/10.1101/2024.03.14.585001"  # a preprint
    assert hits[2].title.startswith("β-lactamase inhibitors")
    assert hits[2].url == "https://doi.org/10.5555/epmc.2023.0002"  # DOI lower-cased
    assert hits[3].url == "https://europepmc.org/article/MED/36888803"  # no DOI: record page
    assert hits[5].snippet == ""  # no abstract
    assert hits[6].url == "https://europepmc.org/article/AGR/AGR9000006"
    assert hits[7].title.endswith("&lt;12 months after immunisation")
    assert hits[8].title.startswith("疟疾疫苗研究进展")
    assert hits[10].date is None  # no firstPublicationDate
    assert hits[11].url == "https://europepmc.org/article/PAT/EP4000011"


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_answer_is_no_hits() -> None:
    """REQ-TEST-002, REQ-ERR-005: `hitCount: 0` with an empty result list is empty."""
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_invalid_records_are_skipped_and_bad_optional_fields_dropped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no title or no URL skips a record; bad date/DOI only drops it."""
    hits = _driver().parse(_response("partial_hits.json"))
    assert [hit.rank for hit in hits] == [1, 4, 5]
    assert hits[1].date is None  # firstPublicationDate 2022-13-45
    assert hits[2].url == "https://europepmc.org/article/MED/35500005"  # doi "not-a-doi"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_records_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable records is format drift, not empty."""
    assert (
        parse_failure(_driver(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006", "REQ-RES-002")
@pytest.mark.parametrize("name", ["version_only.json", "bad_query.json"])
def test_the_cut_short_or_refused_200_answer_is_a_request_failure(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: `{"version": ...}` without results is neither empty nor drift."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.REQUEST_FAILURE


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
        parse_failure(_driver(), _response("server_error.html", status, HTML)).failure_class
        is expected
    )


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(_driver(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_an_html_page_without_challenge_under_200_is_a_parse_failure() -> None:
    """REQ-ENG-006: a maintenance page under 200 is not the provider's answer."""
    failure = parse_failure(_driver(), _response("server_error.html", 200, HTML))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
def test_no_provider_text_leaves_the_driver() -> None:
    """REQ-ENG-006, REQ-SEC-016: the failure's text is its class, nothing else."""
    failure = parse_failure(_driver(), _response("bad_query.json"))
    assert str(failure) == "request_failure"
    assert "vaccine" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005")
async def test_fixture_served_over_http_parses_and_the_wire_carries_the_request() -> None:
    """REQ-TEST-002, REQ-MAIN-005: a local answer parses; the query on the wire is the request's."""
    exchange = await fetch_over_http(
        lambda endpoint: _driver(EngineSettings(endpoint=endpoint)),
        SearchParams(query="malaria vaccine", time_range=TimeRange.WEEK),
        Route.fixture("europepmc", "ok.json"),
        path=PATH,
    )
    assert len(exchange.hits) == 12
    assert exchange.wire.param("query") == (
        "(malaria vaccine) AND FIRST_PDATE:[2023-11-07 TO 2023-11-14]"
    )
