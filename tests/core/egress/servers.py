"""Local test servers for egress tests: minimal HTTP/1.1 over asyncio, on loopback only.

`LocalServer` answers each request with a handler and records what reached
it: connections, request lines, headers and the TLS server name (SNI).
`ConnectionRecorder` is a listening socket that only counts connections
(a stand-in for a proxy that must never be used). `blackhole_port` is a
port whose accept queue is full, so a connection attempt hangs.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

HEAD_LIMIT = 64 * 1024


@dataclass
class Seen:
    """One request as it arrived."""

    method: str
    target: str
    headers: list[tuple[str, str]]

    def header(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key.lower() == name.lower()]


# A handler writes the whole response; it returns False to close the connection.
Handler = Callable[[Seen, asyncio.StreamWriter], Awaitable[bool]]


async def respond(
    writer: asyncio.StreamWriter,
    status: int = 200,
    headers: tuple[tuple[str, str], ...] = (),
    body: bytes = b"",
) -> bool:
    head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
    head += [f"{name}: {value}" for name, value in headers]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()
    return True


async def ok(seen: Seen, writer: asyncio.StreamWriter) -> bool:
    return await respond(writer, 200, (("Content-Type", "text/plain"),), b"ok")


@dataclass
class LocalServer:
    handler: Handler = ok
    ssl_context: ssl.SSLContext | None = None
    host: str = "127.0.0.1"
    connections: int = 0
    requests: list[Seen] = field(default_factory=list)
    server_names: list[str | None] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)

    async def __aenter__(self) -> LocalServer:
        if self.ssl_context is not None:
            self.ssl_context.sni_callback = self._record_sni
        # `port` 0 asks for an ephemeral port; a test may ask for a fixed one (443).
        self._server = await asyncio.start_server(
            self._serve, self.host, self.port, ssl=self.ssl_context
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        # Abort rather than close: a TLS close would wait for the client's
        # close_notify, and the client keeps its connection alive in its pool.
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._server.wait_closed()

    def url(self, path: str = "/", *, host: str | None = None, scheme: str | None = None) -> str:
        scheme = scheme or ("https" if self.ssl_context is not None else "http")
        return f"{scheme}://{host or self.host}:{self.port}{path}"

    def _record_sni(self, sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        self.server_names.append(name)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [
                    (name.strip(), value.strip())
                    for name, _, value in (line.partition(":") for line in lines[1:] if line)
                ]
                seen = Seen(method, target, headers)
                self.requests.append(seen)
                if not await self.handler(seen, writer):
                    return
        except (ConnectionError, ssl.SSLError):
            return
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.transport.abort()


@dataclass
class ConnectionRecorder:
    """Counts connections and, for a forward proxy, answers each request with 200."""

    answer: bool = False
    connections: int = 0
    first_lines: list[str] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None

    async def __aenter__(self) -> ConnectionRecorder:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 2)
            self.first_lines.append(head.split(b"\r\n", 1)[0].decode("latin-1"))
            if self.answer:
                await respond(writer, 200, (("Connection", "close"),), b"via proxy")
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()


@contextlib.contextmanager
def blackhole_port() -> Iterator[int]:
    """A loopback port that never completes a handshake: its accept queue is full."""
    listener = socket.socket()
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(4):
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            fillers.append(filler)
        yield port
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
