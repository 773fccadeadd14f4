"""stdio mode where the event loop cannot watch signals (Windows' Proactor loop).

Each test starts `rypsok serve` in a child whose asyncio loop refuses
`add_signal_handler` with NotImplementedError, as the Proactor loop does, and
talks to it over real pipes.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rypsok.core import limits
from tests.mcp.test_stdio import handshake
from tests.support import RawServer

# The child: the loop's signal support refused as on Windows, then `rypsok serve`.
_REFUSE_LOOP_SIGNALS = """
import asyncio, sys
def refuse(self, *args, **kwargs):
    raise NotImplementedError
asyncio.SelectorEventLoop.add_signal_handler = refuse
"""
# ...and `signal.signal` refused too, as outside the main thread.
_REFUSE_PLAIN_SIGNALS = """
import signal
def refuse_plain(*args, **kwargs):
    raise ValueError("signal only works in main thread of the main interpreter")
signal.signal = refuse_plain
"""
_SERVE = """
from rypsok.cli import main
sys.exit(main(["serve"]))
"""


def _events(err: bytes) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.decode().splitlines() if line.strip()]


@pytest.mark.req("REQ-OPS-002")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_without_loop_signal_handlers_stdio_starts_and_a_signal_still_shuts_it_down(
    signum: signal.Signals,
) -> None:
    """REQ-OPS-002: with no add_signal_handler the server answers and exits 0 within LIM-O1."""
    child = [sys.executable, "-c", _REFUSE_LOOP_SIGNALS + _SERVE]
    server = RawServer(command=child)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        listed = server.request(1, "tools/list", {})
        assert "web_search" in [tool["name"] for tool in listed["result"]["tools"]]
        started = time.monotonic()
        server.process.send_signal(signum)
        _, err = server.process.communicate(timeout=10)
        assert time.monotonic() - started < limits.SHUTDOWN_MS / 1000
        assert server.process.returncode == 0
        events = _events(err)
        modes = [e["mode"] for e in events if e["event"] == "signal_handlers"]
        assert modes == ["signal.signal"]
        shutdowns = [e["reason"] for e in events if e["event"] == "shutdown"]
        assert shutdowns == [signum.name.lower()]
        assert events[-1]["event"] == "metrics"
    finally:
        server.kill()


@pytest.mark.req("REQ-OPS-002", "REQ-MCP-002")
def test_without_any_signal_handler_stdio_starts_and_end_of_input_ends_it() -> None:
    """REQ-OPS-002, REQ-MCP-002: no handler at all is a warning, and EOF still ends the server."""
    child = [sys.executable, "-c", _REFUSE_LOOP_SIGNALS + _REFUSE_PLAIN_SIGNALS + _SERVE]
    server = RawServer(command=child)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        answer = server.request(1, "tools/call", {"name": "engine_status", "arguments": {}})
        assert answer["result"]["isError"] is False
        elapsed, _, err = server.close_stdin_and_wait(timeout_s=10)
        assert server.process.returncode == 0
        assert elapsed < limits.SHUTDOWN_MS / 1000
        events = _events(err)
        fallback = [e for e in events if e["event"] == "signal_handlers"]
        assert [(e["mode"], e["level"]) for e in fallback] == [("none", "warning")]
        assert [e["reason"] for e in events if e["event"] == "shutdown"] == ["end_of_input"]
    finally:
        server.kill()
