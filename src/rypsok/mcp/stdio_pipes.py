"""stdin and stdout read and written on the event loop, under the SDK's own claim.

The SDK's `stdio_server()` serves the process's pipes through `anyio.wrap_file`:
every line read and every message written is a hand-off to a worker thread,
its wake-up and the GIL moving back (about a fifth to a third of a search's
busy time over stdio, docs/performance.md §13). Given streams of its caller,
it skips that. This module gives it streams that read and write the pipes on
the event loop, while keeping everything else of the SDK's transport:

* the claim of fds 0 and 1 is the SDK's own (`_claim_fd`): while serving, fd 0
  reads the null device and fd 1 writes to stderr, so stray output never
  reaches the wire, and both are restored afterwards;
* the wire is reopened through /proc/self/fd as a new open file description,
  so it can be non-blocking without changing the mode of a description that
  another process (or stderr, after `2>&1`) shares;
* lines are decoded as the SDK's text wrapper decodes them: UTF-8 with
  replacement, universal newlines; messages are encoded as UTF-8, strictly.

Only where both are pipes on Linux; anything else (a terminal, a file, a
socket, another system, a private SDK helper that moved) gets the SDK's own
transport unchanged.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import io
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import anyio
from mcp.server import stdio as sdk_stdio

from rypsok.core import logs

log = logging.getLogger("rypsok.serve")

# Read at most this much per system call; a message may span several reads.
READ_CHUNK = 1 << 16


class LoopLines:
    """The lines of a pipe, read on the event loop, as the SDK iterates its stdin."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._decoder = io.IncrementalNewlineDecoder(utf8, translate=True)
        self._partial = ""
        self._lines: collections.deque[str] = collections.deque()
        self._ended = False

    def __aiter__(self) -> LoopLines:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            if self._ended:
                if not self._partial:
                    raise StopAsyncIteration
                last, self._partial = self._partial, ""
                return last
            await self._read()
        return self._lines.popleft()

    async def _read(self) -> None:
        try:
            chunk = os.read(self._fd, READ_CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(self._fd)
            return
        self._ended = not chunk
        pieces = (self._partial + self._decoder.decode(chunk, final=self._ended)).split("\n")
        self._partial = pieces.pop()
        self._lines.extend(piece + "\n" for piece in pieces)


class LoopWriter:
    """Messages written to a non-blocking pipe on the event loop, whole and in order."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            data = data[written:]

    async def flush(self) -> None:
        """Nothing is buffered: `write` returns once the pipe holds the message."""


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def _reopened(fd: int, mode: int) -> int:
    """A new, non-blocking open file description of the pipe behind `fd`."""
    return os.open(f"/proc/self/fd/{fd}", mode | os.O_NONBLOCK | os.O_CLOEXEC)


def _claim() -> tuple[LoopLines, LoopWriter, Callable[[], None]] | None:
    """The loop streams over the claimed wire, and how to give it back; None to use the SDK's."""
    if not sys.platform.startswith("linux") or not (_is_pipe(0) and _is_pipe(1)):
        return None
    try:
        claim_fd = sdk_stdio._claim_fd
        wire_in, release_in = claim_fd(0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion)
        wire_out, release_out = claim_fd(1, sys.stdout, "wb", sdk_stdio._open_stdout_diversion)
    except (AttributeError, TypeError):
        return None
    opened: list[int] = []

    def release() -> None:
        for fd in opened:
            os.close(fd)
        for give_back in (release_out, release_in):
            if give_back is not None:
                give_back()

    try:
        in_place = wire_in is sys.stdin.buffer or wire_out is sys.stdout.buffer
        if in_place:
            raise OSError("the wire is served in place")
        opened.append(_reopened(wire_in.fileno(), os.O_RDONLY))
        opened.append(_reopened(wire_out.fileno(), os.O_WRONLY))
    except OSError:
        release()
        return None
    return LoopLines(opened[0]), LoopWriter(opened[1]), release


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's `stdio_server()` streams, over loop pipes where they can be had."""
    claimed = _claim()
    logs.event(log, "stdio_transport", pipes="sdk_threads" if claimed is None else "event_loop")
    if claimed is None:
        async with sdk_stdio.stdio_server() as streams:
            yield streams
        return
    lines, writer, release = claimed
    try:
        async with sdk_stdio.stdio_server(
            cast("anyio.AsyncFile[str]", lines), cast("anyio.AsyncFile[str]", writer)
        ) as streams:
            yield streams
    finally:
        release()
