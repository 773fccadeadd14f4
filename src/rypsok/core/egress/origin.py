"""Engine requests to one origin: HTTP/1.1 over kept-alive, guarded connections.

`EngineOrigin` is the engine pool of one (judgement, scheme, host, port)
when no proxy is configured. Its connections are opened by the pool's
`GuardedBackend` (resolve once, judge every address, connect to a judged
one); `WireBackend` is the backend's inner connector, which makes each
connection an asyncio protocol (`_Wire`) instead of a stream. Answers are
parsed by llhttp (`httptools`) inside the protocol's `data_received`, as
the bytes arrive, and bodies decoded with httpx2's bounded decoders. The
request head arrives as bytes (`client.py` builds it once per request
shape). Through h11 and anyio's streams a kept-alive engine request cost
about 0.3 ms of CPU; the layers it went through and their cost are in
docs/performance.md §16 and §20.1. The agent profile and proxied engine
requests keep the httpx2/httpcore2 path.

What stays as it was, and where:

* the URL is judged by the engine profile before this module sees it, and
  every address at connect time by the guarded backend (`backend.py`),
  which hands `WireBackend` an address literal only; one origin object per
  judgement, so a connection opened under one is never reused under another;
* the request bytes are the ones httpx2 sent through h11 (`client.py`);
* the connect timeout covers TCP and the TLS handshake; the caller's total
  deadline covers everything, the body included;
* the answer is read as h11 read it where a provider could tell: a head of
  at most 100 KiB, 1xx interim answers skipped, a 101 refused, only
  `Transfer-Encoding: chunked` (once) accepted, trailers ignored, header
  values without surrounding blanks, a body delimited by Content-Length,
  chunks or the end of the connection, and a connection closed before the
  answer is complete is a failure. llhttp is stricter than h11 on framing
  that can smuggle a second answer (Content-Length next to chunked,
  repeated Content-Length, obsolete line folding): those are refused;
* the body is decoded as httpx2 decodes it (the same Content-Encoding
  reading, the same decoders, at most 1 MiB of output per step) and counted
  after decoding as it is produced, so a bomb stops at the bound plus one
  step (REQ-SEC-010, REQ-SEC-013);
* a connection goes back to the pool only after a complete exchange both
  sides agree to keep (HTTP/1.1, no `Connection: close`, a delimited body,
  nothing sent past the answer); anything else closes it. An idle
  connection is dropped when it expired, the server sent anything or hung
  up, or its socket became readable.

Exceptions are httpcore2's (network and protocol errors), httpx2's decoding
error, EgressBodyTooLarge and TimeoutError: `client.py` maps them to
`EgressError` kinds, as it does for the other path.
"""

from __future__ import annotations

import asyncio
import select
import ssl
import time
import types
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, cast

import anyio
import httpcore2
from httpx2._decoders import ContentDecoder, IdentityDecoder, MultiDecoder

from rypsok.core.egress.errors import EgressBodyTooLarge

__all__ = ["MAX_HEAD_BYTES", "EngineOrigin", "RawHeaders", "WireBackend", "content_decoder"]

RawHeaders = list[tuple[bytes, bytes]]

# As h11 bounded it for httpcore2: at most 100 KiB of a response head (and
# of its trailers), counted on the fields as parsed and on the bytes taken
# in while the head is incomplete.
MAX_HEAD_BYTES: Final = 100 * 1024
# What h11 strips around a header value (RFC 9110 §5.5: OWS).
_BLANKS: Final = b" \t"


class WireBackend(httpcore2.AsyncNetworkBackend):
    """The guarded backend's connector for engine origins: a protocol per connection.

    It is only ever called by `GuardedBackend` with an address the policy
    judged, as a literal, so asyncio does not resolve anything.
    """

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2 backend interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        try:
            with anyio.fail_after(timeout):
                transport, wire = await loop.create_connection(_Wire, host, port, local_addr=local)
        except TimeoutError:
            raise httpcore2.ConnectTimeout() from None
        except OSError as exc:
            raise httpcore2.ConnectError() from exc
        # asyncio sets TCP_NODELAY on every TCP transport, as anyio did.
        raw = transport.get_extra_info("socket")
        for option in socket_options or ():
            raw.setsockopt(*option)
        return WireStream(wire)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2 backend interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError()  # engine origins are TCP endpoints

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class WireStream(httpcore2.AsyncNetworkStream):
    """The handle `GuardedBackend` returns for a `_Wire`: TLS on top, close, its socket."""

    def __init__(self, wire: _Wire) -> None:
        self.wire = wire

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2 stream interface)
    ) -> httpcore2.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        wire = self.wire
        try:
            with anyio.fail_after(timeout):
                transport = await loop.start_tls(
                    wire.transport, wire, ssl_context, server_hostname=server_hostname
                )
        except TimeoutError:
            raise httpcore2.ConnectTimeout() from None
        except (ssl.SSLError, OSError, ConnectionError) as exc:
            raise httpcore2.ConnectError() from exc
        if transport is None:  # the connection went away during the handshake
            raise httpcore2.ConnectError()
        wire.transport = transport
        return self

    async def aclose(self) -> None:
        self.wire.close()

    def get_extra_info(self, info: str) -> object:
        return self.wire.transport.get_extra_info(info)


class _Wire(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection: the bytes in and out, the answer being read."""

    transport: asyncio.Transport

    def __init__(self) -> None:
        self.usable = False
        self.expires_at = 0.0
        self.descriptor = -1
        # The answer being read, while one is; the reader (and its llhttp
        # parser, which reads consecutive answers) lives as long as the connection.
        self.answer: _Answer | None = None
        self._reader: _Answer | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP connection's transport, asyncio's or uvloop's: uvloop's classes have the
        # methods of `asyncio.Transport` without deriving from it, so no isinstance here.
        self.transport = cast("asyncio.Transport", transport)
        raw = transport.get_extra_info("socket")
        self.descriptor = raw.fileno() if raw is not None else -1
        self.usable = True

    def data_received(self, data: bytes) -> None:
        answer = self.answer
        if answer is None:
            # Nothing was asked: an idle connection that speaks is not reused.
            self.close()
            return
        answer.take(data)

    def eof_received(self) -> bool:
        self.usable = False
        if self.answer is not None:
            self.answer.ended()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.usable = False
        if self.answer is not None:
            self.answer.ended()

    def reusable(self, now: float) -> bool:
        """Idle, open, not expired, and nothing waiting on its socket (a late hang-up)."""
        return self.usable and now < self.expires_at and not _readable(self.descriptor)

    async def exchange(
        self, request: bytes, max_body_bytes: int, deadline: float
    ) -> tuple[int, RawHeaders, bytes]:
        """Write one request and read its answer by the deadline (the loop's clock)."""
        # A transport already closing drops the write; its connection_lost
        # then ends the answer as a failure (`ended`).
        answer = self._reader
        if answer is None:
            answer = self._reader = _Answer(self)
        answer.begin(max_body_bytes)
        self.answer = answer
        # The deadline as a timer on the one wait, not a cancel scope around it:
        # the answer fails with TimeoutError, as the caller's scope would have raised.
        timer = asyncio.get_running_loop().call_at(deadline, answer.expire)
        try:
            self.transport.write(request)
            await answer.done
        finally:
            timer.cancel()
            self.answer = None
        if answer.error is not None:
            raise answer.error
        if not answer.keep:
            self.close()
        return answer.status, answer.headers, b"".join(answer.chunks)

    def close(self) -> None:
        # Abort, as anyio's streams ended engine connections: no TLS
        # close_notify is awaited (httpcore2 wrapped TLS non-standard-compatibly).
        self.usable = False
        if hasattr(self, "transport"):
            self.transport.abort()


class _PastTheAnswer(Exception):
    """The server began another message after the final answer."""


class _Answer:
    """The llhttp parser's callbacks for one answer, and what they gathered."""

    __slots__ = (
        "chunked",
        "chunks",
        "decoder",
        "done",
        "error",
        "fed_bytes",
        "field_bytes",
        "final",
        "headers",
        "keep",
        "length",
        "max_body_bytes",
        "parser",
        "received",
        "status",
        "wire",
    )

    def __init__(self, wire: _Wire) -> None:
        self.wire = wire
        self.parser = _httptools().HttpResponseParser(self)
        self.begin(0)

    def begin(self, max_body_bytes: int) -> None:
        """Ready for the next answer on this connection."""
        self.max_body_bytes = max_body_bytes
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.error: BaseException | None = None
        self.status = 0
        self.headers: RawHeaders = []
        self.fed_bytes = 0  # taken in while the final head is incomplete
        self.field_bytes = 0  # of the fields parsed, trailers included
        self.final = False  # the final (non-1xx) head is in
        self.chunked = False
        self.length = False  # a Content-Length delimits the body
        self.decoder: ContentDecoder = IdentityDecoder()
        self.chunks: list[bytes] = []
        self.received = 0
        self.keep = False

    # -- fed by the protocol ----------------------------------------------------------------

    def take(self, data: bytes) -> None:
        if self.done.done():  # the answer is complete: anything more is past it
            self.keep = False
            return
        if not self.final:
            self.fed_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except (_httptools().HttpParserError, _httptools().HttpParserUpgrade) as exc:
            if self.done.done() and self.error is None:
                self.keep = False  # the answer stands; what came after it is refused
            else:
                self._fail(self.error or httpcore2.RemoteProtocolError(), exc)
        else:
            if not self.final and self.fed_bytes > MAX_HEAD_BYTES:
                self._fail(httpcore2.RemoteProtocolError())

    def expire(self) -> None:
        """The caller's deadline passed before the answer was complete."""
        if not self.done.done():
            self._fail(TimeoutError())

    def ended(self) -> None:
        """The server closed its side: the end of a body read to the close, or a failure."""
        if self.done.done():
            return
        if self.final and not (self.chunked or self.length):
            try:
                self._finish(self.decoder.flush())
            except Exception as exc:  # a decoding error, mapped by client.py
                self._fail(exc)
            return
        self._fail(httpcore2.RemoteProtocolError())

    # -- llhttp's callbacks ------------------------------------------------------------------

    def on_message_begin(self) -> None:
        if self.done.done():
            raise _PastTheAnswer()

    def on_header(self, name: bytes, value: bytes) -> None:
        self.field_bytes += len(name) + len(value) + 4
        if self.field_bytes > MAX_HEAD_BYTES:
            self._refuse(httpcore2.RemoteProtocolError())
        if self.final:
            return  # a trailer: ignored, as h11 handed them apart and nothing read them
        name = name.lower()
        if name == b"transfer-encoding":
            # h11 accepts exactly one field, and only the chunked coding.
            if self.chunked or value.strip(_BLANKS).lower() != b"chunked":
                self._refuse(httpcore2.RemoteProtocolError())
            self.chunked = True
        elif name == b"content-length":
            self.length = True
        self.headers.append((name, value.rstrip(_BLANKS)))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:
            # An interim answer: its fields are dropped, the final head follows.
            # (llhttp itself stops at a 101, which nothing asked for: `take` fails it.)
            self.headers, self.chunked, self.length = [], False, False
            return
        self.final = True
        self.status = status
        if status in (204, 304):
            self.length = True  # no body, whatever the fields say (RFC 9112 §6.3)
        self.decoder = content_decoder(self.headers)

    def on_body(self, body: bytes) -> None:
        try:
            self._count(self.decoder.decode(body))
        except BaseException as exc:
            self._refuse(exc)

    def on_message_complete(self) -> None:
        if not self.final:
            return  # the end of an interim answer
        try:
            self._finish(self.decoder.flush())
        except BaseException as exc:
            self._refuse(exc)
        self.keep = (
            (self.chunked or self.length)
            and self.parser.get_http_version() == "1.1"
            and not _says_close(self.headers)
        )

    # -- the outcome ------------------------------------------------------------------------

    def _count(self, pieces: Iterator[bytes] | list[bytes]) -> None:
        # Counted after decoding, piece by piece: a bomb stops at the bound.
        for piece in pieces:
            self.received += len(piece)
            if self.received > self.max_body_bytes:
                raise EgressBodyTooLarge()
            self.chunks.append(piece)

    def _finish(self, pieces: Iterator[bytes] | list[bytes]) -> None:
        self._count(pieces)
        self.done.set_result(None)

    def _refuse(self, error: BaseException) -> None:
        """From inside a callback: record the error and stop the parser."""
        self.error = error
        raise error

    def _fail(self, error: BaseException, cause: BaseException | None = None) -> None:
        if cause is not None and error.__cause__ is None and error is not cause:
            error.__cause__ = cause
        self.error = error
        self.keep = False
        if not self.done.done():
            self.done.set_result(None)
        self.wire.close()


def _httptools() -> types.ModuleType:
    """llhttp's binding, imported with the first answer: start-up does not pay its 2 ms."""
    import httptools  # noqa: PLC0415 (deferred on purpose)

    return httptools


def _says_close(headers: RawHeaders) -> bool:
    return any(
        b"close" in (token.strip(_BLANKS).lower() for token in value.split(b","))
        for name, value in headers
        if name == b"connection"
    )


def _readable(descriptor: int) -> bool:
    """Whether an idle socket has data or an end of stream waiting: it cannot be reused."""
    if descriptor < 0:
        return True
    if hasattr(select, "poll"):  # poll has no FD_SETSIZE limit
        poller = select.poll()
        poller.register(descriptor, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([descriptor], [], [], 0)[0])


class EngineOrigin:
    """The kept-alive connections of one engine origin under one judgement."""

    def __init__(
        self,
        *,
        scheme: str,
        host: str,
        port: int,
        backend: httpcore2.AsyncNetworkBackend,
        ssl_context: ssl.SSLContext,
        max_connections: int,
        keepalive_expiry_s: float,
    ) -> None:
        self._tls = scheme == "https"
        self._host = host
        self._port = port
        self._backend = backend
        self._ssl_context = ssl_context
        if self._tls:
            # What httpcore2 sets on the same shared context before each handshake.
            ssl_context.set_alpn_protocols(["http/1.1"])
        self._keepalive_expiry_s = keepalive_expiry_s
        # Most recently used last: reused first, while the server still holds it.
        self._idle: list[_Wire] = []
        self._slots = anyio.Semaphore(max_connections, fast_acquire=True)
        self._closed = False

    async def request(
        self, request: bytes, *, max_body_bytes: int, connect_timeout_s: float, total_s: float
    ) -> tuple[int, RawHeaders, bytes]:
        """Send these request bytes; status, header fields (names lower-case), decoded body.

        Everything, a wait for a free connection and the connecting included,
        ends by `total_s` from now with TimeoutError. The cancel scopes that
        enforce it on the waits are entered only when there is a wait (a pool
        at its ceiling, a new connection): a kept-alive request has one timer.
        """
        deadline = asyncio.get_running_loop().time() + total_s
        try:
            self._slots.acquire_nowait()
        except anyio.WouldBlock:
            with anyio.fail_at(deadline):
                await self._slots.acquire()
        try:
            wire = self._idle_connection()
            if wire is None:
                with anyio.fail_at(deadline):
                    wire = await self._connection(connect_timeout_s)
            kept = False
            try:
                answer = await wire.exchange(request, max_body_bytes, deadline)
                kept = wire.usable
            finally:
                if kept and not self._closed:
                    wire.expires_at = time.monotonic() + self._keepalive_expiry_s
                    self._idle.append(wire)
                else:
                    wire.close()
            return answer
        finally:
            self._slots.release()

    def _idle_connection(self) -> _Wire | None:
        now = time.monotonic()
        while self._idle:
            wire = self._idle.pop()
            if wire.reusable(now):
                return wire
            wire.close()
        return None

    async def _connection(self, connect_timeout_s: float) -> _Wire:
        stream = await self._backend.connect_tcp(self._host, self._port, timeout=connect_timeout_s)
        if not isinstance(stream, WireStream):
            await stream.aclose()
            raise TypeError("an engine origin needs a backend over WireBackend")
        if self._tls:
            try:
                # SNI and the certificate check use the name; the socket is
                # connected to the judged address (backend.py).
                await stream.start_tls(
                    self._ssl_context, server_hostname=self._host, timeout=connect_timeout_s
                )
            except BaseException:
                stream.wire.close()
                raise
        return stream.wire

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for wire in idle:
            wire.close()


def content_decoder(headers: Sequence[tuple[bytes, bytes]]) -> ContentDecoder:
    """The decoder httpx2 picks for these header fields (same reading, same classes).

    Content-Encoding values split on commas, stripped and lower-cased;
    `identity` and codings httpx2 does not decode are skipped; decoded in the
    reverse order of application.
    """
    codings = [
        coding.strip().lower()
        for name, value in headers
        if name == b"content-encoding"
        for coding in value.decode("latin-1").split(",")
    ]
    if not codings:
        return IdentityDecoder()
    decoder = MultiDecoder([coding for coding in codings if coding != "identity"])
    if len(decoder.children) == 1:
        return decoder.children[0]
    if decoder.children:
        return decoder
    return IdentityDecoder()
