"""GET /metrics over HTTP: Prometheus text for a metrics-scoped caller only, no caller text."""

from __future__ import annotations

import pathlib
import socket
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from prometheus_client.parser import text_string_to_metric_families

from rypsok.core.config import Config
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.http_support import (
    KEY_A,
    KEY_B,
    bearer,
    engine_sections,
    free_listener,
    key_entries,
    running_http,
)
from tests.support import ENGINE_PATHS, OK_FIXTURES, config_from

QUERY_CANARY = "zebra-canary-query-5521"


def metrics_config(
    directory: pathlib.Path, port: int, base_url: str, **sections: dict[str, Any]
) -> Config:
    """Caller a (operator) has every scope; caller b the default search and fetch."""
    keys = key_entries(directory, scopes=["search", "fetch", "status", "metrics"], a=KEY_A)
    keys += key_entries(directory, scopes=None, b=KEY_B)
    http = {"port": port, "keys": keys, **sections.pop("http", {})}
    return config_from({**engine_sections(base_url), **sections, "http": http})


@pytest.mark.req("REQ-OBS-002", "REQ-OBS-003", "REQ-OBS-007", "REQ-OBS-008", "REQ-PRIV-004")
async def test_metrics_answer_the_metrics_scope_only_and_carry_no_caller_text(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-OBS-008: /metrics in the Prometheus format for a `metrics` key; 403 otherwise.

    After a search and a refused call, the families hold per-engine latency
    histograms (REQ-OBS-002), engine errors by class (REQ-OBS-003), refused
    calls by tool and reason (REQ-OBS-007); the query text is in no label.
    """
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    table[ENGINE_PATHS["hackernews"]] = Route(status=500, body=b"down")
    async with ProviderServer(table) as provider:
        listener = free_listener()
        config = metrics_config(tmp_path, listener.getsockname()[1], provider.base_url)
        async with running_http(config, listener) as running:
            async with (
                httpx2.AsyncClient(headers=bearer(KEY_B)) as http,
                Client(streamable_http_client(running.url, http_client=http)) as client,
            ):
                await client.call_tool("web_search", {"query": QUERY_CANARY, "category": "code"})
                await client.call_tool("web_fetch", {"url": "ftp://example.org/x"})
            async with httpx2.AsyncClient() as http:
                operator = await http.get(running.base("/metrics"), headers=bearer(KEY_A))
                member = await http.get(running.base("/metrics"), headers=bearer(KEY_B))
                nobody = await http.get(running.base("/metrics"))
    assert member.status_code == 403
    assert 'error="insufficient_scope"' in member.headers["www-authenticate"]
    assert nobody.status_code == 401
    assert operator.status_code == 200
    assert operator.headers["content-type"].startswith("text/plain; version=")
    families = {f.name: f for f in text_string_to_metric_families(operator.text)}
    engines = {
        s.labels["engine"] for s in families["rypsok_engine_request_duration_seconds"].samples
    }
    assert "hackernews" in engines
    failures = {
        (s.labels["engine"], s.labels["class"]) for s in families["rypsok_engine_errors"].samples
    }
    assert any(engine == "hackernews" for engine, _ in failures)
    calls = {
        s.labels["tool"]: s.value
        for s in families["rypsok_calls"].samples
        if s.name == "rypsok_calls_total"
    }
    assert calls.get("web_search") == 1
    refused = {
        (s.labels["tool"], s.labels["reason"]): s.value
        for s in families["rypsok_refused_calls"].samples
        if s.name.endswith("_total")
    }
    assert refused == {("web_fetch", "scheme"): 1}
    errors = {(s.labels["tool"], s.labels["kind"]) for s in families["rypsok_call_errors"].samples}
    assert ("web_fetch", "denied") in errors
    assert "rypsok_engine_circuit_state" in families
    assert "rypsok_listener_events" in families
    assert QUERY_CANARY not in operator.text
    assert KEY_A not in operator.text and KEY_B not in operator.text
    assert '"b"' not in operator.text and "caller=" not in operator.text


def _samples(text: str, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    """{sorted label pairs: value} of one family's counter or histogram-count samples."""
    found = {f.name: f for f in text_string_to_metric_families(text)}.get(family)
    if found is None:
        return {}
    wanted = (f"{family}_total", f"{family}_count")
    return {tuple(sorted(s.labels.items())): s.value for s in found.samples if s.name in wanted}


async def _scrape_after_searches(
    config: Config, running_port: socket.socket, queries: list[str]
) -> str:
    """Caller b's searches through the SDK's HTTP client, then a scrape with a's key."""
    async with running_http(config, running_port) as running:
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_B)) as http,
            Client(streamable_http_client(running.url, http_client=http)) as client,
        ):
            for query in queries:
                await client.call_tool("web_search", {"query": query, "category": "code"})
            await client.call_tool("web_fetch", {"url": "ftp://example.org/x"})
        async with httpx2.AsyncClient() as http:
            scraped = await http.get(running.base("/metrics"), headers=bearer(KEY_A))
    assert scraped.status_code == 200
    return scraped.text


@pytest.mark.req("REQ-OBS-004", "REQ-OBS-008", "REQ-CACHE-001", "REQ-PRIV-004")
async def test_metrics_export_circuit_transitions_queue_waits_and_the_cache(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-OBS-004, REQ-OBS-008: transitions by engine and state, queue waits, cache events.

    An engine whose answer does not parse opens its circuit at the first
    failure (LIM-B1 = 1); a repeated search is a cache miss and store, then a
    hit. No caller label appears while `metrics_caller_labels` is off.
    """
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    table[ENGINE_PATHS["hackernews"]] = Route(headers={"content-type": "application/json"},
                                              body=b"not json")  # fmt: skip
    async with ProviderServer(table) as provider:
        listener = free_listener()
        config = metrics_config(
            tmp_path,
            listener.getsockname()[1],
            provider.base_url,
            breaker={"failures": 1},
            cache={"enabled": True},
        )
        text = await _scrape_after_searches(config, listener, [QUERY_CANARY, QUERY_CANARY])
    transitions = _samples(text, "rypsok_engine_circuit_transitions")
    assert transitions == {(("engine", "hackernews"), ("state", "open")): 1}
    waits = _samples(text, "rypsok_engine_queue_wait_seconds")
    assert waits[(("engine", "npm"),)] >= 1
    cache = _samples(text, "rypsok_cache_events")
    assert cache[(("engine", "npm"), ("event", "miss"))] == 1
    assert cache[(("engine", "npm"), ("event", "store"))] == 1
    assert cache[(("engine", "npm"), ("event", "hit"))] == 1
    assert "rypsok_shared_state_fallbacks" in text
    assert "rypsok_caller_calls" not in text and "caller=" not in text
    assert QUERY_CANARY not in text


@pytest.mark.req("REQ-OBS-008", "REQ-CACHE-006", "REQ-SEC-019")
async def test_caller_labels_come_only_with_the_switch_and_redis_fallbacks_are_counted(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-OBS-008: `metrics_caller_labels = true` adds series by caller name; Redis down counts.

    The Redis URL names a socket nobody listens on: every cache read falls
    back to local state and is counted by operation.
    """
    (tmp_path / "url").write_text(f"unix://{tmp_path}/nobody.sock\n", encoding="utf-8")
    (tmp_path / "hmac").write_text("h" * 32 + "\n", encoding="utf-8")
    redis = {
        "enabled": True,
        "backend": "redis",
        "redis_url": {"file": str(tmp_path / "url")},
        "hmac_key": {"file": str(tmp_path / "hmac")},
    }
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    async with ProviderServer(table) as provider:
        listener = free_listener()
        config = metrics_config(
            tmp_path, listener.getsockname()[1], provider.base_url, cache=redis,
            http={"metrics_caller_labels": True},
        )  # fmt: skip
        text = await _scrape_after_searches(config, listener, ["first subject"])
    calls = _samples(text, "rypsok_caller_calls")
    assert calls[(("caller", "b"), ("tool", "web_search"))] == 1
    refused = _samples(text, "rypsok_caller_refused_calls")
    assert refused == {(("caller", "b"), ("reason", "scheme"), ("tool", "web_fetch")): 1}
    fallbacks = _samples(text, "rypsok_shared_state_fallbacks")
    assert fallbacks.get((("operation", "cache_get"),), 0) >= 1
    assert KEY_A not in text and KEY_B not in text
