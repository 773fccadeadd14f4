"""Engine health through MCP calls: circuit breaking, probing, engine_status."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import pytest

from rypsok.core.logs import JsonLineFormatter
from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, call_tool, engines_config

GARBAGE = Route(body=b"PROVIDER-GARBAGE {", headers={"content-type": "application/json"})


def routes() -> dict[str, Route]:
    return {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}


@pytest.mark.req(
    "REQ-RES-004", "REQ-RES-005", "REQ-TEST-017", "REQ-OBS-001", "REQ-OBS-004",
    "REQ-STATUS-001", "REQ-STATUS-002", "REQ-OBS-002",
)  # fmt: skip
async def test_failing_engine_is_skipped_then_probed_once_then_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """REQ-RES-004, REQ-RES-005: B1 failures open; skipped meanwhile; one probe closes."""
    caplog.set_level(logging.INFO, logger="rypsok")
    async with ProviderServer(routes()) as server:
        wikidata = ENGINE_PATHS["wikidata"]
        server.route(wikidata, GARBAGE, GARBAGE, GARBAGE, Route.fixture("wikidata", "ok.json"))
        config = engines_config(server.base_url, breaker={"cooldown_ms": 1_000})
        services = Services(config)

        async def search() -> dict[str, Any]:
            payload, _ = await call_tool(services, "web_search", {"query": "quantum"})
            return payload

        async def states() -> dict[str, Any]:
            payload, _ = await call_tool(services, "engine_status", {})
            return {e["id"]: e for e in payload["engines"]}

        failing = [await search() for _ in range(3)]
        open_status = await states()
        skipped = await search()
        asked_while_open = len(server.requests_to(wikidata))
        await anyio.sleep(1.05)
        half_open_status = await states()
        probed = await search()
        closed_status = await states()
        await services.aclose()

    assert all(p["outcome"] == "partial" for p in failing)
    assert open_status["wikidata"]["state"] == "open"
    assert skipped["outcome"] == "partial"
    skip_notices = [n["code"] for n in skipped["notices"] if "wikidata" in n["message"]]
    assert skip_notices == ["engine_skipped"]
    assert asked_while_open == 3  # no request while open
    assert half_open_status["wikidata"]["state"] == "half_open"
    assert probed["outcome"] == "ok"
    assert len(server.requests_to(wikidata)) == 4  # exactly one probe
    wikidata_state = closed_status["wikidata"]
    assert wikidata_state["state"] == "closed"
    assert isinstance(wikidata_state["median_latency_ms"], int)
    assert closed_status["github"]["median_latency_ms"] is None
    shown = json.dumps([open_status, closed_status])
    for leak in ("127.0.0.1", "PROVIDER-GARBAGE", "http", "api.php"):
        assert leak not in shown
    logged = [json.loads(JsonLineFormatter().format(r)) for r in caplog.records]
    transitions = [(x["previous"], x["state"]) for x in logged if x["event"] == "circuit"]
    assert transitions == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]


@pytest.mark.req("REQ-STATUS-001", "REQ-ENG-003")
async def test_disabled_and_keyless_engines_show_as_disabled() -> None:
    """REQ-STATUS-001: an engine the operator disabled reports state disabled."""
    config = engines_config("http://127.0.0.1:9", engines={"arxiv": {"enabled": False}})
    services = Services(config)
    payload, _ = await call_tool(services, "engine_status", {})
    await services.aclose()
    states = {e["id"]: e["state"] for e in payload["engines"]}
    assert states["arxiv"] == "disabled" and states["wikipedia"] == "closed"
    assert all(set(e) == {"id", "state", "median_latency_ms"} for e in payload["engines"])
