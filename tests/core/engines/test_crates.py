"""The crates.io driver: its request, its registry-page results and its contact rule."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import Category, EngineSettings, FailureClass, SearchParams
from rypsok.core.engines.crates import Crates
from tests.core.engines.driver_support import TEXT, FixtureResponses, parse_failure

_response = FixtureResponses("crates")


@pytest.mark.req("REQ-CMP-001", "REQ-CMP-002", "REQ-CMP-004", "REQ-ENG-010")
def test_one_request_a_second_and_inactive_without_the_operator_contact() -> None:
    """REQ-CMP-002, REQ-CMP-004: 1 rps, serial; the policy's contact makes it active."""
    assert Crates.categories == frozenset({Category.CODE})
    assert Crates.admission.min_interval_ms >= 1_000
    assert Crates.admission.max_concurrency == 1
    assert not Crates().active
    assert Crates(EngineSettings(contact="ops@example.org")).active
    assert Crates.languages == frozenset() and Crates.time_ranges == frozenset()


@pytest.mark.req("REQ-ENG-011")
def test_request_asks_for_the_count_capped_at_100() -> None:
    """REQ-ENG-011: q and per_page, at most 100."""
    request = Crates().build_request(SearchParams(query="serde", results=500))
    assert request.url == "https://crates.io/api/v1/crates"
    assert request.params == (("q", "serde"), ("per_page", "100"))


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_success_gives_name_description_registry_page_and_release_date() -> None:
    """REQ-TEST-002, REQ-ENG-012: package name, description, crates.io page, updated_at."""
    hits = Crates().parse(_response("ok.json"))
    assert [hit.title for hit in hits] == ["serde", "serde_json", "serde-yaml-ng"]
    assert [hit.rank for hit in hits] == [1, 2, 4]  # the invalid name leaves its gap
    assert hits[0].url == "https://crates.io/crates/serde"
    assert hits[0].snippet == "A generic serialization/deserialization framework"
    assert hits[0].date == "2026-09-27"
    assert hits[2].snippet == "" and hits[2].date is None


@pytest.mark.req("REQ-TEST-002")
def test_empty_answer_is_no_results() -> None:
    """REQ-TEST-002: `crates: []` is empty, not a failure."""
    assert Crates().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_refusals_of_the_client_and_error_documents_are_classified() -> None:
    """REQ-TEST-002, REQ-ENG-006: 403 (bad User-Agent) blocked; 400 request_failure."""
    forbidden = parse_failure(Crates(), _response("no_user_agent.txt", 403, content_type=TEXT))
    assert forbidden.failure_class is FailureClass.BLOCKED
    refused = parse_failure(Crates(), _response("errors.json", 400))
    assert refused.failure_class is FailureClass.REQUEST_FAILURE
    # An error document under 200 is crates.io refusing the request, read for its class.
    under_200 = parse_failure(Crates(), _response("errors.json"))
    assert under_200.failure_class is FailureClass.REQUEST_FAILURE
    throttled = parse_failure(Crates(), _response("throttled_200.json"))
    assert throttled.failure_class is FailureClass.RATE_LIMITED


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_an_answer_without_the_list_is_empty_only_when_its_total_says_zero() -> None:
    """REQ-TEST-002: no `crates` key and `meta.total` 0 is empty; with a count it drifted."""
    assert Crates().parse(_response("empty_no_list.json")) == []
    drifted = parse_failure(Crates(), _response("drifted_no_list.json"))
    assert drifted.failure_class is FailureClass.PARSE_FAILURE
