"""GET /metrics over HTTP: Prometheus text for a metrics-scoped caller only, no caller text."""

from __future__ import annotations

import pathlib

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


def metrics_config(directory: pathlib.Path, port: int, base_url: str) -> Config:
    """Caller a (operator) has every scope; caller b the default search and fetch."""
    keys = key_entries(directory, scopes=["search", "fetch", "status", "metrics"], a=KEY_A)
    keys += key_entries(directory, scopes=None, b=KEY_B)
    return config_from({**engine_sections(base_url), "http": {"port": port, "keys": keys}})


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
