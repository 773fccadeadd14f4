"""The engine answer reader (`egress/origin.py`: llhttp inside a protocol) on the wire.

Each test has a loopback server write an answer byte for byte, often in
pieces, and reads it through `EgressClient.engine_get` (or the engine side's
translation, where the failure class is what is checked): malformed heads,
bounds on heads and bodies, both body framings and the one read to the close,
truncation, codings, kept-alive reuse and the ways a connection ends. The
request bytes are compared with what h11 wrote for the same request.
"""

from __future__ import annotations

import asyncio
import functools
import time
import zlib
from collections.abc import AsyncIterator, Callable, Sequence
from ipaddress import ip_network
from typing import Any
from urllib.parse import quote_plus, urlencode

import anyio
import brotli
import h11
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core.egress.backend import GuardedBackend
from rypsok.core.egress.client import (
    EgressClient,
    _form_quoted,
    target_with_query,
    wire_headers,
)
from rypsok.core.egress.errors import EgressBodyTooLarge, EgressRequestFailed, EgressTimeout
from rypsok.core.egress.messages import OutboundRequest
from rypsok.core.egress.origin import MAX_HEAD_BYTES, EngineOrigin, WireBackend
from rypsok.core.egress.policy import EgressRules, EngineProfile
from rypsok.core.engines.base import EngineFailure, EngineRequest, FailureClass
from rypsok.core.engines.transport import EngineEgress

from .servers import LocalServer, Seen

UA = "rypsok/0.1.0 (+https://github.com/rypsok/rypsok; ops@example.org)"
LOOPBACK = EgressRules(allow=(ip_network("127.0.0.1/32"),))

ClientFactory = Callable[..., EgressClient]
# One answer: the pieces written (a float is a pause in seconds), and whether
# the server keeps the connection open for the next request afterwards.
Script = tuple[Sequence[bytes | float], bool]


def scripted(*answers: Script) -> Any:
    """A handler answering the n-th request with the n-th script (the last one repeats)."""
    queue = list(answers)

    async def handler(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        pieces, keep = queue.pop(0) if len(queue) > 1 else queue[0]
        for piece in pieces:
            if isinstance(piece, float):
                await asyncio.sleep(piece)
                continue
            writer.write(piece)
            await writer.drain()
        return keep

    return handler


def ok(body: bytes = b"ok", *fields: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(body)
    return head + b"".join(field + b"\r\n" for field in fields) + b"\r\n" + body


def chunked(*chunks: bytes, trailer: bytes = b"") -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + body
        + b"0\r\n"
        + trailer
        + b"\r\n"
    )


@pytest.fixture
async def client() -> AsyncIterator[EgressClient]:
    made = EgressClient(user_agent=UA, rules=LOOPBACK)
    yield made
    await made.aclose()


async def get(
    client: EgressClient, url: str, *, max_body_bytes: int = 1 << 20, total_timeout_ms: int = 5_000
) -> tuple[int, dict[str, str], bytes]:
    response = await client.engine_get(
        OutboundRequest(url=url),
        explicit_endpoint=True,
        max_body_bytes=max_body_bytes,
        connect_timeout_ms=2_000,
        total_timeout_ms=total_timeout_ms,
    )
    return response.status, dict(response.headers), response.body


# -- malformed answers ------------------------------------------------------------------------

MALFORMED = {
    "no status code": b"HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n",
    "two-digit status": b"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n",
    "not HTTP/1.x": b"HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n",
    "not HTTP at all": b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
    "bare line feeds": b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    "blank before the colon": b"HTTP/1.1 200 OK\r\nX-Trace : a\r\nContent-Length: 0\r\n\r\n",
    "NUL in a value": b"HTTP/1.1 200 OK\r\nX-Trace: a\x00b\r\nContent-Length: 0\r\n\r\n",
    "folded field": b"HTTP/1.1 200 OK\r\nX-Trace: a\r\n b\r\nContent-Length: 0\r\n\r\n",
    "length not a number": b"HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nok",
    "two lengths": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
    "length and chunked": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nok\r\n0\r\n\r\n"
    ),
    "a coding other than chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
    "chunked twice": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"0\r\n\r\n"
    ),
    "bad chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n",
    "a switch nobody asked for": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
    "a switch to nothing": b"HTTP/1.1 101 Switching Protocols\r\n\r\n" + b"HTTP/1.1 200 OK\r\n",
}


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-014", "REQ-SEC-016")
@pytest.mark.parametrize("answer", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_answer_is_a_request_failure_and_its_connection_is_dropped(
    client: EgressClient, answer: bytes
) -> None:
    """REQ-ENG-006, REQ-SEC-014: a broken head or framing is request_failure, never a crash.

    The connection it came on is not reused: the next request gets a fresh one.
    """
    async with LocalServer(scripted(([answer], True), ([ok()], True))) as server:
        failure = await _engine_failure(client, server.url())
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert str(failure) == "request_failure"
        assert (await get(client, server.url()))[2] == b"ok"
        assert server.connections == 2


async def _engine_failure(client: EgressClient, url: str) -> EngineFailure:
    with pytest.raises(EngineFailure) as caught:
        await EngineEgress(client).engine_get(
            EngineRequest(url=url),
            explicit_endpoint=True,
            max_body_bytes=1 << 20,
            connect_timeout_ms=2_000,
            total_timeout_ms=5_000,
        )
    return caught.value


# -- the head's bound --------------------------------------------------------------------------


def _head_of(field_bytes: int) -> bytes:
    """A 200 whose fields take about `field_bytes`, in 1 KiB fields."""
    fields = [b"X-Pad-%d: %s" % (index, b"p" * 1000) for index in range(field_bytes // 1010)]
    return ok(b"ok", *fields)


@pytest.mark.req("REQ-SEC-010", "REQ-SEC-014")
async def test_a_head_up_to_the_bound_is_read_and_one_past_it_fails_at_once(
    client: EgressClient,
) -> None:
    """REQ-SEC-010: at most 100 KiB of head, as h11 allowed; a longer one fails without waiting.

    Past the bound in fields split over many writes, and as one endless line:
    both fail long before the 5 s deadline.
    """
    under = _head_of(MAX_HEAD_BYTES - 4096)
    over = _head_of(MAX_HEAD_BYTES + 4096)
    endless = b"HTTP/1.1 200 OK\r\nX-Endless: " + b"e" * (MAX_HEAD_BYTES + 4096)
    pieces = [over[i : i + 8192] for i in range(0, len(over), 8192)]
    script = scripted(([under], True), ([*pieces], True), ([endless, 10.0], True))
    async with LocalServer(script) as server:
        status, headers, body = await get(client, server.url())
        assert (status, body, headers["x-pad-0"]) == (200, b"ok", "p" * 1000)
        for _ in range(2):
            started = time.monotonic()
            with pytest.raises(EgressRequestFailed):
                await get(client, server.url())
            assert time.monotonic() - started < 2


# -- bodies ------------------------------------------------------------------------------------


def _pieces(data: bytes, size: int) -> list[bytes | float]:
    """`data` in writes of `size` bytes with a pause between, so they arrive apart."""
    out: list[bytes | float] = []
    for start in range(0, len(data), size):
        out += [data[start : start + size], 0.002]
    return out


@pytest.mark.req("REQ-SEC-010", "REQ-PERF-001")
@pytest.mark.parametrize("size", [1, 7, 4096])
async def test_length_and_chunked_bodies_are_read_whatever_the_pieces(
    client: EgressClient, size: int
) -> None:
    """REQ-SEC-010, REQ-PERF-001: both framings, split anywhere, give the same body.

    Chunk extensions are skipped and a trailer is not taken for a header field.
    """
    body = b"0123456789" * 30
    framed = chunked(body[:100], body[100:], trailer=b"X-Trailer: late\r\n")
    framed = framed.replace(b"\r\n" + body[:100], b";ext=1\r\n" + body[:100], 1)
    script = scripted(
        (_pieces(ok(body, b"X-Kind: length"), size), True), (_pieces(framed, size), True)
    )
    async with LocalServer(script) as server:
        assert await get(client, server.url()) == (
            200,
            {"content-length": "300", "x-kind": "length"},
            body,
        )
        status, headers, second = await get(client, server.url())
        assert (status, second) == (200, body)
        assert headers == {"transfer-encoding": "chunked"}
        assert server.connections == 1


@pytest.mark.req("REQ-ENG-006", "REQ-SEC-014")
@pytest.mark.parametrize(
    "cut",
    [
        b"HTTP/1.1 200 OK\r\nContent-Len",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\na\r\nabc",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        b"",
    ],
    ids=["in the head", "short of its length", "in a chunk", "before the last chunk", "no answer"],
)
async def test_an_answer_cut_by_the_server_closing_is_a_request_failure(
    client: EgressClient, cut: bytes
) -> None:
    """REQ-ENG-006, REQ-SEC-014: a truncated answer is never taken for a whole one."""
    async with LocalServer(scripted(([cut], False), ([ok()], True))) as server:
        with pytest.raises(EgressRequestFailed):
            await get(client, server.url())
        assert (await get(client, server.url()))[2] == b"ok"


@pytest.mark.req("REQ-SEC-010", "REQ-ENG-006")
async def test_a_body_read_to_the_close_is_whole_and_its_connection_not_reused(
    client: EgressClient,
) -> None:
    """REQ-SEC-010: no length and no chunks: the body ends with the connection, within the bound."""
    to_close = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
    script = scripted(
        ([to_close, b"first ", 0.01, b"part"], False), ([to_close, b"x" * 2000], False)
    )
    async with LocalServer(script) as server:
        assert (await get(client, server.url()))[2] == b"first part"
        with pytest.raises(EgressBodyTooLarge):
            await get(client, server.url(), max_body_bytes=1000)
        assert server.connections == 2


@pytest.mark.req("REQ-SEC-010", "REQ-ENG-006")
@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
async def test_a_body_one_byte_past_the_bound_is_a_parse_failure(
    client: EgressClient, framing: str
) -> None:
    """REQ-SEC-010, REQ-ENG-006: the bound is exact in every framing; past it, parse_failure."""
    bound = 5000

    def answer(size: int) -> bytes:
        body = b"b" * size
        if framing == "length":
            return ok(body)
        if framing == "chunked":
            return chunked(body[:1000], body[1000:])
        return b"HTTP/1.1 200 OK\r\n\r\n" + body

    keep = framing != "close"
    script = scripted(([answer(bound)], keep), ([answer(bound + 1)], keep))
    async with LocalServer(script) as server:
        assert (await get(client, server.url(), max_body_bytes=bound))[2] == b"b" * bound
        with pytest.raises(EngineFailure) as caught:
            await EngineEgress(client).engine_get(
                EngineRequest(url=server.url()),
                explicit_endpoint=True,
                max_body_bytes=bound,
                connect_timeout_ms=2_000,
                total_timeout_ms=5_000,
            )
        assert caught.value.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-SEC-013", "REQ-SEC-010")
async def test_stacked_codings_are_undone_in_reverse_and_a_bomb_stops_at_the_bound(
    client: EgressClient,
) -> None:
    """REQ-SEC-013: `gzip, br` is brotli then gzip undone; a deflate bomb stops at the bound.

    The bomb (64 MiB of zeros in about 64 KiB) arrives chunked; reading stops
    at the bound plus one decoding step, long before it is all inflated.
    """
    payload = b"stacked " * 500
    gzipper = zlib.compressobj(9, zlib.DEFLATED, 31)
    stacked = bytes(brotli.compress(gzipper.compress(payload) + gzipper.flush()))
    stacked_answer = ok(stacked, b"Content-Encoding: gzip, br")
    bomb = zlib.compress(b"\0" * (64 << 20), 9)
    pieces = [bomb[i : i + 16384] for i in range(0, len(bomb), 16384)]
    bomb_answer = chunked(*pieces).replace(
        b"Transfer-Encoding", b"Content-Encoding: deflate\r\nTransfer-Encoding", 1
    )
    async with LocalServer(scripted(([stacked_answer], True), ([bomb_answer], True))) as server:
        assert (await get(client, server.url()))[2] == payload
        started = time.process_time()
        with pytest.raises(EgressBodyTooLarge):
            await get(client, server.url(), max_body_bytes=2 << 20)
        # Inflating all 64 MiB takes far longer than 2 MiB and one more step.
        assert time.process_time() - started < 1


# -- kept-alive connections and their end ------------------------------------------------------


@pytest.mark.req("REQ-PERF-001")
async def test_answers_follow_each_other_on_one_kept_alive_connection(
    client: EgressClient,
) -> None:
    """REQ-PERF-001: length, chunked, an interim 100 and a 204 in turn on one connection."""
    interim = b"HTTP/1.1 100 Continue\r\nX-Interim: yes\r\n\r\n" + ok(b"after interim")
    no_content = b"HTTP/1.1 204 No Content\r\n\r\n"
    script = scripted(
        ([ok(b"first")], True),
        ([chunked(b"sec", b"ond")], True),
        ([interim], True),
        ([no_content], True),
        ([ok(b"last")], True),
    )
    async with LocalServer(script) as server:
        answers = [await get(client, server.url()) for _ in range(5)]
        assert [body for _, _, body in answers] == [
            b"first",
            b"second",
            b"after interim",
            b"",
            b"last",
        ]
        assert [status for status, _, _ in answers] == [200, 200, 200, 204, 200]
        assert "x-interim" not in answers[2][1]
        assert server.connections == 1


@pytest.mark.req("REQ-PERF-001")
@pytest.mark.parametrize(
    "ending",
    [
        ok(b"ok", b"Connection: close"),
        ok(b"ok", b"Connection: Keep-Alive, CLOSE"),
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ok(b"ok") + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale",
    ],
    ids=["close", "close among tokens", "HTTP/1.0", "data past the answer"],
)
async def test_an_answer_that_ends_its_connection_is_returned_and_the_connection_dropped(
    client: EgressClient, ending: bytes
) -> None:
    """REQ-PERF-001: the answer stands; the next request never reads from that connection."""
    async with LocalServer(scripted(([ending], True), ([ok(b"fresh")], True))) as server:
        assert (await get(client, server.url()))[2] == b"ok"
        assert _idle_connections(client) == 0
        assert (await get(client, server.url()))[2] == b"fresh"
        assert server.connections == 2


def _idle_connections(client: EgressClient) -> int:
    return sum(len(o._idle) for o in client._engine_pools.values() if isinstance(o, EngineOrigin))


@pytest.mark.req("REQ-PERF-001")
async def test_an_idle_connection_the_server_speaks_on_is_not_reused(client: EgressClient) -> None:
    """REQ-PERF-001: bytes arriving between answers are nobody's: the connection is dropped."""
    stray = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"
    script = scripted(([ok(b"one"), 0.01, stray], True), ([ok(b"two")], True))
    async with LocalServer(script) as server:
        assert (await get(client, server.url()))[2] == b"one"
        await anyio.sleep(0.1)  # the stray answer arrives while the connection is idle
        assert (await get(client, server.url()))[2] == b"two"
        assert server.connections == 2


@pytest.mark.req("REQ-SEC-011")
async def test_a_server_that_never_answers_times_out_at_the_deadline(client: EgressClient) -> None:
    """REQ-SEC-011: the total deadline ends a silent wait for the head, as timeout."""
    async with LocalServer(scripted(([10.0], False), ([ok()], True))) as server:
        started = time.monotonic()
        with pytest.raises(EgressTimeout):
            await get(client, server.url(), total_timeout_ms=300)
        assert 0.25 < time.monotonic() - started < 2
        assert (await get(client, server.url()))[2] == b"ok"


@pytest.mark.req("REQ-SEC-011", "REQ-PERF-001")
async def test_a_wait_for_a_free_connection_ends_at_the_deadline() -> None:
    """REQ-SEC-011: a request waiting for a full origin's connection ends by its deadline."""
    policy = EngineProfile(LOOPBACK).address_policy(explicit_endpoint=True)
    async with LocalServer(scripted(([0.5, ok(b"slow")], True))) as server:
        origin = EngineOrigin(
            scheme="http", host="127.0.0.1", port=server.port,
            backend=GuardedBackend(policy, inner=WireBackend()),
            ssl_context=httpx2.create_ssl_context(), max_connections=1, keepalive_expiry_s=5,
        )  # fmt: skip
        request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        outcomes: list[object] = []

        async def one(total_s: float) -> None:
            try:
                answer = await origin.request(
                    request, max_body_bytes=100, connect_timeout_s=1, total_s=total_s
                )
            except TimeoutError:
                outcomes.append("timeout")
            else:
                outcomes.append(answer[2])

        async with anyio.create_task_group() as group:
            group.start_soon(one, 2.0)
            await anyio.sleep(0.05)
            group.start_soon(one, 0.1)  # waits for the one connection, past its deadline
        await origin.aclose()
    assert outcomes == ["timeout", b"slow"]
    assert server.connections == 1


# -- the request bytes -------------------------------------------------------------------------

_VALUES = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12)
_DRIVER_FIELDS = st.lists(
    st.tuples(st.sampled_from(["Accept", "X-Api-Key", "Accept-Language", "Content-Type"]), _VALUES),
    max_size=4,
)
_PARAMS = st.lists(st.tuples(st.sampled_from(["q", "n", "a b"]), _VALUES), max_size=4)


@functools.cache
def _byte_client() -> EgressClient:
    """One client for every example: building one (its TLS context) takes tens of ms."""
    return EgressClient(user_agent=UA, rules=LOOPBACK)


def _h11_bytes(client: EgressClient, url: httpx2.URL, request: OutboundRequest) -> bytes:
    """What h11 wrote for this request from the fields and target httpx2 gave it."""
    target = httpx2.Request("GET", url, params=list(request.params) or None).url.raw_path
    fields = wire_headers(
        url, client._engine_headers(request.headers), method=request.method, body=request.body
    )
    connection = h11.Connection(h11.CLIENT)
    data = connection.send(h11.Request(method=request.method, target=target, headers=fields))
    if request.body:
        data = (data or b"") + (connection.send(h11.Data(data=request.body)) or b"")
    return (data or b"") + (connection.send(h11.EndOfMessage()) or b"")


@pytest.mark.req("REQ-CMP-004")
@settings(max_examples=300, deadline=None)
@given(
    fields=_DRIVER_FIELDS,
    params=_PARAMS,
    method_body=st.sampled_from([("GET", b""), ("POST", b""), ("POST", b'{"q":"x"}')]),
)
def test_the_request_bytes_are_the_ones_h11_wrote(
    fields: list[tuple[str, str]], params: list[tuple[str, str]], method_body: tuple[str, bytes]
) -> None:
    """REQ-CMP-004: line, fields, length and body byte for byte, refusals alike.

    A value h11 refuses (a blank at either end) is refused here too, with
    egress's own error.
    """
    method, body = method_body
    client = _byte_client()
    url = httpx2.URL("https://api.example.org:8443/search?format=json")
    request = OutboundRequest(url=str(url), params=tuple(params), headers=tuple(fields),
                              method=method, body=body)  # fmt: skip
    try:
        expected: bytes | None = _h11_bytes(client, url, request)
    except h11.LocalProtocolError:
        expected = None
    endpoint = client._endpoint(request.url, True)
    if expected is None:
        with pytest.raises(EgressRequestFailed):
            client._request_bytes(endpoint, request)
    else:
        assert client._request_bytes(endpoint, request) == expected


@pytest.mark.req("REQ-SEC-016", "REQ-ENG-006")
async def test_answer_fields_lose_surrounding_blanks_and_keep_empty_values(
    client: EgressClient,
) -> None:
    """REQ-ENG-006: values as h11 handed them over: blanks around stripped, empty kept, joined."""
    answer = ok(b"ok", b"X-Blank: padded \t ", b"X-Empty:", b"X-Twice: a", b"X-Twice: b",
                b"X-Inner: a  b")  # fmt: skip
    async with LocalServer(scripted(([answer], True))) as server:
        _, headers, _ = await get(client, server.url())
    assert headers["x-blank"] == "padded"
    assert headers["x-empty"] == ""
    assert headers["x-twice"] == "a, b"
    assert headers["x-inner"] == "a  b"


@settings(max_examples=500, deadline=None)
@given(text=st.text(st.sampled_from("aZ09_.-~ %+&=/?#éΩ\u00a0\t"), max_size=16))
def test_form_quoting_is_quote_plus(text: str) -> None:
    """The plain-text shortcut of the query encoding gives urlencode's bytes.

    An equivalence check of the encoder, so it names no requirement: that every
    request leaves through the one egress component, judged by its profile, is
    shown through a session (test_fetch_session.py, the one egress component).
    """
    assert _form_quoted(text) == quote_plus(text)


_QUERY_TEXT = st.text(st.sampled_from("aZ09_.-~ %+&=/?#éΩ\u00a0\t"), max_size=8)


@settings(max_examples=500, deadline=None)
@given(
    params=st.lists(
        st.tuples(st.one_of(st.sampled_from(["q", "format", "a b"]), _QUERY_TEXT), _QUERY_TEXT),
        max_size=6,
    )
)
def test_the_query_is_urlencode_of_the_grouped_parameters(params: list[tuple[str, str]]) -> None:
    """The joined-query shortcut gives urlencode's bytes, plain or not, names repeated or not.

    An equivalence check of the encoder, as the test above, so it names no requirement.
    """
    grouped: dict[str, list[str]] = {}
    for name, value in params:
        grouped.setdefault(name, []).append(value)
    expected = urlencode([(name, value) for name, values in grouped.items() for value in values])
    assert target_with_query(b"/p", params) == b"/p?" + expected.encode("ascii")
