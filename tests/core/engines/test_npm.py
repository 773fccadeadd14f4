"""The npm driver: its request and its registry-page results, with npm's traps."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import Category, FailureClass, SearchParams
from rypsok.core.engines.npm import Npm
from tests.core.engines.driver_support import FixtureResponses, parse_failure

_response = FixtureResponses("npm")


@pytest.mark.req("REQ-ENG-008", "REQ-ENG-010", "REQ-ENG-011")
def test_keyless_code_engine_asks_for_the_count_capped_at_250() -> None:
    """REQ-ENG-008, REQ-ENG-011: official registry search, text and size (at most 250)."""
    assert Npm.categories == frozenset({Category.CODE})
    assert Npm().active and Npm.default_enabled and not Npm.scraping
    request = Npm().build_request(SearchParams(query="express", results=900))
    assert request.url == "https://registry.npmjs.org/-/v1/search"
    assert request.params == (("text", "express"), ("size", "250"))


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_success_gives_name_description_registry_page_and_publication_date() -> None:
    """REQ-TEST-002: name, description, npmjs.com page (scopes kept), latest version's date."""
    hits = Npm().parse(_response("ok.json"))
    assert [hit.title for hit in hits] == ["express", "@types/express", "express-lite"]
    assert hits[0].url == "https://www.npmjs.com/package/express"
    assert hits[0].snippet == "Fast, unopinionated, minimalist web framework"
    assert hits[0].date == "2026-03-31"
    assert hits[1].url == "https://www.npmjs.com/package/@types/express"
    assert hits[2].rank == 4 and hits[2].snippet == "" and hits[2].date is None


@pytest.mark.req("REQ-TEST-002")
def test_empty_answer_and_refused_query() -> None:
    """REQ-TEST-002: no objects is empty; an `error` document is not a result list."""
    assert Npm().parse(_response("empty.json")) == []
    refused = parse_failure(Npm(), _response("bad_request.json", 400))
    assert refused.failure_class is FailureClass.REQUEST_FAILURE
    # The same document under 200 is the registry's refusal, not a drifted format.
    under_200 = parse_failure(Npm(), _response("bad_request.json"))
    assert under_200.failure_class is FailureClass.REQUEST_FAILURE
    assert Npm().parse(_response("empty_no_list.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_a_package_published_before_lower_case_names_is_kept() -> None:
    """REQ-TEST-002: `JSONStream` (upper case, pre-2017) is a result, `dependents` a string."""
    (hit,) = Npm().parse(_response("legacy_name.json"))
    assert (hit.title, hit.url) == ("JSONStream", "https://www.npmjs.com/package/JSONStream")
    assert hit.date == "2018-11-12"
