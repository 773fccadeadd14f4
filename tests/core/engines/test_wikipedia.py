"""The Wikipedia driver: request building and parsing of recorded answers."""

from __future__ import annotations

import json

import pytest

from rypsok.core import limits
from rypsok.core.engines.base import (
    Category,
    EngineResponse,
    EngineSettings,
    FailureClass,
    SearchParams,
)
from rypsok.core.engines.wikipedia import Wikipedia
from tests.core.engines.driver_support import (
    HTML,
    JSON,
    FixtureResponses,
    fetch_over_http,
    parse_failure,
)
from tests.fakes.provider_server import Route

PATH = "/w/api.php"


_response = FixtureResponses("wikipedia")


@pytest.mark.req("REQ-ENG-001", "REQ-ENG-010")
def test_declares_its_admission_properties() -> None:
    """REQ-ENG-001, REQ-ENG-010: id, category, its editions, no time range, serial, attributed."""
    assert Wikipedia.id == "wikipedia"
    assert Wikipedia.categories == frozenset({Category.GENERAL})
    assert {"en", "de", "fr", "ja", "nb", "zh"} <= Wikipedia.languages
    assert Wikipedia.default_language == "en"
    assert Wikipedia.time_ranges == frozenset()
    assert Wikipedia.max_query_chars == 300
    assert Wikipedia.admission.max_concurrency == 1
    assert Wikipedia.admission.attribution_required is True
    assert Wikipedia.admission.cacheable is True
    assert Wikipedia.requires_key is False
    assert Wikipedia().active


@pytest.mark.req("REQ-ENG-011", "REQ-ENG-005")
def test_request_asks_the_search_module_for_the_result_count() -> None:
    """REQ-ENG-011, REQ-ENG-005: list=search, JSON v2, srlimit = the asked count."""
    request = Wikipedia().build_request(SearchParams(query="quantum physics", results=7))
    assert request.url == "https://en.wikipedia.org/w/api.php"
    params = dict(request.params)
    assert params["action"] == "query"
    assert params["list"] == "search"
    assert params["srsearch"] == "quantum physics"
    assert params["srlimit"] == "7"
    assert params["srnamespace"] == "0"
    assert params["format"] == "json"
    assert params["formatversion"] == "2"
    assert (params["meta"], params["siprop"]) == ("siteinfo", "general")  # names the edition
    assert request.headers == ()
    assert request.credential_headers == frozenset()


@pytest.mark.req("REQ-SEARCH-004", "REQ-ENG-010")
@pytest.mark.parametrize(
    ("language", "host"),
    [
        (None, "en.wikipedia.org"),
        ("en", "en.wikipedia.org"),
        ("de", "de.wikipedia.org"),
        ("ja", "ja.wikipedia.org"),
        ("nb", "no.wikipedia.org"),  # Bokmål is the `no` edition
        ("xx", "en.wikipedia.org"),  # an operator default it has no edition for
    ],
)
def test_the_language_selects_the_edition_by_its_subdomain(language: str | None, host: str) -> None:
    """REQ-SEARCH-004, REQ-ENG-010: one edition per language, asked on its own host."""
    request = Wikipedia().build_request(SearchParams(query="Zürich", language=language))
    assert request.url == f"https://{host}/w/api.php"


@pytest.mark.req("REQ-SEARCH-004", "REQ-SEC-017")
def test_a_configured_endpoint_is_one_wiki_and_honours_english_only() -> None:
    """REQ-SEARCH-004, REQ-SEC-017: no subdomain switch behind an operator's endpoint."""
    driver = Wikipedia(EngineSettings(endpoint="https://wiki-proxy.internal/w/api.php"))
    assert driver.honoured_languages() == frozenset({"en"})
    assert Wikipedia().honoured_languages() == Wikipedia.languages
    request = driver.build_request(SearchParams(query="q", language="de"))
    assert request.url == "https://wiki-proxy.internal/w/api.php"


@pytest.mark.req("REQ-RANK-003", "REQ-SEARCH-004")
@pytest.mark.parametrize(
    ("lang", "host"),
    [("de", "de.wikipedia.org"), ("nb", "no.wikipedia.org"), ("evil.example", "en.wikipedia.org")],
)
def test_result_urls_are_on_the_edition_that_answered(lang: str, host: str) -> None:
    """REQ-RANK-003: siteinfo's `lang` picks the host from our table, never from the answer."""
    body = {"query": {"general": {"lang": lang}, "search": [{"ns": 0, "title": "Zürich"}]}}
    response = EngineResponse(200, {"content-type": JSON}, json.dumps(body).encode())
    (hit,) = Wikipedia(EngineSettings(endpoint="http://127.0.0.1:8080/w/api.php")).parse(response)
    assert hit.url == f"https://{host}/wiki/Z%C3%BCrich"


@pytest.mark.req("REQ-ENG-011")
def test_request_never_asks_beyond_the_provider_ceiling() -> None:
    """REQ-ENG-011: more than srlimit's ceiling is asked as the ceiling."""
    request = Wikipedia().build_request(SearchParams(query="q", results=900))
    assert dict(request.params)["srlimit"] == "500"


@pytest.mark.req("REQ-ENG-005", "REQ-SEC-017")
def test_explicit_endpoint_keeps_the_query_parameters() -> None:
    """REQ-ENG-005, REQ-SEC-017: an operator endpoint replaces the URL only."""
    default = Wikipedia().build_request(SearchParams(query="zürich"))
    proxied = Wikipedia(EngineSettings(endpoint="https://wiki-proxy.internal/w/api.php"))
    request = proxied.build_request(SearchParams(query="zürich"))
    assert request.url == "https://wiki-proxy.internal/w/api.php"
    assert request.params == default.params


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012", "REQ-RANK-003")
def test_success_keeps_order_ranks_public_urls_and_raw_snippets() -> None:
    """REQ-TEST-002, REQ-ENG-012, REQ-RANK-003: twelve hits in order, article URLs, raw markup."""
    hits = Wikipedia().parse(_response("ok.json"))
    assert [hit.rank for hit in hits] == list(range(1, 13))
    assert hits[0].title == "Quantum mechanics"
    assert hits[0].url == "https://en.wikipedia.org/wiki/Quantum_mechanics"
    assert hits[1].title == "Schrödinger's cat"
    assert hits[1].url == "https://en.wikipedia.org/wiki/Schr%C3%B6dinger%27s_cat"
    assert hits[9].url == "https://en.wikipedia.org/wiki/Bra%E2%80%93ket_notation"
    assert hits[-1].title == "Bell's theorem"
    assert hits[0].snippet.startswith('<span class="searchmatch">Quantum</span> mechanics')
    assert "&quot;quanta&quot;" in hits[0].snippet
    assert "&amp;" in hits[2].snippet
    assert all(hit.date is None for hit in hits)


@pytest.mark.req("REQ-RANK-003")
def test_result_urls_stay_on_the_public_wiki_with_an_explicit_endpoint() -> None:
    """REQ-RANK-003: a proxy endpoint never leaks into result URLs."""
    driver = Wikipedia(EngineSettings(endpoint="http://127.0.0.1:8080/w/api.php"))
    hits = driver.parse(_response("ok.json"))
    assert all(hit.url.startswith("https://en.wikipedia.org/wiki/") for hit in hits)


@pytest.mark.req("REQ-RANK-003")
def test_article_urls_are_encoded_as_mediawiki_links_them() -> None:
    """REQ-RANK-003: spaces become underscores; reserved characters are percent-encoded."""
    titles = ["AC/DC", "C++", "Who? (band)", "Rock & roll", "Ελλάδα", "Mercury: the planet"]
    body = {"query": {"search": [{"ns": 0, "title": title} for title in titles]}}
    response = EngineResponse(200, {"content-type": JSON}, json.dumps(body).encode())
    urls = [
        hit.url.removeprefix("https://en.wikipedia.org/wiki/")
        for hit in Wikipedia().parse(response)
    ]
    assert urls == [
        "AC/DC",
        "C%2B%2B",
        "Who%3F_(band)",
        "Rock_%26_roll",
        "%CE%95%CE%BB%CE%BB%CE%AC%CE%B4%CE%B1",
        "Mercury:_the_planet",
    ]


@pytest.mark.req("REQ-TEST-002", "REQ-ERR-005")
@pytest.mark.parametrize("name", ["empty.json", "empty_without_search.json"])
def test_empty_answers_are_no_hits(name: str) -> None:
    """REQ-TEST-002, REQ-ERR-005: no hits, with or without the `search` list, is empty."""
    assert Wikipedia().parse(_response(name)) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_one_invalid_hit_is_skipped_and_ranks_keep_provider_positions() -> None:
    """REQ-TEST-002, REQ-ENG-006: hits without a usable title are skipped, not fatal."""
    hits = Wikipedia().parse(_response("partial_hits.json"))
    assert [(hit.rank, hit.title) for hit in hits] == [
        (1, "Quantum mechanics"),
        (4, "Quantum tunnelling"),
    ]
    assert hits[1].snippet == ""


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_hits_that_are_all_invalid_are_a_parse_failure() -> None:
    """REQ-TEST-002, REQ-ENG-006: a list of unusable hits is format drift, not empty."""
    assert (
        parse_failure(Wikipedia(), _response("all_hits_invalid.json")).failure_class
        is FailureClass.PARSE_FAILURE
    )


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-ENG-006")
def test_ratelimited_error_with_http_200_is_rate_limited() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-ENG-006: MediaWiki's `ratelimited` code under 200."""
    failure = parse_failure(Wikipedia(), _response("error_ratelimited.json"))
    assert failure.failure_class is FailureClass.RATE_LIMITED


@pytest.mark.req("REQ-RES-002", "REQ-CMP-002")
def test_maxlag_is_rate_limited_with_its_retry_after() -> None:
    """REQ-RES-002, REQ-CMP-002: maxlag means "wait, then it clears"; Retry-After is kept."""
    failure = parse_failure(Wikipedia(), _response("error_maxlag.json", retry_after="5"))
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 5_000


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_other_api_errors_are_request_failures() -> None:
    """REQ-TEST-002, REQ-ENG-006: an API error that is not a throttle is request_failure."""
    failure = parse_failure(Wikipedia(), _response("error_badvalue.json"))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_an_error_object_without_a_code_is_a_parse_failure() -> None:
    """REQ-ENG-006: an `error` object of the wrong shape is not in the provider's format."""
    failure = parse_failure(Wikipedia(), _response("error_without_code.json"))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-TEST-002", "REQ-RES-002", "REQ-CMP-002")
def test_http_429_is_rate_limited_and_retry_after_is_capped() -> None:
    """REQ-TEST-002, REQ-RES-002, REQ-CMP-002: 429 keeps Retry-After, capped at LIM-B4."""
    failure = parse_failure(
        Wikipedia(), _response("error_ratelimited.json", status=429, retry_after="30")
    )
    assert failure.failure_class is FailureClass.RATE_LIMITED
    assert failure.retry_after_ms == 30_000
    capped = parse_failure(Wikipedia(), _response("empty.json", status=429, retry_after="999999"))
    assert capped.retry_after_ms == limits.RETRY_AFTER_MAX_MS


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (302, FailureClass.REQUEST_FAILURE),
    ],
)
def test_http_statuses_are_classified(status: int, expected: FailureClass) -> None:
    """REQ-TEST-002, REQ-ENG-006: a redirect the API never sends is request_failure."""
    response = _response("server_error.html", status=status, content_type=HTML)
    assert parse_failure(Wikipedia(), response).failure_class is expected


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
@pytest.mark.parametrize("name", ["wrong_shape.json"])
def test_bodies_not_in_the_provider_format_are_parse_failures(name: str) -> None:
    """REQ-TEST-002, REQ-ENG-006: well-formed JSON of another shape is parse_failure."""
    assert parse_failure(Wikipedia(), _response(name)).failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
@pytest.mark.parametrize("content_type", ["text/html; charset=utf-8", "text/plain"])
def test_a_wrong_content_type_is_a_parse_failure(content_type: str) -> None:
    """REQ-ENG-006: JSON labelled as HTML or text is not the provider's answer."""
    failure = parse_failure(Wikipedia(), _response("ok.json", content_type=content_type))
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-006")
def test_an_empty_body_is_a_parse_failure_and_a_missing_content_type_is_tolerated() -> None:
    """REQ-ENG-006: an empty 200 fails; a JSON body without Content-Type still parses."""
    empty = EngineResponse(200, {"content-type": JSON}, b"")
    assert parse_failure(Wikipedia(), empty).failure_class is FailureClass.PARSE_FAILURE
    assert len(Wikipedia().parse(_response("ok.json", content_type=None))) == 12


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-016", "REQ-ERR-004")
@pytest.mark.parametrize(
    ("name", "status", "content_type"),
    [
        ("error_ratelimited.json", 200, JSON),
        ("error_maxlag.json", 200, JSON),
        ("error_badvalue.json", 200, JSON),
        ("challenge.html", 403, HTML),
        ("server_error.html", 503, HTML),
        ("malformed.json", 200, JSON),
    ],
)
def test_no_provider_text_leaves_the_driver(name: str, status: int, content_type: str) -> None:
    """REQ-ENG-006, REQ-SEC-016, REQ-ERR-004: the failure's text is its class, nothing else."""
    failure = parse_failure(Wikipedia(), _response(name, status=status, content_type=content_type))
    assert str(failure) == failure.failure_class.value
    for provider_text in ("exceeded", "lagged", "Unrecognized", "Verify", "servers", "batch"):
        assert provider_text not in repr(failure)


@pytest.mark.req("REQ-TEST-002", "REQ-MAIN-005", "REQ-RANK-003")
async def test_fixture_served_over_http_parses_with_public_urls() -> None:
    """REQ-TEST-002, REQ-MAIN-005, REQ-RANK-003: a real local answer; the wire has the params."""
    exchange = await fetch_over_http(
        lambda endpoint: Wikipedia(EngineSettings(endpoint=endpoint)),
        SearchParams(query="quantum", results=12),
        Route.fixture("wikipedia", "ok.json"),
        path=PATH,
    )
    assert len(exchange.hits) == 12
    assert exchange.hits[0].url == "https://en.wikipedia.org/wiki/Quantum_mechanics"
    assert len(exchange.received) == 1
