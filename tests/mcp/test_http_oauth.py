"""OAuth 2.1 resource server over HTTP, against a local issuer made in the test.

The issuer is a key pair per case made here and a JWKS served over HTTPS on
loopback with a certificate of a CA made here (fetched through the engine
egress profile, loopback admitted by `[egress] allow` as for an engine
endpoint, the test's CA its only trust); tokens are minted per case.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import pathlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from rypsok.core.config import ConfigError
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.policy import EgressRules
from rypsok.core.services import user_agent
from rypsok.mcp.http.plan import plan_http
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.http_support import RawMcp, RunningHttp, free_listener, http_config, running_http
from tests.tls_site import SiteCertificates, site_certificates

ISSUER = "https://issuer.example"
AUDIENCE = "https://rypsok.example/mcp"
JWKS_PATH = "/jwks.json"
LOOPBACK = "127.0.0.1/32"
SCOPES = "rypsok:search rypsok:fetch"


@dataclass
class Issuer:
    rsa_key: rsa.RSAPrivateKey
    ec_key: ec.EllipticCurvePrivateKey
    rotated: rsa.RSAPrivateKey  # published only after the rotation

    def jwks(self, *, rotated: bool = False) -> bytes:
        keys = [
            _jwk(self.rsa_key.public_key(), "r1", "RS256"),
            _jwk(self.ec_key.public_key(), "e1", "ES256"),
        ]
        if rotated:
            keys.append(_jwk(self.rotated.public_key(), "r2", "RS256"))
        return json.dumps({"keys": keys}).encode()

    def public_pem(self) -> bytes:
        return self.rsa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


def _jwk(public: Any, kid: str, alg: str) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    jwk: dict[str, Any] = json.loads(algorithm.to_jwk(public))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER, "aud": AUDIENCE, "sub": "hosted-agent", "iat": now,
            "nbf": now - 5, "exp": now + 300, "scope": SCOPES}  # fmt: skip
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], payload: dict[str, Any], key: bytes | None = None) -> str:
    """A token made by hand: `alg: none`, or HS256 with `key` (PyJWT refuses to make these)."""
    head = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(payload).encode())
    if key is None:
        return head + "."
    return head + "." + _b64(hmac.new(key, head.encode(), hashlib.sha256).digest())


@pytest.fixture
async def issuer_and_rypsok(
    tmp_path: pathlib.Path,
) -> AsyncIterator[tuple[Issuer, ProviderServer, RunningHttp]]:
    issuer = Issuer(
        rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec_key=ec.generate_private_key(ec.SECP256R1()),
        rotated=rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )
    route = Route(headers={"content-type": "application/json"}, body=issuer.jwks())
    certs = site_certificates(tmp_path, [], ["127.0.0.1"])
    async with ProviderServer({JWKS_PATH: route}, tls=certs.server_context()) as provider:
        listener = free_listener()
        oauth = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": provider.url(JWKS_PATH),
                 "jwks_refresh_s": 1, "skew_s": 30}  # fmt: skip
        base = {"egress": {"allow": [LOOPBACK]}}
        config = http_config(tmp_path, listener.getsockname()[1], base, oauth=oauth)
        async with running_http(config, listener, egress=trusting(certs)) as running:
            yield issuer, provider, running


def trusting(certs: SiteCertificates) -> EgressClient:
    """The production egress client, with loopback allowed and the test's CA as its only trust."""
    return EgressClient(
        user_agent=user_agent(None),
        rules=EgressRules.from_strings(allow=(LOOPBACK,), deny=()),
        ssl_context=certs.client_context(),
    )


async def opening_status(running: RunningHttp, token: str | None) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await RawMcp(http, running.url, token).initialize("2025-11-25")


@pytest.mark.req("REQ-SEC-018", "REQ-SEC-019")
async def test_a_valid_token_is_a_caller_through_the_sdk_client(
    issuer_and_rypsok: tuple[Issuer, ProviderServer, RunningHttp],
) -> None:
    """REQ-SEC-018: RS256 and ES256 tokens of the issuer open sessions as the `sub` caller.

    The scopes map to tools: search+fetch lists web_search and web_fetch only.
    """
    issuer, _, running = issuer_and_rypsok
    for key, alg, kid in ((issuer.rsa_key, "RS256", "r1"), (issuer.ec_key, "ES256", "e1")):
        token = jwt.encode(claims(), key, algorithm=alg, headers={"kid": kid})
        async with (
            httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http,
            Client(streamable_http_client(running.url, http_client=http)) as client,
        ):
            tools = [tool.name for tool in (await client.list_tools()).tools]
        assert tools == ["web_search", "web_fetch"]


def _bad_tokens(issuer: Issuer) -> dict[str, str]:
    now = int(time.time())
    sign = lambda payload, key=issuer.rsa_key: jwt.encode(  # noqa: E731
        payload, key, algorithm="RS256", headers={"kid": "r1"}
    )
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        "expired": sign(claims(exp=now - 120, nbf=now - 600)),  # beyond the 30 s skew
        "not_yet_valid": sign(claims(nbf=now + 120)),
        "wrong_issuer": sign(claims(iss="https://other-issuer.example")),
        "wrong_audience": sign(claims(aud="https://someone-else.example/mcp")),
        "no_audience": sign(claims(aud=None)),
        "wrong_key": sign(claims(), stranger),
        "alg_none": unsigned({"alg": "none", "kid": "r1"}, claims()),
        "hs256_public_key": unsigned({"alg": "HS256", "kid": "r1"}, claims(), issuer.public_pem()),
        "garbage": "not.a.token",
    }


@pytest.mark.req("REQ-SEC-018", "REQ-PRIV-004")
async def test_every_bad_token_is_refused_with_a_pointer_to_the_metadata(
    issuer_and_rypsok: tuple[Issuer, ProviderServer, RunningHttp],
) -> None:
    """REQ-SEC-018: each bad token gets 401 naming resource_metadata; none opens a session."""
    issuer, _, running = issuer_and_rypsok
    results = {
        name: await opening_status(running, token) for name, token in _bad_tokens(issuer).items()
    }
    missing = await opening_status(running, None)
    for name, response in results.items():
        assert response.status_code == 401, name
        challenge = response.headers["www-authenticate"]
        assert 'error="invalid_token"' in challenge, name
        assert "mcp-session-id" not in response.headers
    metadata_url = "https://rypsok.example/.well-known/oauth-protected-resource/mcp"
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == (
        f'Bearer realm="rypsok", resource_metadata="{metadata_url}"'
    )


@pytest.mark.req("REQ-SEC-018")
async def test_a_token_without_a_rypsok_scope_gets_403_insufficient_scope(
    issuer_and_rypsok: tuple[Issuer, ProviderServer, RunningHttp],
) -> None:
    """REQ-SEC-018: a valid token whose scopes admit nothing is 403 insufficient_scope."""
    issuer, _, running = issuer_and_rypsok
    token = jwt.encode(
        claims(scope="email profile"), issuer.rsa_key, algorithm="RS256", headers={"kid": "r1"}
    )
    response = await opening_status(running, token)
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


@pytest.mark.req("REQ-SEC-018")
async def test_the_protected_resource_metadata_names_the_issuer(
    issuer_and_rypsok: tuple[Issuer, ProviderServer, RunningHttp],
) -> None:
    """REQ-SEC-018: RFC 9728 metadata at the well-known path for the endpoint, no key needed."""
    _, _, running = issuer_and_rypsok
    async with httpx2.AsyncClient() as http:
        response = await http.get(running.base("/.well-known/oauth-protected-resource/mcp"))
    assert response.status_code == 200
    document = response.json()
    assert document["resource"] == AUDIENCE
    assert document["authorization_servers"] == [ISSUER]
    assert "rypsok:search" in document["scopes_supported"]


@pytest.mark.req("REQ-SEC-018")
async def test_an_unknown_kid_refetches_the_keys_boundedly_and_rotation_works(
    issuer_and_rypsok: tuple[Issuer, ProviderServer, RunningHttp],
) -> None:
    """REQ-SEC-018: a token of an unpublished key fails; after rotation it passes.

    An unknown kid refetches the JWKS at most once per LIM-H13 (1 s here), so
    a burst of such tokens costs the issuer one request, not one per token.
    """
    issuer, provider, running = issuer_and_rypsok
    valid = jwt.encode(claims(), issuer.rsa_key, algorithm="RS256", headers={"kid": "r1"})
    assert (await opening_status(running, valid)).status_code == 200
    fetches = len(provider.requests_to(JWKS_PATH))
    rotated = jwt.encode(claims(), issuer.rotated, algorithm="RS256", headers={"kid": "r2"})
    await anyio.sleep(1.1)
    before_rotation = [await opening_status(running, rotated) for _ in range(5)]
    assert [r.status_code for r in before_rotation] == [401] * 5
    assert len(provider.requests_to(JWKS_PATH)) == fetches + 1  # one refetch for five tokens
    provider.route(
        JWKS_PATH,
        Route(headers={"content-type": "application/json"}, body=issuer.jwks(rotated=True)),
    )
    await anyio.sleep(1.1)
    assert (await opening_status(running, rotated)).status_code == 200


@pytest.mark.req("REQ-SEC-018")
async def test_a_jwks_file_serves_as_the_issuers_keys_and_is_reread_on_rotation(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-018: with jwks_file the keys come from the file; an unknown kid rereads it."""
    issuer = Issuer(
        rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec_key=ec.generate_private_key(ec.SECP256R1()),
        rotated=rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )
    jwks_file = tmp_path / "issuer-jwks.json"
    jwks_file.write_bytes(issuer.jwks())
    listener = free_listener()
    oauth = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_file": str(jwks_file),
             "jwks_refresh_s": 1}  # fmt: skip
    config = http_config(tmp_path, listener.getsockname()[1], oauth=oauth)
    valid = jwt.encode(claims(), issuer.ec_key, algorithm="ES256", headers={"kid": "e1"})
    rotated = jwt.encode(claims(), issuer.rotated, algorithm="RS256", headers={"kid": "r2"})
    async with running_http(config, listener) as running:
        assert (await opening_status(running, valid)).status_code == 200
        assert (await opening_status(running, rotated)).status_code == 401
        jwks_file.write_bytes(issuer.jwks(rotated=True))
        await anyio.sleep(1.1)
        assert (await opening_status(running, rotated)).status_code == 200


@pytest.mark.req("REQ-SEC-018", "REQ-SEC-017")
async def test_a_jwks_whose_certificate_the_egress_does_not_trust_admits_no_token(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-018: the JWKS's TLS certificate is verified: under the system store only,
    a JWKS served with the test's private CA is never read, and a valid token gets 401."""
    issuer = Issuer(
        rsa_key=rsa.generate_private_key(public_exponent=65537, key_size=2048),
        ec_key=ec.generate_private_key(ec.SECP256R1()),
        rotated=rsa.generate_private_key(public_exponent=65537, key_size=2048),
    )
    route = Route(headers={"content-type": "application/json"}, body=issuer.jwks())
    certs = site_certificates(tmp_path, [], ["127.0.0.1"])
    async with ProviderServer({JWKS_PATH: route}, tls=certs.server_context()) as provider:
        listener = free_listener()
        oauth = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": provider.url(JWKS_PATH)}
        base = {"egress": {"allow": [LOOPBACK]}}
        config = http_config(tmp_path, listener.getsockname()[1], base, oauth=oauth)
        token = jwt.encode(claims(), issuer.rsa_key, algorithm="RS256", headers={"kid": "r1"})
        async with running_http(config, listener) as running:  # the production trust store
            refused = await opening_status(running, token)
        handshakes = len(provider.requests_to(JWKS_PATH))
    assert refused.status_code == 401
    assert handshakes == 0  # the TLS handshake failed before any request was sent


@pytest.mark.req("REQ-SEC-018", "REQ-CFG-005")
def test_a_plain_http_jwks_url_is_refused_naming_the_key(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-018: `jwks_url` must be https, loopback included: plain http is a check error."""
    oauth = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_url": "http://127.0.0.1:8080/jwks"}
    config = http_config(tmp_path, 8750, {"egress": {"allow": [LOOPBACK]}}, oauth=oauth)
    with pytest.raises(ConfigError, match=r"http\.oauth\.jwks_url: an https URL"):
        plan_http(config)
