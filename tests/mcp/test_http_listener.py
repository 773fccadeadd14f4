"""The listener under a crowd: idle event streams, client header values in logs, slow heads."""

from __future__ import annotations

import asyncio
import logging
import pathlib

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.mcp.http_support import (
    KEY_A,
    KEY_B,
    RawMcp,
    bearer,
    free_listener,
    http_config,
    running_http,
)
from tests.mcp.test_http import SHORT_BOUNDS

CANARY = "canary-7f3e9a"


@pytest.mark.req("REQ-SEC-022", "REQ-OBS-005")
async def test_an_idle_event_stream_ends_quietly_at_its_lifetime(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """REQ-SEC-022, REQ-OBS-005: an idle GET stream outlives LIM-H5, ends at LIM-H7, no timeout.

    The SDK's session keeps a GET event stream open while idle; it is cut
    at its own lifetime (1 s here), the client reconnects, and neither a
    timeout line nor a timeout count is produced while the session stays usable.
    """
    caplog.set_level(logging.DEBUG, logger="rypsok")
    listener = free_listener()
    config = http_config(
        tmp_path, listener.getsockname()[1], SHORT_BOUNDS, request_ms=2000, stream_ms=1000
    )
    async with running_http(config, listener) as running:
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
            streamable_http_client(running.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await anyio.sleep(3.5)  # past LIM-H5 (2 s) and several stream lifetimes
            result = await session.call_tool("engine_status", {})
        counters = running.app.counters
    assert not result.is_error
    assert counters.requests_timed_out == 0
    assert counters.streams_ended >= 1
    events = [r.getMessage() for r in caplog.records if r.name.startswith("rypsok")]
    assert "request_timed_out" not in events
    assert "stream_ended" in events


@pytest.mark.req("REQ-PRIV-004", "REQ-SEC-018")
async def test_no_log_line_carries_a_header_value_a_client_sent(
    tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture
) -> None:
    """REQ-PRIV-004: a canary in Host, Origin, User-Agent and Authorization reaches no log line.

    Each header is refused or passed in turn (wrong Host, wrong Origin, a
    wrong key, a canary User-Agent on a good request, a canary session id),
    every logger at DEBUG, and the canary is looked for in every record.
    """
    caplog.set_level(logging.DEBUG)
    listener = free_listener()
    port = listener.getsockname()[1]
    config = http_config(tmp_path, port)
    good = f"127.0.0.1:{port}"
    async with running_http(config, listener) as running, httpx2.AsyncClient() as http:
        raw = RawMcp(http, running.url, KEY_A)
        raw.headers["user-agent"] = f"agent/{CANARY}"
        assert (await raw.initialize("2025-11-25")).status_code == 200
        cases = [
            {"host": f"{CANARY}.example"},
            {"host": good, "origin": f"https://{CANARY}.example"},
            {"host": good, **bearer(f"{CANARY}-not-a-key-at-all")},
            {"host": good, **bearer(KEY_B), "mcp-session-id": raw.session or ""},
            {"host": good, **bearer(KEY_A), "mcp-session-id": f"{CANARY}-session"},
        ]
        statuses = []
        for extra in cases:
            headers = {**raw.current_headers(), "user-agent": CANARY, **extra}
            ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
            statuses.append((await http.post(running.url, headers=headers, json=ping)).status_code)
    assert statuses == [421, 403, 401, 404, 404]
    assert running.app.counters.hosts_refused == 1
    assert running.app.counters.origins_refused == 1
    lines = [f"{r.name} {r.getMessage()} {r.__dict__}" for r in caplog.records]
    assert any("request_refused" in line for line in lines)
    assert not [line for line in lines if CANARY in line]


async def _slow_head(port: int, stop: anyio.Event) -> bool:
    """A connection that sends part of a head and waits; True when the server dropped it."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    dropped = False
    try:
        writer.write(b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n")
        await writer.drain()
        with anyio.move_on_after(8):
            async with anyio.create_task_group() as group:

                async def closed_by_server() -> None:
                    nonlocal dropped
                    await reader.read()
                    dropped = True
                    group.cancel_scope.cancel()

                group.start_soon(closed_by_server)
                await stop.wait()
                group.cancel_scope.cancel()
        return dropped
    finally:
        writer.close()


@pytest.mark.req("REQ-SEC-022", "REQ-SEC-024")
async def test_slow_head_connections_cannot_lock_out_a_caller(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-022: beyond LIM-H9 headless connections the oldest go; a real caller is served.

    Twenty connections send half a head and wait (the cap is 8, the head
    deadline 5 s); the SDK's client with a key still opens a session and
    calls a tool well before any head deadline ends.
    """
    listener = free_listener()
    port = listener.getsockname()[1]
    config = http_config(tmp_path, port, head_ms=5000, pending_connections=8)
    stop = anyio.Event()
    dropped: list[bool] = []

    async def hold() -> None:
        dropped.append(await _slow_head(port, stop))

    async with running_http(config, listener) as running, anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(hold)
        await anyio.sleep(0.5)
        started = anyio.current_time()
        async with (
            httpx2.AsyncClient(headers=bearer(KEY_A)) as http,
            streamable_http_client(running.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("engine_status", {})
        elapsed = anyio.current_time() - started
        stop.set()
    assert not result.is_error
    assert elapsed < 3, elapsed
    assert sum(dropped) >= 12  # at least the twenty beyond the cap of eight
    assert running.app.counters.connections_dropped >= 12
