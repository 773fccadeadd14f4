"""Fair sharing between callers over HTTP: a caller's share of the sessions, idle sessions close."""

from __future__ import annotations

import contextlib
import logging
import pathlib
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from rypsok.core import limits
from rypsok.core.services import Services
from rypsok.mcp.http.plan import plan_http
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.http_support import (
    KEY_A,
    KEY_B,
    RawMcp,
    bearer,
    free_listener,
    http_config,
    running_http,
)


@pytest.mark.req("REQ-SEC-019", "REQ-SEC-024")
async def test_a_caller_at_its_session_share_leaves_room_for_another(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """REQ-SEC-019: caller a holds its 2 sessions (LIM-H10); its third is refused, b connects.

    The refusal is 429 with Retry-After and a JSON-RPC error naming LIM-H10
    with retry_after_ms; the SDK's client of caller b opens a session as usual.
    """
    caplog.set_level(logging.INFO, logger="rypsok")
    listener = free_listener()
    config = http_config(tmp_path, listener.getsockname()[1], sessions=10, sessions_per_caller=2)
    async with running_http(config, listener) as running, contextlib.AsyncExitStack() as stack:
        http_a = await stack.enter_async_context(httpx2.AsyncClient(headers=bearer(KEY_A)))
        for _ in range(2):
            read, write = await stack.enter_async_context(
                streamable_http_client(running.url, http_client=http_a)
            )
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
        async with httpx2.AsyncClient() as raw_http:
            refused = await RawMcp(raw_http, running.url, KEY_A).initialize("2025-11-25")
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_B)) as http_b,
            streamable_http_client(running.url, http_client=http_b) as (read_b, write_b),
            ClientSession(read_b, write_b) as session_b,
        ):
            await session_b.initialize()
            answered = await session_b.call_tool("engine_status", {})
        # The handshake-free revision holds no session: caller a still calls that way.
        async with Client(streamable_http_client(running.url, http_client=http_a)) as modern:
            modern_answer = await modern.call_tool("engine_status", {})
        counters = running.app.counters
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) > 0
    assert "mcp-session-id" not in refused.headers
    error = refused.json()["error"]
    assert error["data"] == {"limit": "LIM-H10", "retry_after_ms": 30_000}
    assert "LIM-H10" in error["message"]
    assert not answered.is_error and not modern_answer.is_error
    assert counters.caller_sessions_refused == 1 and counters.sessions_refused == 0
    refusals = [r for r in caplog.records if r.getMessage() == "session_refused"]
    assert len(refusals) == 1


@pytest.mark.req("REQ-SEC-019", "REQ-SEC-024")
async def test_an_idle_session_closes_quietly_and_frees_the_share(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-019: after LIM-H11 without a request a session is gone and its slot is free."""
    listener = free_listener()
    config = http_config(
        tmp_path, listener.getsockname()[1], sessions_per_caller=2, session_idle_s=1
    )
    async with running_http(config, listener) as running, httpx2.AsyncClient() as http:
        idle = [RawMcp(http, running.url, KEY_A) for _ in range(2)]
        for raw in idle:
            assert (await raw.initialize("2025-11-25")).status_code == 200
        assert (await RawMcp(http, running.url, KEY_A).initialize("2025-11-25")).status_code == 429
        await anyio.sleep(2.5)
        gone = await idle[0].post({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        again = await RawMcp(http, running.url, KEY_A).initialize("2025-11-25")
    assert gone.status_code == 404
    assert again.status_code == 200
    assert running.app.counters.requests_timed_out == 0


@pytest.mark.req("REQ-SEC-019")
def test_the_per_caller_share_defaults_to_a_quarter_of_the_pool(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-019: LIM-H10 is a quarter of LIM-H6, at least 2, never above LIM-H6."""
    shares = {
        sessions: plan_http(http_config(tmp_path, 8750, sessions=sessions)).sessions_per_caller
        for sessions in (1, 4, 1000)
    }
    assert shares == {1: 1, 4: 2, 1000: 250}


SLOW_S = 3.0  # each of a's slow fetches


async def _fetch_beside_a_burst(tmp_path: pathlib.Path, fetch: dict[str, Any]) -> tuple[int, float]:
    """a sends 50 concurrent fetches of a site answering in SLOW_S; then b fetches it once.

    Returns the LIM-C3 slots a held when b asked, and b's wall time.
    """
    table = {
        "/slow": Route(delay_s=SLOW_S, headers={"content-type": "text/html"}, body=b"<p>s</p>"),
        "/fast": Route(headers={"content-type": "text/html"}, body=b"<p>fast</p>"),
    }
    async with ProviderServer(table) as provider:
        port = int(provider.base_url.rsplit(":", 1)[1])
        base = {
            "egress": {"allow": ["127.0.0.1/32"]},
            "fetch": {"allow_http": True, "ports": [port], "robots_txt": False, **fetch},
            "limits": {"web_fetch_per_minute": 100},
        }
        listener = free_listener()
        config = http_config(tmp_path, listener.getsockname()[1], base)
        async with (
            running_http(config, listener) as running,
            httpx2.AsyncClient(headers=bearer(KEY_A), timeout=60) as http_a,
            httpx2.AsyncClient(headers=bearer(KEY_B), timeout=60) as http_b,
            Client(streamable_http_client(running.url, http_client=http_a)) as client_a,
            Client(streamable_http_client(running.url, http_client=http_b)) as client_b,
        ):
            fetch_slots = running.services.fetch_pipeline.slots
            slots = fetch_slots.in_flight
            # All of a's fetches go to one host: a holds its share of the host's
            # slots, and its waiting fetches hold no LIM-C3 slot.
            share = min(fetch.get("fetches_per_caller", slots.slots), fetch_slots.host_share())

            async def fetch_a() -> None:
                await client_a.call_tool("web_fetch", {"url": provider.url("/slow")})

            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(fetch_a)
                for _ in range(200):  # a's burst takes what it may (at most 10 s); the rest queue
                    if slots.held_by("a") >= share:
                        break
                    await anyio.sleep(0.05)
                await anyio.sleep(0.2)
                held_by_a = slots.held_by("a")
                started = anyio.current_time()
                result = await client_b.call_tool("web_fetch", {"url": provider.url("/fast")})
                elapsed = anyio.current_time() - started
                group.cancel_scope.cancel()  # a's remaining fetches are not waited for
    assert not result.is_error, result.structured_content
    return held_by_a, elapsed


@pytest.mark.req("REQ-SEC-019", "REQ-TEST-014")
async def test_one_callers_50_slow_fetches_take_every_slot_and_delay_another_by_turns(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-019: default limits: a alone takes both of the host's slots; b waits a turn.

    With nobody else waiting a holds both slots of the site (LIM-C4; the
    default lets a caller alone use the whole capacity), and only the two
    LIM-C3 slots that go with them: its 48 other fetches wait holding none.
    b's fetch of the same site then waits until one of a's fetches ends and
    frees a slot of the host, because freed slots go to the caller holding
    fewest; first come first served it would wait for the whole burst
    (50 / 2 x 3 s = 75 s).
    """
    held_by_a, elapsed = await _fetch_beside_a_burst(tmp_path, {})
    assert held_by_a == limits.FETCHES_PER_HOST
    assert elapsed < 3 * SLOW_S, elapsed


@pytest.mark.req("REQ-SEC-019", "REQ-TEST-014")
async def test_with_a_per_caller_cap_another_callers_fetch_is_prompt_beside_50_slow_ones(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-019: `fetches_per_caller = 6` keeps LIM-C3 and host slots for b: no wait at all.

    a holds at most 6 of the 8 fetch slots and, in proportion, 1 of the
    host's 2 (LIM-C12), so it holds one of each, and b finds both a fetch
    slot and a host slot free.
    """
    held_by_a, elapsed = await _fetch_beside_a_burst(tmp_path, {"fetches_per_caller": 6})
    assert held_by_a == 1
    assert elapsed < SLOW_S / 2, elapsed


@pytest.mark.req("REQ-SEC-019", "REQ-TEST-014")
async def test_one_callers_burst_of_slow_fetches_leaves_anothers_fetch_prompt(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-019: with 2 fetch slots, a's 12 slow fetches (1 s each) queue; b's waits one turn.

    First come first served, b's fetch would wait for six rounds of a's
    (about 6 s); served in turn it gets the second freed slot (about 1 s).
    """
    table = {
        "/slow": Route(delay_s=1.0, headers={"content-type": "text/html"}, body=b"<p>slow</p>"),
        "/fast": Route(headers={"content-type": "text/html"}, body=b"<p>fast</p>"),
    }
    async with ProviderServer(table) as provider:
        port = int(provider.base_url.rsplit(":", 1)[1])
        base = {
            "egress": {"allow": ["127.0.0.1/32"]},
            "fetch": {"allow_http": True, "ports": [port], "robots_txt": False,
                      "fetches_in_flight": 2, "fetches_per_host": 2},
            "limits": {"web_fetch_per_minute": 60},
        }  # fmt: skip
        listener = free_listener()
        config = http_config(tmp_path, listener.getsockname()[1], base)
        async with (
            running_http(config, listener) as running,
            httpx2.AsyncClient(headers=bearer(KEY_A), timeout=60) as http_a,
            httpx2.AsyncClient(headers=bearer(KEY_B), timeout=60) as http_b,
            Client(streamable_http_client(running.url, http_client=http_a)) as client_a,
            Client(streamable_http_client(running.url, http_client=http_b)) as client_b,
        ):
            elapsed: dict[str, float] = {}

            async def fetch_a() -> None:
                await client_a.call_tool("web_fetch", {"url": provider.url("/slow")})

            async def fetch_b() -> None:
                started = anyio.current_time()
                result = await client_b.call_tool("web_fetch", {"url": provider.url("/fast")})
                assert not result.is_error, result.structured_content
                elapsed["b"] = anyio.current_time() - started

            async with anyio.create_task_group() as group:
                for _ in range(12):
                    group.start_soon(fetch_a)
                await anyio.sleep(0.3)  # a's burst holds both slots and queues the rest
                group.start_soon(fetch_b)
    assert elapsed["b"] < 2.5, elapsed


@pytest.mark.req("REQ-SEC-019")
async def test_the_http_listener_divides_the_slots_and_stdio_keeps_them_whole(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-SEC-019: HTTP mode applies the configured LIM-C10/C11 shares; stdio has none."""
    base = {
        "search": {"engines_in_flight": 10, "engines_in_flight_per_caller": 5},
        "fetch": {"fetches_in_flight": 4, "fetches_per_caller": 3},
    }
    listener = free_listener()
    config = http_config(tmp_path, listener.getsockname()[1], base)
    async with running_http(config, listener) as running:
        divided = (
            running.services.search_pipeline.process_slots.per_caller,
            running.services.fetch_pipeline.slots.in_flight.per_caller,
            running.services.fetch_pipeline.slots.host_share(),
        )
    alone = Services(config)
    whole = (
        alone.search_pipeline.process_slots.per_caller,
        alone.fetch_pipeline.slots.in_flight.per_caller,
        alone.fetch_pipeline.slots.host_share(),
    )
    await alone.aclose()
    assert divided == (5, 3, 1)
    assert whole == (10, 4, 2)
