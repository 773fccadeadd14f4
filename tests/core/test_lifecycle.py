"""What a call leaves behind: rendering, logs and memory after the call."""

from __future__ import annotations

import gc
import json
import logging

import pytest

from rypsok.core.engines.base import EngineResponse, RawHit
from rypsok.core.logs import JsonLineFormatter
from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, call_tool, engines_config

MARKER = "BODY-MARKER-5521"


def routes() -> dict[str, Route]:
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    body = json.dumps({"batchcomplete": True, "query": {"search": [
        {"ns": 0, "title": f"Tides {MARKER}", "pageid": 1, "snippet": f"About {MARKER} tides"}
    ]}}).encode()  # fmt: skip
    table[ENGINE_PATHS["wikipedia"]] = Route(
        body=body, headers={"content-type": "application/json"}
    )
    return table


@pytest.mark.req("REQ-CTX-003", "REQ-MCP-011")
async def test_text_rendering_is_the_json_of_the_structured_response() -> None:
    """REQ-CTX-003: the text form is the JSON serialization of the structured response."""
    async with ProviderServer(routes()) as server:
        services = Services(engines_config(server.base_url))
        payload, text = await call_tool(services, "web_search", {"query": "tides"})
        await services.aclose()
    assert json.loads(text) == payload
    assert text == json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.req("REQ-OBS-006", "REQ-PRIV-004")
async def test_no_response_body_or_content_is_logged_at_any_level(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """REQ-OBS-006: even at debug level no response body, title or snippet is logged."""
    caplog.set_level(logging.DEBUG)
    async with ProviderServer(routes()) as server:
        services = Services(engines_config(server.base_url))
        payload, _ = await call_tool(services, "web_search", {"query": "tides"})
        await services.aclose()
    assert MARKER in json.dumps(payload)  # it was there to be logged
    formatter = JsonLineFormatter()
    logged = "\n".join(formatter.format(r) + r.getMessage() for r in caplog.records)
    assert caplog.records and MARKER not in logged


@pytest.mark.req("REQ-LIFE-002", "REQ-PRIV-003")
async def test_bodies_and_hits_are_released_when_the_call_ends() -> None:
    """REQ-LIFE-002, REQ-PRIV-003: no response body or raw hit outlives the call."""
    async with ProviderServer(routes()) as server:
        services = Services(engines_config(server.base_url))
        await call_tool(services, "web_search", {"query": "tides"})
        gc.collect()
        alive = [o for o in gc.get_objects() if isinstance(o, EngineResponse | RawHit)]
        in_flight = dict(services.search_pipeline._in_flight)
        await services.aclose()
    assert alive == [] and in_flight == {}


@pytest.mark.req("REQ-OBS-003", "REQ-OBS-002")
async def test_engine_errors_are_counted_by_class_and_call_errors_by_kind() -> None:
    """REQ-OBS-003: engine failures by class, call errors by kind, latencies per engine."""
    table = routes()
    table[ENGINE_PATHS["wikidata"]] = Route(status=429)
    async with ProviderServer(table) as server:
        services = Services(engines_config(server.base_url))
        await call_tool(services, "web_search", {"query": "tides"})
        await call_tool(services, "web_search", {"query": "x", "max_results": 0})
        await services.aclose()
    metrics = services.metrics
    assert metrics.engine_errors[("wikidata", "rate_limited")] == 1
    assert metrics.engine_errors[("wikipedia", "rate_limited")] == 0
    assert metrics.call_errors["invalid_request"] == 1
    assert len(metrics.engine_latency_ms["wikipedia"]) == 1
    assert len(metrics.call_latency_ms["web_search"]) == 2
