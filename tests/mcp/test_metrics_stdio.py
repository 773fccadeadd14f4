"""Metrics leave the process as `metrics` log lines, read here from a real stdio process."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, engines_toml, stdio_params, write_config

QUERY_WORD = "marmalade7"  # in the query: must never reach a metrics line
PATH_WORD = "lighthouse9"  # in a refused URL: must never reach a metrics line


async def run_session(tmp_path: pathlib.Path, interval_s: int) -> list[dict[str, Any]]:
    """Three calls over stdio (wikidata answers 429), then end of input; stderr as JSON."""
    routes = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    routes[ENGINE_PATHS["wikidata"]] = Route(status=429)
    extra = f"[logging]\nmetrics_interval_s = {interval_s}\n"
    log_path = tmp_path / "stderr.log"
    async with ProviderServer(routes) as server:
        config = write_config(tmp_path, engines_toml(server.base_url, extra))
        with log_path.open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(stdio_params(config), errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                searched = await session.call_tool("web_search", {"query": f"tides {QUERY_WORD}"})
                assert searched.structured_content is not None
                assert searched.structured_content["outcome"] == "partial"
                await session.call_tool("web_search", {"query": "x", "max_results": 0})
                await session.call_tool("web_fetch", {"url": f"ftp://example.org/{PATH_WORD}"})
                if interval_s:
                    await anyio.sleep(interval_s * 1.6)
    lines = log_path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


@pytest.mark.req("REQ-OBS-008", "REQ-OBS-002", "REQ-OBS-003", "REQ-OBS-007")
async def test_shutdown_summary_carries_the_counters(tmp_path: pathlib.Path) -> None:
    """REQ-OBS-008, -002, -003, -007: the last line counts calls, errors, refusals, latencies."""
    events = await run_session(tmp_path, interval_s=0)
    metrics = [e for e in events if e["event"] == "metrics"]
    assert [m["reason"] for m in metrics] == ["shutdown"]  # interval 0: shutdown only
    assert events[-1] is metrics[-1], "the summary is the last line before the exit"
    summary = metrics[-1]
    assert summary["calls"] == {"web_fetch": 1, "web_search": 2}
    assert summary["call_errors"] == {"denied": 1, "invalid_request": 1}  # REQ-OBS-003
    assert summary["refused_calls"] == {
        "web_fetch": {"scheme": 1},
        "web_search": {"invalid_request": 1},
    }  # REQ-OBS-007
    assert summary["engine_errors"] == {"wikidata": {"rate_limited": 1}}  # REQ-OBS-003
    assert summary["engine_requests"]["wikipedia"] == 1
    assert summary["engine_requests"]["wikidata"] == 1
    assert isinstance(summary["engine_median_ms"]["wikipedia"], int)  # REQ-OBS-002
    assert set(summary["call_median_ms"]) == {"web_search", "web_fetch"}  # REQ-OBS-002
    assert summary["uptime_s"] > 0


@pytest.mark.req("REQ-OBS-008", "REQ-PRIV-004")
async def test_interval_summaries_are_content_free(tmp_path: pathlib.Path) -> None:
    """REQ-OBS-008, REQ-PRIV-004: a line every interval and at shutdown, without query or URL."""
    events = await run_session(tmp_path, interval_s=1)
    metrics = [e for e in events if e["event"] == "metrics"]
    reasons = [m["reason"] for m in metrics]
    assert reasons[-1] == "shutdown" and "interval" in reasons
    interval = next(m for m in metrics if m["reason"] == "interval")
    assert interval["calls"] == {"web_fetch": 1, "web_search": 2}
    text = json.dumps(metrics)
    assert QUERY_WORD not in text and PATH_WORD not in text
    assert "://" not in text and "example.org" not in text and "127.0.0.1" not in text
