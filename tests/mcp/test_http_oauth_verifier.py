"""The OAuth token verifier in one process: each check of rypsok.mcp.http.oauth by itself.

tests/mcp/test_http_oauth.py shows the resource server end to end (a local
issuer, a served JWKS, the SDK's client); these tests call the verifier the
key gate calls, with tokens minted here, so that each claim check, the key
selection by `kid`, the bounded refetch and the caller's name each have a
test that fails when the check is broken (the mutation job runs them). No
MCP handler is called: the verifier is the gate's dependency, not a tool.
"""

from __future__ import annotations

import hashlib
import json
import logging
import pathlib
import time
from dataclasses import replace
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from rypsok.mcp.http.oauth import InsufficientScope, OAuthVerifier, _caller_name
from rypsok.mcp.http.oauth_plan import OAuthPlan

ISSUER = "https://issuer.example"
AUDIENCE = "https://rypsok.example/mcp"
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC_KEY = ec.generate_private_key(ec.SECP256R1())
PLAN = OAuthPlan(
    issuer=ISSUER,
    audience=AUDIENCE,
    jwks_url=None,
    jwks_file=None,
    algorithms=("RS256", "ES256"),
    caller_claim="sub",
    skew_s=30,
    refresh_s=3600,
    token_scopes=(
        ("search", "rypsok:search"),
        ("fetch", "rypsok:fetch"),
        ("status", "rypsok:status"),
        ("metrics", "rypsok:metrics"),
    ),
)


def _jwk(public: Any, kid: str | None) -> dict[str, Any]:
    rsa_public = isinstance(public, rsa.RSAPublicKey)
    algorithm = jwt.algorithms.RSAAlgorithm if rsa_public else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(public))
    jwk.update({"alg": "RS256" if rsa_public else "ES256", "use": "sig"})
    if kid is not None:
        jwk["kid"] = kid
    return jwk


def jwks(*keys: tuple[Any, str | None]) -> bytes:
    return json.dumps({"keys": [_jwk(key.public_key(), kid) for key, kid in keys]}).encode()


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": AUDIENCE, "sub": "agent-1", "nbf": now - 5,
            "exp": now + 300, "scope": "rypsok:search rypsok:fetch"}  # fmt: skip
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def token(key: Any = RSA_KEY, kid: str | None = "r1", **overrides: Any) -> str:
    algorithm = "RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256"
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(claims(**overrides), key, algorithm=algorithm, headers=headers)


class Issuer:
    """A `fetch` for the verifier: serves a JWKS document and counts the reads."""

    def __init__(self, document: bytes | None) -> None:
        self.document = document
        self.reads = 0

    async def __call__(self) -> bytes | None:
        self.reads += 1
        return self.document


def verifier(document: bytes | None, plan: OAuthPlan = PLAN) -> tuple[OAuthVerifier, Issuer]:
    issuer = Issuer(document)
    return OAuthVerifier(plan, issuer), issuer


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
async def test_a_valid_token_names_its_caller_scopes_and_expiry_and_withholds_itself() -> None:
    """REQ-SEC-018: a good token gives the `sub` as caller, rypsok's scopes in rypsok's order
    (the token's own words mapped), the expiry, and never the token itself."""
    check, _ = verifier(jwks((RSA_KEY, "r1")))
    presented = token(scope="rypsok:fetch rypsok:metrics rypsok:search other")
    access = await check.verify_token(presented)
    assert access is not None and access.client_id == "agent-1"
    assert access.scopes == ["search", "fetch", "metrics"]
    assert access.token == "(withheld)" and presented not in repr(access)
    assert access.expires_at == claims()["exp"]
    scp = await check.verify_token(token(scope=None, scp=["rypsok:status", 7, "rypsok:fetch"]))
    assert scp is not None and scp.scopes == ["fetch", "status"]


@pytest.mark.req("REQ-SEC-018")
async def test_a_float_expiry_is_an_integer_and_a_missing_one_is_refused() -> None:
    """REQ-SEC-018: `exp` is required; a fractional one is reported in whole seconds."""
    check, _ = verifier(jwks((RSA_KEY, "r1")))
    later = time.time() + 300.7
    access = await check.verify_token(token(exp=later))
    assert access is not None and access.expires_at == int(later)
    for missing in ("exp", "iss", "aud"):
        assert await check.verify_token(token(**{missing: None})) is None, missing


@pytest.mark.req("REQ-SEC-018")
@pytest.mark.parametrize(
    "overrides",
    [
        {"iss": "https://other.example"},
        {"aud": "https://rypsok.example/other"},
        {"exp": -31},  # seconds from now, taken when the test runs
        {"nbf": 60},
        {"sub": None},
        {"sub": ""},
        {"sub": 12},
    ],
)
async def test_a_token_failing_a_claim_check_is_refused(overrides: dict[str, Any]) -> None:
    """REQ-SEC-018: another issuer or audience, an expiry or start beyond the skew, or no
    usable caller claim: no caller."""
    check, _ = verifier(jwks((RSA_KEY, "r1")))
    now = int(time.time())
    timed = {k: now + v for k, v in overrides.items() if k in ("exp", "nbf")}
    assert await check.verify_token(token(**{**overrides, **timed})) is None


@pytest.mark.req("REQ-SEC-018")
async def test_the_skew_admits_a_just_expired_token() -> None:
    """REQ-SEC-018: `exp` and `nbf` hold within the configured skew (LIM-H12)."""
    check, _ = verifier(jwks((RSA_KEY, "r1")))
    now = int(time.time())
    assert await check.verify_token(token(exp=now - 20)) is not None
    assert await check.verify_token(token(nbf=now + 20)) is not None


@pytest.mark.req("REQ-SEC-018")
async def test_a_token_without_a_rypsok_scope_is_insufficient() -> None:
    """REQ-SEC-018: a valid token whose scopes name nothing rypsok serves raises
    InsufficientScope (a 403), whether the scopes are absent, foreign or not text."""
    check, _ = verifier(jwks((RSA_KEY, "r1")))
    for overrides in ({"scope": "other"}, {"scope": None}, {"scope": None, "scp": "rypsok:fetch"},
                      {"scope": ["rypsok:fetch"]}):  # fmt: skip
        with pytest.raises(InsufficientScope):
            await check.verify_token(token(**overrides))


@pytest.mark.req("REQ-SEC-018")
async def test_only_the_configured_asymmetric_algorithms_reach_a_key() -> None:
    """REQ-SEC-018: a token that does not parse, or whose algorithm the plan does not allow
    (ES256 when only RS256 is), is refused before any key is read."""
    rs_only = replace(PLAN, algorithms=("RS256",))
    check, issuer = verifier(jwks((RSA_KEY, "r1"), (EC_KEY, "e1")), rs_only)
    assert await check.verify_token("not-a-token") is None
    assert await check.verify_token(token(EC_KEY, kid="e1")) is None
    assert issuer.reads == 0
    assert await check.verify_token(token()) is not None


@pytest.mark.req("REQ-SEC-018")
async def test_a_kid_selects_its_key_and_no_kid_tries_the_unnamed_keys_first() -> None:
    """REQ-SEC-018: a `kid` is checked with that key only; a token without one is checked
    with the keys that have no `kid`, or with every key when all have one."""
    check, _ = verifier(jwks((OTHER_RSA_KEY, "r1"), (RSA_KEY, "r2")))
    assert await check.verify_token(token(kid="r1")) is None  # r1 is not the signing key
    assert await check.verify_token(token(kid="r2")) is not None
    assert await check.verify_token(token(kid=None)) is not None  # every key is tried
    unnamed, _ = verifier(jwks((OTHER_RSA_KEY, None), (RSA_KEY, "r2")))
    assert await unnamed.verify_token(token(kid=None)) is None  # only the unnamed key
    assert await unnamed.verify_token(token(kid="r2")) is not None


@pytest.mark.req("REQ-SEC-018", "REQ-SEC-019")
async def test_an_unknown_kid_refetches_at_most_once_per_refresh_time() -> None:
    """REQ-SEC-018, REQ-SEC-019: the keys are read on first use; an unknown `kid` rereads them
    only when the refresh time has passed (LIM-H13), so tokens cannot drive the reads."""
    bounded, issuer = verifier(jwks((RSA_KEY, "r1")))
    for _ in range(3):
        assert await bounded.verify_token(token(kid="unknown")) is None
    assert issuer.reads == 1
    eager, eager_issuer = verifier(jwks((RSA_KEY, "r1")), replace(PLAN, refresh_s=0))
    for _ in range(3):
        assert await eager.verify_token(token(kid="unknown")) is None
    assert eager_issuer.reads == 4  # the first read, then one per unknown kid
    assert await eager.verify_token(token(kid="r1")) is not None
    assert eager_issuer.reads == 4  # a known kid reads nothing


@pytest.mark.req("REQ-SEC-018")
async def test_a_rotated_key_is_found_after_the_refresh_time() -> None:
    """REQ-SEC-018: after a rotation the new key is read when its `kid` first appears."""
    check, issuer = verifier(jwks((RSA_KEY, "r1")), replace(PLAN, refresh_s=0))
    assert await check.verify_token(token(kid="r1")) is not None
    issuer.document = jwks((OTHER_RSA_KEY, "r2"))
    assert await check.verify_token(token(OTHER_RSA_KEY, kid="r2")) is not None
    assert await check.verify_token(token(kid="r1")) is None  # the old key is gone


@pytest.mark.req("REQ-SEC-018", "REQ-OPS-001")
async def test_the_keys_come_from_a_file_and_a_bad_document_is_a_warning(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """REQ-SEC-018, REQ-OPS-001: `jwks_file` is read (a missing one gives no keys); a document
    that is not a JWKS is logged as a warning and gives no keys; a good one logs its size."""
    path = tmp_path / "jwks.json"
    from_file = OAuthVerifier(replace(PLAN, jwks_file=str(path)))
    with caplog.at_level(logging.INFO, logger="rypsok"):
        assert await from_file.verify_token(token()) is None  # not there yet: no keys, no word
    assert caplog.records == []
    path.write_bytes(jwks((RSA_KEY, "r1"), (EC_KEY, "e1")))
    later = OAuthVerifier(replace(PLAN, jwks_file=str(path)))
    with caplog.at_level(logging.INFO, logger="rypsok"):
        assert await later.verify_token(token()) is not None
        broken, _ = verifier(b'{"keys": "no"}')
        assert await broken.verify_token(token()) is None
        unfetched = OAuthVerifier(PLAN)
        assert await unfetched.verify_token(token()) is None
    events = [(r.getMessage(), r.levelno, getattr(r, "fields", {})) for r in caplog.records]
    assert ("issuer_keys_loaded", logging.INFO, {"keys": 2}) in events
    assert ("issuer_keys_unavailable", logging.WARNING, {"reason": "unreadable"}) in events
    assert [e[0] for e in events].count("issuer_keys_unavailable") == 1


@pytest.mark.req("REQ-SEC-018")
@pytest.mark.parametrize(
    ("claim", "caller"),
    [
        ("agent-1", "agent-1"),
        ("a" * 64, "a" * 64),
        ("user@example.org", "user@example.org"),
        ("a" * 65, None),
        ("-agent", None),
        ("name with spaces", None),
        ("\ud800lone", None),
    ],
)
async def test_a_caller_claim_is_kept_when_plain_else_a_stable_digest(
    claim: str, caller: str | None
) -> None:
    """REQ-SEC-018: a plain claim (letters, digits, `._@-`, at most 64, not starting with a
    sign) is the caller; any other one is `oauth-` and 16 hex digits of its SHA-256."""
    check, _ = verifier(jwks((RSA_KEY, "r1")))
    expected = caller or (
        "oauth-" + hashlib.sha256(claim.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    )
    if claim.startswith("\ud800"):  # a JWT cannot carry a lone surrogate: ask the naming rule
        assert _caller_name(claim) == expected
        return
    access = await check.verify_token(token(sub=claim))
    assert access is not None and access.client_id == expected
