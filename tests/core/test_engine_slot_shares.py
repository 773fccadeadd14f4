"""LIM-C11 in the search pipeline: an operator's cap on one caller's share of LIM-C1."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rypsok.core.services import Services
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, config_from

SLOW_S = 1.0
CODE_ENGINES = ("github", "npm")


@pytest.mark.req("REQ-SEC-019", "REQ-AGG-005")
async def test_a_callers_search_leaves_a_process_slot_for_another_caller() -> None:
    """REQ-SEC-019: LIM-C1 = 2 with a cap of 1 per caller: a holds one slot, b gets the other.

    a's search asks two slow engines; at its cap one request waits, and b's
    search, started next, is sent at once instead of after a's. (Without a cap
    a takes both, as the default lets a lone caller do.)
    """
    routes = {
        ENGINE_PATHS[e]: Route.fixture(e, OK_FIXTURES[e], delay_s=SLOW_S) for e in CODE_ENGINES
    }
    async with ProviderServer(routes) as server:
        engines: dict[str, Any] = {engine: {"enabled": False} for engine in ENGINE_PATHS}
        for engine in CODE_ENGINES:
            engines[engine] = {"endpoint": f"{server.base_url}{ENGINE_PATHS[engine]}"}
        config = config_from({
            "egress": {"allow": ["127.0.0.1/32"]},
            "search": {"engines_in_flight": 2, "engines_in_flight_per_caller": 1},
            "engines": engines,
        })  # fmt: skip
        services = Services(config)
        services.divide_between_callers()
        slots = services.search_pipeline.process_slots
        most: dict[str, int] = {"a": 0, "b": 0}
        arguments = {"query": "serde", "category": "code"}

        async def watch() -> None:
            while True:
                for caller, seen in most.items():
                    most[caller] = max(seen, slots.held_by(caller))
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            async with anyio.create_task_group() as calls:
                calls.start_soon(services.call, "web_search", arguments, "a")
                await anyio.sleep(0.2)
                calls.start_soon(services.call, "web_search", {**arguments, "query": "tokio"}, "b")
                await anyio.sleep(SLOW_S / 2)
                both_in_flight = (slots.held_by("a"), slots.held_by("b"))
            group.cancel_scope.cancel()
        await services.aclose()
    assert both_in_flight == (1, 1)
    assert most == {"a": 1, "b": 1}
