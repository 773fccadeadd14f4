"""A fake search provider: a real HTTP/1.1 server on 127.0.0.1 for tests.

It runs on the test's own event loop (asyncio streams), binds an ephemeral
port on loopback, and is used as an async context manager:

    async with ProviderServer({"/w/api.php": Route.fixture("wikipedia", "ok.json")}) as server:
        url = server.url("/w/api.php")
        ...
        assert server.requests[0].param("srsearch") == "quantum"

Each path answers with a `Route`: status, headers, body (bytes or a fixture
file), an artificial delay before the status line, a hang (no answer until
the server closes), a trickled body, gzip, or a body cut short of its declared
length. Give a path several routes to answer successive requests in turn; the
last one repeats. Unknown paths answer 404.

Every request is recorded before it is answered: method, path, query
parameters, lower-cased headers and its monotonic arrival time, so tests can
assert on the wire (spacing, User-Agent, absent credential headers). The
paths of complete answers are kept in the order they were written
(`answered`), so a test can show that its delays reordered the answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http
import ssl
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import parse_qsl, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "engines"

_CONTENT_TYPES = {
    ".json": "application/json; charset=utf-8",
    ".xml": "application/atom+xml; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
_MAX_HEAD_BYTES = 64 * 1024


def fixture_path(engine: str, name: str) -> Path:
    """The path of a recorded answer under tests/fixtures/engines/<engine>/."""
    return FIXTURES / engine / name


def load_fixture(engine: str, name: str) -> bytes:
    """The bytes of a recorded answer under tests/fixtures/engines/<engine>/."""
    return fixture_path(engine, name).read_bytes()


@dataclass(frozen=True, slots=True)
class Trickle:
    """Send the body `chunk_bytes` at a time, `interval_s` apart."""

    chunk_bytes: int = 1
    interval_s: float = 0.01


@dataclass(frozen=True, slots=True)
class Route:
    """How one path answers."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | Path = b""
    delay_s: float = 0.0  # before the status line
    hang: bool = False  # read the request, never answer
    trickle: Trickle | None = None
    gzip: bool = False  # compress the body and send Content-Encoding: gzip
    truncate_at: int | None = None  # declare the full length, send this many bytes, close

    @classmethod
    def fixture(
        cls,
        engine: str,
        name: str,
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        content_type: str | None = None,
        delay_s: float = 0.0,
        trickle: Trickle | None = None,
        gzip: bool = False,
        truncate_at: int | None = None,
    ) -> Route:
        """A route serving a fixture file, Content-Type guessed from its suffix."""
        path = fixture_path(engine, name)
        merged = {"content-type": content_type or _CONTENT_TYPES.get(path.suffix, "")}
        merged.update({key.lower(): value for key, value in (headers or {}).items()})
        return cls(
            status=status,
            headers=merged,
            body=path,
            delay_s=delay_s,
            trickle=trickle,
            gzip=gzip,
            truncate_at=truncate_at,
        )

    def payload(self) -> bytes:
        raw = self.body.read_bytes() if isinstance(self.body, Path) else self.body
        return gzip.compress(raw, mtime=0) if self.gzip else raw


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]  # names lower-cased, in arrival order
    arrived: float  # time.monotonic() when the request head was complete
    body: bytes = b""  # what a POST carried (a GET has none)

    def param(self, name: str) -> str | None:
        """The last value of a query parameter."""
        values = [value for key, value in self.query if key == name]
        return values[-1] if values else None

    def header(self, name: str) -> str | None:
        """The last value of a header, by case-insensitive name."""
        wanted = name.lower()
        values = [value for key, value in self.headers if key == wanted]
        return values[-1] if values else None


class ProviderServer:
    """A local HTTP server that answers per path and records what it received."""

    def __init__(
        self,
        routes: Mapping[str, Route | Iterable[Route]] | None = None,
        *,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,  # serve https with this server context
    ) -> None:
        self._routes: dict[str, deque[Route]] = {}
        self._tls = tls
        for path, route in (routes or {}).items():
            self.route(path, *([route] if isinstance(route, Route) else route))
        self._host = host
        self._server: asyncio.Server | None = None
        self._port = 0
        self._handlers: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._closing = asyncio.Event()
        self.requests: list[RecordedRequest] = []
        # Monotonic times at which a client closed a connection whose request hangs:
        # the evidence that rypsok aborted a request in flight.
        self.hangups: list[float] = []
        # Paths in the order their answers were completely written: the order in
        # which answers reached the client, which delays are meant to shuffle.
        self.answered: list[str] = []

    def route(self, path: str, *routes: Route) -> None:
        """Answer `path` with these routes in turn; the last one repeats."""
        if not routes:
            raise ValueError("give at least one route")
        self._routes[path] = deque(routes)

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not running")
        scheme = "http" if self._tls is None else "https"
        return f"{scheme}://{self._host}:{self._port}"

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [request for request in self.requests if request.path == path]

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(
            self._connection, self._host, 0, limit=_MAX_HEAD_BYTES, ssl=self._tls
        )
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # Wake hangs and pauses, close every connection, and let the handlers
        # finish on their own; cancel only a handler that does not.
        self._closing.set()
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        handlers = list(self._handlers)
        if handlers:
            _, pending = await asyncio.wait(handlers, timeout=1.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def _next_route(self, path: str) -> Route:
        routes = self._routes.get(path)
        if routes is None:
            return Route(status=404, headers={"content-type": "text/plain"}, body=b"not found")
        return routes.popleft() if len(routes) > 1 else routes[0]

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self._writers.add(writer)
        try:
            keep_open = not self._closing.is_set()
            while keep_open:
                request = await _read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                keep_open = await self._answer(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # Only __aexit__ cancels a handler, and asyncio would log a cancelled
            # connection callback as an error: end quietly instead.
            pass
        finally:
            if task is not None:
                self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()
            # A handler cancelled by __aexit__ ends here too; ending quietly keeps
            # asyncio from logging the cancellation as an error.
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _answer(
        self, request: RecordedRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Write the route's answer; True when the connection may serve another request."""
        route = self._next_route(request.path)
        if route.hang:
            await self._hang(reader)
            return False
        if route.delay_s and await self._pause(route.delay_s):
            return False
        body = route.payload()
        keep_alive = route.truncate_at is None and request.header("connection") != "close"
        writer.write(_head(route, body, keep_alive=keep_alive))
        await writer.drain()
        sent = body if route.truncate_at is None else body[: route.truncate_at]
        if route.trickle is None:
            writer.write(sent)
            await writer.drain()
        else:
            step = max(1, route.trickle.chunk_bytes)
            for start in range(0, len(sent), step):
                writer.write(sent[start : start + step])
                await writer.drain()
                if await self._pause(route.trickle.interval_s):
                    return False
        self.answered.append(request.path)
        return keep_alive

    async def _hang(self, reader: asyncio.StreamReader) -> None:
        """Answer nothing until the server closes or the client hangs up (recorded)."""
        closing = asyncio.ensure_future(self._closing.wait())
        hangup = asyncio.ensure_future(reader.read(1))
        done, pending = await asyncio.wait({closing, hangup}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        if hangup in done:
            self.hangups.append(time.monotonic())

    async def _pause(self, seconds: float) -> bool:
        """Wait `seconds`, or less when the server closes first; True when it did."""
        try:
            async with asyncio.timeout(seconds):
                await self._closing.wait()
        except TimeoutError:
            return False
        return True


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    """The next request on the connection, or None when the client closed it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    arrived = time.monotonic()
    lines = head.decode("latin-1").split("\r\n")
    method, target, _version = lines[0].split(" ", 2)
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers.append((name.strip().lower(), value.strip()))
    length = next((value for name, value in headers if name == "content-length"), "0")
    body = b""
    if length.isdigit() and int(length) > 0:
        body = await reader.readexactly(int(length))  # a GET has none; a POST its form or JSON
    parts = urlsplit(target)
    return RecordedRequest(
        method=method,
        path=parts.path,
        query=tuple(parse_qsl(parts.query, keep_blank_values=True)),
        headers=tuple(headers),
        arrived=arrived,
        body=body,
    )


def _head(route: Route, body: bytes, *, keep_alive: bool) -> bytes:
    try:
        reason = http.HTTPStatus(route.status).phrase
    except ValueError:
        reason = "Unknown"
    headers = {key.lower(): value for key, value in route.headers.items()}
    headers.setdefault("content-length", str(len(body)))
    if route.gzip:
        headers["content-encoding"] = "gzip"
    headers["connection"] = "keep-alive" if keep_alive else "close"
    lines = [f"HTTP/1.1 {route.status} {reason}"]
    lines += [f"{key}: {value}" for key, value in headers.items() if value]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
