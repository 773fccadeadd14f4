"""Self-test of the fake provider server: what tests build on must do what it says."""

from __future__ import annotations

import asyncio
import gzip
import time

import httpx2
import pytest

from tests.fakes.provider_server import ProviderServer, Route, Trickle, load_fixture


def _client(timeout_s: float = 5.0) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(trust_env=False, timeout=timeout_s)


@pytest.mark.req("REQ-MAIN-005")
async def test_answers_with_the_configured_status_headers_and_body() -> None:
    """REQ-MAIN-005: status, headers and body come back as configured; 404 elsewhere."""
    route = Route(
        status=418, headers={"X-Provider": "fake", "content-type": "text/plain"}, body=b"hi"
    )
    async with ProviderServer({"/a": route}) as server, _client() as client:
        reply = await client.get(server.url("/a"))
        missing = await client.get(server.url("/elsewhere"))
    assert server.base_url.startswith("http://127.0.0.1:")
    assert reply.status_code == 418
    assert reply.headers["x-provider"] == "fake"
    assert reply.content == b"hi"
    assert missing.status_code == 404


@pytest.mark.req("REQ-MAIN-005", "REQ-TEST-002")
async def test_serves_a_fixture_file_with_a_content_type_from_its_suffix() -> None:
    """REQ-MAIN-005, REQ-TEST-002: a fixture is served byte for byte, typed by suffix."""
    route = Route.fixture("arxiv", "empty.xml")
    async with ProviderServer({"/q": route}) as server, _client() as client:
        reply = await client.get(server.url("/q"))
    assert reply.headers["content-type"] == "application/atom+xml; charset=utf-8"
    assert reply.content == load_fixture("arxiv", "empty.xml")


@pytest.mark.req("REQ-MAIN-005", "REQ-TEST-015")
async def test_records_path_params_headers_and_arrival_time() -> None:
    """REQ-MAIN-005, REQ-TEST-015: every request is recorded for assertions on the wire."""
    async with ProviderServer({"/s": Route(body=b"{}")}) as server, _client() as client:
        before = time.monotonic()
        await client.get(
            server.url("/s"),
            params=[("q", "zürich"), ("empty", ""), ("lang", "de")],
            headers={"User-Agent": "rypsok/0.1.0 (+https://example.test; ops@example.test)"},
        )
        after = time.monotonic()
    (request,) = server.requests
    assert request.method == "GET"
    assert request.path == "/s"
    assert request.query == (("q", "zürich"), ("empty", ""), ("lang", "de"))
    assert request.param("q") == "zürich"
    assert request.param("absent") is None
    assert request.header("USER-AGENT") == "rypsok/0.1.0 (+https://example.test; ops@example.test)"
    assert request.header("authorization") is None
    assert before <= request.arrived <= after


@pytest.mark.req("REQ-MAIN-005", "REQ-CMP-002")
async def test_successive_routes_answer_in_turn_and_the_last_repeats() -> None:
    """REQ-MAIN-005, REQ-CMP-002: a 429 then 200 sequence, for queue and Retry-After tests."""
    throttled = Route(status=429, headers={"retry-after": "1"})
    async with (
        ProviderServer({"/r": [throttled, Route(body=b"ok")]}) as server,
        _client() as client,
    ):
        statuses = [(await client.get(server.url("/r"))).status_code for _ in range(3)]
    assert statuses == [429, 200, 200]
    arrivals = [request.arrived for request in server.requests_to("/r")]
    assert arrivals == sorted(arrivals)


@pytest.mark.req("REQ-MAIN-005", "REQ-AGG-002")
async def test_a_delay_holds_back_the_status_line() -> None:
    """REQ-MAIN-005, REQ-AGG-002: the answer starts no earlier than the configured delay."""
    async with (
        ProviderServer({"/slow": Route(body=b"x", delay_s=0.2)}) as server,
        _client() as client,
    ):
        started = time.monotonic()
        reply = await client.get(server.url("/slow"))
        elapsed = time.monotonic() - started
    assert reply.content == b"x"
    assert elapsed >= 0.2


@pytest.mark.req("REQ-MAIN-005", "REQ-AGG-002")
async def test_a_hanging_route_never_answers_and_closing_releases_it() -> None:
    """REQ-MAIN-005, REQ-AGG-002: the client times out; leaving the server ends the hang."""
    async with ProviderServer({"/hang": Route(hang=True)}) as server:
        async with _client(timeout_s=0.2) as client:
            with pytest.raises(httpx2.ReadTimeout):
                await client.get(server.url("/hang"))
        assert len(server.requests_to("/hang")) == 1
    # Leaving the context did not wait for the hang: this test finishes at all.


@pytest.mark.req("REQ-MAIN-005", "REQ-SEC-011")
async def test_a_trickled_body_arrives_in_pieces_over_time() -> None:
    """REQ-MAIN-005, REQ-SEC-011: chunks come spaced out, and the body is complete."""
    body = b"0123456789"
    route = Route(body=body, trickle=Trickle(chunk_bytes=2, interval_s=0.05))
    async with ProviderServer({"/t": route}) as server, _client() as client:
        chunks: list[bytes] = []
        started = time.monotonic()
        async with client.stream("GET", server.url("/t")) as reply:
            async for chunk in reply.aiter_raw():
                chunks.append(chunk)
        elapsed = time.monotonic() - started
    assert b"".join(chunks) == body
    assert len(chunks) >= 2
    assert elapsed >= 0.15


@pytest.mark.req("REQ-MAIN-005", "REQ-SEC-013")
async def test_gzip_sends_a_compressed_body_with_its_encoding() -> None:
    """REQ-MAIN-005, REQ-SEC-013: the wire carries gzip; the client decodes it."""
    body = b'{"hits": []}' * 100
    async with ProviderServer({"/z": Route(body=body, gzip=True)}) as server, _client() as client:
        reply = await client.get(server.url("/z"))
        async with client.stream("GET", server.url("/z")) as raw:
            wire = b"".join([chunk async for chunk in raw.aiter_raw()])
    assert reply.headers["content-encoding"] == "gzip"
    assert reply.content == body
    assert gzip.decompress(wire) == body
    assert len(wire) < len(body)


@pytest.mark.req("REQ-MAIN-005", "REQ-TEST-002")
async def test_a_truncated_body_ends_short_of_its_declared_length() -> None:
    """REQ-MAIN-005, REQ-TEST-002: the connection closes mid-body; the client sees an error."""
    route = Route(body=b"x" * 1000, truncate_at=100)
    async with ProviderServer({"/cut": route}) as server, _client() as client:
        with pytest.raises(httpx2.RemoteProtocolError):
            await client.get(server.url("/cut"))


@pytest.mark.req("REQ-MAIN-005")
async def test_concurrent_requests_are_all_answered_and_recorded() -> None:
    """REQ-MAIN-005: parallel clients are served and each request is recorded once."""
    async with (
        ProviderServer({"/p": Route(body=b"ok", delay_s=0.05)}) as server,
        _client() as client,
    ):
        replies = await asyncio.gather(*(client.get(server.url("/p")) for _ in range(5)))
    assert [reply.status_code for reply in replies] == [200] * 5
    assert len(server.requests_to("/p")) == 5


@pytest.mark.req("REQ-MAIN-005")
async def test_the_base_url_is_refused_before_start() -> None:
    """REQ-MAIN-005: a server that is not running has no address to hand out."""
    server = ProviderServer()
    with pytest.raises(RuntimeError):
        _ = server.base_url


@pytest.mark.req("REQ-MAIN-005")
async def test_closing_cuts_a_long_delay_short() -> None:
    """REQ-MAIN-005: leaving the server does not wait out a route's delay."""
    route = Route(body=b"x", delay_s=60)
    async with asyncio.timeout(5), ProviderServer({"/d": route}) as server, _client(0.1) as client:
        with pytest.raises(httpx2.ReadTimeout):
            await client.get(server.url("/d"))
