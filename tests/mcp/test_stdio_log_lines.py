"""A call's log lines are on stderr before its answer is on stdout (docs/performance.md §26).

rypsok holds the lines of one turn of its event loop and writes them at once
(`logs.TurnLines`); the end of each call writes what is held, so the lines a
call caused precede its answer. With stderr sent into stdout's pipe (`2>&1`),
the order in the one pipe is the order of the writes.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
from typing import Any

import anyio
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from tests.fakes.provider_server import ProviderServer
from tests.mcp.test_event_loop import LOOPS
from tests.mcp.test_search_stdio import routes
from tests.support import SERVE, AsyncRawServer, child_env, engines_toml, write_config


def _kind(line: bytes) -> str:
    message: dict[str, Any] = json.loads(line)
    if "jsonrpc" in message:
        return f"answer {message.get('id')}"
    return str(message["event"])


@pytest.mark.req("REQ-OBS-005", "REQ-MCP-002")
@pytest.mark.parametrize("loop", LOOPS)
async def test_each_calls_lines_precede_its_answer_in_one_pipe(
    tmp_path: pathlib.Path, loop: str
) -> None:
    async with ProviderServer(routes()) as server:
        config = write_config(
            tmp_path, engines_toml(server.base_url) + f'[runtime]\nevent_loop = "{loop}"\n'
        )
        process = await anyio.open_process(SERVE, stderr=subprocess.STDOUT, env=child_env(config))
        rypsok = AsyncRawServer(process)
        try:
            with anyio.fail_after(60):
                await rypsok.handshake(HANDSHAKE_PROTOCOL_VERSIONS[-1])
                for number in (1, 2):
                    params = {"name": "web_search", "arguments": {"query": f"quantum {number}"}}
                    reply = await rypsok.request(number, "tools/call", params)
                    assert reply["result"]["isError"] is False, reply
        finally:
            await rypsok.close()
    kinds = [_kind(line) for line in rypsok.stdout_lines]
    calls = [k for k in kinds if k == "call" or (k.startswith("answer ") and k != "answer 0")]
    assert calls == ["call", "answer 1", "call", "answer 2"], kinds
    first_answer = kinds.index("answer 1")
    assert "engine_request" in kinds[:first_answer]
    assert "engine_request" in kinds[first_answer : kinds.index("answer 2")]
