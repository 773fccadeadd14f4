"""LIM-C5 is one limit: web_fetch's extractions and the scraping drivers' parses share it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from rypsok.core.engines.duckduckgo import DuckDuckGo
from rypsok.core.fetch import extraction
from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, call_tool, config_from

PARSE_S = 0.3  # each probed parse holds its thread this long


class ParseProbe:
    """Counts the parses running at once, in their worker threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.kinds: set[str] = set()

    def wrap(self, kind: str, parse: Callable[..., Any]) -> Callable[..., Any]:
        def probed(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.running += 1
                self.most = max(self.most, self.running)
                self.kinds.add(kind)
            try:
                time.sleep(PARSE_S)
                return parse(*args, **kwargs)
            finally:
                with self._lock:
                    self.running -= 1

        return probed


@pytest.mark.req("REQ-SEC-012", "REQ-PAGE-008", "REQ-ENG-015")
async def test_fetch_and_scraping_parses_together_stay_within_one_lim_c5(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-012: with LIM-C5 = 1, four fetches and a scraping search parse one at a time.

    Before Services owned the one limiter, each pipeline had its own, and a
    fetch's extraction ran beside a scraping driver's parse (2 at a time).
    """
    probe = ParseProbe()
    monkeypatch.setattr(extraction, "extract_html", probe.wrap("fetch", extraction.extract_html))
    monkeypatch.setattr(DuckDuckGo, "parse", probe.wrap("scrape", DuckDuckGo.parse))
    routes = {
        "/html/": Route.fixture("duckduckgo", "ok.html"),
        "/page": Route(headers={"content-type": "text/html"}, body=b"<p>a page</p>"),
    }
    async with ProviderServer(routes) as server:
        port = int(server.base_url.rsplit(":", 1)[1])
        engines: dict[str, Any] = {engine: {"enabled": False} for engine in ENGINE_PATHS}
        engines["duckduckgo"] = {"enabled": True, "endpoint": f"{server.base_url}/html/"}
        config = config_from({
            "egress": {"allow": ["127.0.0.1/32"]},
            "operator": {"contact": "ops@example.org"},
            "scraping": {"enabled": True},
            "engines": engines,
            "fetch": {"allow_http": True, "ports": [port], "robots_txt": False, "parse_tasks": 1},
        })  # fmt: skip
        services = Services(config)
        outcomes: list[str] = []

        async def call(tool: str, arguments: dict[str, Any]) -> None:
            payload, _ = await call_tool(services, tool, arguments)
            outcomes.append(payload["outcome"])

        async with anyio.create_task_group() as group:
            group.start_soon(call, "web_search", {"query": "tokio runtime"})
            for index in range(4):  # the engine's spacing admits one search at a time
                group.start_soon(call, "web_fetch", {"url": server.url(f"/page?n={index}")})
        await services.aclose()
    assert outcomes.count("ok") == 5, outcomes
    assert probe.kinds == {"fetch", "scrape"}
    assert probe.most == 1
