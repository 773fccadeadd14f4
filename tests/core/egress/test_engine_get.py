"""EgressClient.engine_get against real local servers (REQ-SEC-010…017, REQ-TEST-015)."""

from __future__ import annotations

import asyncio
import socket
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from ipaddress import ip_network
from typing import Any

import pytest

from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressRequestFailed,
    EgressTimeout,
)
from rypsok.core.egress.messages import OutboundRequest
from rypsok.core.egress.policy import EgressRules
from rypsok.core.engines.base import EngineFailure, EngineRequest, EngineResponse, FailureClass
from rypsok.core.engines.transport import EngineEgress, failure_class_of

from .conftest import LocalPKI, ScriptedResolver
from .servers import ConnectionRecorder, LocalServer, Seen, blackhole_port, respond

UA = "rypsok/0.1.0 (+https://github.com/rypsok/rypsok; ops@example.org)"
LOOPBACK = EgressRules(allow=(ip_network("127.0.0.1/32"),))
MiB = 1024 * 1024

ClientFactory = Callable[..., EgressClient]


@pytest.fixture
async def make_client(
    pki: LocalPKI, localhost_resolver: ScriptedResolver
) -> AsyncIterator[ClientFactory]:
    """EgressClients trusting the test CA and resolving `localhost` to 127.0.0.1."""
    made: list[EgressClient] = []

    def make(**kwargs: Any) -> EgressClient:
        kwargs.setdefault("user_agent", UA)
        kwargs.setdefault("ssl_context", pki.client_context())
        kwargs.setdefault("resolver", localhost_resolver)
        client = EgressClient(**kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


async def engine_get(
    client: EgressClient,
    url: str,
    *,
    explicit: bool = False,
    max_body_bytes: int = MiB,
    connect_timeout_ms: int = 2_000,
    total_timeout_ms: int = 5_000,
    headers: tuple[tuple[str, str], ...] = (),
    credential_headers: frozenset[str] = frozenset(),
    params: tuple[tuple[str, str], ...] = (),
) -> EngineResponse:
    request = EngineRequest(
        url=url, params=params, headers=headers, credential_headers=credential_headers
    )
    # Through the engine side's translation, as the search pipeline sends it.
    return await EngineEgress(client).engine_get(
        request,
        explicit_endpoint=explicit,
        max_body_bytes=max_body_bytes,
        connect_timeout_ms=connect_timeout_ms,
        total_timeout_ms=total_timeout_ms,
    )


async def failure_of(call: Any) -> EngineFailure:
    with pytest.raises(EngineFailure) as caught:
        await call
    return caught.value


@pytest.mark.req("REQ-TEST-005", "REQ-SEC-017")
async def test_loopback_is_reached_only_through_an_allow_rule(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-TEST-005, REQ-SEC-017: the same request is refused without the rule."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        url = server.url("/search", host="localhost")
        failure = await failure_of(engine_get(make_client(), url))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert isinstance(failure.__cause__, EgressDenied)
        assert failure.__cause__.range_name == "loopback"
        assert server.connections == 0
        response = await engine_get(make_client(rules=LOOPBACK), url)
        assert (response.status, response.body) == (200, b"ok")
        assert server.connections == 1


@pytest.mark.req("REQ-TEST-005", "REQ-SEC-017")
async def test_loopback_refused_through_the_system_resolver(make_client: ClientFactory) -> None:
    """REQ-TEST-005, REQ-SEC-017: `localhost` from the real resolver is judged too."""
    async with LocalServer() as server:
        client = EgressClient(user_agent=UA)
        try:
            for host in ("localhost", "127.0.0.1"):
                url = server.url(scheme="https", host=host)
                failure = await failure_of(engine_get(client, url))
                assert failure.failure_class is FailureClass.REQUEST_FAILURE
        finally:
            await client.aclose()
        assert server.connections == 0


@pytest.mark.req("REQ-SEC-017", "REQ-TEST-015")
async def test_engine_requests_use_https_unless_explicit(make_client: ClientFactory) -> None:
    """REQ-SEC-017, REQ-TEST-015: plain http only for an explicitly configured endpoint."""
    async with LocalServer() as server:
        client = make_client(rules=LOOPBACK)
        failure = await failure_of(engine_get(client, server.url()))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert server.connections == 0
        # Explicit: http and a private address, with no allow rule at all.
        response = await engine_get(make_client(), server.url(), explicit=True)
        assert response.status == 200
        assert server.connections == 1


@pytest.mark.req("REQ-SEC-017")
async def test_explicit_endpoint_still_obeys_deny_rules(make_client: ClientFactory) -> None:
    """REQ-SEC-017: deny rules apply to explicit endpoints too."""
    async with LocalServer() as server:
        client = make_client(rules=EgressRules(deny=(ip_network("127.0.0.0/8"),)))
        failure = await failure_of(engine_get(client, server.url(), explicit=True))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert server.connections == 0


@pytest.mark.req("REQ-CMP-004")
async def test_one_user_agent_on_the_wire(make_client: ClientFactory, pki: LocalPKI) -> None:
    """REQ-CMP-004: the configured User-Agent, once; a driver's own is dropped."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK)
        headers = (("User-Agent", "Mozilla/5.0"), ("Accept", "application/json"), ("Host", "x"))
        await engine_get(
            client, server.url("/s", host="localhost"), headers=headers, params=(("q", "a b"),)
        )
        (seen,) = server.requests
        assert seen.header("user-agent") == [UA]
        assert seen.header("accept") == ["application/json"]
        assert seen.header("host") == [f"localhost:{server.port}"]
        assert seen.target == "/s?q=a+b"


def redirect_to(location: str) -> Callable[[Seen, asyncio.StreamWriter], Any]:
    async def handler(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        return await respond(writer, 302, (("Location", location),), b"moved")

    return handler


@pytest.mark.req("REQ-SEC-017", "REQ-TEST-015")
async def test_redirect_is_returned_and_credentials_stay_at_origin(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-SEC-017, REQ-TEST-015: no redirect followed; the key never reaches the target."""
    async with LocalServer(ssl_context=pki.server_context()) as target:
        location = target.url("/collect", host="localhost")
        origin = LocalServer(redirect_to(location), ssl_context=pki.server_context())
        async with origin:
            response = await engine_get(
                make_client(rules=LOOPBACK),
                origin.url("/search", host="localhost"),
                headers=(("X-Api-Key", "sk-test-123"),),
                credential_headers=frozenset({"X-Api-Key"}),
            )
        assert response.status == 302
        assert response.headers["location"] == location
        assert response.body == b"moved"
        assert origin.requests[0].header("x-api-key") == ["sk-test-123"]
        assert target.connections == 0


@pytest.mark.req("REQ-SEC-017", "REQ-RES-008", "REQ-TEST-015")
async def test_proxy_environment_variables_are_ignored(
    make_client: ClientFactory, pki: LocalPKI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-SEC-017, REQ-RES-008, REQ-TEST-015: *_PROXY variables never route a request."""
    async with ConnectionRecorder() as proxy, LocalServer(ssl_context=pki.server_context()) as tls:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        async with LocalServer() as plain:
            client = make_client(rules=LOOPBACK)
            assert (await engine_get(client, tls.url(host="localhost"))).status == 200
            assert (await engine_get(client, plain.url(), explicit=True)).status == 200
        assert proxy.connections == 0


@pytest.mark.req("REQ-SEC-017", "REQ-RES-008")
async def test_ssl_cert_file_environment_is_ignored(
    pki: LocalPKI, localhost_resolver: ScriptedResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-SEC-017, REQ-RES-008: SSL_CERT_FILE cannot add a trusted CA; the system store is used."""
    monkeypatch.setenv("SSL_CERT_FILE", str(pki.ca_file))
    monkeypatch.setenv("SSL_CERT_DIR", str(pki.ca_file.parent))
    client = EgressClient(user_agent=UA, rules=LOOPBACK, resolver=localhost_resolver)
    try:
        async with LocalServer(ssl_context=pki.server_context()) as server:
            failure = await failure_of(engine_get(client, server.url(host="localhost")))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
    finally:
        await client.aclose()


@pytest.mark.req("REQ-RES-008")
async def test_configured_proxy_carries_engine_requests(make_client: ClientFactory) -> None:
    """REQ-RES-008: a proxy from configuration is used for engine requests."""
    async with ConnectionRecorder(answer=True) as proxy:
        client = make_client(proxy=proxy.url)
        response = await engine_get(client, "http://engine.test/search", explicit=True)
        assert (response.status, response.body) == (200, b"via proxy")
        assert proxy.first_lines == ["GET http://engine.test/search HTTP/1.1"]


@pytest.mark.req("REQ-SEC-017", "REQ-TEST-015")
async def test_credential_never_sent_in_clear_to_a_proxy(make_client: ClientFactory) -> None:
    """REQ-SEC-017, REQ-TEST-015: a forward proxy would be another origin for the key."""
    async with ConnectionRecorder(answer=True) as proxy:
        client = make_client(proxy=proxy.url)
        failure = await failure_of(
            engine_get(
                client,
                "http://engine.test/search",
                explicit=True,
                headers=(("Authorization", "Bearer k"),),
                credential_headers=frozenset({"Authorization"}),
            )
        )
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert isinstance(failure.__cause__, EgressDenied)
        assert failure.__cause__.reason == "credential_origin"
        assert proxy.connections == 0


@pytest.mark.req("REQ-SEC-011")
async def test_connect_timeout(make_client: ClientFactory) -> None:
    """REQ-SEC-011: a destination that never accepts ends at the connect timeout."""
    with blackhole_port() as port:
        started = time.monotonic()
        failure = await failure_of(
            engine_get(
                make_client(),
                f"http://127.0.0.1:{port}/",
                explicit=True,
                connect_timeout_ms=200,
                total_timeout_ms=5_000,
            )
        )
        elapsed = time.monotonic() - started
    assert failure.failure_class is FailureClass.TIMEOUT
    assert isinstance(failure.__cause__, EgressTimeout)
    assert 0.15 < elapsed < 1.5


async def trickle(seen: Seen, writer: asyncio.StreamWriter) -> bool:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(1000):
        writer.write(b"x")
        await writer.drain()
        await asyncio.sleep(0.02)
    return True


@pytest.mark.req("REQ-SEC-011")
async def test_total_timeout_covers_a_trickling_body(make_client: ClientFactory) -> None:
    """REQ-SEC-011: each read is quick, but the whole answer must fit the total timeout."""
    async with LocalServer(trickle) as server:
        started = time.monotonic()
        failure = await failure_of(
            engine_get(make_client(), server.url(), explicit=True, total_timeout_ms=300)
        )
        elapsed = time.monotonic() - started
    assert failure.failure_class is FailureClass.TIMEOUT
    assert 0.25 < elapsed < 1.5


def fixed_body(size: int, *, gzip: bool = False) -> Callable[[Seen, asyncio.StreamWriter], Any]:
    payload = b"a" * size
    headers: tuple[tuple[str, str], ...] = ()
    if gzip:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        payload = compressor.compress(payload) + compressor.flush()
        headers = (("Content-Encoding", "gzip"),)

    async def handler(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        return await respond(writer, 200, headers, payload)

    return handler


@pytest.mark.req("REQ-SEC-010", "REQ-SEC-013")
@pytest.mark.parametrize("gzip", [False, True])
async def test_body_bound_is_exact_after_decompression(
    make_client: ClientFactory, gzip: bool
) -> None:
    """REQ-SEC-010, REQ-SEC-013: the bound counts decoded bytes; one byte over fails."""
    bound = 256 * 1024
    async with LocalServer(fixed_body(bound, gzip=gzip)) as server:
        response = await engine_get(
            make_client(), server.url(), explicit=True, max_body_bytes=bound
        )
        assert response.body == b"a" * bound
    async with LocalServer(fixed_body(bound + 1, gzip=gzip)) as server:
        failure = await failure_of(
            engine_get(make_client(), server.url(), explicit=True, max_body_bytes=bound)
        )
    assert failure.failure_class is FailureClass.PARSE_FAILURE


@dataclass
class Bomb:
    """An endless gzip stream of zeros: a head, then one segment repeated forever.

    After a full flush the compressor's state is reset, so compressing the same
    MiB again yields the same bytes: each repeated segment inflates to 1 MiB.
    """

    head: bytes
    segment: bytes
    sent_bytes: int = 0

    @classmethod
    def make(cls) -> Bomb:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        zeros = bytes(MiB)
        head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        segment = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        again = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        assert segment == again
        return cls(head, segment)

    async def handler(self, seen: Seen, writer: asyncio.StreamWriter) -> bool:
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 1000000000000\r\n\r\n"
        )
        writer.write(self.head)
        block = self.segment * 64  # 64 MiB inflated per write
        while True:  # until the client hangs up
            writer.write(block)
            self.sent_bytes += len(block)
            await writer.drain()


@pytest.mark.req("REQ-SEC-010", "REQ-SEC-013")
async def test_gzip_bomb_stops_early_without_inflating(make_client: ClientFactory) -> None:
    """REQ-SEC-010, REQ-SEC-013: an endless bomb ends at the bound, with bounded memory."""
    bomb = Bomb.make()
    inflate = zlib.decompressobj(31)
    assert len(inflate.decompress(bomb.head + bomb.segment * 8)) == 9 * MiB  # it is a bomb
    client = make_client()
    async with LocalServer(bomb.handler) as server:
        await failure_of(engine_get(client, server.url(), explicit=True))  # imports done
        tracemalloc.start()
        try:
            started = time.monotonic()
            failure = await failure_of(
                engine_get(client, server.url(), explicit=True, max_body_bytes=2 * MiB)
            )
            elapsed = time.monotonic() - started
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert failure.failure_class is FailureClass.PARSE_FAILURE
    assert elapsed < 2
    # Inflating in 1 MiB pieces: the bound, one piece and buffers, not the stream.
    assert peak < 8 * MiB, peak


@pytest.mark.req("REQ-SEC-007", "REQ-SEC-017")
async def test_tls_uses_the_hostname_while_connecting_to_the_judged_address(
    make_client: ClientFactory, pki: LocalPKI, localhost_resolver: ScriptedResolver
) -> None:
    """REQ-SEC-007, REQ-SEC-017: SNI and certificate checks use the name, not the address."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK)
        response = await engine_get(client, server.url(host="localhost"))
        assert response.status == 200
        assert server.server_names == ["localhost"]
        assert localhost_resolver.calls == ["localhost"]
        # Same address, another name: the certificate (for localhost) does not match.
        failure = await failure_of(engine_get(client, server.url(host="other.test")))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        # The address itself as the host: verified against the address, which fails too.
        failure = await failure_of(engine_get(client, server.url(host="127.0.0.1")))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert server.server_names[0] == "localhost"


@pytest.mark.req("REQ-SEC-007", "REQ-TEST-005")
async def test_rebinding_between_connections_is_refused(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-SEC-007, REQ-TEST-005: each connection is judged on its own single resolution."""

    async def close_after(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        await respond(writer, 200, (("Connection", "close"),), b"ok")
        return False

    # 127.0.0.1 stands for the public address (allowed by the rule), 127.0.0.2
    # for an internal one. A client that resolved again to connect would reach
    # 127.0.0.2, where nothing listens.
    resolver = ScriptedResolver({"localhost": [["127.0.0.1"], ["127.0.0.2"]]})
    async with LocalServer(close_after, ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK, resolver=resolver)
        url = server.url(host="localhost")
        assert (await engine_get(client, url)).status == 200
        assert resolver.calls == ["localhost"]
        failure = await failure_of(engine_get(client, url))
        assert failure.failure_class is FailureClass.REQUEST_FAILURE
        assert isinstance(failure.__cause__, EgressDenied)
        assert failure.__cause__.range_name == "loopback"
        assert resolver.calls == ["localhost", "localhost"]
        assert server.connections == 1


@pytest.mark.req("REQ-PERF-001")
async def test_connections_are_kept_alive_and_reused(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-PERF-001: one client, one pooled HTTP/1.1 connection for sequential requests."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK)
        for _ in range(5):
            assert (await engine_get(client, server.url(host="localhost"))).status == 200
        assert server.connections == 1
        assert len(server.requests) == 5


@pytest.mark.req("REQ-PRIV-003")
async def test_no_cookie_is_kept_between_requests(make_client: ClientFactory) -> None:
    """REQ-PRIV-003: a Set-Cookie from a provider is never sent back."""

    async def set_cookie(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        return await respond(writer, 200, (("Set-Cookie", "track=1; Path=/"),), b"ok")

    async with LocalServer(set_cookie) as server:
        client = make_client()
        await engine_get(client, server.url(), explicit=True)
        await engine_get(client, server.url(), explicit=True)
        assert [seen.header("cookie") for seen in server.requests] == [[], []]


@pytest.mark.req("REQ-SEC-016", "REQ-ENG-006")
async def test_status_and_headers_are_returned_and_failures_carry_no_text(
    make_client: ClientFactory,
) -> None:
    """REQ-SEC-016, REQ-ENG-006: a 5xx is a response; a failure's text is its class only."""

    async def unavailable(seen: Seen, writer: asyncio.StreamWriter) -> bool:
        headers = (("Retry-After", "7"), ("X-Trace", "a"), ("X-Trace", "b"))
        return await respond(writer, 503, headers, b"secret-provider-text")

    async with LocalServer(unavailable) as server:
        response = await engine_get(make_client(), server.url("/q?x=1"), explicit=True)
        assert response.status == 503
        assert response.headers["retry-after"] == "7"
        assert response.headers["x-trace"] == "a, b"
    with blackhole_port() as port:
        url = f"https://127.0.0.1:{port}/secret-path?q=secret-query"
        failure = await failure_of(engine_get(make_client(), url))
    for text in (str(failure), repr(failure), str(failure.__cause__)):
        assert "secret" not in text
        assert "127.0.0.1" not in text
    assert str(failure) == "request_failure"


@pytest.mark.req("REQ-ERR-004", "REQ-SEC-020")
async def test_engine_failures_carry_no_library_exception_with_the_url(
    make_client: ClientFactory,
) -> None:
    """REQ-ERR-004: the chain below an EngineFailure holds no request URL (keys in params)."""
    with socket.socket() as probe:  # a port nobody listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/search"
    failure = await failure_of(
        engine_get(make_client(rules=LOOPBACK), url, explicit=True,
                   params=(("api_key", "canary-key-in-param"),))
    )  # fmt: skip
    chain: list[BaseException] = []
    link: BaseException | None = failure
    while link is not None:
        chain.append(link)
        link = link.__cause__ or link.__context__
    assert failure.failure_class is FailureClass.REQUEST_FAILURE
    assert len(chain) == 2  # the EngineFailure and a detached copy of our own error
    assert all("canary" not in repr(vars(e)) + repr(e) for e in chain)


@pytest.mark.req("REQ-ARCH-001", "REQ-ENG-006", "REQ-PRIV-004")
async def test_egress_raises_only_its_own_errors_and_the_engine_side_classifies_them(
    make_client: ClientFactory,
) -> None:
    """REQ-ARCH-001: egress answers in its own terms; the engine side maps them to classes."""
    async with LocalServer() as server:
        port = server.port  # closed once the block ends: nothing listens there
    client = make_client()
    request = OutboundRequest(url=f"http://127.0.0.1:{port}/search", params=(("key", "K3Y"),))
    with pytest.raises(EgressRequestFailed) as caught:
        await client.engine_get(
            request,
            explicit_endpoint=True,
            max_body_bytes=MiB,
            connect_timeout_ms=1_000,
            total_timeout_ms=2_000,
        )
    # Nothing beneath it: the library's exception would hold the URL and its key.
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert "K3Y" not in repr(request)
    expected = {
        EgressTimeout(): FailureClass.TIMEOUT,
        EgressBodyTooLarge(): FailureClass.PARSE_FAILURE,
        EgressDenied("egress"): FailureClass.REQUEST_FAILURE,
        EgressRequestFailed(): FailureClass.REQUEST_FAILURE,
    }
    assert {type(e): failure_class_of(e) for e in expected} == {
        type(e): c for e, c in expected.items()
    }
    failure = await failure_of(engine_get(client, f"http://127.0.0.1:{port}/", explicit=True))
    assert failure.failure_class is FailureClass.REQUEST_FAILURE
