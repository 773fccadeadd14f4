"""The Wikidata driver: request building and parsing of recorded answers."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineSettings,
    FailureClass,
    SearchParams,
)
from rypsok.core.engines.wikidata import Wikidata
from tests.core.engines.driver_support import (
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/w/api.php"


_response = FixtureResponses("wikidata")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010: general, many languages, no time range, serial, CC0."""
    assert Wikidata.id == "wikidata"
    assert Wikidata.categories == frozenset({Category.GENERAL})
    assert {"en", "de", "fr", "ja", "zh"} <= Wikidata.languages
    assert all(len(code) == 2 and code.islower() for code in Wikidata.languages)
    assert Wikidata.time_ranges == frozenset()
    assert Wikidata.max_query_chars == 250
    assert Wikidata.admission.max_concurrency == 1
    assert Wikidata.admission.attribution_required is False
    assert Wikidata.requires_key is False


@pytest.mark.req("REQ-ENG-011", "REQ-SEARCH-004")
def test_request_asks_for_items_in_the_selected_language() -> None:
    """REQ-ENG-011, REQ-SEARCH-004: wbsearchentities, limit = count, language and uselang."""
    request = Wikidata().build_request(SearchParams(query="zürich", language="de", results=8))
    assert request.url == "https://www.wikidata.org/w/api.php"
    params = dict(request.params)
    assert params["action"] == "wbsearchentities"
    assert params["search"] == "zürich"
    assert params["language"] == "de"
    assert params["uselang"] == "de"
    assert params["type"] == "item"
    assert params["limit"] == "8"
    assert params["format"] == "json"


@pytest.mark.req("REQ-ENG-011", "REQ-SEARCH-004")
def test_request_without_a_language_asks_in_english_and_caps_the_count() -> None:
    """REQ-ENG-011, REQ-SEARCH-004: no selection means English; limit stops at 50."""
    params = dict(Wikidata().build_request(SearchParams(query="q", results=80)).params)
    assert params["language"] == "en"
    assert params["limit"] == "50"


@pytest.mark.req("REQ-SEARCH-004")
def test_a_language_outside_its_list_is_asked_in_english() -> None:
    """REQ-SEARCH-004: an operator default Wikidata may refuse is never sent."""
    params = dict(Wikidata().build_request(SearchParams(query="q", language="xx")).params)
    assert (params["language"], params["uselang"]) == ("en", "en")


@pytest.mark.req("REQ-ENG-005", "REQ-SEC-017")
def test_explicit_endpoint_keeps_the_query_parameters() -> None:
    """REQ-ENG-005, REQ-SEC-017: an operator endpoint replaces the URL only."""
    default = Wikidata().build_request(SearchParams(query="berlin"))
    request = Wikidata(EngineSettings(endpoint="https://wd.proxy.test/w/api.php")).build_request(
        SearchParams(query="berlin")
    )
    assert request.url == "https://wd.proxy.test/w/api.php"
    assert request.params == default.params


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_gives_labels_descriptions_and_item_urls_in_order() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: label, description, https item page, ranks."""
    hits = Wikidata().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].title == "Zürich"
    assert hits[0].snippet == "largest city in Switzerland"
    assert hits[0].url == "https://www.wikidata.org/wiki/Q72"
    assert hits[9].title == "Opernhaus Zürich"  # the display label's fallback language
    assert hits[10].snippet == "Swiss football & multi-sports club"  # raw, not escaped
    assert hits[11].title == "Zürich <Familie>"
    assert hits[11].snippet == ""
    assert all(hit.date is None for hit in hits)


@pytest.mark.req("REQ-RANK-003")
def test_result_urls_stay_on_wikidata_with_an_explicit_endpoint() -> None:
    """REQ-RANK-003: a local endpoint never leaks into item URLs."""
    driver = Wikidata(EngineSettings(endpoint="http://127.0.0.1:9/w/api.php"))
    hits = driver.parse(_response("ok.json"))
    assert all(hit.url.startswith("https://www.wikidata.org/wiki/Q") for hit in hits)


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
def test_empty_answer_is_no_hits() -> None:
    """REQ-TEST-002, REQ-ERR-005: `search: []` is empty."""
    assert Wikidata().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_hits_without_label_or_item_id_are_skipped() -> None:
    """REQ-TEST-002, REQ-ENG-006: no label, a property id or no id skips that hit only."""
    hits = Wikidata().parse(_response("partial_hits.json"))
    assert [(hit.rank, hit.title, hit.url) for hit in hits] == [
        (1, "Zürich", "https://www.wikidata.org/wiki/Q72"),
        (5, "Lake Zurich", "https://www.wikidata.org/wiki/Q14274"),
    ]


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_hits_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: only unusable hits is format drift, not empty."""
    assert (
        parse_failure(Wikidata(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002")
@pytest.mark.parametrize("name", ["error_ratelimited.json", "error_maxlag.json"])
def test_throttle_errors_with_http_200_are_rate_limited(name: str) -> None:
    """REQ-TEST-002, REQ-RES-002: `ratelimited` and `maxlag` under 200 are rate_limited."""
    failure = parse_failure(Wikidata(), _response(name, retry_after="3"))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 3_000


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_other_api_errors_are_request_failures() -> None:
    """REQ-TEST-002, REQ-ENG-006: `badvalue` is request_failure."""
    failure = parse_failure(Wikidata(), _response("error_badvalue.json"))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002")
def test_http_429_is_rate_limited() -> None:
    """REQ-TEST-002, REQ-RES-002: 429 with Retry-After."""
    failure = parse_failure(
        Wikidata(), _response("error_ratelimited.json", status=429, retry_after="12")
    )
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 12_000


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(Wikidata(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_json_under_an_html_content_type_is_a_parse_failure() -> None:
    """REQ-ENG-006: a wrong content type is not the provider's answer."""
    failure = parse_failure(Wikidata(), _response("ok.json", content_type="text/html"))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016")
@pytest.mark.parametrize("name", ["error_ratelimited.json", "error_badvalue.json"])
def test_no_provider_text_leaves_the_driver(name: str) -> None:
    """REQ-ENG-006, REQ-SEC-016: the failure's text is its class, nothing else."""
    failure = parse_failure(Wikidata(), _response(name))
    assert str(failure) == failure.failure_class.value
    assert "exceeded" not in repr(failure)
    assert "Unrecognized" not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005")
async def test_fixture_served_over_http_parses() -> None:
    """REQ-TEST-002, REQ-MAIN-005: a real local answer; the wire carries the driver's params."""
    exchange = await fetch_over_http(
        lambda endpoint: Wikidata(EngineSettings(endpoint=endpoint)),
        SearchParams(query="zürich", language="en"),
        Route.fixture("wikidata", "ok.json"),
        path=PATH,
    )
    assert exchange.hits[0].url == "https://www.wikidata.org/wiki/Q72"
    assert exchange.wire.param("search") == "zürich"
