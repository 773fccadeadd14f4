"""The checked `[http.oauth]` table and its metadata document (no protocol imports)."""

from __future__ import annotations

import pathlib
import urllib.parse
from dataclasses import dataclass
from typing import Any, Final

from rypsok.core.config import OAuthConfig

WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True, slots=True)
class OAuthPlan:
    """The checked `[http.oauth]` table."""

    issuer: str
    audience: str
    jwks_url: str | None
    jwks_file: str | None
    algorithms: tuple[str, ...]
    caller_claim: str
    skew_s: int
    refresh_s: int
    token_scopes: tuple[tuple[str, str], ...]  # (rypsok scope, token scope)

    @classmethod
    def of(cls, config: OAuthConfig) -> OAuthPlan:
        scopes = config.scopes
        pairs = (
            ("search", scopes.search),
            ("fetch", scopes.fetch),
            ("status", scopes.status),
            ("metrics", scopes.metrics),
        )
        return cls(
            issuer=config.issuer,
            audience=config.audience,
            jwks_url=config.jwks_url,
            jwks_file=config.jwks_file,
            algorithms=tuple(dict.fromkeys(config.algorithms)),
            caller_claim=config.caller_claim,
            skew_s=config.skew_s,
            refresh_s=config.jwks_refresh_s,
            token_scopes=pairs,
        )

    @property
    def metadata_path(self) -> str:
        """RFC 9728 §3.1: the well-known segment goes between host and the resource's path."""
        path = urllib.parse.urlsplit(self.audience).path.rstrip("/")
        return WELL_KNOWN + path

    @property
    def metadata_url(self) -> str:
        parts = urllib.parse.urlsplit(self.audience)
        return f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def metadata(self) -> dict[str, Any]:
        """The Protected Resource Metadata document (RFC 9728 §2)."""
        return {
            "resource": self.audience,
            "authorization_servers": [self.issuer],
            "scopes_supported": [token for _, token in self.token_scopes],
            "bearer_methods_supported": ["header"],
            "resource_name": "rypsok",
        }


def oauth_problems(config: OAuthConfig) -> list[str]:
    """Why `[http.oauth]` cannot serve; each names its key."""
    problems = []
    for key, value in (("issuer", config.issuer), ("audience", config.audience)):
        parts = urllib.parse.urlsplit(value)
        if parts.scheme != "https" or not parts.netloc or parts.query or parts.fragment:
            problems.append(f"http.oauth.{key}: an https URL without query or fragment")
    if (config.jwks_url is None) == (config.jwks_file is None):
        problems.append("http.oauth.jwks_url, http.oauth.jwks_file: give exactly one of them")
    # The issuer's keys decide who is a caller: over plain http anyone on the path
    # could hand rypsok keys of their own, so no exception, loopback included.
    if config.jwks_url is not None and urllib.parse.urlsplit(config.jwks_url).scheme != "https":
        problems.append("http.oauth.jwks_url: an https URL (the issuer's keys are never read "
                        "over plain http)")  # fmt: skip
    if config.jwks_file is not None and not pathlib.Path(config.jwks_file).is_file():
        problems.append("http.oauth.jwks_file: the file it names cannot be read")
    if not config.algorithms:
        problems.append("http.oauth.algorithms: name at least one asymmetric algorithm")
    return problems
