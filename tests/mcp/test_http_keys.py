"""The key gate of HTTP mode in one process: the verifier, the bearer reader, the refusals.

tests/mcp/test_http.py shows the gate through a real server and the SDK's
client; these tests drive `KeyGate` as the ASGI layer it is, in front of an
app that records what reached it, so each check of the module has a test
that fails when the check is broken (the mutation job runs them: mutmut
cannot run the tests that start a server under its trampolines). No
handler of the MCP server is called here; the inner app is the tests' own.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2
import pytest
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.types import Receive, Scope, Send

from rypsok.core.config import DEFAULT_KEY_SCOPES, Secret
from rypsok.mcp.http.auth import KEY_REFUSED, KeyGate, KeyVerifier, _bearer, scope_refusal
from rypsok.mcp.http.oauth import InsufficientScope, OAuthVerifier
from rypsok.mcp.http.wire import ListenerCounters
from tests.mcp.http_support import KEY_A, KEY_B, bearer

METADATA = "https://rypsok.example/.well-known/oauth-protected-resource/mcp"
# Three segments: the form the gate hands to the OAuth verifier.
JWT_SHAPED = "aaaa.bbbb.cccc"


@dataclass
class Inner:
    """The app behind the gate: records each scope that reached it and answers 200."""

    seen: list[Scope] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.seen.append(scope)
        # The request's own messages reach the app through the gate.
        self.received.append(dict(await receive()))
        if scope["type"] != "http":
            await send({"type": "lifespan.startup.complete"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"inner"})


@dataclass
class _Plan:
    metadata_url: str = METADATA
    token_scopes: tuple[tuple[str, str], ...] = (
        ("search", "rypsok:search"),
        ("fetch", "rypsok:fetch"),
        ("metrics", "rypsok:metrics"),
    )


@dataclass
class FakeOAuth:
    """The OAuth verifier's face to the gate: a plan and verify_token, answers scripted."""

    answer: AccessToken | None = None
    insufficient: bool = False
    asked: list[str] = field(default_factory=list)
    plan: _Plan = field(default_factory=_Plan)

    async def verify_token(self, token: str) -> AccessToken | None:
        self.asked.append(token)
        if self.insufficient:
            raise InsufficientScope
        return self.answer


def _gate(inner: Inner, oauth: FakeOAuth | None = None) -> tuple[KeyGate, ListenerCounters]:
    verifier = KeyVerifier(
        [("a", Secret(KEY_A)), ("b", Secret(KEY_B))], {"a": ["search", "status"]}
    )
    counters = ListenerCounters()
    return KeyGate(inner, verifier, counters, cast("OAuthVerifier | None", oauth)), counters


async def _post(gate: KeyGate, headers: dict[str, str]) -> httpx2.Response:
    transport = httpx2.ASGITransport(app=gate)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post("/mcp", headers=headers, content=b"{}")


def _error(response: httpx2.Response) -> dict[str, Any]:
    body = json.loads(response.content)
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    return cast("dict[str, Any]", body["error"])


def _refusals(caplog: pytest.LogCaptureFixture) -> list[tuple[int, object]]:
    """(level, reason) of each `key_refused` event logged."""
    return [
        (record.levelno, getattr(record, "fields", {}).get("reason"))
        for record in caplog.records
        if record.getMessage() == "key_refused"
    ]


def _scope(authorization: bytes | None) -> Scope:
    headers = [] if authorization is None else [(b"authorization", authorization)]
    return {"type": "http", "headers": [(b"host", b"127.0.0.1"), *headers]}


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
@pytest.mark.parametrize(
    ("value", "token"),
    [
        (b"Bearer abc", "abc"),
        (b"bearer abc", "abc"),
        (b"BEARER abc", "abc"),
        (b"Bearer   abc  ", "abc"),
        (b"Bearer a b", "a b"),
        (b"Basic abc", None),
        (b"Bearerabc", None),
        (b"Bearer ", None),
        (b"Bearer    ", None),
        (b"abc", None),
        (None, None),
    ],
)
def test_only_a_non_empty_bearer_credential_is_read(value: bytes | None, token: str | None) -> None:
    """REQ-SEC-018, REQ-DEP-002: the scheme is Bearer in any case, the credential is trimmed
    and must not be empty; any other scheme or shape is no credential at all."""
    assert _bearer(_scope(value)) == token


@pytest.mark.req("REQ-SEC-018")
async def test_the_first_caller_of_a_key_is_named_with_its_scopes_or_the_default() -> None:
    """REQ-SEC-018: a key names its caller (the first one configured, when two callers share
    it), with the caller's scopes or the default ones, and the token never holds the key."""
    shared = KeyVerifier([("first", Secret(KEY_A)), ("second", Secret(KEY_A))])
    access = await shared.verify_token(KEY_A)
    assert access is not None and access.client_id == "first"
    assert access.scopes == list(DEFAULT_KEY_SCOPES) and access.token == "(withheld)"
    scoped = KeyVerifier([("a", Secret(KEY_A))], {"a": ["status"]})
    found = await scoped.verify_token(KEY_A)
    assert found is not None and found.scopes == ["status"]


@pytest.mark.req("REQ-SEC-018")
async def test_a_key_that_is_not_valid_text_is_refused_without_an_error() -> None:
    """REQ-SEC-018: a presented credential with a lone surrogate is compared like any other
    and refused; the verifier never raises on what a client sends."""
    verifier = KeyVerifier([("a", Secret(KEY_A))])
    assert await verifier.verify_token(KEY_A + "\ud800") is None
    lone = KeyVerifier([("odd", Secret("\ud800" + KEY_A))])
    access = await lone.verify_token("\ud800" + KEY_A)
    assert access is not None and access.client_id == "odd"


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002", "REQ-OPS-001")
async def test_each_refusal_is_logged_as_a_warning_with_its_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """REQ-SEC-018, REQ-OPS-001: a missing key, a refused one and a token without a tool scope
    are each one `key_refused` warning naming why (missing, refused, insufficient_scope)."""
    gate, _ = _gate(Inner())
    scoped, _ = _gate(Inner(), FakeOAuth(insufficient=True))
    with caplog.at_level(logging.INFO, logger="rypsok"):
        await _post(gate, {})
        await _post(gate, bearer(KEY_A + "x"))
        await _post(scoped, bearer(JWT_SHAPED))
        await _post(gate, bearer(KEY_A))
    assert _refusals(caplog) == [
        (logging.WARNING, "missing"),
        (logging.WARNING, "refused"),
        (logging.WARNING, "insufficient_scope"),
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
async def test_a_missing_key_is_refused_with_what_to_send_and_counted() -> None:
    """REQ-SEC-018, REQ-DEP-002: no credential → 401, the bare challenge, a message saying what
    to send, no caching, the connection closed; counted; nothing reaches the app."""
    inner = Inner()
    gate, counters = _gate(inner)
    response = await _post(gate, {})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="rypsok"'
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["connection"] == "close"
    error = _error(response)
    assert error["code"] == KEY_REFUSED == -32010
    assert error["message"] == (
        "A key is needed: send 'Authorization: Bearer <key>' with a key from the operator "
        "of this rypsok service."
    )
    assert counters.keys_refused == 1 and inner.seen == []


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
async def test_a_wrong_key_is_refused_as_invalid_never_echoed_and_counted() -> None:
    """REQ-SEC-018, REQ-DEP-002: a wrong key → 401 invalid_token, a message that asks for a new
    key and does not repeat the one sent; counted; nothing reaches the app."""
    inner = Inner()
    gate, counters = _gate(inner)
    response = await _post(gate, bearer(KEY_A + "x"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        'Bearer realm="rypsok", error="invalid_token", error_description="a new key is needed"'
    )
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["connection"] == "close"
    error = _error(response)
    assert error["code"] == KEY_REFUSED
    assert error["message"] == (
        "This key or token was refused: a new key is needed. Ask the operator of this "
        "rypsok service for one (or sign in again); sending the same one again will not work."
    )
    assert KEY_A not in response.text
    assert counters.keys_refused == 1 and inner.seen == []
    await _post(gate, bearer(KEY_B + "x"))
    assert counters.keys_refused == 2  # counted, not set


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
async def test_a_valid_key_reaches_the_app_as_its_caller_with_its_scopes() -> None:
    """REQ-SEC-018, REQ-DEP-002: a configured key passes; the app sees the caller where the SDK
    looks (scope user and auth), with the key's scopes; nothing is counted as refused."""
    inner = Inner()
    gate, counters = _gate(inner)
    response = await _post(gate, bearer(KEY_A))
    assert response.status_code == 200 and response.content == b"inner"
    assert [(m["type"], m["body"]) for m in inner.received] == [("http.request", b"{}")]
    (seen,) = inner.seen
    user = seen["user"]
    assert isinstance(user, AuthenticatedUser)
    assert user.access_token.client_id == "a" and user.access_token.scopes == ["search", "status"]
    assert seen["auth"].scopes == ["search", "status"]
    assert counters.keys_refused == 0


@pytest.mark.req("REQ-SEC-018")
async def test_what_is_not_http_passes_the_gate_untouched() -> None:
    """REQ-SEC-018: the gate judges HTTP requests; the server's lifespan messages pass as
    they are (a mutant that refused them or marked them would show here)."""
    inner = Inner()
    gate, counters = _gate(inner)
    lifespan: Scope = {"type": "lifespan"}

    sent: list[Any] = []

    async def receive() -> dict[str, Any]:
        return {"type": "lifespan.startup"}

    async def send(message: Any) -> None:
        sent.append(message)

    await gate(lifespan, receive, send)
    assert len(inner.seen) == 1 and "user" not in inner.seen[0]
    assert inner.received == [{"type": "lifespan.startup"}]
    assert sent == [{"type": "lifespan.startup.complete"}]
    assert counters.keys_refused == 0


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
async def test_with_oauth_only_a_three_part_non_key_bearer_is_checked_as_a_token() -> None:
    """REQ-SEC-018, REQ-DEP-002: a key is taken as a key without asking the OAuth verifier;
    a JWT-shaped bearer is asked; other shapes are refused without asking, and the refusal
    points to the protected resource metadata."""
    token = AccessToken(token="(withheld)", client_id="sub-1", scopes=["search"])
    oauth = FakeOAuth(answer=token)
    inner = Inner()
    gate, counters = _gate(inner, oauth)
    assert (await _post(gate, bearer(KEY_B))).status_code == 200
    assert oauth.asked == []
    assert (await _post(gate, bearer(JWT_SHAPED))).status_code == 200
    assert oauth.asked == [JWT_SHAPED]
    assert inner.seen[-1]["user"].access_token.client_id == "sub-1"
    for other in ("aaaa.bbbb", "aaaa.bbbb.cccc.dddd"):
        refused = await _post(gate, bearer(other))
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith(
            f'Bearer realm="rypsok", resource_metadata="{METADATA}", error="invalid_token"'
        )
    assert oauth.asked == [JWT_SHAPED] and counters.keys_refused == 2
    missing = await _post(gate, {})
    assert missing.headers["www-authenticate"] == (
        f'Bearer realm="rypsok", resource_metadata="{METADATA}"'
    )


@pytest.mark.req("REQ-SEC-018", "REQ-DEP-002")
async def test_a_token_without_a_tool_scope_is_refused_403_naming_the_scopes_needed() -> None:
    """REQ-SEC-018, REQ-DEP-002: a valid token that grants no tool scope → 403
    insufficient_scope naming the tool scopes (never the metrics one), counted."""
    inner = Inner()
    gate, counters = _gate(inner, FakeOAuth(insufficient=True))
    assert gate.tool_scopes == "rypsok:search rypsok:fetch"
    response = await _post(gate, bearer(JWT_SHAPED))
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="rypsok", resource_metadata="{METADATA}", '
        'error="insufficient_scope", scope="rypsok:search rypsok:fetch"'
    )
    assert response.headers["cache-control"] == "no-store"
    error = _error(response)
    assert error["code"] == KEY_REFUSED
    assert error["message"] == (
        "This caller's scope does not admit this: it needs the scope rypsok:search rypsok:fetch."
    )
    assert counters.keys_refused == 1 and inner.seen == []
    await _post(gate, bearer(JWT_SHAPED))
    assert counters.keys_refused == 2  # counted, not set


@pytest.mark.req("REQ-SEC-018")
def test_a_scope_refusal_without_oauth_has_the_bare_realm() -> None:
    """REQ-SEC-018: without OAuth the 403 challenge carries the realm and the scope only."""
    response = scope_refusal(None, "metrics")
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == (
        'Bearer realm="rypsok", error="insufficient_scope", scope="metrics"'
    )


@pytest.mark.req("REQ-SEC-018")
def test_a_gate_without_oauth_points_to_no_metadata() -> None:
    """REQ-SEC-018: key-only mode has no metadata URL and no token scopes to name."""
    gate, _ = _gate(Inner())
    assert gate.metadata_url is None and gate.tool_scopes == "" and gate.oauth is None
