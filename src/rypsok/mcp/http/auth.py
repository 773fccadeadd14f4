"""Who may call: configured keys, compared in constant time, and the key gate (decision 5)."""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping, Sequence
from typing import Final

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rypsok.core import logs
from rypsok.core.config import DEFAULT_KEY_SCOPES, Secret
from rypsok.mcp.http.oauth import InsufficientScope, OAuthVerifier
from rypsok.mcp.http.wire import ListenerCounters, header, jsonrpc_error

log = logging.getLogger("rypsok.http")

# JSON-RPC codes of rypsok's own HTTP refusals, in the implementation-defined band.
KEY_REFUSED: Final = -32010
# The access token never carries the key: nothing downstream needs it.
_WITHHELD: Final = "(withheld)"


def _digest(text: str) -> bytes:
    # Hashing first makes every comparison the same length, so timing tells nothing.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class KeyVerifier:
    """The SDK's `TokenVerifier` over the configured keys, compared in constant time.

    Only digests are kept. Every configured key is compared, whichever
    matches, so the time taken does not tell which caller a key is close to.
    """

    def __init__(
        self,
        keys: Sequence[tuple[str, Secret]],
        scopes: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self._keys = [(caller, _digest(secret.reveal())) for caller, secret in keys]
        # The scopes of a key travel in its access token, where the tool list looks.
        self._scopes = {caller: list(words) for caller, words in (scopes or {}).items()}

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = _digest(token)
        caller: str | None = None
        for name, digest in self._keys:
            if hmac.compare_digest(presented, digest) and caller is None:
                caller = name
        if caller is None:
            return None
        scopes = self._scopes.get(caller, list(DEFAULT_KEY_SCOPES))
        return AccessToken(token=_WITHHELD, client_id=caller, scopes=scopes)


def _bearer(scope: Scope) -> str | None:
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _key_refusal(presented: bool, metadata_url: str | None = None) -> Response:
    """One answer for a refused or missing key or token: what to do, never what was sent.

    With OAuth configured the challenge points to the Protected Resource
    Metadata (RFC 9728 §5.1), where an MCP client finds the issuer.
    """
    realm = (
        f'Bearer realm="rypsok", resource_metadata="{metadata_url}"'
        if metadata_url
        else ('Bearer realm="rypsok"')
    )
    if presented:
        challenge = f'{realm}, error="invalid_token", error_description="a new key is needed"'
        message = (
            "This key or token was refused: a new key is needed. Ask the operator of this "
            "rypsok service for one (or sign in again); sending the same one again will not work."
        )
    else:
        challenge = realm
        message = (
            "A key is needed: send 'Authorization: Bearer <key>' with a key from the operator "
            "of this rypsok service."
        )
    # A refused client keeps no connection open (LIM-H9 counts only the ones without a head).
    headers = {"www-authenticate": challenge, "cache-control": "no-store", "connection": "close"}
    return jsonrpc_error(KEY_REFUSED, message, 401, headers)


def scope_refusal(metadata_url: str | None, needed: str) -> Response:
    """403 for a valid caller whose scope lacks what it asked for (RFC 6750 §3.1)."""
    realm = (
        f'Bearer realm="rypsok", resource_metadata="{metadata_url}"'
        if metadata_url
        else ('Bearer realm="rypsok"')
    )
    challenge = f'{realm}, error="insufficient_scope", scope="{needed}"'
    message = f"This caller's scope does not admit this: it needs the scope {needed}."
    headers = {"www-authenticate": challenge, "cache-control": "no-store"}
    return jsonrpc_error(KEY_REFUSED, message, 403, headers)


class KeyGate:
    """Decision 5: nothing answers without a configured key or a valid token, on any bind.

    A presented bearer is first compared with the keys; with `[http.oauth]`
    a bearer that is not a key is checked as a JWT. The authenticated user
    goes where the SDK looks for it: the scope (session ownership) and,
    through `AuthContextMiddleware`, `get_access_token()`.
    """

    def __init__(
        self,
        app: ASGIApp,
        verifier: KeyVerifier,
        counters: ListenerCounters,
        oauth: OAuthVerifier | None = None,
    ) -> None:
        self.app = AuthContextMiddleware(app)
        self.verifier = verifier
        self.counters = counters
        self.oauth = oauth
        self.metadata_url = oauth.plan.metadata_url if oauth is not None else None
        # What a token needs at least one of: the token scopes of the tools.
        pairs = oauth.plan.token_scopes if oauth is not None else ()
        self.tool_scopes = " ".join(theirs for ours, theirs in pairs if ours != "metrics")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        try:
            access = await self._verify(token) if token is not None else None
        except InsufficientScope:
            self.counters.keys_refused += 1
            logs.event(log, "key_refused", logging.WARNING, reason="insufficient_scope")
            await scope_refusal(self.metadata_url, self.tool_scopes)(scope, receive, send)
            return
        if access is None:
            self.counters.keys_refused += 1
            presented = token is not None
            logs.event(
                log, "key_refused", logging.WARNING, reason="refused" if presented else "missing"
            )
            await _key_refusal(presented, self.metadata_url)(scope, receive, send)
            return
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        await self.app(scope, receive, send)

    async def _verify(self, token: str) -> AccessToken | None:
        access = await self.verifier.verify_token(token)
        if access is None and self.oauth is not None and token.count(".") == 2:
            access = await self.oauth.verify_token(token)
        return access
