"""The Marginalia driver: API-Key header, 503 as its rate limit, licence-driven attribution."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import EngineSettings, FailureClass, SafeSearch, SearchParams
from rypsok.core.engines.marginalia import Marginalia
from tests.core.engines.driver_support import TEXT, FixtureResponses, parse_failure
from tests.core.engines.keyed_support import KEY, assert_keyed

_response = FixtureResponses("marginalia")


def _driver() -> Marginalia:
    return Marginalia(EngineSettings(api_key=KEY))


@pytest.mark.req("REQ-CFG-004", "REQ-SEC-017")
def test_key_header_count_nsfw_and_language() -> None:
    """REQ-CFG-004, REQ-SEARCH-004: API-Key header; nsfw by safe search; lang when asked."""
    request = assert_keyed(Marginalia)
    assert request.credential_headers == frozenset({"API-Key"})
    params = dict(request.params)
    assert params == {"query": "q", "count": "10", "nsfw": "0"}
    asked = dict(_driver().build_request(
        SearchParams(query="q", language="sv", safe_search=SafeSearch.OFF)).params)  # fmt: skip
    assert asked["lang"] == "sv" and asked["nsfw"] == "1"


@pytest.mark.req("REQ-TEST-002", "REQ-CMP-003")
def test_non_commercial_licence_travels_with_each_result() -> None:
    """REQ-CMP-003: CC-BY-NC-SA answers carry the attribution; a commercial licence does not."""
    hits = _driver().parse(_response("ok.json"))
    assert len(hits) == 2
    assert hits[0].snippet.endswith("(Marginalia Search, CC-BY-NC-SA 4.0)")
    assert hits[1].snippet == "(Marginalia Search, CC-BY-NC-SA 4.0)"
    assert Marginalia.admission.attribution_required
    commercial = _driver().parse(_response("commercial.json"))
    assert commercial[0].snippet == "Gemini is a new internet technology."
    assert _driver().parse(_response("empty.json")) == []


@pytest.mark.req("REQ-TEST-002", "REQ-ENG-006", "REQ-CMP-002")
def test_503_is_the_rate_limit_and_401_the_key() -> None:
    """REQ-TEST-002, REQ-CMP-002: 503 rate_limited (Marginalia's signal); 401 auth_failure."""
    limited = parse_failure(_driver(), _response("rate_limited.txt", 503, content_type=TEXT))
    assert limited.failure_class is FailureClass.RATE_LIMITED
    refused = parse_failure(_driver(), _response("rate_limited.txt", 401, content_type=TEXT))
    assert refused.failure_class is FailureClass.AUTH_FAILURE
    timed = parse_failure(_driver(), _response("rate_limited.txt", 504, content_type=TEXT))
    assert timed.failure_class is FailureClass.TIMEOUT
