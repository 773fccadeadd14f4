"""EgressClient.agent_get: the agent-directed primitive (REQ-SEC-006…010, REQ-TEST-005)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from ipaddress import ip_network
from typing import Any

import pytest

from rypsok.core.egress.client import AgentResponse, EgressClient
from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressRequestFailed,
    EgressTimeout,
)
from rypsok.core.egress.policy import EgressRules

from .conftest import LocalPKI, ScriptedResolver
from .servers import ConnectionRecorder, LocalServer, Seen, blackhole_port, respond

UA = "rypsok/0.1.0 (+https://github.com/rypsok/rypsok; ops@example.org)"
LOOPBACK = EgressRules(allow=(ip_network("127.0.0.1/32"),))

ClientFactory = Callable[..., EgressClient]


@pytest.fixture
async def make_client(
    pki: LocalPKI, localhost_resolver: ScriptedResolver
) -> AsyncIterator[ClientFactory]:
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


async def get(client: EgressClient, url: str, **kwargs: Any) -> AgentResponse:
    """One hop as the fetch pipeline makes it: the URL judged once, then requested."""
    return await client.agent_get(client.check_agent_url(url), **kwargs)


async def denied(call: Any) -> EgressDenied:
    with pytest.raises(EgressDenied) as caught:
        await call
    return caught.value


@pytest.mark.req("REQ-TEST-005", "REQ-SEC-006")
async def test_local_server_only_through_an_allow_rule(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-TEST-005, REQ-SEC-006: the production profile refuses loopback without the rule."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        url = server.url("/page", host="localhost")
        refused = await denied(get(make_client(fetch_extra_ports=(server.port,)), url))
        assert (refused.reason, refused.range_name) == ("egress", "loopback")
        assert server.connections == 0
        client = make_client(rules=LOOPBACK, fetch_extra_ports=(server.port,))
        response = await get(client, url)
        assert (response.status, response.body) == (200, b"ok")
        assert response.url == url


@pytest.mark.req("REQ-SEC-009", "REQ-TEST-005")
async def test_ports_outside_the_list_are_refused(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-SEC-009, REQ-TEST-005: a port outside LIM-F8 and the operator's list is refused."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        refused = await denied(get(make_client(rules=LOOPBACK), server.url(host="localhost")))
        assert refused.reason == "port"
        assert server.connections == 0


@pytest.mark.req("REQ-SEC-009", "REQ-TEST-005")
async def test_get_only_and_no_caller_headers(make_client: ClientFactory, pki: LocalPKI) -> None:
    """REQ-SEC-009, REQ-TEST-005: GET, with only the headers rypsok sets; no method choice."""
    parameters = inspect.signature(EgressClient.agent_get).parameters
    assert not {"method", "headers"} & set(parameters)
    async with LocalServer(ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK, fetch_extra_ports=(server.port,))
        await get(client, server.url(host="localhost"))
        (seen,) = server.requests
        assert seen.method == "GET"
        names = sorted(name.lower() for name, _ in seen.headers)
        assert names == ["accept", "accept-encoding", "connection", "host", "user-agent"]
        assert seen.header("user-agent") == [UA]
        # Only codings decoded in bounded steps are offered (REQ-SEC-013).
        assert seen.header("accept-encoding") == ["gzip, deflate, br, zstd"]


@pytest.mark.req("REQ-SEC-009")
async def test_http_only_when_the_operator_allows_it(make_client: ClientFactory) -> None:
    """REQ-SEC-009: plain http is refused unless allowed, then judged like https."""
    async with LocalServer() as server:
        url = server.url()
        refused = await denied(
            get(make_client(rules=LOOPBACK, fetch_extra_ports=(server.port,)), url)
        )
        assert refused.reason == "scheme"
        client = make_client(
            rules=LOOPBACK, fetch_allow_http=True, fetch_extra_ports=(server.port,)
        )
        assert (await get(client, url)).status == 200
        assert server.connections == 1


@pytest.mark.req("REQ-SEC-008", "REQ-TEST-005")
async def test_redirect_to_a_refused_destination_is_refused(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-SEC-008, REQ-TEST-005: the 3xx comes back; its target fails the same profile."""
    targets = [
        "https://169.254.169.254/latest/meta-data/",
        "https://[::ffff:10.0.0.1]/",
        "https://2130706433/",
        "https://user:pass@example.com/",
        "http://example.com/",
        "https://example.com:8080/",
    ]

    def redirect(location: str) -> Callable[[Seen, Any], Any]:
        async def handler(seen: Seen, writer: Any) -> bool:
            return await respond(writer, 301, (("Location", location),))

        return handler

    for target in targets:
        async with LocalServer(redirect(target), ssl_context=pki.server_context()) as server:
            client = make_client(rules=LOOPBACK, fetch_extra_ports=(server.port,))
            response = await get(client, server.url(host="localhost"))
            assert response.status == 301
            with pytest.raises(EgressDenied):
                client.check_agent_url(response.headers["location"])


@pytest.mark.req("REQ-TEST-005", "REQ-SEC-006")
@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("https://user:secret@localhost:{port}/", "url_credentials"),
        ("https://2130706433:{port}/", "url_host"),
        ("https://0x7f.1:{port}/", "url_host"),
        ("https://017700000001:{port}/", "url_host"),
        ("https://[::ffff:127.0.0.2]:{port}/", "egress"),
        ("https://[::1]:{port}/", "egress"),
        ("https://[64:ff9b::7f00:1]:{port}/", "egress"),
        ("https://127.0.0.2:{port}/", "egress"),
    ],
)
async def test_refused_urls_never_connect(
    make_client: ClientFactory, pki: LocalPKI, template: str, reason: str
) -> None:
    """REQ-TEST-005, REQ-SEC-006: credentials and literal tricks end before any connection."""
    async with LocalServer(ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK, fetch_extra_ports=(server.port,))
        refused = await denied(get(client, template.format(port=server.port)))
        assert refused.reason == reason
        assert server.connections == 0


@pytest.mark.req("REQ-SEC-007")
async def test_configured_proxy_is_never_used_for_agent_requests(
    make_client: ClientFactory, pki: LocalPKI
) -> None:
    """REQ-SEC-007: a proxy that cannot enforce the profile is bypassed, not trusted."""
    async with ConnectionRecorder(answer=True) as proxy:
        async with LocalServer(ssl_context=pki.server_context()) as server:
            client = make_client(rules=LOOPBACK, proxy=proxy.url, fetch_extra_ports=(server.port,))
            assert (await get(client, server.url(host="localhost"))).status == 200
            assert server.connections == 1
        assert proxy.connections == 0


@pytest.mark.req("REQ-SEC-010", "REQ-SEC-011")
async def test_fetch_bounds_and_timeouts(make_client: ClientFactory, pki: LocalPKI) -> None:
    """REQ-SEC-010, REQ-SEC-011: byte bound, connect timeout and connect failure kinds."""

    async def large(seen: Seen, writer: Any) -> bool:
        return await respond(writer, 200, (), b"x" * 70_000)

    async with LocalServer(large, ssl_context=pki.server_context()) as server:
        client = make_client(rules=LOOPBACK, fetch_extra_ports=(server.port,))
        with pytest.raises(EgressBodyTooLarge):
            await get(client, server.url(host="localhost"), max_body_bytes=65_536)
    with blackhole_port() as port:
        client = make_client(rules=LOOPBACK, fetch_extra_ports=(port,))
        with pytest.raises(EgressTimeout):
            await get(client, f"https://localhost:{port}/", connect_timeout_ms=100)
    async with LocalServer(ssl_context=pki.server_context()) as closed:
        port = closed.port
    client = make_client(rules=LOOPBACK, fetch_extra_ports=(port,))
    with pytest.raises(EgressRequestFailed):
        await get(client, f"https://localhost:{port}/")
