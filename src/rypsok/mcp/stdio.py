"""MCP over stdio (REQ-MCP-002, REQ-OPS-002).

Standard output carries MCP messages only: nothing is written before the SDK's
`stdio_server()` owns the pipe, and logs go to stderr. End of input ends the
server loop, which cancels every call in flight. SIGTERM cancels the serving
scope the same way; because the SDK reads stdin in a worker thread that no
cancellation can interrupt, the process then ends itself once the calls are
aborted, well within LIM-O1, instead of waiting for input that may never come.
Either way the last line before the exit is the `metrics` summary (REQ-OBS-008).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys

import anyio
from mcp.server.stdio import stdio_server

from rypsok.core import limits, logs
from rypsok.core.services import Services
from rypsok.mcp.server import build_server

log = logging.getLogger("rypsok.serve")

# Time the aborted calls get to unwind after SIGTERM before the process ends.
ABORT_GRACE_S = limits.SHUTDOWN_MS / 1000 / 4


async def _serve(services: Services, serving: anyio.CancelScope, done: anyio.Event) -> None:
    server = build_server(services)
    # Issue 14 item 2: what start-up built (modules, models, tables) lives for the whole
    # process; frozen, no full collection walks it again, which took ~30 ms per pass.
    gc.freeze()
    try:
        with serving:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            logs.event(log, "shutdown", reason="end_of_input")
    finally:
        with anyio.move_on_after(ABORT_GRACE_S, shield=True):
            await services.aclose()
        services.log_metrics("shutdown")  # before `done`: SIGTERM ends the process after it
        done.set()


async def _end_on_signal(serving: anyio.CancelScope, done: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            logs.event(log, "shutdown", reason=signal.Signals(signum).name.lower())
            serving.cancel()
            with anyio.move_on_after(ABORT_GRACE_S):
                await done.wait()
            sys.stderr.flush()
            os._exit(0)


async def serve_stdio(services: Services) -> None:
    serving = anyio.CancelScope()
    done = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_end_on_signal, serving, done)
        group.start_soon(services.report_metrics)
        await _serve(services, serving, done)
        group.cancel_scope.cancel()
