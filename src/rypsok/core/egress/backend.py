"""Connect-time enforcement: the network backend under every connection pool.

httpcore2 opens every TCP connection through `AsyncNetworkBackend.connect_tcp`
(`AsyncConnectionPool(network_backend=...)`). `GuardedBackend` is that
backend. For each new connection it:

1. resolves the host itself, once (an address literal is not resolved);
2. judges every resolved address with the pool's `AddressPolicy` and refuses
   the connection if any address is refused: a mixed answer is a rebinding
   signal, and refusing it keeps the outcome independent of address order;
3. connects to one of the judged addresses, as a literal, through the stock
   anyio backend, so no second resolution can happen.

TLS is layered on afterwards by httpcore, which passes the URL's host as
`server_hostname`: SNI and certificate verification use the name while the
socket is connected to the judged address.

`PoolTransport` is the public `httpx2.AsyncBaseTransport` interface around a
pool built with this backend (httpx2's own transport takes no backend).
"""

from __future__ import annotations

import logging
import math
import socket
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Sequence
from ipaddress import IPv4Address, IPv6Address, ip_address

import anyio
import httpcore2
import httpx2

from rypsok.core.egress.errors import EgressDenied
from rypsok.core.egress.policy import AddressPolicy

__all__ = ["GuardedBackend", "PoolTransport", "Resolver", "system_resolver"]

IPAddress = IPv4Address | IPv6Address
# (host, port) -> the addresses to judge and connect to, in preference order.
Resolver = Callable[[str, int], Awaitable[Sequence[IPAddress]]]

logger = logging.getLogger("rypsok.egress")


async def system_resolver(host: str, port: int) -> Sequence[IPAddress]:
    """The system resolver (getaddrinfo in a worker thread), TCP answers only."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[IPAddress] = []
    for family, _, _, _, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = ip_address(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """Resolves once, judges every address, connects to a judged address."""

    def __init__(
        self,
        policy: AddressPolicy,
        *,
        resolver: Resolver = system_resolver,
        inner: httpcore2.AsyncNetworkBackend | None = None,
        only_endpoint: tuple[str, int] | None = None,
    ) -> None:
        self._policy = policy
        self._resolver = resolver
        self._inner = inner if inner is not None else httpcore2.AnyIOBackend()
        # Set for a pool that talks to a configured proxy only: any other
        # destination means the pool was misused, and is refused.
        self._only_endpoint = only_endpoint

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2 backend interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        if self._only_endpoint is not None and (host, port) != self._only_endpoint:
            raise EgressDenied("egress")
        with anyio.move_on_after(timeout) as scope:
            addresses = await self._resolve(host, port)
            for address in addresses:
                refused = self._policy.judge(host, address)
                if refused is not None:
                    # REQ-PRIV-004: a refused destination is logged by its reason only.
                    logger.info("egress refused range=%s", refused)
                    raise EgressDenied("egress", range_name=refused)
            logger.debug("egress connect host=%s", host)
            return await self._connect(
                addresses, port, scope.deadline, local_address, socket_options
            )
        raise httpcore2.ConnectTimeout()

    async def _resolve(self, host: str, port: int) -> Sequence[IPAddress]:
        try:
            return (ip_address(host),)
        except ValueError:
            pass
        try:
            addresses = await self._resolver(host, port)
        except OSError as exc:
            raise httpcore2.ConnectError() from exc
        if not addresses:
            raise httpcore2.ConnectError()
        return addresses

    async def _connect(
        self,
        addresses: Sequence[IPAddress],
        port: int,
        deadline: float,
        local_address: str | None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None,
    ) -> httpcore2.AsyncNetworkStream:
        options = list(socket_options) if socket_options is not None else None
        failure: Exception = httpcore2.ConnectError()
        # Tried in the resolver's order, one at a time. While other addresses
        # remain, an attempt gets half the time left, so a blackholed first
        # address (often an IPv6 one without a route) leaves time for the next.
        for index, address in enumerate(addresses):
            remaining: float | None = None
            if deadline != math.inf:
                remaining = deadline - anyio.current_time()
                if index < len(addresses) - 1:
                    remaining /= 2
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=remaining,
                    local_address=local_address,
                    socket_options=options,
                )
            except httpcore2.ConnectError as exc:
                failure = exc
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore2 backend interface)
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise EgressDenied("egress")  # no pool of ours is configured with a socket path

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class PoolTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport over an httpcore2 pool. Exceptions pass through unmapped."""

    def __init__(self, pool: httpcore2.AsyncConnectionPool) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        core_response = await self._pool.handle_async_request(core_request)
        if not isinstance(core_response.stream, AsyncIterable):
            raise TypeError("an async pool returned a synchronous stream")
        return httpx2.Response(
            status_code=core_response.status,
            headers=core_response.headers,
            stream=_ResponseStream(core_response.stream),
            extensions=core_response.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _ResponseStream(httpx2.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        # Closing returns the connection to the pool, or drops it when the
        # body was not read to the end.
        aclose = getattr(self._stream, "aclose", None)
        if aclose is not None:
            await aclose()
