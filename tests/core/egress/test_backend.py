"""Connect-time enforcement in the network backend (REQ-SEC-007, REQ-TEST-005)."""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from ipaddress import ip_network

import anyio
import httpcore2
import pytest

from rypsok.core.egress.backend import GuardedBackend, system_resolver
from rypsok.core.egress.errors import EgressDenied
from rypsok.core.egress.policy import AddressPolicy, EgressRules

from .conftest import ScriptedResolver

PUBLIC = "93.184.215.14"
AGENT = AddressPolicy(EgressRules())


class _Stream(httpcore2.AsyncNetworkStream):
    async def aclose(self) -> None:
        return None


@dataclass
class RecordingInner(httpcore2.AsyncNetworkBackend):
    """Stands in for the socket layer: records where it was asked to connect."""

    refuse: set[str] = field(default_factory=set)
    connects: list[tuple[str, int]] = field(default_factory=list)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        self.connects.append((host, port))
        if host in self.refuse:
            raise httpcore2.ConnectError()
        return _Stream()


def _backend(
    resolver: ScriptedResolver, inner: RecordingInner, policy: AddressPolicy = AGENT
) -> GuardedBackend:
    return GuardedBackend(policy, resolver=resolver, inner=inner)


@pytest.mark.req("REQ-SEC-007", "REQ-TEST-005")
async def test_rebinding_answer_never_reaches_the_socket() -> None:
    """REQ-SEC-007, REQ-TEST-005: resolved once; the judged address is the one connected."""
    resolver = ScriptedResolver({"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
    inner = RecordingInner()
    backend = _backend(resolver, inner)
    await backend.connect_tcp("rebind.test", 443)
    assert resolver.calls == ["rebind.test"]
    assert inner.connects == [(PUBLIC, 443)]
    # The next connection resolves again and gets the rebound answer: refused.
    with pytest.raises(EgressDenied) as caught:
        await backend.connect_tcp("rebind.test", 443)
    assert caught.value.range_name == "loopback"
    assert inner.connects == [(PUBLIC, 443)]


@pytest.mark.req("REQ-SEC-006", "REQ-SEC-007", "REQ-TEST-005")
@pytest.mark.parametrize(
    "answer",
    [
        [PUBLIC, "127.0.0.1"],
        ["127.0.0.1", PUBLIC],
        [PUBLIC, "::ffff:10.0.0.1"],
        ["2606:4700:4700::1111", "fd00::1"],
        ["169.254.169.254"],
    ],
)
async def test_any_refused_address_refuses_the_connection(answer: list[str]) -> None:
    """REQ-SEC-006, REQ-SEC-007, REQ-TEST-005: every resolved address is judged."""
    inner = RecordingInner()
    backend = _backend(ScriptedResolver({"mixed.test": [answer]}), inner)
    with pytest.raises(EgressDenied):
        await backend.connect_tcp("mixed.test", 443)
    assert inner.connects == []


@pytest.mark.req("REQ-SEC-007", "REQ-TEST-005")
@pytest.mark.parametrize("literal", ["127.0.0.1", "::1", "::ffff:127.0.0.1", "10.0.0.1"])
async def test_address_literals_are_judged_without_resolution(literal: str) -> None:
    """REQ-SEC-007, REQ-TEST-005: literals are judged as they are, never resolved."""
    resolver = ScriptedResolver({})
    inner = RecordingInner()
    with pytest.raises(EgressDenied):
        await _backend(resolver, inner).connect_tcp(literal, 443)
    assert resolver.calls == []
    assert inner.connects == []


@pytest.mark.req("REQ-SEC-007")
async def test_falls_back_only_to_other_judged_addresses() -> None:
    """REQ-SEC-007: a failed address is followed by the next judged one, in order."""
    resolver = ScriptedResolver({"two.test": [["2606:4700:4700::1111", PUBLIC]]})
    inner = RecordingInner(refuse={"2606:4700:4700::1111"})
    await _backend(resolver, inner).connect_tcp("two.test", 443)
    assert inner.connects == [("2606:4700:4700::1111", 443), (PUBLIC, 443)]


@pytest.mark.req("REQ-SEC-007")
async def test_allow_rule_by_name_admits_its_answers() -> None:
    """REQ-SEC-007: a host allow rule opens the ranges for that name only."""
    resolver = ScriptedResolver({"local.test": [["127.0.0.1"]], "other.test": [["127.0.0.1"]]})
    inner = RecordingInner()
    backend = _backend(resolver, inner, AddressPolicy(EgressRules(allow=("local.test",))))
    await backend.connect_tcp("local.test", 8080)
    with pytest.raises(EgressDenied):
        await backend.connect_tcp("other.test", 8080)
    assert inner.connects == [("127.0.0.1", 8080)]


@pytest.mark.req("REQ-SEC-011")
async def test_slow_resolution_counts_against_the_connect_timeout() -> None:
    """REQ-SEC-011: resolution and connection share the connect timeout."""

    async def slow(host: str, port: int) -> list[object]:
        await anyio.sleep(10)
        return []

    backend = GuardedBackend(AGENT, resolver=slow, inner=RecordingInner())  # type: ignore[arg-type]
    with anyio.fail_after(2), pytest.raises(httpcore2.ConnectTimeout):
        await backend.connect_tcp("slow.test", 443, timeout=0.05)


@pytest.mark.req("REQ-SEC-007")
async def test_resolution_failure_is_a_connect_error() -> None:
    """REQ-SEC-007: no answer or a resolver error is a connect error, not a crash."""
    empty = ScriptedResolver({"empty.test": [[]]})
    with pytest.raises(httpcore2.ConnectError):
        await _backend(empty, RecordingInner()).connect_tcp("empty.test", 443)

    async def failing(host: str, port: int) -> list[object]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    backend = GuardedBackend(AGENT, resolver=failing, inner=RecordingInner())  # type: ignore[arg-type]
    with pytest.raises(httpcore2.ConnectError):
        await backend.connect_tcp("does-not-exist.invalid", 443)


@pytest.mark.req("REQ-SEC-007")
async def test_proxy_pool_connects_to_the_proxy_only() -> None:
    """REQ-SEC-007: a pool built for a proxy refuses every other destination."""
    inner = RecordingInner()
    backend = GuardedBackend(
        AddressPolicy(EgressRules(), apply_ranges=False),
        resolver=ScriptedResolver({}),
        inner=inner,
        only_endpoint=("127.0.0.1", 3128),
    )
    await backend.connect_tcp("127.0.0.1", 3128)
    with pytest.raises(EgressDenied):
        await backend.connect_tcp("127.0.0.1", 3129)
    with pytest.raises(EgressDenied):
        await backend.connect_unix_socket("/run/docker.sock")
    assert inner.connects == [("127.0.0.1", 3128)]


@pytest.mark.req("REQ-SEC-007")
async def test_system_resolver_answers_addresses() -> None:
    """REQ-SEC-007: the default resolver returns addresses to judge, without duplicates."""
    addresses = await system_resolver("127.0.0.1", 443)
    assert [str(a) for a in addresses] == ["127.0.0.1"]
    judged = AddressPolicy(EgressRules(allow=(ip_network("127.0.0.1/32"),)))
    assert judged.judge("127.0.0.1", addresses[0]) is None


@dataclass
class BlackholeFirst(RecordingInner):
    """The first address never answers: the attempt runs until its timeout."""

    timeouts: list[float | None] = field(default_factory=list)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        self.connects.append((host, port))
        self.timeouts.append(timeout)
        if len(self.connects) == 1:
            await anyio.sleep(timeout or 0)
            raise httpcore2.ConnectError()
        return _Stream()


@pytest.mark.req("REQ-SEC-011")
async def test_a_blackholed_first_address_leaves_time_for_the_next() -> None:
    """REQ-SEC-011: one connect timeout for all addresses; the first may not use it all."""
    resolver = ScriptedResolver({"two.test": [["2606:4700:4700::1111", PUBLIC]]})
    inner = BlackholeFirst()
    with anyio.fail_after(2):
        await GuardedBackend(AGENT, resolver=resolver, inner=inner).connect_tcp(
            "two.test", 443, timeout=0.2
        )
    first, second = inner.timeouts
    assert first is not None and second is not None
    assert 0.05 < first <= 0.1
    assert 0.05 < second <= 0.1 + 0.01
