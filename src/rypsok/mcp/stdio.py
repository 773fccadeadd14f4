"""MCP over stdio (REQ-MCP-002, REQ-OPS-002).

Standard output carries MCP messages only: nothing is written before the SDK's
claim of the pipe (`stdio_pipes.py`) diverts fd 1, and logs go to stderr. End of input ends the
server loop, which cancels every call in flight. SIGTERM cancels the serving
scope the same way; because the SDK's own transport (used where the pipes
cannot be served on the event loop, `stdio_pipes.py`) reads stdin in a worker
thread that no cancellation can interrupt, the process then ends itself once
the calls are aborted, well within LIM-O1, instead of waiting for input that
may never come.
Either way the last line before the exit is the `metrics` summary (REQ-OBS-008).

Where the event loop cannot watch signals (asyncio's Proactor loop on Windows
raises NotImplementedError from `add_signal_handler`), the server still starts:
SIGTERM, SIGINT and SIGBREAK get plain `signal.signal` handlers that wake the
loop, and where even those are refused it runs without one and end of input
remains the way to stop it (docs/assurance.md, risk R-3).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from types import FrameType

import anyio

from rypsok.core import limits, logs
from rypsok.core.services import Services
from rypsok.mcp.heap import serving_heap
from rypsok.mcp.server import build_server
from rypsok.mcp.stdio_pipes import stdio_streams

log = logging.getLogger("rypsok.serve")

# Time the aborted calls get to unwind after SIGTERM before the process ends.
ABORT_GRACE_S = limits.SHUTDOWN_MS / 1000 / 4


async def _serve(services: Services, serving: anyio.CancelScope, done: anyio.Event) -> None:
    server = build_server(services)
    try:
        with serving, serving_heap():
            async with stdio_streams() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            logs.event(log, "shutdown", reason="end_of_input")
    finally:
        with anyio.move_on_after(ABORT_GRACE_S, shield=True):
            await services.aclose()
        services.log_metrics("shutdown")  # before `done`: SIGTERM ends the process after it
        done.set()


def _shutdown_signals() -> tuple[signal.Signals, ...]:
    # SIGBREAK is Windows' Ctrl+Break; it exists only there.
    extra = getattr(signal, "SIGBREAK", None)
    return (signal.SIGTERM, signal.SIGINT, *((extra,) if extra is not None else ()))


async def _shut_down(signum: int, serving: anyio.CancelScope, done: anyio.Event) -> None:
    logs.event(log, "shutdown", reason=signal.Signals(signum).name.lower())
    serving.cancel()
    with anyio.move_on_after(ABORT_GRACE_S):
        await done.wait()
    logs.flush()  # the lines held for this turn too: os._exit skips logging.shutdown
    os._exit(0)


async def _end_on_signal(serving: anyio.CancelScope, done: anyio.Event) -> None:
    with contextlib.ExitStack() as stack:
        try:
            signals = stack.enter_context(anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT))
        except NotImplementedError:
            # asyncio's Proactor loop (Windows) has no add_signal_handler.
            await _end_on_plain_signal(serving, done)
            return
        async for signum in signals:
            await _shut_down(signum, serving, done)


async def _end_on_plain_signal(serving: anyio.CancelScope, done: anyio.Event) -> None:
    """The fallback where the loop cannot watch signals: `signal.signal` wakes the loop.

    The handler runs in the main thread between two bytecodes, possibly while the
    loop waits in its selector, so it only hands the signal number to the loop
    through `call_soon_threadsafe` (which also wakes the selector); the shutdown
    itself runs as a task, exactly as with the loop's own handlers. Where even
    `signal.signal` refuses (not the main thread, a host that forbids it), the
    server runs without a signal handler and end of input still ends it.
    """
    loop = asyncio.get_running_loop()
    received: list[int] = []
    wake = anyio.Event()

    def deliver(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        loop.call_soon_threadsafe(wake.set)

    try:
        for sig in _shutdown_signals():
            signal.signal(sig, deliver)
    except (ValueError, OSError) as exc:
        logs.event(log, "signal_handlers", logging.WARNING, mode="none", problem=str(exc))
        return
    logs.event(log, "signal_handlers", mode="signal.signal")
    await wake.wait()
    await _shut_down(received[0], serving, done)


async def serve_stdio(services: Services) -> None:
    serving = anyio.CancelScope()
    done = anyio.Event()
    async with anyio.create_task_group() as group:
        group.start_soon(_end_on_signal, serving, done)
        group.start_soon(services.report_metrics)
        await _serve(services, serving, done)
        group.cancel_scope.cancel()
