"""stdio mode's signal handling, on each event loop `serve` can run on.

The fallback tests start `rypsok serve` in a child whose loop refuses
`add_signal_handler` with NotImplementedError, as Windows' Proactor loop does,
and talk to it over real pipes. The child pins the loop it patches
(`[runtime] event_loop` in its configuration file): a patch of asyncio's loop
class proves nothing while the server runs on uvloop's, and the reverse.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import signal
import sys
import time

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from rypsok.core import limits
from tests.mcp.test_stdio import handshake
from tests.support import RawServer

_UVLOOP = pytest.mark.skipif(importlib.util.find_spec("uvloop") is None, reason="no uvloop")
LOOPS = [pytest.param("asyncio"), pytest.param("uvloop", marks=_UVLOOP)]
# The loop class each `[runtime] event_loop` value runs (uvloop.Loop is a Python subclass).
_LOOP_CLASS = {"asyncio": "asyncio.SelectorEventLoop", "uvloop": "uvloop.Loop"}


def _pin_loop(loop: str, directory: pathlib.Path) -> str:
    """The child's first lines: a configuration file naming the loop `serve` will run on."""
    config = directory / "rypsok.toml"
    config.write_text(f'schema_version = 1\n[runtime]\nevent_loop = "{loop}"\n', encoding="utf-8")
    return f"import os, sys\nos.environ['RYPSOK_CONFIG'] = {str(config)!r}\n"


def _refuse_loop_signals(loop: str, directory: pathlib.Path) -> str:
    """The child: the loop's signal support refused as on Windows."""
    module = _LOOP_CLASS[loop].split(".")[0]
    return (
        _pin_loop(loop, directory)
        + f"import {module}\n"
        + "def refuse(self, *args, **kwargs):\n    raise NotImplementedError\n"
        + f"{_LOOP_CLASS[loop]}.add_signal_handler = refuse\n"
    )


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


def _loops_run(events: list[dict[str, object]]) -> list[object]:
    return [e["loop"] for e in events if e["event"] == "event_loop"]


def _serve_then_signal(child: list[str], signum: signal.Signals) -> list[dict[str, object]]:
    """Serve `child`, list tools, send `signum`: its log events, once it exited 0 within LIM-O1."""
    server = RawServer(command=child)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        listed = server.request(1, "tools/list", {})
        assert "web_search" in [tool["name"] for tool in listed["result"]["tools"]]
        started = time.monotonic()
        server.process.send_signal(signum)
        # Exit first, then read: closing stdin earlier would race end of input with the signal.
        server.process.wait(timeout=10)
        assert time.monotonic() - started < limits.SHUTDOWN_MS / 1000
        _, err = server.process.communicate(timeout=10)
        assert server.process.returncode == 0
        return _events(err)
    finally:
        server.kill()


@pytest.mark.req("REQ-OPS-002")
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_with_the_loops_signal_handlers_a_signal_shuts_stdio_down(
    signum: signal.Signals, loop: str, tmp_path: pathlib.Path
) -> None:
    """REQ-OPS-002: on either loop SIGTERM/SIGINT end a serving process with 0 within LIM-O1."""
    child = [sys.executable, "-c", _pin_loop(loop, tmp_path) + _SERVE]
    events = _serve_then_signal(child, signum)
    assert _loops_run(events) == [loop]
    assert [e for e in events if e["event"] == "signal_handlers"] == []  # the loop's own
    assert [e["reason"] for e in events if e["event"] == "shutdown"] == [signum.name.lower()]
    assert events[-1]["event"] == "metrics"


@pytest.mark.req("REQ-OPS-002")
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_without_loop_signal_handlers_stdio_starts_and_a_signal_still_shuts_it_down(
    signum: signal.Signals, loop: str, tmp_path: pathlib.Path
) -> None:
    """REQ-OPS-002: with no add_signal_handler the server answers and exits 0 within LIM-O1."""
    child = [sys.executable, "-c", _refuse_loop_signals(loop, tmp_path) + _SERVE]
    events = _serve_then_signal(child, signum)
    assert _loops_run(events) == [loop]
    modes = [e["mode"] for e in events if e["event"] == "signal_handlers"]
    assert modes == ["signal.signal"]
    shutdowns = [e["reason"] for e in events if e["event"] == "shutdown"]
    assert shutdowns == [signum.name.lower()]
    assert events[-1]["event"] == "metrics"


@pytest.mark.req("REQ-OPS-002", "REQ-MCP-002")
@pytest.mark.parametrize("loop", LOOPS)
def test_without_any_signal_handler_stdio_starts_and_end_of_input_ends_it(
    loop: str, tmp_path: pathlib.Path
) -> None:
    """REQ-OPS-002, REQ-MCP-002: no handler at all is a warning, and EOF still ends the server."""
    child = [
        sys.executable,
        "-c",
        _refuse_loop_signals(loop, tmp_path) + _REFUSE_PLAIN_SIGNALS + _SERVE,
    ]
    server = RawServer(command=child)
    try:
        handshake(server, HANDSHAKE_PROTOCOL_VERSIONS[-1])
        answer = server.request(1, "tools/call", {"name": "engine_status", "arguments": {}})
        assert answer["result"]["isError"] is False
        elapsed, _, err = server.close_stdin_and_wait(timeout_s=10)
        assert server.process.returncode == 0
        assert elapsed < limits.SHUTDOWN_MS / 1000
        events = _events(err)
        assert _loops_run(events) == [loop]
        fallback = [e for e in events if e["event"] == "signal_handlers"]
        assert [(e["mode"], e["level"]) for e in fallback] == [("none", "warning")]
        assert [e["reason"] for e in events if e["event"] == "shutdown"] == ["end_of_input"]
    finally:
        server.kill()
