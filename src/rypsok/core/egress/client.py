"""The one client for every outbound request (REQ-SEC-005).

`EgressClient` is created once per process and holds its connection pools by
connect-time judgement, so that a kept-alive connection opened under one
judgement is never reused under another:

    engine       configured default endpoints: HTTPS, refused ranges refused
    explicit     endpoints the operator configured: http and private allowed
    agent        web_fetch and robots.txt: the agent-directed profile, no proxy

Every request:

* is judged on its URL by the profile, then on every resolved address by the
  pool's network backend (`backend.py`), which connects to a judged address;
* carries the one User-Agent (REQ-CMP-004); a driver header of that name, or
  of any other header egress owns, is dropped;
* ignores the environment: requests go straight to a transport over our own
  pool, with no client layer that could read proxy variables, and the default
  TLS context is built with `trust_env=False`, so SSL_CERT_FILE/SSL_CERT_DIR
  cannot add a CA. A proxy comes from configuration only, for engine requests
  only (REQ-RES-008, REQ-SEC-007);
* follows no redirect: a 3xx is returned as it is and the caller decides, so
  a credential header reaches the request's own origin only (REQ-SEC-017);
* stores and sends no cookies (there is no cookie jar);
* has a connect timeout and a total deadline covering the body; the read
  timeout is the total, and the deadline cuts any read short (REQ-SEC-011);
* reads the body as a stream, counting bytes after decompression as they are
  produced, and stops at the caller's bound (REQ-SEC-010, REQ-SEC-013).
  httpx2 inflates in pieces of at most 1 MiB, so a compression bomb costs at
  most the bound plus one piece.

Engine requests without a proxy go through one `EngineOrigin` per origin and
judgement (`origin.py`: llhttp inside an asyncio protocol over connections the
guarded backend opens, the bounded decoders of httpx2, without httpx2's request
and response objects or httpcore2's pool). Their bytes are the ones httpx2
wrote through h11: the request line's method and the fields are checked by h11
once per shape (`_shape`) and the target per request. Agent-directed and
proxied engine requests go through httpx2's transport interface over an
httpcore2 pool (`_get`).

Failures leave as `EgressError` (`errors.py`) and nothing else; their text is
a fixed kind, never a host, URL or response text. Egress is a leaf: it
imports nothing of engines or fetching, and callers translate its neutral
types (`messages.py`) on their side (REQ-ARCH-001).
Nothing is logged here beyond the connect decision in `backend.py`: no query,
path or header (REQ-PRIV-004).
"""

from __future__ import annotations

import contextlib
import functools
import re
import ssl
from collections.abc import Callable, Iterator, Mapping, Sequence
from ipaddress import ip_address
from types import MappingProxyType
from typing import Final, NamedTuple
from urllib.parse import quote_plus

import anyio
import h11
import httpcore2
import httpx2

from rypsok.core import limits
from rypsok.core.egress.backend import (
    GuardedBackend,
    IPAddress,
    PoolTransport,
    Resolver,
    system_resolver,
)
from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressError,
    EgressRequestFailed,
    EgressTimeout,
)
from rypsok.core.egress.messages import (
    AgentResponse,
    CheckedUrl,
    OutboundRequest,
    OutboundResponse,
)
from rypsok.core.egress.origin import EngineOrigin, RawHeaders, WireBackend
from rypsok.core.egress.policy import (
    DEFAULT_PORTS,
    NO_RULES,
    AddressPolicy,
    AgentProfile,
    EgressRules,
    EngineProfile,
)

__all__ = [
    "DECODED_CODINGS",
    "AgentResponse",
    "CheckedUrl",
    "EgressClient",
    "OutboundRequest",
    "OutboundResponse",
    "ReadBody",
    "map_transport_errors",
]

# The content codings httpx2 decodes here, each in bounded pieces (zlib and
# zstd at most 1 MiB of output per step, brotli half that), so a byte bound is
# counted on decoded bytes as they are produced (REQ-SEC-013). br needs the
# `brotli` package and zstd `backports.zstd` below Python 3.14; both are
# runtime dependencies, so all four are always offered.
DECODED_CODINGS: Final = ("gzip", "deflate", "br", "zstd")
# Names a response may use for codings above (RFC 9110 §8.4.1.3: x-gzip is gzip).
DECODED_ALIASES: Final = frozenset({*DECODED_CODINGS, "x-gzip", "identity"})

# What every request carries.
BASE_HEADERS: Final = {
    "accept": "*/*",
    "accept-encoding": ", ".join(DECODED_CODINGS),
    "connection": "keep-alive",
}

# Given the status and headers of an agent-directed response, whether its
# body is wanted at all (e.g. not for a media type that is refused anyway).
ReadBody = Callable[[int, Mapping[str, str]], bool]

# Headers egress sets or that frame the message: a driver cannot set them.
OWNED_HEADERS: Final = frozenset(
    {
        "host",
        "user-agent",
        "accept-encoding",
        "connection",
        "keep-alive",
        "content-length",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
    }
)

# The queue keeps engine requests in flight at most at LIM-C1, fetches at
# LIM-C3; the pools are sized for the operator ceilings of those limits so
# they never queue a request the limits admitted.
ENGINE_POOL_CONNECTIONS: Final = limits.ENGINE_REQUESTS_IN_FLIGHT_RANGE[1]
AGENT_POOL_CONNECTIONS: Final = limits.FETCHES_IN_FLIGHT_RANGE[1]
# Idle connections kept this long: long enough to carry a busy engine from one
# search to the next, short enough not to hold sockets servers already dropped.
KEEPALIVE_EXPIRY_S: Final = 30.0
# Engine origins come from the configuration: a few dozen, plus one per Wikipedia
# edition an operator lists (55 editions), so the cap leaves room for all of them.
MAX_ENGINE_POOLS: Final = 128

# Distinct engine endpoint URLs whose judgement is remembered (LIM-S8's
# ceiling of 16 engines per search, with room for per-category endpoints).
ENDPOINT_CACHE_SIZE: Final = 256
# Request shapes (endpoint host, method, body or not, a driver's fields) whose
# checked request line and fields are remembered: a few per engine.
SHAPE_CACHE_SIZE: Final = 256
# What `quote_plus` leaves as it is (its always-safe set), and the space it turns into `+`.
_FORM_PLAIN: Final = re.compile(r"[A-Za-z0-9_.~ -]*")
# What h11 accepts as a request target: visible ASCII, at least one character.
_TARGET: Final = re.compile(rb"[\x21-\x7e]+")

# Most specific first: every timeout class is also an OSError or HTTPError.
_TIMEOUTS: Final = (TimeoutError, httpx2.TimeoutException, httpcore2.TimeoutException)
_FAILURES: Final = (
    httpx2.HTTPError,
    httpx2.StreamError,
    httpx2.InvalidURL,
    httpcore2.NetworkError,
    httpcore2.ProtocolError,
    httpcore2.ProxyError,
    httpcore2.UnsupportedProtocol,
    h11.ProtocolError,
    ssl.SSLError,
    OSError,
)


@contextlib.contextmanager
def map_transport_errors() -> Iterator[None]:
    """Translate HTTP-library and socket exceptions into `EgressError` kinds."""
    try:
        yield
    except EgressError:
        raise
    except _TIMEOUTS as exc:
        raise EgressTimeout() from exc
    except _FAILURES as exc:
        raise EgressRequestFailed() from exc


class _Endpoint(NamedTuple):
    """One engine endpoint string as judged, with its pool and the request parts it fixes."""

    url: httpx2.URL
    pool: PoolTransport | EngineOrigin
    netloc: bytes  # the Host field
    target: bytes  # path and the endpoint's own query: the target without parameters
    path: bytes  # the path alone: parameters replace the endpoint's query


class EgressClient:
    """Every outbound GET of the process. Create once; `aclose` at shutdown."""

    def __init__(
        self,
        *,
        user_agent: str,
        rules: EgressRules = NO_RULES,
        ssl_context: ssl.SSLContext | None = None,
        proxy: str | None = None,
        fetch_allow_http: bool = False,
        fetch_extra_ports: tuple[int, ...] = (),
        resolver: Resolver = system_resolver,
    ) -> None:
        if not (user_agent.isascii() and user_agent.isprintable() and user_agent.strip()):
            raise ValueError("the User-Agent must be printable ASCII")
        self._engine_profile = EngineProfile(rules)
        # Engine endpoints are a handful of fixed strings: each is judged once, with
        # what a request to it needs before its own parts (the judged URL, the pool,
        # Host, the target's path). Refusals raise and so are never cached.
        self._endpoint = functools.lru_cache(maxsize=ENDPOINT_CACHE_SIZE)(self._judged_endpoint)
        self._request_shape = functools.lru_cache(maxsize=SHAPE_CACHE_SIZE)(self._shape)
        self._agent_profile = AgentProfile(
            rules, allow_http=fetch_allow_http, extra_ports=fetch_extra_ports
        )
        self._resolver = resolver
        # The system store (truststore's or OpenSSL's default paths), never a
        # bundle of our own, and never SSL_CERT_FILE/SSL_CERT_DIR.
        context = (
            ssl_context
            if ssl_context is not None
            else httpx2.create_ssl_context(verify=True, trust_env=False)
        )
        core_proxy, proxy_endpoint = _core_proxy(proxy, context) if proxy else (None, None)
        self._proxied = core_proxy is not None

        def pool(policy: AddressPolicy, connections: int, *, proxied: bool) -> PoolTransport:
            backend = GuardedBackend(
                # The proxy is configured by the operator: its address is not
                # judged against the ranges, only against deny rules.
                AddressPolicy(rules, apply_ranges=False) if proxied else policy,
                resolver=resolver,
                only_endpoint=proxy_endpoint if proxied else None,
            )
            return PoolTransport(
                httpcore2.AsyncConnectionPool(
                    ssl_context=context,
                    proxy=core_proxy if proxied else None,
                    max_connections=connections,
                    max_keepalive_connections=connections,
                    keepalive_expiry=KEEPALIVE_EXPIRY_S,
                    http1=True,
                    http2=False,
                    retries=0,
                    network_backend=backend,
                )
            )

        def engine_pool(explicit_endpoint: bool, url: httpx2.URL) -> PoolTransport | EngineOrigin:
            policy = self._engine_profile.address_policy(explicit_endpoint=explicit_endpoint)
            if self._proxied:
                return pool(policy, ENGINE_POOL_CONNECTIONS, proxied=True)
            # Without a proxy, the lean path: llhttp over the same guarded backend.
            return EngineOrigin(
                scheme=url.scheme,
                host=url.raw_host.decode("ascii"),
                port=url.port if url.port is not None else DEFAULT_PORTS[url.scheme],
                backend=GuardedBackend(policy, resolver=resolver, inner=WireBackend()),
                ssl_context=context,
                max_connections=ENGINE_POOL_CONNECTIONS,
                keepalive_expiry_s=KEEPALIVE_EXPIRY_S,
            )

        # One pool per engine origin: httpcore2 checks every idle connection of a
        # pool on each request, so a shared pool made every search pay for the
        # idle connections of all engines (17% of a call's CPU, performance §10).
        self._new_engine_pool = engine_pool
        self._engine_pools: dict[
            tuple[bool, str, str, int | None], PoolTransport | EngineOrigin
        ] = {}
        self._agent = pool(
            self._agent_profile.address_policy(), AGENT_POOL_CONNECTIONS, proxied=False
        )
        self._headers = {**BASE_HEADERS, "user-agent": user_agent}

    async def engine_get(
        self,
        request: OutboundRequest,
        *,
        explicit_endpoint: bool,
        max_body_bytes: int,
        connect_timeout_ms: int,
        total_timeout_ms: int,
    ) -> OutboundResponse:
        """Send to a configured endpoint (GET, or the POST a JSON API needs).

        Any failure is an `EgressError` of our own.

        The error raised carries no library exception beneath it: that one
        holds the request URL, which may carry a key in a parameter (e.g.
        Mojeek's), and a caller that chains or logs the cause must not see it.
        """
        try:
            endpoint = self._endpoint(request.url, explicit_endpoint)
            url, pool = endpoint.url, endpoint.pool
            if request.credential_headers and self._proxied and url.scheme == "http":
                # A forward proxy receives the whole plain-HTTP request, and with
                # it the credential: that is another origin (REQ-SEC-017).
                raise EgressDenied("credential_origin")
            if isinstance(pool, EngineOrigin):
                return await _origin_get(
                    pool,
                    self._request_bytes(endpoint, request),
                    max_body_bytes=max_body_bytes,
                    connect_timeout_ms=connect_timeout_ms,
                    total_timeout_ms=total_timeout_ms,
                )
            headers = self._engine_headers(request.headers)
            status, response_headers, body = await _get(
                pool,
                url,
                params=request.params,
                headers=headers,
                method=request.method,
                content=request.body,
                max_body_bytes=max_body_bytes,
                connect_timeout_ms=connect_timeout_ms,
                total_timeout_ms=total_timeout_ms,
            )
        except EgressError as exc:
            detached = _detached(exc)
        else:
            return OutboundResponse(status=status, headers=response_headers, body=body or b"")
        # Raised outside the handler, so not even the context links to the cause.
        raise detached

    async def agent_get(
        self,
        url: CheckedUrl,
        *,
        max_body_bytes: int = limits.FETCH_MAX_BYTES,
        connect_timeout_ms: int = limits.FETCH_CONNECT_TIMEOUT_MS,
        total_timeout_ms: int = limits.FETCH_TIMEOUT_MS,
        truncate: bool = False,
        read_body: ReadBody | None = None,
    ) -> AgentResponse:
        """GET one agent-directed URL (one hop) judged by `check_agent_url`.

        Raises `EgressError` kinds. A 3xx is returned as it is: the caller
        checks the Location with `check_agent_url` and calls again
        (REQ-SEC-008). No caller header is sent (REQ-SEC-009). With
        `truncate`, a body past the bound is cut there instead of failing
        (robots.txt: RFC 9309 reads the first 500 KiB). When `read_body`
        returns False for the status and headers, the body is not read.
        """
        status, headers, body = await _get(
            self._agent,
            url._parsed,  # made by check_agent_url: judged once per hop
            params=(),
            headers=self._headers,
            max_body_bytes=max_body_bytes,
            connect_timeout_ms=connect_timeout_ms,
            total_timeout_ms=total_timeout_ms,
            truncate=truncate,
            read_body=read_body,
        )
        return AgentResponse(
            status=status,
            headers=headers,
            body=body or b"",
            url=url.text,
            body_read=body is not None,
        )

    def check_agent_url(self, url: str) -> CheckedUrl:
        """The URL as it will be requested, or `EgressDenied` (REQ-SEC-006…009).

        Judged on the URL alone: scheme, port, notation, credentials, LIM-F9 on
        the form sent, and an address-literal host. The addresses a name
        resolves to are judged at connect time.
        """
        parsed = self._agent_profile.check(url)
        return CheckedUrl(text=str(parsed), host=parsed.host, _parsed=parsed)

    async def judge_agent_destination(self, url: CheckedUrl, *, timeout_ms: int) -> CheckedUrl:
        """The URL if its host resolves only to addresses the profile allows, else `EgressDenied`.

        For a destination rypsok names without connecting to it (a cross-host
        redirect target): an unresolvable host does not pass. The connection,
        if one is made later, is judged again at connect time.
        """
        parsed = url._parsed  # made by check_agent_url
        host = parsed.host
        policy = self._agent_profile.address_policy()
        addresses: Sequence[IPAddress]
        try:
            addresses = (ip_address(host),)
        except ValueError:
            with anyio.move_on_after(timeout_ms / 1000):
                try:
                    port = parsed.port or DEFAULT_PORTS[parsed.scheme]
                    addresses = await self._resolver(host, port)
                except OSError:
                    addresses = ()
                if addresses and all(policy.judge(host, a) is None for a in addresses):
                    return url
            raise EgressDenied("egress") from None
        if policy.judge(host, addresses[0]) is not None:
            raise EgressDenied("egress")
        return url

    def _engine_headers(self, driver_headers: Sequence[tuple[str, str]]) -> dict[str, str]:
        """Egress's fields, then the driver's (names lower-cased) but none egress owns."""
        headers = dict(self._headers)
        for name, value in driver_headers:
            if name.lower() not in OWNED_HEADERS:
                headers[name.lower()] = value
        return headers

    def _judged_endpoint(self, endpoint: str, explicit_endpoint: bool) -> _Endpoint:
        """The endpoint judged by the engine profile, its pool, and its parts a request needs."""
        url = self._engine_profile.check(endpoint, explicit_endpoint=explicit_endpoint)
        pool = self._engine_pool(url, explicit_endpoint)
        return _Endpoint(url, pool, url.netloc, url.raw_path, url.raw_path.partition(b"?")[0])

    def _request_bytes(self, endpoint: _Endpoint, request: OutboundRequest) -> bytes:
        """The request as httpx2 wrote it through h11: line, fields, length, body."""
        before_target, after_target = self._request_shape(
            endpoint.netloc, request.method, bool(request.body), request.headers
        )
        target = (
            target_with_query(endpoint.path, request.params) if request.params else endpoint.target
        )
        if _TARGET.fullmatch(target) is None:
            raise EgressRequestFailed()  # h11 refused such a target as well
        if not request.body:
            return b"".join((before_target, target, after_target, b"\r\n"))
        length = b"Content-Length: %d\r\n\r\n" % len(request.body)
        return b"".join((before_target, target, after_target, length, request.body))

    def _shape(
        self,
        netloc: bytes,
        method: str,
        with_body: bool,
        driver_headers: tuple[tuple[str, str], ...],
    ) -> tuple[bytes, bytes]:
        """What comes before and after the target, checked by h11 once per shape.

        A driver's fields, method and endpoint are fixed per engine and kind
        of call, so this runs once for each; the target (the query) and the
        body's length change per request and are written around it.
        """
        headers = self._engine_headers(driver_headers)
        fields = wire_fields(netloc, headers, method=method, with_body=with_body)
        try:
            # The checks h11 made on every request: method and field syntax, one Host.
            h11.Request(method=method, target=b"/", headers=fields)
            line_start = method.encode("ascii") + b" "
        except (h11.LocalProtocolError, UnicodeEncodeError):
            raise EgressRequestFailed() from None
        lines = b"".join(b"%s: %s\r\n" % field for field in fields)
        return line_start, b" HTTP/1.1\r\n" + lines

    def _engine_pool(
        self, url: httpx2.URL, explicit_endpoint: bool
    ) -> PoolTransport | EngineOrigin:
        """The pool of this engine origin under this judgement, made on first use."""
        key = (explicit_endpoint, url.scheme, url.host, url.port)
        transport = self._engine_pools.get(key)
        if transport is None:
            if len(self._engine_pools) >= MAX_ENGINE_POOLS:
                raise EgressDenied("egress")  # engine origins are a fixed, configured few
            transport = self._engine_pools[key] = self._new_engine_pool(explicit_endpoint, url)
        return transport

    async def aclose(self) -> None:
        for transport in (*self._engine_pools.values(), self._agent):
            await transport.aclose()


async def _origin_get(
    origin: EngineOrigin,
    request: bytes,
    *,
    max_body_bytes: int,
    connect_timeout_ms: int,
    total_timeout_ms: int,
) -> OutboundResponse:
    """One engine request on the lean path: httpx2's bytes, its reading of the answer.

    The origin holds the total deadline itself (a timer on the read of a
    kept-alive connection, a cancel scope around any wait before it).
    """
    with map_transport_errors():
        status, raw_headers, body = await origin.request(
            request,
            max_body_bytes=max_body_bytes,
            connect_timeout_s=min(connect_timeout_ms, total_timeout_ms) / 1000,
            total_s=total_timeout_ms / 1000,
        )
    return OutboundResponse(status=status, headers=joined_headers(raw_headers), body=body)


def request_target(url: httpx2.URL, params: Sequence[tuple[str, str]]) -> bytes:
    """Path and query as httpx2's `Request(url, params=...)` writes them.

    httpx2 replaces the endpoint's own query with the parameters (grouping
    repeated names at their first place) and encodes them with `urlencode`,
    whose output its URL quoting leaves as it is.
    """
    if not params:
        return url.raw_path
    return target_with_query(url.raw_path.partition(b"?")[0], params)


def target_with_query(path: bytes, params: Sequence[tuple[str, str]]) -> bytes:
    """The path (without the endpoint's own query) and the parameters, as httpx2 encoded them."""
    grouped: dict[str, list[str]] = {}
    for name, value in params:
        grouped.setdefault(name, []).append(value)
    pairs = [(name, value) for name, values in grouped.items() for value in values]
    # Most parameters are plain text, which `_form_quoted` only changes by a space to `+`:
    # when every name and value is, one test and one replacement over the joined query
    # give its bytes (a plain name or value holds no `&` or `=`), instead of two each.
    if _FORM_PLAIN.fullmatch("".join([part for pair in pairs for part in pair])) is not None:
        query = "&".join([f"{name}={value}" for name, value in pairs]).replace(" ", "+")
    else:
        query = "&".join([f"{_form_quoted(name)}={_form_quoted(value)}" for name, value in pairs])
    return path + b"?" + query.encode("ascii")


def _form_quoted(text: str) -> str:
    """`quote_plus(text)`, as `urlencode` calls it, without its per-character pass on plain text.

    Letters, digits, `_.-~` stay as they are and a space becomes `+`
    there; anything else goes through `quote_plus` itself.
    """
    if _FORM_PLAIN.fullmatch(text) is not None:
        return text.replace(" ", "+")
    return quote_plus(text)


def wire_headers(
    url: httpx2.URL, headers: Mapping[str, str], *, method: str, body: bytes
) -> RawHeaders:
    """The header fields httpx2 sent: Host first, the given ones in order, then Content-Length."""
    wire = wire_fields(url.netloc, headers, method=method, with_body=bool(body))
    if body:
        wire.append((b"Content-Length", str(len(body)).encode("ascii")))
    return wire


def wire_fields(
    netloc: bytes, headers: Mapping[str, str], *, method: str, with_body: bool
) -> RawHeaders:
    """The fields before a body's Content-Length: Host, the length of an empty POST, the rest."""
    wire: RawHeaders = [(b"Host", netloc)]
    if not with_body and method in ("POST", "PUT", "PATCH"):
        wire.append((b"Content-Length", b"0"))
    try:
        wire += [(name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()]
    except UnicodeEncodeError:
        raise EgressRequestFailed() from None  # a header httpx2 could not have sent either
    return wire


def joined_headers(raw: RawHeaders) -> MappingProxyType[str, str]:
    """Lower-case names, repeated fields joined by ", ", decoded as httpx2 decodes them.

    One encoding for all fields: ASCII if every field is, else UTF-8 if every
    field is, else ISO-8859-1.
    """
    encoding = (
        "ascii"
        if all(name.isascii() and value.isascii() for name, value in raw)
        else next(
            (
                candidate
                for candidate in ("utf-8",)
                if all(
                    _decodes(name, candidate) and _decodes(value, candidate) for name, value in raw
                )
            ),
            "iso-8859-1",
        )
    )
    joined: dict[str, str] = {}
    for raw_name, raw_value in raw:
        name, value = raw_name.lower().decode(encoding), raw_value.decode(encoding)
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return MappingProxyType(joined)


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


async def _get(
    transport: PoolTransport,
    url: httpx2.URL,
    *,
    params: Sequence[tuple[str, str]],
    headers: dict[str, str],
    max_body_bytes: int,
    connect_timeout_ms: int,
    total_timeout_ms: int,
    truncate: bool = False,
    read_body: ReadBody | None = None,
    method: str = "GET",
    content: bytes = b"",
) -> tuple[int, MappingProxyType[str, str], bytes | None]:
    """One GET (or an engine's POST) through a pool's transport: no redirect, cookie or env.

    The body is None when `read_body` declined it.
    """
    total_s = total_timeout_ms / 1000
    # Read, write and pool waits get the whole total; the deadline below cuts
    # each one to the time actually remaining.
    timeout = httpx2.Timeout(total_s, connect=min(connect_timeout_ms, total_timeout_ms) / 1000)
    with map_transport_errors(), anyio.fail_after(total_s):
        request = httpx2.Request(
            method,
            url,
            params=list(params) if params else None,
            headers=headers,
            content=content or None,
            extensions={"timeout": timeout.as_dict()},
        )
        response = await transport.handle_async_request(request)
        response.request = request
        # Header names are lower-case; repeated fields are joined by ", ".
        response_headers = MappingProxyType(dict(response.headers.items()))
        body: bytes | None = None
        try:
            if read_body is None or read_body(response.status_code, response_headers):
                body = await _read_body(response, max_body_bytes, truncate=truncate)
        finally:
            # Returns a fully read connection to the pool; drops any other.
            await response.aclose()
        return response.status_code, response_headers, body


async def _read_body(
    response: httpx2.Response, max_body_bytes: int, *, truncate: bool = False
) -> bytes:
    """The decoded body, or `EgressBodyTooLarge` as soon as it passes the bound.

    With `truncate`, the first `max_body_bytes` are returned instead.
    """
    chunks: list[bytes] = []
    received = 0
    # aiter_bytes yields decoded bytes as they are produced; Content-Length is
    # not consulted, it may lie and it counts compressed bytes.
    async for chunk in response.aiter_bytes():
        received += len(chunk)
        if received > max_body_bytes and truncate:
            chunks.append(chunk[: len(chunk) - (received - max_body_bytes)])
            return b"".join(chunks)
        if received > max_body_bytes:
            # The caller closes the response, which drops the connection:
            # the rest is neither read nor inflated.
            raise EgressBodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def _detached(exc: EgressError) -> EgressError:
    """The same fixed-vocabulary error without the library exception it was raised from."""
    if isinstance(exc, EgressDenied):
        return EgressDenied(exc.reason, range_name=exc.range_name)
    return type(exc)()


def _core_proxy(proxy: str, context: ssl.SSLContext) -> tuple[httpcore2.Proxy, tuple[str, int]]:
    """The configured proxy for httpcore2, and the one endpoint its pools may connect to."""
    try:
        url = httpx2.URL(proxy)
    except httpx2.InvalidURL:
        raise ValueError("the proxy is not a valid URL") from None
    if url.scheme not in DEFAULT_PORTS or not url.raw_host:
        raise ValueError("the proxy must be an http:// or https:// URL")
    port = url.port if url.port is not None else DEFAULT_PORTS[url.scheme]
    auth = (url.username, url.password) if url.userinfo else None
    core = httpcore2.Proxy(
        url=httpcore2.URL(scheme=url.raw_scheme, host=url.raw_host, port=port, target=b"/"),
        auth=auth,
        ssl_context=context,
    )
    return core, (url.raw_host.decode("ascii"), port)
