"""The dblp driver: one-or-many fields, the empty answer without `hit`, URL preference."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import Category, FailureClass, SearchParams
from rypsok.core.engines.dblp import Dblp
from tests.core.engines.driver_support import FixtureResponses, parse_failure

_response = FixtureResponses("dblp")


@pytest.mark.req("REQ-ENG-010", "REQ-CMP-002", "REQ-ENG-011")
def test_request_and_admission() -> None:
    """REQ-ENG-010, REQ-CMP-002: two seconds apart, serial; q, json, h, no completions."""
    assert Dblp.categories == frozenset({Category.SCIENCE})
    assert Dblp.admission.min_interval_ms >= 2_000 and Dblp.admission.max_concurrency == 1
    request = Dblp().build_request(SearchParams(query="transformer", results=10))
    assert request.url == "https://dblp.org/search/publ/api"
    assert request.params == (("q", "transformer"), ("format", "json"), ("h", "10"), ("c", "0"))


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_urls_prefer_doi_then_publisher_then_catalogue() -> None:
    """REQ-TEST-002: DOI landing page, else `ee`, else the dblp record; titles lose the '.'."""
    hits = Dblp().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == [1, 2, 3]  # the untitled fourth is skipped
    assert hits[0].url.startswith("https://proceedings.neurips.cc/")
    assert hits[0].title == "Attention is All you Need"
    assert hits[1].url == "https://doi.org/10.48550/arxiv.2101.00001"
    assert hits[2].url == "https://dblp.org/rec/tr/xx/Old19"
    assert all(hit.date is None for hit in hits)  # a year only is not a date


@pytest.mark.req("REQ-TEST-002")
def test_snippet_is_composed_from_authors_venue_and_year() -> None:
    """REQ-TEST-002: "<authors> · <venue> <year>", object-or-array authors and venues."""
    hits = Dblp().parse(_response("ok.json"))
    assert hits[0].snippet == (
        "Ashish Vaswani, Noam Shazeer, Niki Parmar, Jakob Uszkoreit, Llion Jones et al. · NIPS 2017"
    )
    assert hits[1].snippet == "Solo Author · CoRR, arXiv 2021"  # one author object, venue list
    assert hits[2].snippet == "Old Style Author, Second Old · Tech. Rep. 2019"  # plain strings


@pytest.mark.req("REQ-TEST-002")
def test_a_single_hit_object_is_one_result_and_no_hit_key_is_empty() -> None:
    """REQ-TEST-002: `hit` as an object is one result; `hits` without `hit` is empty."""
    single = Dblp().parse(_response("single.json"))
    assert [hit.title for hit in single] == ["Notes on the Analytical Engine"]
    assert single[0].snippet == "Ada Lovelace · Sketch 1843"
    assert Dblp().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002")
def test_old_http_links_still_prefer_the_doi_then_the_publisher() -> None:
    """REQ-TEST-002: `http://dx.doi.org/` is the DOI page; an http publisher page beats dblp."""
    hits = Dblp().parse(_response("http_links.json"))
    assert [hit.url for hit in hits] == [
        "https://doi.org/10.1000/abc.12",
        "http://publisher.example/paper/7",
    ]


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_no_hit_key_with_a_count_drifted_and_a_numeric_year_is_the_year() -> None:
    """REQ-TEST-002: `@total` 3 without `hit` is parse_failure; `year` 1843 reads as "1843"."""
    drifted = parse_failure(Dblp(), _response("drifted_no_hit.json"))
    assert drifted.failure_class is FailureClass.PARSE_FAILURE
    (hit,) = Dblp().parse(_response("numeric_year.json"))
    assert hit.snippet == "Ada Lovelace · Sketch 1843"


@pytest.mark.req("REQ-TEST-002", "REQ-CMP-002")
def test_overload_and_bad_status_are_classified() -> None:
    """REQ-TEST-002, REQ-CMP-002: 429 with an empty body and Retry-After; status 400 inside."""
    limited = parse_failure(Dblp(), _response("empty.json", 429, retry_after="30"))
    assert limited.failure_class is FailureClass.RATE_LIMITED
    assert limited.retry_after_ms == 30_000
    refused = parse_failure(Dblp(), _response("bad_status.json"))
    assert refused.failure_class is FailureClass.REQUEST_FAILURE
