"""Configuration: one TOML file, validated once at start-up, frozen afterwards.

The file is found by `--config` or `RYPSOK_CONFIG`; without one every value is
the default of `rypsok.core.limits` (REQ-CFG-001, REQ-CFG-003). A file must
carry `schema_version = 1` (REQ-MAIN-003). An unknown key, a wrong type, a
value outside its bound or a broken cross-check stops start-up with a
`ConfigError` whose message names the key and never echoes a secret
(REQ-CFG-005). Secrets are references only, `{ env = "NAME" }` or
`{ file = "path" }` (REQ-CFG-004), resolved into `Secret`, whose repr redacts.

`docs/configuration.md` carries the table `config_reference.reference_table()`
renders; a test fails when the two differ.
"""

from __future__ import annotations

import ipaddress
import os
import pathlib
import re
import tomllib
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rypsok.core import limits

SCHEMA_VERSION = 1
CONFIG_ENV = "RYPSOK_CONFIG"
# ISO 639-1 has 183 codes; one spare keeps a new code from being refused.
LANGUAGES_MAX = 184
# Not a limit of the limits table: how often the counters leave the process.
METRICS_INTERVAL_S = 300


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key."""


class Secret:
    """A resolved secret. Never shown by repr or str (REQ-SEC-020)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# TOML arrays arrive as lists; the sections are strict about every other type.
StrList = Annotated[tuple[str, ...], Field(strict=False)]
IntList = Annotated[tuple[int, ...], Field(strict=False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SecretRef(_Section):
    """`{ env = "NAME" }` or `{ file = "path" }`: where the secret lives, not the secret."""

    env: str | None = None
    file: str | None = None

    def model_post_init(self, context: Any, /) -> None:
        if (self.env is None) == (self.file is None):
            raise ValueError('give exactly one of { env = "NAME" } or { file = "path" }')

    def resolve(self) -> Secret | None:
        """The secret, or None when the variable is unset or the file is missing."""
        if self.env is not None:
            value = os.environ.get(self.env)
            return Secret(value) if value else None
        try:
            value = pathlib.Path(str(self.file)).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return Secret(value) if value else None


def _bounded(default: int, bounds: tuple[int, int], doc: str) -> Any:
    return Field(default=default, ge=bounds[0], le=bounds[1], description=doc)


class SearchConfig(_Section):
    deadline_ms: int = _bounded(
        limits.SEARCH_DEADLINE_MS, limits.SEARCH_DEADLINE_RANGE, "LIM-S4 search deadline"
    )
    engine_timeout_ms: int = _bounded(
        limits.ENGINE_TIMEOUT_MS, (100, 30_000), "LIM-S5 per-engine timeout; S5 + S6 <= S4"
    )
    reserve_ms: int = _bounded(
        limits.SEARCH_RESERVE_MS, (10, 10_000), "LIM-S6 reserve for rypsok's own work"
    )
    ceiling_ms: int = _bounded(
        limits.SEARCH_CEILING_MS, (1_000, 60_000), "LIM-S7 hard ceiling of a call; >= S4"
    )
    connect_timeout_ms: int = _bounded(
        limits.ENGINE_CONNECT_TIMEOUT_MS, (100, 30_000), "LIM-S12 engine connect timeout; <= S5"
    )
    max_engines: int = _bounded(
        limits.ENGINES_PER_SEARCH, limits.ENGINES_PER_SEARCH_RANGE, "LIM-S8 engines per search"
    )
    engines_in_flight: int = _bounded(
        limits.ENGINE_REQUESTS_IN_FLIGHT,
        limits.ENGINE_REQUESTS_IN_FLIGHT_RANGE,
        "LIM-C1 engine requests in flight, process",
    )
    engines_in_flight_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=limits.ENGINE_REQUESTS_IN_FLIGHT_RANGE[1],
        description="LIM-C11 HTTP mode: LIM-C1 slots one caller may hold; unset: "
        "the whole pool; competing callers are served fewest-held first",
    )
    preference: StrList = Field(
        default=(), description="engine ids, most preferred first; others follow in default order"
    )
    languages: StrList = Field(
        default=("en",),
        description="languages callers may ask for (ISO 639-1), each once, at most "
        f"{LANGUAGES_MAX}",
    )
    default_language: str | None = Field(
        default=None, description="language used when the caller gives none; none = no selection"
    )
    region: str | None = Field(default=None, description="region passed to engines that take one")
    safe_search: Literal["off", "moderate", "strict"] = Field(
        default="moderate", description="safe-search level passed to engines that take one"
    )
    attribution: bool = Field(default=False, description="always name the engines of a result")
    drop_instruction_like: bool = Field(
        default=False, description="drop results whose text looks like instructions"
    )

    @field_validator("preference")
    @classmethod
    def _preference_has_no_duplicates(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # A repeated id would ask that engine twice per search (and name it twice in
        # engine_status): the operator meant something else, so say so.
        repeated = sorted({engine_id for engine_id in value if value.count(engine_id) > 1})
        if repeated:
            raise ValueError(f"each engine id may appear once; repeated: {', '.join(repeated)}")
        return value

    @field_validator("languages")
    @classmethod
    def _languages_are_codes(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for code in value:
            if not (len(code) == 2 and code.isascii() and code.islower() and code.isalpha()):
                raise ValueError("each language must be a two-letter ISO 639-1 code")
        if len(set(value)) != len(value):
            raise ValueError("each language may appear once")
        # Every code is an enumeration value of web_search's schema: the bound keeps the
        # tool definitions within LIM-I1 however many languages are listed (REQ-MCP-008).
        if len(value) > LANGUAGES_MAX:
            raise ValueError(f"at most {LANGUAGES_MAX} languages (ISO 639-1 has 183 codes)")
        return value


class LimitsConfig(_Section):
    web_search_per_minute: int = _bounded(
        limits.WEB_SEARCH_PER_MINUTE, limits.CALLS_PER_MINUTE_RANGE, "LIM-C6"
    )
    web_fetch_per_minute: int = _bounded(
        limits.WEB_FETCH_PER_MINUTE, limits.CALLS_PER_MINUTE_RANGE, "LIM-C7"
    )
    engine_status_per_minute: int = _bounded(
        limits.ENGINE_STATUS_PER_MINUTE, limits.CALLS_PER_MINUTE_RANGE, "LIM-C8"
    )


class BreakerConfig(_Section):
    failures: int = _bounded(limits.BREAKER_FAILURES, limits.BREAKER_FAILURES_RANGE, "LIM-B1")
    cooldown_ms: int = _bounded(
        limits.BREAKER_COOLDOWN_MS, limits.BREAKER_COOLDOWN_RANGE, "LIM-B2 first cooldown"
    )
    growth: int = _bounded(
        limits.BREAKER_GROWTH, limits.BREAKER_GROWTH_RANGE, "LIM-B3 growth per reopening"
    )
    max_cooldown_ms: int = _bounded(
        limits.BREAKER_MAX_COOLDOWN_MS, limits.BREAKER_COOLDOWN_RANGE, "LIM-B3 cap"
    )


class FetchConfig(_Section):
    allow_http: bool = Field(default=False, description="REQ-FETCH-010 fetch plain http")
    ports: IntList = Field(
        default=(), description="LIM-F8 ports added to 443 (and 80 with allow_http)"
    )
    robots_txt: bool = Field(default=True, description="REQ-CMP-005 honour robots.txt")
    strict: bool = Field(default=False, description="REQ-SEC-021 only URLs rypsok returned")
    follow_cross_host_redirects: bool = Field(
        default=False, description="REQ-FETCH-006 follow cross-host redirects that pass policy"
    )
    max_chars_default: int = _bounded(
        limits.MAX_CHARS_DEFAULT, (1, 1_000_000), "LIM-F1; <= max_chars_ceiling"
    )
    max_chars_ceiling: int = _bounded(
        limits.MAX_CHARS_CEILING, limits.MAX_CHARS_CEILING_RANGE, "LIM-F2"
    )
    max_bytes: int = _bounded(limits.FETCH_MAX_BYTES, limits.FETCH_MAX_BYTES_RANGE, "LIM-F3")
    timeout_ms: int = _bounded(limits.FETCH_TIMEOUT_MS, (1_000, 60_000), "LIM-F4; <= F5")
    ceiling_ms: int = _bounded(limits.FETCH_CEILING_MS, limits.FETCH_CEILING_RANGE, "LIM-F5")
    connect_timeout_ms: int = _bounded(
        limits.FETCH_CONNECT_TIMEOUT_MS, (100, 60_000), "LIM-F6; <= F4"
    )
    redirects: int = _bounded(
        limits.SAME_HOST_REDIRECTS, limits.SAME_HOST_REDIRECTS_RANGE, "LIM-F7"
    )
    fetches_in_flight: int = _bounded(
        limits.FETCHES_IN_FLIGHT, limits.FETCHES_IN_FLIGHT_RANGE, "LIM-C3"
    )
    fetches_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=limits.FETCHES_IN_FLIGHT_RANGE[1],
        description="LIM-C10 HTTP mode: LIM-C3 slots one caller may hold; unset: "
        "the whole pool; a cap keeps slots for others even before they ask",
    )
    fetches_per_host: int = _bounded(
        limits.FETCHES_PER_HOST, limits.FETCHES_PER_HOST_RANGE, "LIM-C4"
    )
    parse_tasks: int = _bounded(limits.PARSE_TASKS, limits.PARSE_TASKS_RANGE, "LIM-C5")
    max_nodes: int = _bounded(limits.PARSED_NODES, limits.PARSED_NODES_RANGE, "LIM-F10")
    max_depth: int = _bounded(limits.NESTING_DEPTH, limits.NESTING_DEPTH_RANGE, "LIM-F11")

    @field_validator("ports")
    @classmethod
    def _ports_in_range(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 1 <= port <= 65_535 for port in value):
            raise ValueError("each port must be between 1 and 65535")
        return value


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


class EgressConfig(_Section):
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
            parts.port  # noqa: B018 (property access validates the port)
        except ValueError:
            raise ValueError("the port must be a number from 1 to 65535") from None
        return value


class PrivacyConfig(_Section):
    credential_check: Literal["deny", "warn", "mask", "off"] = Field(
        default=limits.CREDENTIAL_CHECK_DEFAULT, description="LIM-P1"
    )
    log_queries: bool = Field(
        default=limits.LOG_QUERIES_DEFAULT,
        description="LIM-P3 log each web_search query (credentials masked) as a debug line "
        "`query`; start-up warns `query_logging_on`",
    )


class LoggingConfig(_Section):
    metrics_interval_s: int = Field(
        default=METRICS_INTERVAL_S,
        ge=0,
        le=86_400,
        description="REQ-OBS-008 seconds between `metrics` summary log lines; 0 = only at shutdown",
    )


class OutputConfig(_Section):
    structured_content: bool = Field(
        default=True, description="REQ-MCP-011 send structuredContent besides the JSON text"
    )


class ToolsConfig(_Section):
    engine_status: bool = Field(default=True, description="REQ-STATUS-003 offer engine_status")


class OperatorConfig(_Section):
    contact: str | None = Field(
        default=None, description="REQ-CMP-004 contact in the User-Agent (URL or e-mail)"
    )

    @field_validator("contact")
    @classmethod
    def _contact_is_printable(cls, value: str | None) -> str | None:
        if value is not None and (
            not value.isascii() or not value.isprintable() or len(value) > 200 or ";" in value
        ):
            raise ValueError("must be printable ASCII, at most 200 characters, without ';'")
        return value


# What a caller may use over HTTP (assistant-access: "only the tools its key's
# scope admits"): one word per tool, and `metrics` for the metrics endpoint.
CallerScope = Literal["search", "fetch", "status", "metrics"]
CALLER_SCOPES: tuple[CallerScope, ...] = get_args(CallerScope)
DEFAULT_KEY_SCOPES: tuple[CallerScope, ...] = ("search", "fetch")


class HttpKey(_Section):
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


class OAuthScopes(_Section):
    search: str = Field(default="rypsok:search", description="token scope that admits search")
    fetch: str = Field(default="rypsok:fetch", description="token scope that admits fetch")
    status: str = Field(default="rypsok:status", description="token scope that admits status")
    metrics: str = Field(default="rypsok:metrics", description="token scope that admits metrics")


class OAuthConfig(_Section):
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
    skew_s: int = _bounded(limits.OAUTH_SKEW_S, limits.OAUTH_SKEW_RANGE, "LIM-H12")
    jwks_refresh_s: int = _bounded(
        limits.OAUTH_JWKS_REFRESH_S, limits.OAUTH_JWKS_REFRESH_RANGE, "LIM-H13"
    )
    scopes: OAuthScopes = Field(
        default_factory=OAuthScopes, description="rypsok scope -> token scope"
    )


class HttpConfig(_Section):
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
    request_ms: int = _bounded(limits.HTTP_REQUEST_MS, (1_000, 600_000), "LIM-H5")
    sessions: int = _bounded(limits.HTTP_SESSIONS, limits.HTTP_SESSIONS_RANGE, "LIM-H6")
    sessions_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=limits.HTTP_SESSIONS_RANGE[1],
        description="LIM-H10 live sessions one caller may hold; unset: a quarter of "
        "http.sessions, at least 2",
    )
    session_idle_s: int = _bounded(
        limits.HTTP_SESSION_IDLE_S, limits.HTTP_SESSION_IDLE_RANGE, "LIM-H11"
    )
    stream_ms: int = _bounded(limits.HTTP_STREAM_MS, limits.HTTP_STREAM_RANGE, "LIM-H7")
    head_ms: int = _bounded(limits.HTTP_HEAD_MS, limits.HTTP_HEAD_RANGE, "LIM-H8")
    pending_connections: int = _bounded(
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


class CacheConfig(_Section):
    enabled: bool = Field(
        default=limits.CACHE_ENABLED, description="LIM-K1 cache web_search engine answers"
    )
    backend: Literal["memory", "redis"] = Field(
        default="memory",
        description="where the cache lives; redis also shares spacing, limits and strict-mode "
        "URLs between instances",
    )
    ttl_s: int = _bounded(limits.CACHE_TTL_S, limits.CACHE_TTL_RANGE, "LIM-K2 entry lifetime")
    entries: int = _bounded(
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
    operation_ms: int = _bounded(
        limits.REDIS_OPERATION_MS, limits.REDIS_OPERATION_RANGE, "LIM-K4 Redis operation deadline"
    )

    @field_validator("key_prefix")
    @classmethod
    def _prefix_is_printable(cls, value: str) -> str:
        if not value.isascii() or not value.isprintable() or " " in value:
            raise ValueError("must be printable ASCII without spaces")
        return value


class ClusterConfig(_Section):
    instances: int = _bounded(
        limits.CLUSTER_INSTANCES,
        limits.CLUSTER_INSTANCES_RANGE,
        "rypsok processes sharing one outbound address; spacing factor without Redis",
    )


class EngineConfig(_Section):
    enabled: bool = Field(default=True, description="query this engine")
    endpoint: str | None = Field(
        default=None, description="full URL the driver calls instead of the provider's"
    )
    api_key: SecretRef | None = Field(default=None, description="key, by reference")
    min_interval_ms: int | None = Field(
        default=None, ge=0, le=3_600_000, description="LIM-C9 spacing; only longer than record"
    )
    max_concurrency: int | None = Field(
        default=None, ge=1, le=256, description="LIM-C2; only lower than record"
    )

    @field_validator("endpoint")
    @classmethod
    def _endpoint_is_http_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if not value.startswith(("https://", "http://")) or len(value) > limits.URL_MAX_CHARS:
            raise ValueError("must be an http or https URL")
        if not value.isascii() or any(ch.isspace() for ch in value) or "@" in value:
            raise ValueError("must be an ASCII URL without spaces or credentials")
        return value


class ScrapingConfig(_Section):
    enabled: bool = Field(
        default=False,
        description="REQ-ENG-013 allow engines that read a human-facing page (the operator "
        "bears the provider's terms)",
    )


# Each engine's `[engines.<id>]` model: EngineConfig, or the driver's subclass of
# it with the engine's own typed settings. The registry supplies it.
EngineModels = Mapping[str, type[EngineConfig]]


class Config(_Section):
    """The whole configuration. Build it with `load_config`, never by hand in production."""

    schema_version: Literal[1] = Field(default=1, description="must be 1")
    search: SearchConfig = SearchConfig()
    limits: LimitsConfig = LimitsConfig()
    breaker: BreakerConfig = BreakerConfig()
    fetch: FetchConfig = FetchConfig()
    egress: EgressConfig = EgressConfig()
    privacy: PrivacyConfig = PrivacyConfig()
    logging: LoggingConfig = LoggingConfig()
    output: OutputConfig = OutputConfig()
    tools: ToolsConfig = ToolsConfig()
    operator: OperatorConfig = OperatorConfig()
    http: HttpConfig = HttpConfig()
    cache: CacheConfig = CacheConfig()
    scraping: ScrapingConfig = ScrapingConfig()
    cluster: ClusterConfig = ClusterConfig()
    engines: Mapping[str, EngineConfig] = Field(default_factory=dict)


def _cross_checks(config: Config) -> Iterator[str]:
    """Relations between keys (REQ-AGG-003 and the limits table); each names its keys."""
    s, f = config.search, config.fetch
    if s.engine_timeout_ms + s.reserve_ms > s.deadline_ms:
        yield "search.engine_timeout_ms + search.reserve_ms must not exceed search.deadline_ms"
    if s.ceiling_ms < s.deadline_ms:
        yield "search.ceiling_ms must be at least search.deadline_ms"
    if s.connect_timeout_ms > s.engine_timeout_ms:
        yield "search.connect_timeout_ms must not exceed search.engine_timeout_ms"
    if not f.connect_timeout_ms <= f.timeout_ms <= f.ceiling_ms:
        yield "fetch.connect_timeout_ms <= fetch.timeout_ms <= fetch.ceiling_ms must hold"
    if f.max_chars_default > f.max_chars_ceiling:
        yield "fetch.max_chars_default must not exceed fetch.max_chars_ceiling"
    if config.http.request_ms < max(s.ceiling_ms, f.ceiling_ms):
        yield "http.request_ms must be at least search.ceiling_ms and fetch.ceiling_ms"
    if s.default_language is not None and s.default_language not in s.languages:
        yield "search.default_language must be one of search.languages"
    yield from _cache_checks(config.cache)


# Shorter HMAC keys would make the names of Redis keys guessable from a query list.
HMAC_KEY_MIN_CHARS = 16


def _cache_checks(cache: CacheConfig) -> Iterator[str]:
    """The Redis backend needs its URL and HMAC key (resolved by `cache_secret_problems`)."""
    if cache.backend != "redis":
        return
    for name in ("redis_url", "hmac_key"):
        if getattr(cache, name) is None:
            yield f'cache.{name} is required with cache.backend = "redis"'


REDIS_SCHEMES = ("redis", "rediss", "unix")


def cache_secret_problems(config: Config, *, serving: bool = False) -> list[str]:
    """What stops `check` and `serve`: a Redis URL or HMAC key that does not resolve.

    Resolved here rather than in `parse_config`, which never reads secrets, so
    a file can be validated on a host that does not hold them. The URL's form
    is judged by `check` as by `serve`, which would refuse it (the message never
    shows the URL); `serving` is kept for callers that judge before building.
    """
    cache = config.cache
    if cache.backend != "redis":
        return []
    problems = []
    for name in ("redis_url", "hmac_key"):
        ref = getattr(cache, name)
        secret = ref.resolve() if ref is not None else None
        if secret is None:
            problems.append(
                f"cache.{name}: the referenced secret is not set or the file is missing"
            )
        elif name == "hmac_key" and len(secret.reveal()) < HMAC_KEY_MIN_CHARS:
            problems.append(f"cache.hmac_key must be at least {HMAC_KEY_MIN_CHARS} characters")
        elif name == "redis_url" and secret.reveal().split("://")[0] not in REDIS_SCHEMES:
            problems.append("cache.redis_url must be a redis://, rediss:// or unix:// URL")
    return problems


def _key_of(loc: tuple[int | str, ...]) -> str:
    parts = [str(p) for p in loc if not str(p).startswith(("function-", "tagged-union"))]
    return ".".join(parts) or "(top level)"


def _describe(error: Mapping[str, Any]) -> str:
    """One refusal in words that name the key and never echo the value."""
    key = _key_of(tuple(error["loc"]))
    kind = error["type"]
    ctx = error.get("ctx") or {}
    if kind == "extra_forbidden":
        return f"unknown key '{key}'"
    if kind == "greater_than_equal":
        return f"key '{key}': must be at least {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"key '{key}': must be at most {ctx.get('le')}"
    if kind == "literal_error":
        return f"key '{key}': must be one of {ctx.get('expected', '')}"
    if kind == "model_type" and key.endswith(
        ("api_key", ".key", "tls_cert", "tls_key", "redis_url", "hmac_key")
    ):
        return (
            f"key '{key}': inline secrets are refused; "
            'give { env = "NAME" } or { file = "path" }'
        )
    if kind == "value_error":
        return f"key '{key}': {ctx.get('error', 'invalid value')!s}"
    return f"key '{key}': {error['msg'].split(',')[0].lower()}"


def _toml_type(value: object) -> str:
    names = {bool: "boolean", float: "float", str: "string", list: "array", dict: "table"}
    return names.get(type(value), "date or time")


def _validate(data: Mapping[str, Any], models: EngineModels) -> Config:
    """The document as a Config, each engine table validated by its engine's own model."""
    tables = data.get("engines", {})
    errors: list[Any] = []
    engines: dict[str, EngineConfig] = {}
    rest = {key: value for key, value in data.items() if key != "engines"}
    if isinstance(tables, Mapping):
        for engine_id, table in tables.items():
            try:
                engines[engine_id] = models.get(engine_id, EngineConfig).model_validate(table)
            except ValidationError as exc:
                errors += [{**e, "loc": ("engines", engine_id, *e["loc"])} for e in exc.errors()]
    else:
        rest["engines"] = tables  # not a table: Config names the key
    try:
        config = Config.model_validate(rest)
    except ValidationError as exc:
        errors = list(exc.errors()) + errors
    if errors:
        raise ConfigError("; ".join(_describe(e) for e in errors[:5]))
    return config.model_copy(update={"engines": engines})


def parse_config(data: Mapping[str, Any], known_engines: frozenset[str] | EngineModels) -> Config:
    """Validate a decoded TOML document; raises ConfigError naming the key.

    `known_engines` is the registry's ids, or its ids with each engine's
    settings model, so an engine's own keys are validated with their types.
    """
    if "schema_version" not in data:
        raise ConfigError("key 'schema_version' is missing: a configuration file must set it to 1")
    version = data["schema_version"]
    if type(version) is not int:  # TOML's true and 1.0 equal 1 in Python: not a version
        raise ConfigError(
            f"key 'schema_version': must be the integer {SCHEMA_VERSION}, "
            f"not a {_toml_type(version)}"
        )
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"key 'schema_version': version {data['schema_version']!r} is not supported; "
            f"this rypsok reads version {SCHEMA_VERSION}"
        )
    models: EngineModels = known_engines if isinstance(known_engines, Mapping) else {}
    config = _validate(data, models)
    for engine_id in config.engines:
        if engine_id not in known_engines:
            known = ", ".join(sorted(known_engines))
            raise ConfigError(f"key 'engines.{engine_id}': no such engine (known: {known})")
    for engine_id in config.search.preference:
        if engine_id not in known_engines:
            raise ConfigError(f"key 'search.preference': no such engine '{engine_id}'")
    problems = list(_cross_checks(config))
    if problems:
        raise ConfigError("; ".join(problems))
    return config


def load_config(path: str | None, known_engines: frozenset[str] | EngineModels) -> Config:
    """The configuration from `path`, else from $RYPSOK_CONFIG, else the defaults."""
    path = path or os.environ.get(CONFIG_ENV) or None
    if path is None:
        return Config()
    try:
        raw = pathlib.Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"configuration file cannot be read: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"configuration file is not valid TOML: {exc}") from None
    return parse_config(data, known_engines)
