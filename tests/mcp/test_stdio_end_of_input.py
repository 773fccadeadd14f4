"""End of input over the loop's pipes: calls in flight are answered, and the answers flushed."""

from __future__ import annotations

import json
import pathlib

import anyio
import mcp_types as types
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rypsok.core import limits
from tests.fakes.provider_server import ProviderServer, Route
from tests.mcp.test_search_stdio import routes
from tests.support import ENGINE_PATHS, AsyncRawServer, engines_toml, wait_until, write_config


@pytest.mark.req("REQ-MCP-002", "REQ-OPS-002")
async def test_end_of_input_answers_each_call_in_flight_before_the_exit(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-MCP-002, REQ-OPS-002: after EOF each call in flight gets the SDK's closing error.

    The calls wait on an engine that never answers; end of input cancels them,
    the session answers each with CONNECTION_CLOSED within LIM-O1, and those
    answers reach stdout, whole, before the process exits.
    """
    async with ProviderServer(routes(hackernews=Route(hang=True))) as server:
        config = write_config(tmp_path, engines_toml(server.base_url))
        rypsok = await AsyncRawServer.start(config)
        try:
            await rypsok.handshake(HANDSHAKE_PROTOCOL_VERSIONS[-1])
            for request_id in (3, 4):
                call = {"name": "web_search", "arguments": {"query": f"rust {request_id}",
                                                            "category": "code"}}  # fmt: skip
                await rypsok.send(
                    {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}
                )
            await wait_until(lambda: server.requests_to(ENGINE_PATHS["hackernews"]), 10)
            await anyio.sleep(0.2)  # the second call is in flight too, waiting for its turn
            await rypsok.process.stdin.aclose()
            with anyio.fail_after(limits.SHUTDOWN_MS / 1000):
                answers = [await rypsok.receive(), await rypsok.receive()]
            with anyio.fail_after(10):  # LIM-O1 for the exit: test_search_stdio's shutdown test
                await rypsok.process.wait()
        finally:
            await rypsok.close()
    assert rypsok.process.returncode == 0
    assert sorted(answer["id"] for answer in answers) == [3, 4]
    for answer in answers:
        assert answer["error"] == {"code": types.CONNECTION_CLOSED, "message": "Connection closed"}
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rypsok.stdout_lines)
