"""Engine requests to one origin: HTTP/1.1 over kept-alive, guarded connections.

`EngineOrigin` is the engine pool of one (judgement, scheme, host, port)
when no proxy is configured. It speaks HTTP/1.1 with h11 over connections
opened by the pool's `GuardedBackend` (resolve once, judge every address,
connect to a judged one), and decodes bodies with httpx2's bounded decoders.
It replaces, for this one profile, httpx2's request and response objects and
httpcore2's pool: a kept-alive engine request cost about 0.6 ms of CPU
through those layers and 0.2 ms here (docs/performance.md §16). The agent
profile and proxied engine requests keep the httpx2/httpcore2 path.

What stays as it was, and where:

* the URL is judged by the engine profile before this module sees it, and
  every address at connect time by the backend (`backend.py`); one origin
  object per judgement, so a connection opened under one is never reused
  under another;
* the request is exactly what httpx2 sent: Host first, the caller's headers
  in their order, a Content-Length for a body; no cookie, no redirect (a 3xx
  is returned), nothing from the environment (the TLS context is the
  client's, built without `trust_env`);
* the connect timeout covers TCP and the TLS handshake; the caller's total
  deadline covers everything, the body included;
* the body is decoded as httpx2 decodes it (the same Content-Encoding
  reading, the same decoders, at most 1 MiB of output per step) and counted
  after decoding as it is produced, so a bomb stops at the bound plus one
  step (REQ-SEC-010, REQ-SEC-013);
* a connection goes back to the pool only after a complete exchange both
  sides agree to keep; anything else (an error, a cancellation, a body past
  the bound, `Connection: close`) closes it. An idle connection is dropped
  when it expired or its socket became readable (the server hung up).

Exceptions are the libraries' (httpcore2's network errors, h11's protocol
errors, httpx2's decoding error, TimeoutError): `client.py` maps them to
`EgressError` kinds, as it does for the other path.
"""

from __future__ import annotations

import select
import ssl
import time
from collections.abc import Iterator, Sequence
from typing import Final, Protocol

import anyio
import h11
import httpcore2
from httpx2._decoders import ContentDecoder, IdentityDecoder, MultiDecoder

from rypsok.core.egress.errors import EgressBodyTooLarge

__all__ = ["EngineOrigin", "RawHeaders"]

RawHeaders = list[tuple[bytes, bytes]]

# As httpcore2 reads: 64 KiB per receive, at most 100 KiB of an incomplete head.
READ_BYTES: Final = 64 * 1024
MAX_HEAD_BYTES: Final = 100 * 1024


class _Connection:
    """One kept-alive HTTP/1.1 connection and its protocol state."""

    __slots__ = ("expires_at", "protocol", "socket", "stream")

    def __init__(self, stream: httpcore2.AsyncNetworkStream) -> None:
        self.stream = stream
        self.protocol = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD_BYTES)
        # The raw socket, read once: asking the stream for it on every reuse
        # check builds anyio's attribute table each time.
        raw = stream.get_extra_info("socket")
        # asyncio hands out a TransportSocket, a socket-like view: only its fd is used.
        self.socket: _Socket | None = raw if callable(getattr(raw, "fileno", None)) else None
        self.expires_at = 0.0

    def reusable(self, now: float) -> bool:
        """Idle, not expired, and the server has not hung up (its socket is not readable)."""
        return now < self.expires_at and not _readable(self.socket)

    async def close(self) -> None:
        # Shielded: a cancelled request still closes its socket.
        with anyio.CancelScope(shield=True):
            await self.stream.aclose()


class _Socket(Protocol):
    def fileno(self) -> int: ...


def _readable(sock: _Socket | None) -> bool:
    """Whether an idle socket has data or an end of stream waiting: it cannot be reused."""
    descriptor = -1 if sock is None else sock.fileno()
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
        self._idle: list[_Connection] = []
        self._slots = anyio.Semaphore(max_connections, fast_acquire=True)
        self._closed = False

    async def request(
        self,
        method: bytes,
        target: bytes,
        headers: RawHeaders,
        body: bytes,
        *,
        max_body_bytes: int,
        connect_timeout_s: float,
    ) -> tuple[int, RawHeaders, bytes]:
        """Status, header fields (names lower-case) and the decoded, bounded body."""
        async with self._slots:
            connection = await self._connection(connect_timeout_s)
            kept = False
            try:
                answer = await _exchange(
                    connection, method, target, headers, body=body, max_body_bytes=max_body_bytes
                )
                protocol = connection.protocol
                kept = protocol.our_state is h11.DONE and protocol.their_state is h11.DONE
            finally:
                if kept and not self._closed:
                    connection.protocol.start_next_cycle()
                    connection.expires_at = time.monotonic() + self._keepalive_expiry_s
                    self._idle.append(connection)
                else:
                    await connection.close()
            return answer

    async def _connection(self, connect_timeout_s: float) -> _Connection:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable(now):
                return connection
            await connection.close()
        stream = await self._backend.connect_tcp(self._host, self._port, timeout=connect_timeout_s)
        if self._tls:
            try:
                # SNI and the certificate check use the name; the socket is
                # connected to the judged address (backend.py).
                stream = await stream.start_tls(
                    self._ssl_context, server_hostname=self._host, timeout=connect_timeout_s
                )
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                raise
        return _Connection(stream)

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()


async def _exchange(
    connection: _Connection,
    method: bytes,
    target: bytes,
    headers: RawHeaders,
    *,
    body: bytes,
    max_body_bytes: int,
) -> tuple[int, RawHeaders, bytes]:
    protocol = connection.protocol
    data = protocol.send(h11.Request(method=method, target=target, headers=headers))
    if body:
        data = (data or b"") + (protocol.send(h11.Data(data=body)) or b"")
    data = (data or b"") + (protocol.send(h11.EndOfMessage()) or b"")
    await connection.stream.write(data)
    event = await _next_event(connection)
    while not isinstance(event, h11.Response):  # 1xx interim answers are skipped
        if not isinstance(event, h11.InformationalResponse):
            raise h11.RemoteProtocolError("no response head")
        event = await _next_event(connection)
    response_headers: RawHeaders = list(event.headers)
    decoder = content_decoder(response_headers)
    chunks: list[bytes] = []
    received = 0
    while True:
        part = await _next_event(connection)
        if isinstance(part, h11.Data):
            pieces: Iterator[bytes] = decoder.decode(bytes(part.data))
        elif isinstance(part, h11.EndOfMessage):
            pieces = decoder.flush()
        else:
            raise h11.RemoteProtocolError("unexpected event in a response body")
        # Counted after decoding, piece by piece: a bomb stops at the bound.
        for piece in pieces:
            received += len(piece)
            if received > max_body_bytes:
                raise EgressBodyTooLarge()
            chunks.append(piece)
        if isinstance(part, h11.EndOfMessage):
            return event.status_code, response_headers, b"".join(chunks)


async def _next_event(connection: _Connection) -> h11.Event:
    protocol = connection.protocol
    while True:
        event = protocol.next_event()
        if event is h11.NEED_DATA:
            protocol.receive_data(await connection.stream.read(READ_BYTES))
        elif event is h11.PAUSED:
            raise h11.RemoteProtocolError("the server went on past its response")
        else:
            return event  # type: ignore[return-value]


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
    decoder = MultiDecoder([coding for coding in codings if coding != "identity"])
    if len(decoder.children) == 1:
        return decoder.children[0]
    if decoder.children:
        return decoder
    return IdentityDecoder()
