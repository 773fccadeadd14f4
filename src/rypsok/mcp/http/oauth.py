"""OAuth 2.1 resource server per the MCP authorization specification (2025-06-18, 2025-11-25).

rypsok only checks tokens; it is no authorization server. A bearer JWT is
accepted when its signature verifies with a key of the issuer's JWKS under
an asymmetric algorithm the operator allows (never `none`, never a shared
secret, so a public key cannot be used to sign), its `iss` is the
configured issuer, its `aud` names this server's MCP endpoint (RFC 8707),
and `exp`/`nbf` hold within a bounded skew (LIM-H12). The token is never
passed on: the access token the SDK sees carries only the caller and scopes.

Keys come from `jwks_file` or `jwks_url` (through the engine egress profile,
`Services.issuer_document`), cached; a token naming an unknown `kid`
triggers at most one refetch per LIM-H13.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import jwt
from mcp.server.auth.provider import AccessToken

from rypsok.core import logs
from rypsok.mcp.http.oauth_plan import OAuthPlan

log = logging.getLogger("rypsok.http")

_WITHHELD: Final = "(withheld)"
_CALLER: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")

DocumentSource = Callable[[], Awaitable[bytes | None]]


class InsufficientScope(Exception):
    """A valid token whose scopes admit nothing rypsok serves."""


def _caller_name(value: object) -> str | None:
    """A caller name from the claim: itself when plain, else a stable digest of it."""
    if not isinstance(value, str) or not value:
        return None
    if _CALLER.fullmatch(value):
        return value
    return "oauth-" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _token_scopes(claims: dict[str, Any]) -> set[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return set(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list):
        return {s for s in scp if isinstance(s, str)}
    return set()


class OAuthVerifier:
    """Checks bearer JWTs against the issuer's keys; None for any token that fails."""

    def __init__(self, plan: OAuthPlan, fetch: DocumentSource | None = None) -> None:
        self.plan = plan
        self._fetch = fetch
        self._keys: dict[str, jwt.PyJWK] = {}
        self._unnamed: list[jwt.PyJWK] = []  # keys without a kid
        self._fetched_at: float | None = None

    async def _load(self) -> None:
        self._fetched_at = time.monotonic()
        document: bytes | None
        if self.plan.jwks_file is not None:
            try:
                document = await anyio.Path(self.plan.jwks_file).read_bytes()
            except OSError:
                document = None
        else:
            document = await self._fetch() if self._fetch is not None else None
        if document is None:
            return
        try:
            keys = jwt.PyJWKSet.from_dict(json.loads(document)).keys
        except (ValueError, jwt.PyJWKSetError, jwt.InvalidKeyError):
            logs.event(log, "issuer_keys_unavailable", logging.WARNING, reason="unreadable")
            return
        self._keys = {key.key_id: key for key in keys if key.key_id}
        self._unnamed = [key for key in keys if not key.key_id]
        logs.event(log, "issuer_keys_loaded", keys=len(keys))

    async def _key_for(self, kid: str | None) -> list[jwt.PyJWK]:
        if self._fetched_at is None:
            await self._load()
        if kid is None:
            return self._unnamed or list(self._keys.values())
        if kid not in self._keys and self._may_refresh():
            await self._load()  # an unknown kid: the issuer may have rotated its keys
        return [self._keys[kid]] if kid in self._keys else []

    def _may_refresh(self) -> bool:
        return (
            self._fetched_at is None or time.monotonic() - self._fetched_at >= self.plan.refresh_s
        )

    async def verify_token(self, token: str) -> AccessToken | None:
        """The caller and rypsok scopes of a valid token; InsufficientScope when it admits none."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        if header.get("alg") not in self.plan.algorithms:
            return None  # `none`, HS256 and anything not configured never reach a key
        kid = header.get("kid")
        for key in await self._key_for(kid if isinstance(kid, str) else None):
            claims = self._decode(token, key)
            if claims is not None:
                return self._access(claims)
        return None

    def _decode(self, token: str, key: jwt.PyJWK) -> dict[str, Any] | None:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=list(self.plan.algorithms),
                audience=self.plan.audience,
                issuer=self.plan.issuer,
                leeway=self.plan.skew_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.InvalidTokenError:
            return None
        return claims

    def _access(self, claims: dict[str, Any]) -> AccessToken | None:
        caller = _caller_name(claims.get(self.plan.caller_claim))
        if caller is None:
            return None
        granted = _token_scopes(claims)
        scopes = [ours for ours, theirs in self.plan.token_scopes if theirs in granted]
        if not scopes:
            raise InsufficientScope
        expires = claims.get("exp")
        return AccessToken(
            token=_WITHHELD,
            client_id=caller,
            scopes=scopes,
            expires_at=int(expires) if isinstance(expires, int | float) else None,
        )
