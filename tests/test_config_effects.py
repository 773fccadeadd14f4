"""No key without an effect: every configuration key is read by the code that applies it.

`READERS` names, for each key of the schema, the module that applies it and the
expression it reads it through; the test walks the schema (the same rows that
generate docs/configuration.md) and fails when a key has no reader, when a
reader no longer reads it, or when the table names a key the schema lost.
Behaviour of individual keys is tested where the key acts (test_config.py,
the MCP session tests); `privacy.log_queries` is tested here through a real
stdio process because nothing else observes it.
"""

from __future__ import annotations

import ast
import functools
import json
import pathlib

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from rypsok.core.config import ConfigError
from rypsok.core.config_reference import reference_rows
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    config_from,
    engines_toml,
    stdio_params,
    write_config,
)

SRC = pathlib.Path(__file__).resolve().parents[1] / "src" / "rypsok"

# key -> (module under src/rypsok, the receiver expression the key's attribute is read on)
READERS: dict[str, tuple[str, str]] = {
    "search.deadline_ms": ("core/search/aggregate.py", "search"),
    "search.engine_timeout_ms": ("core/search/aggregate.py", "self._config.search"),
    "search.reserve_ms": ("core/search/aggregate.py", "search"),
    "search.ceiling_ms": ("core/services.py", "self.config.search"),
    "search.connect_timeout_ms": ("core/search/aggregate.py", "self._config.search"),
    "search.max_engines": ("core/search/aggregate.py", "self._config.search"),
    "search.engines_in_flight": ("core/search/aggregate.py", "config.search"),
    "search.engines_in_flight_per_caller": ("core/services.py", "search"),
    "search.preference": ("core/engines/registry.py", "config.search"),
    "search.languages": ("core/services.py", "search"),
    "search.default_language": ("core/services.py", "search"),
    "search.region": ("core/search/aggregate.py", "search"),
    "search.safe_search": ("core/search/aggregate.py", "search"),
    "search.attribution": ("core/search/aggregate.py", "self._config.search"),
    "search.drop_instruction_like": ("core/search/aggregate.py", "self._config.search"),
    "limits.web_search_per_minute": ("core/services.py", "config.limits"),
    "limits.web_fetch_per_minute": ("core/services.py", "config.limits"),
    "limits.engine_status_per_minute": ("core/services.py", "config.limits"),
    "breaker.failures": ("core/health.py", "config"),
    "breaker.cooldown_ms": ("core/health.py", "config"),
    "breaker.growth": ("core/health.py", "config"),
    "breaker.max_cooldown_ms": ("core/health.py", "config"),
    "fetch.allow_http": ("core/services.py", "config.fetch"),
    "fetch.ports": ("core/services.py", "config.fetch"),
    "fetch.robots_txt": ("core/fetch/pipeline.py", "config.fetch"),
    "fetch.strict": ("core/fetch/pipeline.py", "config.fetch"),
    "fetch.follow_cross_host_redirects": ("core/fetch/pipeline.py", "self._config"),
    "fetch.max_chars_default": ("core/services.py", "self.config.fetch"),
    "fetch.max_chars_ceiling": ("core/services.py", "self.config.fetch"),
    "fetch.max_bytes": ("core/fetch/pipeline.py", "self._config"),
    "fetch.timeout_ms": ("core/fetch/pipeline.py", "self._config"),
    "fetch.ceiling_ms": ("core/fetch/pipeline.py", "self._config"),
    "fetch.connect_timeout_ms": ("core/fetch/pipeline.py", "self._config"),
    "fetch.redirects": ("core/fetch/pipeline.py", "self._config"),
    "fetch.fetches_in_flight": ("core/fetch/pipeline.py", "config.fetch"),
    "fetch.fetches_per_caller": ("core/services.py", "fetch"),
    "fetch.fetches_per_host": ("core/fetch/pipeline.py", "self._config"),
    "fetch.parse_tasks": ("core/fetch/pipeline.py", "config.fetch"),
    "fetch.max_nodes": ("core/fetch/pipeline.py", "self._config"),
    "fetch.max_depth": ("core/fetch/pipeline.py", "self._config"),
    "egress.allow": ("core/services.py", "config.egress"),
    "egress.deny": ("core/services.py", "config.egress"),
    "egress.proxy": ("core/services.py", "config.egress"),
    "privacy.credential_check": ("core/services.py", "self.config.privacy"),
    "privacy.log_queries": ("core/services.py", "self.config.privacy"),
    "logging.metrics_interval_s": ("core/services.py", "self.config.logging"),
    "output.structured_content": ("mcp/server.py", "services.config.output"),
    "runtime.event_loop": ("commands.py", "config.runtime"),
    "tools.engine_status": ("core/services.py", "self.config.tools"),
    "operator.contact": ("core/services.py", "config.operator"),
    "http.host": ("mcp/http/plan.py", "http"),
    "http.port": ("mcp/http/plan.py", "http"),
    "http.path": ("mcp/http/plan.py", "http"),
    "http.allowed_hosts": ("mcp/http/plan.py", "http"),
    "http.allowed_origins": ("mcp/http/plan.py", "http"),
    "http.tls_cert": ("mcp/http/plan.py", "http"),
    "http.tls_key": ("mcp/http/plan.py", "http"),
    "http.behind_tls_proxy": ("mcp/http/plan.py", "http"),
    "http.keys": ("mcp/http/plan.py", "http"),
    "http.request_ms": ("mcp/http/plan.py", "http"),
    "http.sessions": ("mcp/http/plan.py", "http"),
    "http.stream_ms": ("mcp/http/plan.py", "http"),
    "http.oauth": ("mcp/http/plan.py", "http"),
    "http.metrics_path": ("mcp/http/plan.py", "http"),
    "http.metrics_caller_labels": ("mcp/http/exposition.py", "self.services.config.http"),
    "http.sessions_per_caller": ("mcp/http/plan.py", "http"),
    "http.session_idle_s": ("mcp/http/plan.py", "http"),
    "http.head_ms": ("mcp/http/plan.py", "http"),
    "http.pending_connections": ("mcp/http/plan.py", "http"),
    "http.handshake_revisions": ("mcp/http/plan.py", "http"),
    "http.keys[].caller": ("mcp/http/plan.py", "entry"),
    "http.keys[].key": ("mcp/http/plan.py", "entry"),
    "http.keys[].scopes": ("mcp/http/plan.py", "entry"),
    "engines.<id>.enabled": ("core/engines/registry.py", "engine"),
    "scraping.enabled": ("core/engines/registry.py", "config.scraping"),
    "cache.enabled": ("core/cache/__init__.py", "settings"),
    "cache.backend": ("core/cache/__init__.py", "settings"),
    "cache.ttl_s": ("core/cache/__init__.py", "settings"),
    "cache.entries": ("core/cache/__init__.py", "settings"),
    "cache.redis_url": ("core/cache/__init__.py", "settings"),
    "cache.hmac_key": ("core/cache/__init__.py", "settings"),
    "cache.key_prefix": ("core/cache/__init__.py", "settings"),
    "cache.operation_ms": ("core/cache/__init__.py", "settings"),
    "cluster.instances": ("core/cache/__init__.py", "config.cluster"),
    "engines.<id>.endpoint": ("core/engines/registry.py", "engine"),
    "engines.<id>.api_key": ("core/engines/registry.py", "engine"),
    "engines.<id>.min_interval_ms": ("core/search/aggregate.py", "own"),
    "engines.<id>.max_concurrency": ("core/search/aggregate.py", "own"),
}

# Keys this table does not judge, each with the reason.
EXCLUDED = {
    # The version gate itself: parse_config reads it before the schema applies.
    "schema_version": "read by config.parse_config, which refuses every other version",
}
# Not a key but named by the issue: EngineSettings.extra has no key in the schema
# and is replaced by typed per-engine settings in the engines work.


@functools.cache
def attribute_reads(module: str) -> frozenset[tuple[str, str]]:
    """Every (receiver expression, attribute) read in a module of src/rypsok."""
    tree = ast.parse((SRC / module).read_text(encoding="utf-8"))
    return frozenset(
        (ast.unparse(node.value), node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
    )


@pytest.mark.req("REQ-CFG-001", "REQ-CFG-005")
def test_every_key_of_the_schema_has_a_reader_or_a_stated_exclusion() -> None:
    """REQ-CFG-001: the schema's keys are exactly the table's keys plus the exclusions."""
    keys = {row[0] for row in reference_rows()}
    unread = sorted(keys - READERS.keys() - EXCLUDED.keys())
    assert not unread, f"keys nothing is known to read: {unread}"
    gone = sorted((READERS.keys() | EXCLUDED.keys()) - keys)
    assert not gone, f"the table names keys the schema lost: {gone}"


@pytest.mark.req("REQ-CFG-001")
@pytest.mark.parametrize("key", sorted(READERS))
def test_each_reader_reads_its_key(key: str) -> None:
    """REQ-CFG-001: the named module reads the key's attribute through the named receiver."""
    module, receiver = READERS[key]
    assert module != "core/config.py", "validation is not an effect"
    attribute = key.rsplit(".", 1)[-1]
    assert (receiver, attribute) in attribute_reads(module), (key, module, receiver)


@pytest.mark.req("REQ-CFG-001", "REQ-CFG-005")
def test_removed_keys_are_refused() -> None:
    """REQ-CFG-001, REQ-CFG-005: http.http2_streams (HTTP/2 is not served) is refused."""
    assert "http.http2_streams" not in {row[0] for row in reference_rows()}
    with pytest.raises(ConfigError, match=r"unknown key 'http\.http2_streams'"):
        config_from({"http": {"http2_streams": 100}})


def stderr_events(path: pathlib.Path) -> list[dict[str, object]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


async def search_once(tmp_path: pathlib.Path, extra: str, query: str) -> list[dict[str, object]]:
    """One web_search over a real stdio process; its stderr as decoded JSON lines."""
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    log_path = tmp_path / "stderr.log"
    async with ProviderServer(routes) as server:
        config = write_config(tmp_path, engines_toml(server.base_url, extra))
        with log_path.open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(stdio_params(config), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool("web_search", {"query": query})
                assert result.structured_content is not None
                assert result.structured_content["outcome"] == "ok"
    return stderr_events(log_path)


@pytest.mark.req("REQ-PRIV-004", "REQ-OBS-005")
async def test_log_queries_logs_at_debug_with_a_start_up_warning(tmp_path: pathlib.Path) -> None:
    """REQ-PRIV-004, LIM-P3: on, each query is a debug line and start-up warns; masked keys."""
    query = "zebra migration ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    events = await search_once(
        tmp_path, '[privacy]\nlog_queries = true\ncredential_check = "warn"\n', query
    )
    names = [e["event"] for e in events]
    warning = next(e for e in events if e["event"] == "query_logging_on")
    assert warning["level"] == "warning" and warning["key"] == "privacy.log_queries"
    assert names.index("query_logging_on") < names.index("serving")
    logged = [e for e in events if e["event"] == "query"]
    assert len(logged) == 1 and logged[0]["level"] == "debug"
    assert isinstance(logged[0]["query"], str) and logged[0]["query"].startswith("zebra migration")
    assert "A1b2C3d4E5f6" not in json.dumps(events)  # the credential was sent, never logged
    assert logged[0]["request_id"] == next(e for e in events if e["event"] == "call")["request_id"]


@pytest.mark.req("REQ-PRIV-004")
async def test_queries_are_not_logged_by_default_over_stdio(tmp_path: pathlib.Path) -> None:
    """REQ-PRIV-004: off (the default), no line carries the query and nothing warns."""
    events = await search_once(tmp_path, "", "zebra migration patterns")
    assert "zebra" not in json.dumps(events)
    assert not [e for e in events if e["event"] in ("query", "query_logging_on")]
    assert any(e["event"] == "call" for e in events)  # the call itself was logged
