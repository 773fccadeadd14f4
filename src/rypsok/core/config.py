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

# Annotations are evaluated where written (no `from __future__ import annotations`):
# pydantic would otherwise evaluate each string annotation at class creation, a
# third of this module's import time (issue 14 item 3, cold start).

import os
import pathlib
import tomllib
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from rypsok.core import limits
from rypsok.core.config_base import (
    ConfigError,
    IntList,
    Secret,
    SecretRef,
    Section,
    StrList,
    bounded,
    inline_credential_problem,
)
from rypsok.core.config_network import (
    CALLER_SCOPES,
    DEFAULT_KEY_SCOPES,
    CacheConfig,
    CallerScope,
    ClusterConfig,
    EgressConfig,
    HttpConfig,
    HttpKey,
    OAuthAlgorithm,
    OAuthConfig,
    OAuthScopes,
)

__all__ = [  # the names other modules import from here, wherever they are defined
    "CALLER_SCOPES", "DEFAULT_KEY_SCOPES", "CacheConfig", "CallerScope", "ClusterConfig",
    "Config", "ConfigError", "EgressConfig", "EngineConfig", "EngineModels", "HttpConfig",
    "HttpKey", "IntList", "OAuthAlgorithm", "OAuthConfig", "OAuthScopes", "Secret",
    "SecretRef", "StrList", "cache_secret_problems", "load_config", "parse_config",
]  # fmt: skip

SCHEMA_VERSION = 1
CONFIG_ENV = "RYPSOK_CONFIG"
# ISO 639-1 has 183 codes; one spare keeps a new code from being refused.
LANGUAGES_MAX = 184
# Not a limit of the limits table: how often the counters leave the process.
METRICS_INTERVAL_S = 300


class SearchConfig(Section):
    deadline_ms: int = bounded(
        limits.SEARCH_DEADLINE_MS, limits.SEARCH_DEADLINE_RANGE, "LIM-S4 search deadline"
    )
    engine_timeout_ms: int = bounded(
        limits.ENGINE_TIMEOUT_MS, (100, 30_000), "LIM-S5 per-engine timeout; S5 + S6 <= S4"
    )
    reserve_ms: int = bounded(
        limits.SEARCH_RESERVE_MS, (10, 10_000), "LIM-S6 reserve for rypsok's own work"
    )
    ceiling_ms: int = bounded(
        limits.SEARCH_CEILING_MS, (1_000, 60_000), "LIM-S7 hard ceiling of a call; >= S4"
    )
    connect_timeout_ms: int = bounded(
        limits.ENGINE_CONNECT_TIMEOUT_MS, (100, 30_000), "LIM-S12 engine connect timeout; <= S5"
    )
    max_engines: int = bounded(
        limits.ENGINES_PER_SEARCH, limits.ENGINES_PER_SEARCH_RANGE, "LIM-S8 engines per search"
    )
    engines_in_flight: int = bounded(
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


class LimitsConfig(Section):
    web_search_per_minute: int = bounded(
        limits.WEB_SEARCH_PER_MINUTE, limits.CALLS_PER_MINUTE_RANGE, "LIM-C6"
    )
    web_fetch_per_minute: int = bounded(
        limits.WEB_FETCH_PER_MINUTE, limits.CALLS_PER_MINUTE_RANGE, "LIM-C7"
    )
    engine_status_per_minute: int = bounded(
        limits.ENGINE_STATUS_PER_MINUTE, limits.CALLS_PER_MINUTE_RANGE, "LIM-C8"
    )


class BreakerConfig(Section):
    failures: int = bounded(limits.BREAKER_FAILURES, limits.BREAKER_FAILURES_RANGE, "LIM-B1")
    cooldown_ms: int = bounded(
        limits.BREAKER_COOLDOWN_MS, limits.BREAKER_COOLDOWN_RANGE, "LIM-B2 first cooldown"
    )
    growth: int = bounded(
        limits.BREAKER_GROWTH, limits.BREAKER_GROWTH_RANGE, "LIM-B3 growth per reopening"
    )
    max_cooldown_ms: int = bounded(
        limits.BREAKER_MAX_COOLDOWN_MS, limits.BREAKER_COOLDOWN_RANGE, "LIM-B3 cap"
    )


class FetchConfig(Section):
    allow_http: bool = Field(default=False, description="REQ-FETCH-010 fetch plain http")
    ports: IntList = Field(
        default=(), description="LIM-F8 ports added to 443 (and 80 with allow_http)"
    )
    robots_txt: bool = Field(default=True, description="REQ-CMP-005 honour robots.txt")
    strict: bool = Field(default=False, description="REQ-SEC-021 only URLs rypsok returned")
    follow_cross_host_redirects: bool = Field(
        default=False, description="REQ-FETCH-006 follow cross-host redirects that pass policy"
    )
    max_chars_default: int = bounded(
        limits.MAX_CHARS_DEFAULT, (1, 1_000_000), "LIM-F1; <= max_chars_ceiling"
    )
    max_chars_ceiling: int = bounded(
        limits.MAX_CHARS_CEILING, limits.MAX_CHARS_CEILING_RANGE, "LIM-F2"
    )
    max_bytes: int = bounded(limits.FETCH_MAX_BYTES, limits.FETCH_MAX_BYTES_RANGE, "LIM-F3")
    timeout_ms: int = bounded(limits.FETCH_TIMEOUT_MS, (1_000, 60_000), "LIM-F4; <= F5")
    ceiling_ms: int = bounded(limits.FETCH_CEILING_MS, limits.FETCH_CEILING_RANGE, "LIM-F5")
    connect_timeout_ms: int = bounded(
        limits.FETCH_CONNECT_TIMEOUT_MS, (100, 60_000), "LIM-F6; <= F4"
    )
    redirects: int = bounded(limits.SAME_HOST_REDIRECTS, limits.SAME_HOST_REDIRECTS_RANGE, "LIM-F7")
    fetches_in_flight: int = bounded(
        limits.FETCHES_IN_FLIGHT, limits.FETCHES_IN_FLIGHT_RANGE, "LIM-C3"
    )
    fetches_per_caller: int | None = Field(
        default=None,
        ge=1,
        le=limits.FETCHES_IN_FLIGHT_RANGE[1],
        description="LIM-C10 HTTP mode: LIM-C3 slots one caller may hold; unset: "
        "the whole pool; a cap keeps slots for others even before they ask",
    )
    fetches_per_host: int = bounded(
        limits.FETCHES_PER_HOST, limits.FETCHES_PER_HOST_RANGE, "LIM-C4"
    )
    parse_tasks: int = bounded(limits.PARSE_TASKS, limits.PARSE_TASKS_RANGE, "LIM-C5")
    max_nodes: int = bounded(limits.PARSED_NODES, limits.PARSED_NODES_RANGE, "LIM-F10")
    max_depth: int = bounded(limits.NESTING_DEPTH, limits.NESTING_DEPTH_RANGE, "LIM-F11")

    @field_validator("ports")
    @classmethod
    def _ports_in_range(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(not 1 <= port <= 65_535 for port in value):
            raise ValueError("each port must be between 1 and 65535")
        return value


class PrivacyConfig(Section):
    credential_check: Literal["deny", "warn", "mask", "off"] = Field(
        default=limits.CREDENTIAL_CHECK_DEFAULT, description="LIM-P1"
    )
    log_queries: bool = Field(
        default=limits.LOG_QUERIES_DEFAULT,
        description="LIM-P3 log each web_search query (credentials masked) as a debug line "
        "`query`; start-up warns `query_logging_on`",
    )


class LoggingConfig(Section):
    metrics_interval_s: int = Field(
        default=METRICS_INTERVAL_S,
        ge=0,
        le=86_400,
        description="REQ-OBS-008 seconds between `metrics` summary log lines; 0 = only at shutdown",
    )


class RuntimeConfig(Section):
    event_loop: Literal["auto", "asyncio", "uvloop"] = Field(
        default="auto",
        description="the event loop `serve` runs on; auto = uvloop where installed, else asyncio",
    )


class OutputConfig(Section):
    structured_content: bool = Field(
        default=True, description="REQ-MCP-011 send structuredContent besides the JSON text"
    )


class ToolsConfig(Section):
    engine_status: bool = Field(default=True, description="REQ-STATUS-003 offer engine_status")


class OperatorConfig(Section):
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


class EngineConfig(Section):
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
        parts = urllib.parse.urlsplit(value)
        try:
            port = parts.port
        except ValueError:
            port = 0
        if not parts.hostname or port == 0:
            # No request can reach such a URL: refused here, not at every search.
            raise ValueError("must name a host and, if it gives one, a port from 1 to 65535")
        problem = inline_credential_problem(value)
        if problem is not None:
            # A keyed engine takes its key as api_key, by reference (REQ-CFG-004).
            raise ValueError(f"{problem}; a key goes into api_key")
        return value


class ScrapingConfig(Section):
    enabled: bool = Field(
        default=False,
        description="REQ-ENG-013 allow engines that read a human-facing page (the operator "
        "bears the provider's terms)",
    )


# Each engine's `[engines.<id>]` model: EngineConfig, or the driver's subclass of
# it with the engine's own typed settings. The registry supplies it.
EngineModels = Mapping[str, type[EngineConfig]]


class Config(Section):
    """The whole configuration. Build it with `load_config`, never by hand in production."""

    schema_version: Literal[1] = Field(default=1, description="must be 1")
    search: SearchConfig = Field(default={}, validate_default=True)
    limits: LimitsConfig = Field(default={}, validate_default=True)
    breaker: BreakerConfig = Field(default={}, validate_default=True)
    fetch: FetchConfig = Field(default={}, validate_default=True)
    egress: EgressConfig = Field(default={}, validate_default=True)
    privacy: PrivacyConfig = Field(default={}, validate_default=True)
    logging: LoggingConfig = Field(default={}, validate_default=True)
    output: OutputConfig = Field(default={}, validate_default=True)
    runtime: RuntimeConfig = Field(default={}, validate_default=True)
    tools: ToolsConfig = Field(default={}, validate_default=True)
    operator: OperatorConfig = Field(default={}, validate_default=True)
    http: HttpConfig = Field(default={}, validate_default=True)
    cache: CacheConfig = Field(default={}, validate_default=True)
    scraping: ScrapingConfig = Field(default={}, validate_default=True)
    cluster: ClusterConfig = Field(default={}, validate_default=True)
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
