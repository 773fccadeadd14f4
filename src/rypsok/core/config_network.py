"""The network-facing sections: egress rules and proxy, the HTTP mode, the cache, instances.

Split from `rypsok.core.config` by concern; `rypsok.core.config` re-exports
every name here, and its `Config` holds these sections.
"""

# Annotations are evaluated where written (no `from __future__ import annotations`):
# pydantic would otherwise evaluate each string annotation at class creation, a
# third of this module's import time (issue 14 item 3, cold start).

import ipaddress
import re
import urllib.parse
from typing import Annotated, Literal, get_args

from pydantic import Field, field_validator

from rypsok.core import limits
from rypsok.core.config_base import (
    SecretRef,
    Section,
    StrList,
    bounded,
    inline_credential_problem,
)

# A host rule: an ASCII name (A-labels for IDNs), or ".name" for it and its subdomains.
_HOST_RULE = re.compile(
    r"\.?(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)"
    r"(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*",
    re.IGNORECASE,
)


def _rule_problem(text: str) -> str | None:
    """Why an egress rule would not do what it says, or None (the egress layer reads it)."""
    try:
        ipaddress.ip_network(text, strict=True)
    except ValueError:
        pass
    else:
        return None
    if "/" in text or ":" in text or text.replace(".", "").isdigit():
        # Without this, '10.0.0.1/8' (host bits set) became a host name matching nothing.
        return "is not a network: give an address or CIDR with the host bits zero (10.0.0.0/8)"
    if not _HOST_RULE.fullmatch(text.rstrip(".")):
        return "is neither a network nor a host name (ASCII, xn-- for IDNs; '.name' for subdomains)"
    return None


def _proxy_host_problem(host: str) -> bool:
    """Whether the proxy's host is neither an address nor an ASCII name (`pr oxy`, `a..b`)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host.startswith(".") or not _HOST_RULE.fullmatch(host.rstrip("."))
    return False


class EgressConfig(Section):
    allow: StrList = Field(default=(), description="CIDR or host rules that allow")
    deny: StrList = Field(default=(), description="CIDR or host rules that deny; win")

    @field_validator("allow", "deny")
    @classmethod
    def _rules_say_what_they_mean(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, rule in enumerate(value):
            problem = _rule_problem(rule)
            if problem is not None:
                raise ValueError(f"entry {index} {problem}")
        return value

    proxy: str | None = Field(
        default=None,
        description="REQ-RES-008 http:// or https:// proxy for engine requests; no credentials "
        "in the URL (REQ-CFG-004)",
    )

    @field_validator("proxy")
    @classmethod
    def _proxy_is_plain_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        # The value is never echoed: a refused proxy URL may carry a password.
        parts = urllib.parse.urlsplit(value)
        if "@" in parts.netloc:
            raise ValueError(
                "inline credentials are refused (secrets by reference only); rypsok does not "
                "authenticate to a proxy, so give a proxy that admits this host without a "
                "password"
            )
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        try:
            port = parts.port
        except ValueError:
            raise ValueError("the port must be a number from 1 to 65535") from None
        if port == 0:
            raise ValueError("the port must be a number from 1 to 65535")
        if parts.query or parts.fragment or "?" in value or "#" in value:
            # A `?token=…` is an inline credential too, and nothing would send it.
            raise ValueError(
                "must hold no query or fragment: a token in it would be an inline credential "
                "(secrets by reference only), and rypsok sends none to a proxy"
            )
        problem = inline_credential_problem(value)
        if problem is not None:
            raise ValueError(problem)
        if parts.path not in ("", "/"):
            # The proxy is reached at its host and port only: a path would be ignored.
            raise ValueError("must be scheme://host[:port] without a path")
        if _proxy_host_problem(parts.hostname or ""):
            raise ValueError("the host must be an IP address or an ASCII host name (xn-- for IDNs)")
        return value


# What a caller may use over HTTP (assistant-access: "only the tools its key's
# scope admits"): one word per tool, and `metrics` for the metrics endpoint.
CallerScope = Literal["search", "fetch", "status", "metrics"]
CALLER_SCOPES: tuple[CallerScope, ...] = get_args(CallerScope)
DEFAULT_KEY_SCOPES: tuple[CallerScope, ...] = ("search", "fetch")


class HttpKey(Section):
    caller: str = Field(description="caller name: the identity for per-caller limits")
    key: SecretRef = Field(description="bearer key, by reference")
    scopes: Annotated[tuple[CallerScope, ...], Field(strict=False)] = Field(
        default=DEFAULT_KEY_SCOPES,
        description="what the key admits: search (web_search), fetch (web_fetch), "
        "status (engine_status), metrics (the metrics endpoint)",
    )


OAuthAlgorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]  # asymmetric only: a shared-secret algorithm would let a public key sign


class OAuthScopes(Section):
    search: str = Field(default="rypsok:search", description="token scope that admits search")
    fetch: str = Field(default="rypsok:fetch", description="token scope that admits fetch")
    status: str = Field(default="rypsok:status", description="token scope that admits status")
    metrics: str = Field(default="rypsok:metrics", description="token scope that admits metrics")


class OAuthConfig(Section):
    issuer: str = Field(description="the authorization server's issuer identifier (iss)")
    audience: str = Field(
        description="the canonical URL of this server's MCP endpoint (aud, RFC 8707)"
    )
    jwks_url: str | None = Field(
        default=None, description="the issuer's JWKS, fetched through the engine egress profile"
    )
    jwks_file: str | None = Field(default=None, description="a JWKS file instead of jwks_url")
    algorithms: Annotated[tuple[OAuthAlgorithm, ...], Field(strict=False)] = Field(
        default=("RS256", "ES256", "EdDSA"), description="accepted signature algorithms"
    )
    caller_claim: str = Field(default="sub", description="claim that names the caller")
    skew_s: int = bounded(limits.OAUTH_SKEW_S, limits.OAUTH_SKEW_RANGE, "LIM-H12")
    jwks_refresh_s: int = bounded(
        limits.OAUTH_JWKS_REFRESH_S, limits.OAUTH_JWKS_REFRESH_RANGE, "LIM-H13"
    )
    scopes: OAuthScopes = Field(
        default_factory=OAuthScopes, description="rypsok scope -> token scope"
    )


class HttpConfig(Section):
    host: str = Field(default="127.0.0.1", description="bind address (REQ-SEC-018)")
    port: int = Field(default=8750, ge=1, le=65_535, description="bind port")
    path: str = Field(default="/mcp", description="endpoint path")
    allowed_hosts: StrList = Field(default=(), description="Host header values accepted")
    allowed_origins: StrList = Field(default=(), description="Origin values accepted")
    tls_cert: SecretRef | None = Field(default=None, description="certificate file, by reference")
    tls_key: SecretRef | None = Field(default=None, description="private key file, by reference")
    behind_tls_proxy: bool = Field(default=False, description="a TLS proxy terminates in front")
    keys: Annotated[tuple[HttpKey, ...], Field(strict=False)] = Field(
        default=(), description="[[http.keys]] caller, key"
    )
    request_ms: int = bounded(limits.HTTP_REQUEST_MS, (1_000, 600_000), "LIM-H5")
    sessions: int = bounded(limits.HTTP_SESSIONS, limits.HTTP_SESSIONS_RANGE, "LIM-H6")
    sessions_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=limits.HTTP_SESSIONS_RANGE[1],
        description="LIM-H10 live sessions one caller may hold; unset: a quarter of "
        "http.sessions, at least 2",
    )
    session_idle_s: int = bounded(
        limits.HTTP_SESSION_IDLE_S, limits.HTTP_SESSION_IDLE_RANGE, "LIM-H11"
    )
    stream_ms: int = bounded(limits.HTTP_STREAM_MS, limits.HTTP_STREAM_RANGE, "LIM-H7")
    head_ms: int = bounded(limits.HTTP_HEAD_MS, limits.HTTP_HEAD_RANGE, "LIM-H8")
    pending_connections: int = bounded(
        limits.HTTP_PENDING_CONNECTIONS, limits.HTTP_PENDING_RANGE, "LIM-H9"
    )
    oauth: OAuthConfig | None = Field(
        default=None, description="[http.oauth] OAuth 2.1 resource server (bearer JWTs)"
    )
    metrics_path: str = Field(default="/metrics", description="Prometheus text endpoint")
    metrics_caller_labels: bool = Field(
        default=False,
        description="REQ-OBS-008 add per-caller series (caller names as labels) to the metrics",
    )
    handshake_revisions: bool = Field(
        default=True,
        description="REQ-MCP-006 serve the handshake-based revisions (sessions) besides the "
        "handshake-free one",
    )


class CacheConfig(Section):
    enabled: bool = Field(
        default=limits.CACHE_ENABLED, description="LIM-K1 cache web_search engine answers"
    )
    backend: Literal["memory", "redis"] = Field(
        default="memory",
        description="where the cache lives; redis also shares spacing, limits and strict-mode "
        "URLs between instances",
    )
    ttl_s: int = bounded(limits.CACHE_TTL_S, limits.CACHE_TTL_RANGE, "LIM-K2 entry lifetime")
    entries: int = bounded(
        limits.CACHE_ENTRIES,
        limits.CACHE_ENTRIES_RANGE,
        "LIM-K3 entries (memory: per process; redis: per caller)",
    )
    redis_url: SecretRef | None = Field(
        default=None, description="redis:// rediss:// or unix:// URL, by reference"
    )
    hmac_key: SecretRef | None = Field(
        default=None, description="key of the HMAC that names Redis keys, by reference"
    )
    key_prefix: str = Field(
        default="rypsok:", min_length=1, max_length=64, description="prefix of every Redis key"
    )
    operation_ms: int = bounded(
        limits.REDIS_OPERATION_MS, limits.REDIS_OPERATION_RANGE, "LIM-K4 Redis operation deadline"
    )

    @field_validator("key_prefix")
    @classmethod
    def _prefix_is_printable(cls, value: str) -> str:
        if not value.isascii() or not value.isprintable() or " " in value:
            raise ValueError("must be printable ASCII without spaces")
        return value


class ClusterConfig(Section):
    instances: int = bounded(
        limits.CLUSTER_INSTANCES,
        limits.CLUSTER_INSTANCES_RANGE,
        "rypsok processes sharing one outbound address; spacing factor without Redis",
    )
