"""web_search through real stdio sessions against local fake providers."""

from __future__ import annotations

import json
import pathlib
import signal
import time
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from rypsok.core import limits
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import (
    ENGINE_PATHS,
    OK_FIXTURES,
    AsyncRawServer,
    engines_toml,
    params_for,
    stdio_params,
    wait_until,
    write_config,
)

REVISIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)


def routes(**overrides: Route) -> dict[str, Route]:
    table = {p: Route.fixture(e, OK_FIXTURES[e]) for e, p in ENGINE_PATHS.items()}
    table.update({ENGINE_PATHS[e]: r for e, r in overrides.items()})
    return table


@pytest.fixture
async def hanging_news(
    tmp_path: pathlib.Path,
) -> AsyncIterator[tuple[ProviderServer, pathlib.Path]]:
    async with ProviderServer(routes(hackernews=Route(hang=True))) as server:
        yield server, write_config(tmp_path, engines_toml(server.base_url))


@pytest.mark.req("REQ-MCP-001", "REQ-MCP-011", "REQ-AGG-004", "REQ-SEC-002", "REQ-DEP-001")
async def test_search_over_stdio_returns_results_then_partial(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-011, REQ-AGG-004: a real stdio session gets ok, then partial with a notice."""
    async with ProviderServer(routes()) as server:
        config = write_config(tmp_path, engines_toml(server.base_url))
        async with (
            stdio_client(stdio_params(config)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            first = await session.call_tool("web_search", {"query": "quantum", "max_results": 5})
            server.route(ENGINE_PATHS["wikidata"], Route(status=500))
            second = await session.call_tool("web_search", {"query": "quantum"})
    assert first.structured_content is not None and not first.is_error
    assert first.structured_content["outcome"] == "ok"
    assert 1 <= len(first.structured_content["results"]) <= 5
    text = first.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == first.structured_content
    assert second.structured_content is not None
    assert second.structured_content["outcome"] == "partial"
    codes = [n["code"] for n in second.structured_content["notices"]]
    assert "engine_failed" in codes


@pytest.mark.req("REQ-MCP-007", "REQ-AGG-006", "REQ-TEST-009", "REQ-TEST-004")
@pytest.mark.parametrize("version", REVISIONS)
async def test_cancellation_aborts_requests_in_flight_and_sends_nothing_more(
    hanging_news: tuple[ProviderServer, pathlib.Path], version: str
) -> None:
    """REQ-MCP-007: after notifications/cancelled the request in flight is aborted in LIM-O2.

    LIM-O2 counts from when rypsok could read the cancellation. On a quiet
    machine that is when the test sent it; on a loaded one the process may
    not run for a while, so the test sends a tools/list right behind it and
    allows the time until that is answered: the abort must come within LIM-O2
    of either. Without the abort the hanging request would last until the
    engine's timeout (LIM-S5, 5 s).
    """
    server, config = hanging_news
    rypsok = await AsyncRawServer.start(config)
    try:
        await rypsok.handshake(version)
        call = {"name": "web_search", "arguments": {"query": "rust", "category": "code"}}
        await rypsok.send(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params_for(version, call)}
        )
        # The first call of a handshake-free session also waits for start-up.
        await wait_until(lambda: server.requests_to(ENGINE_PATHS["hackernews"]), 30)
        await anyio.sleep(0.1)
        cancelled_at = time.monotonic()
        await rypsok.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled",
             "params": params_for(version, {"requestId": 7, "reason": "test"})}
        )  # fmt: skip
        listed = await rypsok.request(8, "tools/list", params_for(version, {}))
        read_by = time.monotonic()  # rypsok had read the cancellation by then
        assert "result" in listed
        await wait_until(lambda: server.hangups, 2)
        assert server.hangups[0] - cancelled_at < limits.CANCEL_MS / 1000 + (read_by - cancelled_at)
        assert all(json.loads(line).get("id") != 7 for line in rypsok.stdout_lines)
    finally:
        await rypsok.close()


@pytest.mark.req("REQ-MCP-007", "REQ-AGG-006", "REQ-CMP-002")
async def test_cancelled_call_never_sends_its_queued_request(tmp_path: pathlib.Path) -> None:
    """REQ-MCP-007: a request still waiting for its turn is never sent after a cancel."""
    async with ProviderServer(routes()) as server:
        config = write_config(tmp_path, engines_toml(server.base_url))
        rypsok = await AsyncRawServer.start(config)
        try:
            version = HANDSHAKE_PROTOCOL_VERSIONS[-1]
            await rypsok.handshake(version)
            science = {
                "name": "web_search",
                "arguments": {"query": "qubits", "category": "science"},
            }
            first = await rypsok.request(1, "tools/call", science)
            assert first["result"]["structuredContent"]["outcome"] == "ok"
            # The second arXiv request must wait ~3 s for its turn; cancel it before.
            await rypsok.send(
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": science}
            )
            await anyio.sleep(0.5)
            await rypsok.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled",
                 "params": {"requestId": 2}}
            )  # fmt: skip
            await anyio.sleep(3.2)
            assert len(server.requests_to(ENGINE_PATHS["arxiv"])) == 1
        finally:
            await rypsok.close()


@pytest.mark.req("REQ-OPS-002", "REQ-MCP-002")
@pytest.mark.parametrize("how", ["eof", "sigterm"])
async def test_shutdown_aborts_calls_in_flight_within_the_limit(
    hanging_news: tuple[ProviderServer, pathlib.Path], how: str
) -> None:
    """REQ-OPS-002: EOF or SIGTERM aborts the call in flight and exits within LIM-O1."""
    server, config = hanging_news
    rypsok = await AsyncRawServer.start(config)
    try:
        await rypsok.handshake(HANDSHAKE_PROTOCOL_VERSIONS[-1])
        await rypsok.send(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "web_search", "arguments": {"query": "rust", "category": "code"}}}
        )  # fmt: skip
        await wait_until(lambda: server.requests_to(ENGINE_PATHS["hackernews"]), 5)
        started = time.monotonic()
        if how == "eof":
            await rypsok.process.stdin.aclose()
        else:
            rypsok.process.send_signal(signal.SIGTERM)
        with anyio.fail_after(limits.SHUTDOWN_MS / 1000):
            await rypsok.process.wait()
        assert time.monotonic() - started < limits.SHUTDOWN_MS / 1000
        assert server.hangups, "the request in flight was not aborted"
    finally:
        await rypsok.close()
