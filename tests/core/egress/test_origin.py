"""The lean engine path (`egress/origin.py`): httpx2's bytes and reading, kept-alive, guarded.

The request target, the header fields and the reading of an answer are
compared with httpx2's own on generated inputs, so the switch from httpx2's
objects changes nothing a provider or a driver sees; the wire behaviour
(codings, reuse, hang-ups, cancellation, POST) runs against local servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections.abc import AsyncIterator, Callable
from ipaddress import ip_network
from typing import Any

import anyio
import brotli
import httpx2
import pytest
from backports import zstd
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core.egress.client import (
    EgressClient,
    joined_headers,
    request_target,
    wire_headers,
)
from rypsok.core.egress.errors import EgressBodyTooLarge, EgressRequestFailed, EgressTimeout
from rypsok.core.egress.messages import OutboundRequest
from rypsok.core.egress.origin import EngineOrigin, content_decoder
from rypsok.core.egress.policy import EgressRules

from .servers import LocalServer, Seen, respond

UA = "rypsok/0.1.0 (+https://github.com/rypsok/rypsok; ops@example.org)"
LOOPBACK = EgressRules(allow=(ip_network("127.0.0.1/32"),))

ClientFactory = Callable[..., EgressClient]

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_PARAMS = st.lists(st.tuples(st.sampled_from(["q", "n", "key", "a b", "é", ""]) | _TEXT, _TEXT),
                   max_size=6)  # fmt: skip
_ENDPOINTS = st.sampled_from(
    [
        "https://api.example.org",
        "https://api.example.org/w/api.php",
        "https://api.example.org:8443/search/",
        "http://127.0.0.1:8080/a%20b/c",
        "https://api.example.org/search?format=json",
        "https://api.example.org/search?q=old&format=json&q=older",
        "https://[::1]:9000/x",
        "https://bücher.example/suche",
    ]
)


@pytest.mark.req("REQ-SEC-017")
@settings(max_examples=300, deadline=None)
@given(endpoint=_ENDPOINTS, params=_PARAMS)
def test_the_request_target_is_the_one_httpx2_wrote(
    endpoint: str, params: list[tuple[str, str]]
) -> None:
    """REQ-SEC-017: path and query reach the provider byte for byte as before the lean path."""
    url = httpx2.URL(endpoint)
    expected = httpx2.Request("GET", url, params=params or None).url.raw_path
    assert request_target(url, tuple(params)) == expected


@pytest.mark.req("REQ-CMP-004")
@pytest.mark.parametrize(("method", "body"), [("GET", b""), ("POST", b'{"q":"x"}'), ("POST", b"")])
def test_the_header_fields_are_the_ones_httpx2_sent(method: str, body: bytes) -> None:
    """REQ-CMP-004: Host first, the one User-Agent and the caller's fields in order, the length."""
    url = httpx2.URL("https://api.example.org:8443/search")
    headers = {"accept": "*/*", "user-agent": UA, "content-type": "application/json"}
    expected = httpx2.Request(method, url, headers=headers, content=body or None).headers.raw
    assert wire_headers(url, headers, method=method, body=body) == expected


@pytest.mark.req("REQ-SEC-016")
def test_a_header_httpx2_could_not_send_is_an_egress_failure() -> None:
    """REQ-SEC-016: a non-ASCII header value is refused with egress's own error, not a crash."""
    url = httpx2.URL("https://api.example.org/")
    with pytest.raises(EgressRequestFailed):
        wire_headers(url, {"x-name": "café"}, method="GET", body=b"")


_HEADER_NAMES = st.sampled_from([b"Content-Type", b"x-trace", b"X-Trace", b"Set-Cookie", b"Vary"])
_HEADER_VALUES = st.binary(max_size=10).filter(lambda v: not ({10, 13, 0} & set(v)))


@pytest.mark.req("REQ-SEC-016", "REQ-ENG-006")
@settings(max_examples=300, deadline=None)
@given(raw=st.lists(st.tuples(_HEADER_NAMES, _HEADER_VALUES), max_size=6))
def test_answer_headers_are_read_as_httpx2_read_them(raw: list[tuple[bytes, bytes]]) -> None:
    """REQ-ENG-006: drivers see the same header mapping (names, joins, text) as before."""
    lowered = [(name.lower(), value) for name, value in raw]  # as h11 hands them over
    assert dict(joined_headers(lowered)) == dict(httpx2.Headers(raw).items())


@pytest.mark.req("REQ-SEC-013")
@pytest.mark.parametrize(
    "coding",
    ["", "gzip", "GZIP", "br, gzip", "identity", "x-gzip", "gzip, identity", "zstd", "compress"],
)
def test_the_content_decoder_is_the_one_httpx2_picked(coding: str) -> None:
    """REQ-SEC-013: the same Content-Encoding reading, so the same bounded decoders."""
    raw = [(b"content-encoding", coding.encode())] if coding else []
    ours = content_decoder(raw)
    theirs = httpx2.Response(200, headers=raw)._get_content_decoder()

    def shape(decoder: Any) -> list[str]:
        children = getattr(decoder, "children", [decoder])
        return [type(child).__name__ for child in children]

    assert shape(ours) == shape(theirs)


# -- on the wire -------------------------------------------------------------------------------


@pytest.fixture
async def make_client() -> AsyncIterator[ClientFactory]:
    made: list[EgressClient] = []

    def make(**kwargs: Any) -> EgressClient:
        kwargs.setdefault("user_agent", UA)
        client = EgressClient(**kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


async def get(
    client: EgressClient,
    url: str,
    *,
    max_body_bytes: int = 1 << 20,
    total_timeout_ms: int = 5_000,
    method: str = "GET",
    body: bytes = b"",
) -> tuple[int, dict[str, str], bytes]:
    request = OutboundRequest(
        url=url,
        method=method,
        body=body,  # type: ignore[arg-type]
        headers=(("Content-Type", "application/json"),) if body else (),
    )
    response = await client.engine_get(
        request,
        explicit_endpoint=True,
        max_body_bytes=max_body_bytes,
        connect_timeout_ms=2_000,
        total_timeout_ms=total_timeout_ms,
    )  # fmt: skip
    return response.status, dict(response.headers), response.body


def _encoded(coding: str, payload: bytes) -> bytes:
    if coding == "gzip":
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        return compressor.compress(payload) + compressor.flush()
    if coding == "deflate":
        return zlib.compress(payload)
    if coding == "br":
        return bytes(brotli.compress(payload))
    return bytes(zstd.compress(payload))


@pytest.mark.req("REQ-SEC-010", "REQ-SEC-013")
@pytest.mark.parametrize("coding", ["deflate", "br", "zstd", "gzip"])
async def test_every_offered_coding_is_decoded_and_bounded_after_decoding(
    make_client: ClientFactory, coding: str
) -> None:
    """REQ-SEC-010, REQ-SEC-013: each coding egress offers, counted on decoded bytes."""
    bound = 100_000

    def answering(size: int) -> Any:
        async def handler(seen: Seen, writer: asyncio.StreamWriter) -> bool:
            body = _encoded(coding, b"z" * size)
            return await respond(writer, 200, (("Content-Encoding", coding),), body)

        return handler

    client = make_client(rules=LOOPBACK)
    async with LocalServer(answering(bound)) as server:
        status, _, body = await get(client, server.url(), max_body_bytes=bound)
        assert (status, body) == (200, b"z" * bound)
    async with LocalServer(answering(bound + 1)) as server:
        with pytest.raises(EgressBodyTooLarge):
            await get(client, server.url(), max_body_bytes=bound)


@pytest.mark.req("REQ-PERF-001")
async def test_a_connection_the_server_dropped_while_idle_is_not_reused(
    make_client: ClientFactory,
) -> None:
    """REQ-PERF-001: a kept-alive connection the server hung up on is replaced, not failed."""

    async def answer_then_hang_up(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        await respond(writer, 200, (), b"ok")  # no Connection: close, then close anyway
        return False

    client = make_client(rules=LOOPBACK)
    async with LocalServer(answer_then_hang_up) as server:
        assert (await get(client, server.url()))[2] == b"ok"
        await anyio.sleep(0.05)  # the hang-up reaches the client's socket
        assert (await get(client, server.url()))[2] == b"ok"
        assert server.connections == 2


@pytest.mark.req("REQ-PERF-001", "REQ-SEC-011")
async def test_a_request_cut_by_its_deadline_leaves_no_connection_behind(
    make_client: ClientFactory,
) -> None:
    """REQ-SEC-011: a body cut short closes its connection; the next answer is not the rest."""

    async def slow_then_fast(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        if seen.target.startswith("/slow"):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
            await writer.drain()
            await asyncio.sleep(5)
            return False
        return await respond(writer, 200, (), b"fast")

    client = make_client(rules=LOOPBACK)
    async with LocalServer(slow_then_fast) as server:
        with pytest.raises(EgressTimeout):
            await get(client, server.url("/slow"), total_timeout_ms=200)
        for _ in range(3):
            assert (await get(client, server.url("/fast")))[2] == b"fast"
        assert server.connections == 2


@pytest.mark.req("REQ-PERF-001")
async def test_concurrent_requests_to_one_origin_each_get_a_connection(
    make_client: ClientFactory,
) -> None:
    """REQ-PERF-001: requests in flight together use one connection each, kept for reuse."""

    async def slow(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(0.05)
        return await respond(writer, 200, (), seen.target.encode())

    client = make_client(rules=LOOPBACK)
    async with LocalServer(slow) as server:
        bodies: list[bytes] = []

        async def one(index: int) -> None:
            bodies.append((await get(client, server.url(f"/{index}")))[2])

        for _ in range(2):
            async with anyio.create_task_group() as group:
                for index in range(4):
                    group.start_soon(one, index)
        assert sorted(bodies) == sorted([f"/{i}".encode() for i in range(4)] * 2)
        assert server.connections == 4


@contextlib.asynccontextmanager
async def _raw_server(seen: list[bytes]) -> AsyncIterator[int]:
    """Records the raw bytes of one request (head and a Content-Length body), answers 200."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        seen.append(head + await reader.readexactly(length))
        await respond(writer, 200, (), b"posted")
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.req("REQ-CMP-004")
async def test_a_post_carries_its_body_with_its_length_and_the_one_user_agent(
    make_client: ClientFactory,
) -> None:
    """REQ-CMP-004: a JSON API's POST: Host first, the length, the body, our UA."""
    seen: list[bytes] = []
    async with _raw_server(seen) as port:
        client = make_client(rules=LOOPBACK)
        status, _, body = await get(
            client, f"http://127.0.0.1:{port}/search", method="POST", body=b'{"q":"x"}'
        )
    assert (status, body) == (200, b"posted")
    lines = seen[0].split(b"\r\n")
    assert lines[0] == b"POST /search HTTP/1.1"
    assert lines[1] == f"Host: 127.0.0.1:{port}".encode()
    assert f"user-agent: {UA}".encode() in lines
    assert b"Content-Length: 9" in lines
    assert seen[0].endswith(b'\r\n\r\n{"q":"x"}')


@pytest.mark.req("REQ-PERF-001")
async def test_a_closed_origin_keeps_no_connection(make_client: ClientFactory) -> None:
    """REQ-PERF-001: closing the client closes idle connections; a late answer closes its own."""
    async with LocalServer() as server:
        client = make_client(rules=LOOPBACK)
        await get(client, server.url())
        origins = [o for o in client._engine_pools.values() if isinstance(o, EngineOrigin)]
        assert len(origins) == 1 and len(origins[0]._idle) == 1
        await client.aclose()
        assert origins[0]._idle == []
