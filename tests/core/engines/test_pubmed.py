"""The PubMed driver: esearch then esummary as one exchange, NCBI's identity and traps."""

from __future__ import annotations

import anyio
import pytest

from rypsok.core.config import ConfigError, parse_config
from rypsok.core.engines.base import (
    EngineRequest,
    EngineResponse,
    EngineSettings,
    FailureClass,
    FollowUp,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.pubmed import PubMed, PubMedConfig
from rypsok.core.engines.registry import engine_models
from rypsok.core.services import Services
from tests.core.engines.driver_support import NOW, FixtureResponses, parse_failure
from tests.support import config_from

_response = FixtureResponses("pubmed")


def _driver(**options: object) -> PubMed:
    settings = EngineSettings(
        options=PubMedConfig.model_validate(options), contact="ops@example.org"
    )
    return PubMed(settings, clock=lambda: NOW)


@pytest.mark.req("REQ-ENG-010", "REQ-CMP-002", "REQ-CMP-003")
def test_outside_the_default_set_attributed_and_paced_for_two_requests() -> None:
    """REQ-CMP-002, REQ-CMP-003: two requests a turn at most ~3 a second; NCBI notice."""
    assert PubMed.default_enabled is False
    assert PubMed.admission.min_interval_ms * 3 >= 2 * 1_000 * 1.0
    assert PubMed.admission.attribution_required
    assert PubMed().current_admission.min_interval_ms == 700
    keyed = PubMed(EngineSettings(api_key="k" * 36)).current_admission
    assert keyed.min_interval_ms * 10 >= 2 * 1_000 and keyed.min_interval_ms < 700  # 10 a second
    assert keyed.attribution_required


@pytest.mark.req("REQ-ENG-011", "REQ-CMP-004")
def test_esearch_carries_tool_email_and_the_operators_key() -> None:
    """REQ-CMP-004: tool and email (the operator's contact by default), api_key when given."""
    request = _driver().build_request(SearchParams(query="crispr", results=10))
    assert request.url == "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esearch.fcgi"
    params = dict(request.params)
    assert params["term"] == "crispr" and params["retmax"] == "10"
    assert params["db"] == "pubmed" and params["sort"] == "relevance"
    assert params["tool"] == "rypsok" and params["email"] == "ops@example.org"
    assert "api_key" not in params
    keyed = PubMed(
        EngineSettings(api_key="k" * 36, options=PubMedConfig(tool="lab", email="a@b.org"))
    )
    params = dict(keyed.build_request(SearchParams(query="x")).params)
    assert params["tool"] == "lab" and params["email"] == "a@b.org"
    assert params["api_key"] == "k" * 36
    url_contact = PubMed(EngineSettings(contact="https://ops.example.org"))
    assert "email" not in dict(url_contact.build_request(SearchParams(query="x")).params)


@pytest.mark.req("REQ-SEARCH-004", "REQ-SEARCH-005")
def test_language_and_time_range_change_the_request() -> None:
    """REQ-SEARCH-004, REQ-SEARCH-005: `[la]` in the term; pdat from the start of the range."""
    plain = dict(_driver().build_request(SearchParams(query="crispr")).params)
    german = dict(_driver().build_request(SearchParams(query="crispr", language="de")).params)
    assert german["term"] == "(crispr) AND german[la]" != plain["term"]
    week = dict(_driver().build_request(SearchParams(query="x", time_range=TimeRange.WEEK)).params)
    assert (week["datetype"], week["mindate"], week["maxdate"]) == (
        "pdat", "2023/11/07", "2023/11/14")  # fmt: skip
    assert "mindate" not in plain


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_esearch_ids_become_the_esummary_follow_up() -> None:
    """REQ-TEST-002: the ids, in order, in one esummary request with the same identity."""
    follow_up = _driver().parse(_response("search.json"))
    assert isinstance(follow_up, FollowUp) and list(follow_up) == []
    request = follow_up.request
    assert request.url == "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/esummary.fcgi"
    params = dict(request.params)
    assert params["id"] == "27096365,31452104" and params["retmode"] == "json"
    assert params["tool"] == "rypsok" and params["email"] == "ops@example.org"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-012")
def test_summaries_give_doi_or_pubmed_urls_composed_snippets_and_dates() -> None:
    """REQ-TEST-002: DOI landing page first, else the PubMed page; uids order kept."""
    hits = _driver().parse(_response("ok.json"))
    assert [hit.url for hit in hits] == [
        "https://doi.org/10.1038/nature17946",
        "https://pubmed.ncbi.nlm.nih.gov/31452104/",
    ]
    assert hits[0].title.startswith("Programmable editing")
    assert hits[0].snippet == "Komor AC, Kim YB, Packer MS, Zuris JA, Liu DR et al. · Nature 2016"
    assert hits[0].date == "2016-04-20" and hits[1].date == "2019-10-01"


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006")
def test_empty_rate_limit_under_200_and_search_errors() -> None:
    """REQ-TEST-002, REQ-ENG-006: no ids is empty; NCBI's 200 rate-limit body; ERROR."""
    assert _driver().parse(_response("empty.json")) == []
    limited = parse_failure(_driver(), _response("rate_limited.json"))
    assert limited.failure_class is FailureClass.RATE_LIMITED
    limited = parse_failure(_driver(), _response("rate_limited.json", 429))
    assert limited.failure_class is FailureClass.RATE_LIMITED
    failed = parse_failure(_driver(), _response("search_error.json"))
    assert failed.failure_class is FailureClass.REQUEST_FAILURE
    refused = parse_failure(_driver(), _response("summary_error.json"))  # esummaryresult
    assert refused.failure_class is FailureClass.REQUEST_FAILURE
    assert _driver().parse(_response("empty_no_idlist.json")) == []  # count "0", no idlist


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-005")
def test_exchange_sends_both_requests_and_returns_the_summaries() -> None:
    """REQ-TEST-002, REQ-AGG-002: one exchange is esearch then esummary, in that order."""
    sent: list[EngineRequest] = []
    answers = [_response("search.json"), _response("ok.json")]

    async def send(request: EngineRequest) -> EngineResponse:
        sent.append(request)
        return answers[len(sent) - 1]

    async def run() -> list[str]:
        hits = await _driver().exchange(
            SearchParams(query="crispr"), send, parse_slots=anyio.CapacityLimiter(1)
        )
        return [hit.url for hit in hits]

    urls = anyio.run(run)
    assert [r.url.rsplit("/", 1)[1] for r in sent] == ["esearch.fcgi", "esummary.fcgi"]
    assert urls[0] == "https://doi.org/10.1038/nature17946"


@pytest.mark.req("REQ-CFG-005")
def test_typed_settings_are_validated_at_start_up_naming_the_key() -> None:
    """REQ-CFG-005: a bad `email` or an unknown key stops start-up with the key's name."""
    data = {"schema_version": 1, "engines": {"pubmed": {"email": "not an address"}}}
    with pytest.raises(ConfigError, match=r"engines\.pubmed\.email"):
        parse_config(data, engine_models())
    data = {"schema_version": 1, "engines": {"pubmed": {"retries": 3}}}
    with pytest.raises(ConfigError, match=r"unknown key 'engines\.pubmed\.retries'"):
        parse_config(data, engine_models())
    data = {"schema_version": 1, "engines": {"crossref": {"tool": "x"}}}
    with pytest.raises(ConfigError, match=r"unknown key 'engines\.crossref\.tool'"):
        parse_config(data, engine_models())
    good = {"schema_version": 1, "engines": {"pubmed": {"enabled": True, "tool": "lab"}}}
    config = parse_config(good, engine_models())
    options = config.engines["pubmed"]
    assert isinstance(options, PubMedConfig) and options.tool == "lab"


@pytest.mark.req("REQ-CMP-002", "REQ-ENG-010")
async def test_the_operators_own_key_raises_the_queue_rate_to_ncbis_keyed_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-CMP-002: 3 requests a second without a key, 10 with the operator's own key."""
    monkeypatch.setenv("RYPSOK_TEST_NCBI_KEY", "k" * 36)
    keyless = Services(config_from({"engines": {"pubmed": {"enabled": True}}}))
    keyed = Services(
        config_from(
            {"engines": {"pubmed": {"enabled": True, "api_key": {"env": "RYPSOK_TEST_NCBI_KEY"}}}}
        )
    )
    assert keyless.search_pipeline._queues["pubmed"].min_interval_ms == 700
    assert keyed.search_pipeline._queues["pubmed"].min_interval_ms == 200
    await keyless.aclose()
    await keyed.aclose()
