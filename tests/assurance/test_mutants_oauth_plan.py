"""The HTTP mode's start-up check of `[http.oauth]`, one defect at a time (REQ-SEC-018).

`rypsok.mcp.http.oauth_plan.oauth_problems` decides whether the OAuth table can
serve: an https issuer and audience without query or fragment, exactly one
source of the issuer's keys, that source read over https or from a file that
exists, and at least one algorithm. `OAuthPlan.of` maps each rypsok scope to
the token scope that admits it. Each case below has exactly one defect, so
that the mutation run of these two functions (`--module http.oauth_plan`)
sees a change of any one condition. The verifier itself is tested in
tests/mcp/test_http_oauth_verifier.py, the served metadata in
tests/mcp/test_http_oauth.py.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from rypsok.core.config import OAuthConfig, OAuthScopes
from rypsok.mcp.http.oauth_plan import OAuthPlan, oauth_problems

ISSUER, AUDIENCE, JWKS = "https://issuer.test", "https://rypsok.test/mcp", "https://issuer.test/k"
URL_RULE = "an https URL without query or fragment"


def _problems(**fields: Any) -> list[str]:
    values: dict[str, Any] = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": JWKS}
    return oauth_problems(OAuthConfig(**{**values, **fields}))


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_a_sound_table_has_no_problem(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018: keys by https URL, or from a file that exists, are both fine."""
    keys = tmp_path / "jwks.json"
    keys.write_text('{"keys": []}', encoding="utf-8")
    assert _problems() == []
    assert _problems(jwks_url=None, jwks_file=str(keys)) == []


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
@pytest.mark.parametrize("field", ["issuer", "audience"])
@pytest.mark.parametrize(
    "value",
    ["http://issuer.test", "https:///path", "https://issuer.test/?a=1", "https://issuer.test/#x"],
    ids=["plain-http", "no-host", "query", "fragment"],
)
def test_an_issuer_or_audience_with_one_defect_is_refused(field: str, value: str) -> None:
    """REQ-SEC-018: plain http, no host, a query or a fragment each refuse the URL, named."""
    assert _problems(**{field: value}) == [f"http.oauth.{field}: {URL_RULE}"]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_exactly_one_source_of_keys(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018: neither a JWKS URL nor a file, or both, is refused."""
    keys = tmp_path / "jwks.json"
    keys.write_text('{"keys": []}', encoding="utf-8")
    rule = "http.oauth.jwks_url, http.oauth.jwks_file: give exactly one of them"
    assert _problems(jwks_url=None) == [rule]
    assert _problems(jwks_file=str(keys)) == [rule]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_keys_over_plain_http_are_refused_loopback_included() -> None:
    """REQ-SEC-018: the issuer's keys decide who is a caller: never read over plain http."""
    assert _problems(jwks_url="http://127.0.0.1:8080/jwks") == [
        "http.oauth.jwks_url: an https URL (the issuer's keys are never read over plain http)"
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_a_key_file_that_does_not_exist_is_refused(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018: a JWKS file is checked at start-up, not at the first token."""
    absent = str(tmp_path / "absent.json")
    assert _problems(jwks_url=None, jwks_file=absent) == [
        "http.oauth.jwks_file: the file it names cannot be read"
    ]
    assert _problems(jwks_url=None, jwks_file=str(tmp_path)) == [  # a folder is no file
        "http.oauth.jwks_file: the file it names cannot be read"
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_no_algorithm_is_refused() -> None:
    """REQ-SEC-018: a table that accepts no algorithm would refuse every token."""
    assert _problems(algorithms=[]) == [
        "http.oauth.algorithms: name at least one asymmetric algorithm"
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_every_problem_is_reported_at_once() -> None:
    """REQ-SEC-018: the check goes on past the first problem, in the order of the table."""
    problems = _problems(issuer="http://i.test", audience="http://r.test", jwks_url=None)
    assert problems == [
        f"http.oauth.issuer: {URL_RULE}",
        f"http.oauth.audience: {URL_RULE}",
        "http.oauth.jwks_url, http.oauth.jwks_file: give exactly one of them",
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_the_plan_maps_each_rypsok_scope_to_its_own_token_scope() -> None:
    """REQ-SEC-018: each rypsok scope is admitted by the token scope configured for it (a
    swap would let a search token fetch), and the table's other values are kept."""
    scopes = OAuthScopes(search="t:s", fetch="t:f", status="t:st", metrics="t:m")
    config = OAuthConfig(
        issuer=ISSUER, audience=AUDIENCE, jwks_url=JWKS, algorithms=("ES256", "RS256", "ES256"),
        caller_claim="azp", skew_s=7, jwks_refresh_s=120, scopes=scopes,
    )  # fmt: skip
    plan = OAuthPlan.of(config)
    assert plan.token_scopes == (
        ("search", "t:s"), ("fetch", "t:f"), ("status", "t:st"), ("metrics", "t:m"),
    )  # fmt: skip
    assert plan.algorithms == ("ES256", "RS256")  # each once, in the given order
    assert (plan.issuer, plan.audience, plan.jwks_url, plan.jwks_file) == (
        ISSUER, AUDIENCE, JWKS, None,
    )  # fmt: skip
    assert (plan.caller_claim, plan.skew_s, plan.refresh_s) == ("azp", 7, 120)
    from_file = OAuthConfig(issuer=ISSUER, audience=AUDIENCE, jwks_file="/run/keys/jwks.json")
    assert (OAuthPlan.of(from_file).jwks_url, OAuthPlan.of(from_file).jwks_file) == (
        None, "/run/keys/jwks.json",
    )  # fmt: skip
