"""The SDK's session served straight from stdin and stdout, on the event loop.

The SDK's `stdio_server()` serves the process's pipes through `anyio.wrap_file`:
every line read and every message written is a hand-off to a worker thread,
its wake-up and the GIL moving back (docs/performance.md §13). It also puts a
task and a memory stream on each side of the session: a reader task parses
each line and hands it on, a writer task takes each answer and writes it
(§22.3: two task wake-ups per call, and the read side waited for each line by
registering the pipe with the selector and removing it again). The SDK's
session accepts any pair of streams of `SessionMessage` (its `ReadStream` and
`WriteStream` protocols), so this module gives it two that touch the pipes
themselves, keeping everything the SDK's transport promises:

* the claim of fds 0 and 1 is the SDK's own (`_claim_fd`): while serving, fd 0
  reads the null device and fd 1 writes to stderr, so stray output never
  reaches the wire, and both are restored afterwards;
* the wire is reopened through /proc/self/fd as a new open file description,
  so it can be non-blocking without changing the mode of a description that
  another process (or stderr, after `2>&1`) shares;
* framing and refusal are the SDK's: lines decoded as its text wrapper decodes
  them (UTF-8 with replacement, universal newlines, a last line without a
  newline at end of input), each parsed by the SDK's own adapter; a line that
  does not parse is handed on as the exception, which the session drops, as
  with the SDK's reader;
* each message is written as the SDK's writer writes it (`model_dump_json` by
  alias, unset fields left out, one newline, UTF-8 strictly), whole and in the
  order sent: a message the pipe cannot take at once is queued entire and the
  rest written when the pipe drains, so a sender cancelled while it waits can
  never leave half a frame on the wire;
* reading stops while more than a chunk's worth of lines waits for the
  session (so at most two chunks are read ahead), as the SDK's unbuffered
  stream stopped its reader; end of input ends the stream.

The loop watches each pipe with `add_reader`/`add_writer`, which asyncio's
selector loops and uvloop both implement. Only where both are pipes on Linux;
anything else (a terminal, a file, a socket, another system, a private SDK
helper that moved) gets the SDK's own transport unchanged.
"""

from __future__ import annotations

import asyncio
import codecs
import collections
import contextlib
import io
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.server import stdio as sdk_stdio
from mcp.shared.message import SessionMessage

from rypsok.core import logs

log = logging.getLogger("rypsok.serve")

# Read at most this much per system call; a message may span several reads.
# Reading also pauses while lines of more than this many characters wait.
READ_CHUNK = 1 << 16


class PipeMessages(anyio.abc.AsyncResource):
    """The session's read stream: the messages of a non-blocking pipe, one per line.

    A context manager through `AsyncResource`: leaving it closes the stream.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._decoder = io.IncrementalNewlineDecoder(utf8, translate=True)
        self._partial = ""
        self._lines: collections.deque[str] = collections.deque()
        self._waiting_chars = 0  # characters in `_lines`, for the pause
        self._ended = False
        self._failure: OSError | None = None
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watched = False
        self._wake: asyncio.Future[None] | None = None

    def __aiter__(self) -> PipeMessages:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> SessionMessage | Exception:
        """The next message, or the error its line raised; EndOfStream after the last."""
        line = await self._line()
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception as exc:  # the SDK's reader hands on whatever the adapter raises
            return exc
        return SessionMessage(message)

    async def _line(self) -> str:
        while not self._lines:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._failure is not None:
                raise self._failure
            if self._ended:
                if not self._partial:
                    raise anyio.EndOfStream
                last, self._partial = self._partial, ""
                return last
            await self._readable()
        line = self._lines.popleft()
        self._waiting_chars -= len(line)
        return line

    async def _readable(self) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        if not self._watched:
            loop.add_reader(self._fd, self._on_readable)
            self._watched = True
        self._wake = loop.create_future()
        try:
            await self._wake
        finally:
            self._wake = None

    def _on_readable(self) -> None:
        """The loop's callback: read what the pipe holds, and wake the session's reader."""
        try:
            chunk = os.read(self._fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError as exc:
            self._failure = exc
            chunk = b""
        self._ended = not chunk
        pieces = (self._partial + self._decoder.decode(chunk, final=self._ended)).split("\n")
        self._partial = pieces.pop()
        for piece in pieces:
            self._lines.append(piece + "\n")
            self._waiting_chars += len(piece) + 1
        if self._ended or self._waiting_chars > READ_CHUNK:
            self._unwatch()  # resumed by `_readable` once the session took every line
        if self._lines or self._ended:
            wake = self._wake
            if wake is not None and not wake.done():
                wake.set_result(None)

    def _unwatch(self) -> None:
        if self._watched and self._loop is not None:
            self._loop.remove_reader(self._fd)
        self._watched = False

    def close(self) -> None:
        self._closed = True
        self._unwatch()

    async def aclose(self) -> None:
        self.close()


class PipeSender(anyio.abc.AsyncResource):
    """The session's write stream: each message one line on a non-blocking pipe, in order.

    A context manager through `AsyncResource`: leaving it is `aclose`.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._queued = bytearray()  # what the pipe could not take yet, whole messages
        self._sent = 0  # bytes handed to the pipe so far
        self._accepted = 0  # bytes of every message accepted so far
        self._failure: OSError | None = None
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drained: list[tuple[int, asyncio.Future[None]]] = []

    async def send(self, item: SessionMessage, /) -> None:
        """Write the message; return once the pipe holds all of it."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._failure is not None:
            raise anyio.BrokenResourceError from self._failure
        json = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        data = (json + "\n").encode("utf-8")
        self._accepted += len(data)
        if self._queued:
            self._queued += data
        else:
            self._write_now(data)
        if self._sent < self._accepted:
            await self._until_sent(self._accepted)
        elif self._failure is not None:
            raise anyio.BrokenResourceError from self._failure

    def _write_now(self, data: bytes) -> None:
        try:
            written = os.write(self._fd, data)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            self._fail(exc)
            return
        self._sent += written
        if written < len(data):
            self._queued += memoryview(data)[written:]
            self._watch()

    def _watch(self) -> None:
        loop = self._loop or asyncio.get_running_loop()
        self._loop = loop
        loop.add_writer(self._fd, self._on_writable)

    def _on_writable(self) -> None:
        """The loop's callback: write what the pipe takes of the queue, and wake who waits."""
        try:
            written = os.write(self._fd, self._queued)
        except BlockingIOError:
            return
        except OSError as exc:
            self._fail(exc)
            return
        del self._queued[:written]
        self._sent += written
        if not self._queued and self._loop is not None:
            self._loop.remove_writer(self._fd)
        self._wake_senders()

    def _fail(self, exc: OSError) -> None:
        """The reader of the pipe is gone: what is queued can never be written."""
        if self._failure is None:
            logs.event(log, "stdout_closed", logging.WARNING, problem=str(exc))
        self._failure = exc
        if self._queued and self._loop is not None:
            self._loop.remove_writer(self._fd)
        self._queued.clear()
        self._wake_senders()

    def _wake_senders(self) -> None:
        waiting = []
        for upto, future in self._drained:
            if self._failure is None and self._sent < upto:
                waiting.append((upto, future))
            elif not future.done():
                future.set_result(None)
        self._drained = waiting

    async def _until_sent(self, upto: int) -> None:
        if self._failure is None:
            loop = self._loop or asyncio.get_running_loop()
            future: asyncio.Future[None] = loop.create_future()
            self._drained.append((upto, future))
            await future
        if self._failure is not None:
            raise anyio.BrokenResourceError from self._failure

    async def flushed(self) -> None:
        """Wait until every message accepted so far is on the pipe (or the pipe failed)."""
        if self._sent < self._accepted:
            with contextlib.suppress(anyio.BrokenResourceError):
                await self._until_sent(self._accepted)

    def stop(self) -> None:
        """Stop writing: what is still queued is dropped with the pipe."""
        if self._queued and self._loop is not None:
            self._loop.remove_writer(self._fd)
        self._queued.clear()

    async def aclose(self) -> None:
        """No more messages; the queued ones are still written (`flushed`)."""
        self._closed = True


def _is_pipe(fd: int) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        return False


def _reopened(fd: int, mode: int) -> int:
    """A new, non-blocking open file description of the pipe behind `fd`."""
    return os.open(f"/proc/self/fd/{fd}", mode | os.O_NONBLOCK | os.O_CLOEXEC)


def _claim() -> tuple[PipeMessages, PipeSender, Callable[[], None]] | None:
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
    return PipeMessages(opened[0]), PipeSender(opened[1]), release


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The session's streams: over the loop's pipes where they can be had, else the SDK's."""
    claimed = _claim()
    logs.event(log, "stdio_transport", pipes="sdk_threads" if claimed is None else "event_loop")
    if claimed is None:
        async with sdk_stdio.stdio_server() as streams:
            yield streams
        return
    messages, sender, release = claimed
    try:
        yield messages, sender
        await sender.flushed()  # the answers the session wrote before it ended
    finally:
        messages.close()
        sender.stop()
        release()
