"""MCP over Streamable HTTP with keys, TLS and listener protections.

The SDK's Streamable HTTP app serves the protocol (REQ-MCP-003): the
handshake-based revisions in stateful sessions and the handshake-free
revision on the same endpoint, never the old HTTP+SSE transport. The modes
are chosen for cancellation (REQ-MCP-007): responses are SSE streams
(`json_response=False`) and sessions are stateful, so a handshake-era
`notifications/cancelled` reaches its call and a handshake-free call is
cancelled by the SDK when its response stream closes. The SDK does not treat
a closed stream as a cancellation on the handshake revisions; without an
event store such a stream can never be resumed, so `_ClosedStreamCancels`
hands the session the cancellation the client can no longer send.

Around that app, outermost first, each layer one concern:

- `_AccessLog`: one line per request (method, endpoint or "(other)", status,
  caller, duration); never a query string, header or key. uvicorn's own access
  log is off.
- `_TimeBound` (LIM-H5, REQ-SEC-022): ends any request after `request_ms`,
  with 408 when no response has started, else by ending the started stream.
  `_head_bound_protocol` does the same for a request head that never completes.
- `_HostOrigin` (REQ-SEC-018): the SDK's Host and Origin validation on every
  request, on every bind, before any key is looked at.
- `_KeyGate` (decision 5): a bearer key on every request; one 401 that says a
  new key is needed otherwise. The caller name becomes the SDK's access token
  `client_id`, the identity for per-caller limits (REQ-SEC-019).
- `_ModernOnly` (REQ-MCP-006): only when the operator disabled the handshake
  revisions.
- `_SessionBound` (LIM-H6, REQ-SEC-024): the SDK refuses a handshake beyond
  `max_sessions` with a bare 503; this adds Retry-After, logs and counts it.

uvicorn serves HTTP/1.1 only (h11, ALPN `http/1.1`): HTTP/2 is not served, so
LIM-H4 (streams per HTTP/2 connection) has no connection to bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Final

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import unsupported_protocol_version_rejection
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from rypsok.core import limits, logs
from rypsok.core.config import ConfigError, Secret
from rypsok.core.http_policy import HttpPlan, certificate_statement, tls_server_context
from rypsok.core.services import Services
from rypsok.mcp.server import build_server

log = logging.getLogger("rypsok.http")

# A refused handshake is told to come back later: sessions end when their
# client deletes them or after the SDK's idle timeout, so a slot frees up in time.
SESSION_RETRY_AFTER_S: Final = 30
# uvicorn waits this long for open streams before cancelling them at shutdown,
# leaving the rest of LIM-O1 for the sessions and the services to close.
GRACEFUL_SHUTDOWN_S: Final = limits.SHUTDOWN_MS // 2000
# Delivering a cancellation into a session is one local request, done in well
# under LIM-O2; this only bounds it should the session be closing at that moment.
CANCEL_DELIVERY_BOUND_S: Final = limits.CANCEL_MS / 1000 * 5
CLOSE_GRACE_S: Final = limits.SHUTDOWN_MS / 1000 / 4

# JSON-RPC codes of rypsok's own HTTP refusals, in the implementation-defined band.
KEY_REFUSED: Final = -32010
REQUEST_TIMED_OUT: Final = -32011

_SESSION_HEADER: Final = b"mcp-session-id"
_VERSION_HEADER: Final = b"mcp-protocol-version"
# The access token never carries the key: nothing downstream needs it.
_WITHHELD: Final = "(withheld)"
_HEAD_TIMEOUT_BODY: Final = b"the request head did not arrive in time\n"
_RAW_408: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s"
) % (len(_HEAD_TIMEOUT_BODY), _HEAD_TIMEOUT_BODY)


@dataclass
class ListenerCounters:
    """What the listener refused or ended, since start (logged as it happens)."""

    keys_refused: int = 0
    hosts_refused: int = 0
    origins_refused: int = 0
    sessions_refused: int = 0
    requests_timed_out: int = 0


@dataclass
class HttpApp:
    """The ASGI application served, with its counters."""

    asgi: ASGIApp
    counters: ListenerCounters = field(default_factory=ListenerCounters)


# -- keys ---------------------------------------------------------------------------------------


def _digest(text: str) -> bytes:
    # Hashing first makes every comparison the same length, so timing tells nothing.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class KeyVerifier:
    """The SDK's `TokenVerifier` over the configured keys, compared in constant time.

    Only digests are kept. Every configured key is compared, whichever
    matches, so the time taken does not tell which caller a key is close to.
    """

    def __init__(self, keys: Sequence[tuple[str, Secret]]) -> None:
        self._keys = [(caller, _digest(secret.reveal())) for caller, secret in keys]

    async def verify_token(self, token: str) -> AccessToken | None:
        presented = _digest(token)
        caller: str | None = None
        for name, digest in self._keys:
            if hmac.compare_digest(presented, digest) and caller is None:
                caller = name
        if caller is None:
            return None
        return AccessToken(token=_WITHHELD, client_id=caller, scopes=[])


def _bearer(scope: Scope) -> str | None:
    value = _header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def _jsonrpc_error(code: int, message: str, status: int, headers: dict[str, str]) -> Response:
    """An HTTP refusal whose body is a JSON-RPC error, which the SDK's client passes on."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def _key_refusal(presented: bool) -> Response:
    """One answer for a refused or missing key: what to do, never what was sent."""
    if presented:
        challenge = (
            'Bearer realm="rypsok", error="invalid_token", error_description="a new key is needed"'
        )
        message = (
            "This key was refused: a new key is needed. Ask the operator of this rypsok "
            "service for one; sending the same key again will not work."
        )
    else:
        challenge = 'Bearer realm="rypsok"'
        message = (
            "A key is needed: send 'Authorization: Bearer <key>' with a key from the operator "
            "of this rypsok service."
        )
    headers = {"www-authenticate": challenge, "cache-control": "no-store"}
    return _jsonrpc_error(KEY_REFUSED, message, 401, headers)


# -- small ASGI helpers -------------------------------------------------------------------------


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _is_handshake_request(scope: Scope) -> bool:
    """Routed by the SDK to the handshake-era transport (the same test the SDK makes)."""
    version = _header(scope, _VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def _caller(scope: Scope) -> str | None:
    user = scope.get("user")
    return user.username if isinstance(user, AuthenticatedUser) else None


@dataclass
class _ResponseState:
    """How far the response of one request got."""

    started: bool = False
    finished: bool = False
    status: int | None = None

    def watch(self, send: Send) -> Send:
        """`send`, noting what went out; a message counts once the server took it."""

        async def watched(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.start":
                self.started = True
                self.status = message["status"]
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                self.finished = True

        return watched


# -- the layers, outermost first ----------------------------------------------------------------


class _AccessLog:
    """One line per request; the path only when it is the endpoint (a path may carry anything)."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        state = _ResponseState()
        try:
            await self.app(scope, receive, state.watch(send))
        finally:
            logs.event(
                log,
                "http_request",
                method=scope["method"],
                path=self.path if scope["path"] == self.path else "(other)",
                status=state.status,
                caller=_caller(scope),
                duration_ms=round((time.monotonic() - started) * 1000, 2),
            )


class _TimeBound:
    """LIM-H5: a request ends after `seconds`, whatever its state, body or handler.

    Before a response has started the answer is 408; a started response (an
    SSE stream) cannot change its status any more, so it is ended instead.
    Cancelling the request also cancels its call: directly on the
    handshake-free revision, through `_ClosedStreamCancels` on the others.
    """

    def __init__(self, app: ASGIApp, seconds: float, counters: ListenerCounters) -> None:
        self.app = app
        self.seconds = seconds
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = _ResponseState()
        with anyio.move_on_after(self.seconds) as bound:
            await self.app(scope, receive, state.watch(send))
        if not bound.cancelled_caught or state.finished:
            return
        limit_ms = round(self.seconds * 1000)
        self.counters.requests_timed_out += 1
        phase = "stream" if state.started else "request"
        logs.event(log, "request_timed_out", logging.WARNING, phase=phase, limit_ms=limit_ms)
        if state.started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        message = f"The request took longer than {limit_ms} ms and was ended; send it again."
        response = _jsonrpc_error(REQUEST_TIMED_OUT, message, 408, {"connection": "close"})
        await response(scope, receive, send)


class _HostOrigin:
    """REQ-SEC-018: Host and Origin checked on every request (421 and 403), any bind."""

    def __init__(
        self, app: ASGIApp, settings: TransportSecuritySettings, counters: ListenerCounters
    ) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(settings)
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = await self.security.validate_request(Request(scope), is_post=False)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        if refusal.status_code == 421:
            self.counters.hosts_refused += 1
        else:
            self.counters.origins_refused += 1
        logs.event(
            log,
            "request_refused",
            logging.WARNING,
            reason="host" if refusal.status_code == 421 else "origin",
            status=refusal.status_code,
        )
        await refusal(scope, receive, send)


class _KeyGate:
    """Decision 5: nothing answers without a configured key, on any bind.

    The authenticated user goes where the SDK looks for it: the scope (session
    ownership) and, through `AuthContextMiddleware`, `get_access_token()`.
    """

    def __init__(self, app: ASGIApp, verifier: KeyVerifier, counters: ListenerCounters) -> None:
        self.app = AuthContextMiddleware(app)
        self.verifier = verifier
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = _bearer(scope)
        access = await self.verifier.verify_token(token) if token is not None else None
        if access is None:
            self.counters.keys_refused += 1
            presented = token is not None
            logs.event(
                log, "key_refused", logging.WARNING, reason="refused" if presented else "missing"
            )
            await _key_refusal(presented)(scope, receive, send)
            return
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        await self.app(scope, receive, send)


class _ModernOnly:
    """REQ-MCP-006: with the handshake revisions disabled, their requests are told so."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if not _is_handshake_request(scope):
            await self.app(scope, receive, send)
            return
        requested = _header(scope, _VERSION_HEADER) or ""
        rejection = unsupported_protocol_version_rejection(requested)
        if rejection is None:  # never: a handshake version is not a modern one
            await self.app(scope, receive, send)
            return
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": rejection.code, "message": rejection.message, "data": rejection.data},
        }
        await JSONResponse(body, status_code=400)(scope, receive, send)


class _SessionBound:
    """LIM-H6: a handshake beyond the bound gets 503 with Retry-After, logged and counted.

    The SDK decides the bound (`max_sessions`, under its own lock) and answers
    503 without creating a session; only that answer is completed here. Any
    refused opening request also loses the session id the SDK echoes on it,
    since no session was kept.
    """

    def __init__(self, app: ASGIApp, path: str, bound: int, counters: ListenerCounters) -> None:
        self.app = app
        self.path = path
        self.bound = bound
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        opening = (
            scope["type"] == "http"
            and scope["path"] == self.path
            and _is_handshake_request(scope)
            and _header(scope, _SESSION_HEADER) is None
        )
        if not opening:
            await self.app(scope, receive, send)
            return

        async def hinted(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                # A refused opening request creates no session (the SDK discards it),
                # so it must not name one either.
                headers = [(k, v) for k, v in message.get("headers", []) if k != _SESSION_HEADER]
                message = {**message, "headers": headers}
            if message["type"] == "http.response.start" and message["status"] == 503:
                headers = [
                    *message.get("headers", []),
                    (b"retry-after", b"%d" % SESSION_RETRY_AFTER_S),
                ]
                message = {**message, "headers": headers}
                self.counters.sessions_refused += 1
                logs.event(
                    log,
                    "session_refused",
                    logging.WARNING,
                    bound=self.bound,
                    retry_after_s=SESSION_RETRY_AFTER_S,
                    refused_total=self.counters.sessions_refused,
                )
            await send(message)

        await self.app(scope, receive, hinted)


class _ClosedStreamCancels:
    """REQ-MCP-007 on the handshake revisions: a response stream that closes unanswered cancels.

    The request's id is read from the body as the SDK consumes it. When the
    request ends without its answer (the client closed the stream, or the
    time bound ended it), the session gets `notifications/cancelled` for that
    id through the SDK's own endpoint, as the same authenticated caller, so
    the SDK's dispatcher cancels the call exactly as if the client had sent it.
    """

    _KEPT_SCOPE_KEYS: Final = (
        "type", "asgi", "http_version", "scheme", "path", "raw_path", "root_path",
        "query_string", "client", "server", "user", "auth", "state", "extensions",
    )  # fmt: skip

    def __init__(self, app: ASGIApp, path: str, max_body: int) -> None:
        self.app = app
        self.path = path
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        watched = (
            scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == self.path
            and _is_handshake_request(scope)
            and _header(scope, _SESSION_HEADER) is not None
        )
        if not watched:
            await self.app(scope, receive, send)
            return
        body = bytearray()

        async def recording() -> Message:
            message = await receive()
            if message["type"] == "http.request" and len(body) <= self.max_body:
                body.extend(message.get("body", b""))
            return message

        state = _ResponseState()
        try:
            await self.app(scope, recording, state.watch(send))
        finally:
            if not state.finished:
                request_id = _request_id(bytes(body))
                if request_id is not None:
                    with anyio.move_on_after(CANCEL_DELIVERY_BOUND_S, shield=True):
                        await self._cancel(scope, request_id)

    async def _cancel(self, scope: Scope, request_id: str | int) -> None:
        note = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": "response stream closed"},
            }
        ).encode()
        replaced = {b"content-length", b"content-type", b"accept"}
        headers = [(k, v) for k, v in scope["headers"] if k not in replaced]
        headers += [
            (b"content-type", b"application/json"),
            (b"accept", b"application/json, text/event-stream"),
            (b"content-length", str(len(note)).encode()),
        ]
        synthetic = {k: scope[k] for k in self._KEPT_SCOPE_KEYS if k in scope}
        synthetic.update(method="POST", headers=headers)
        messages = [{"type": "http.request", "body": note, "more_body": False}]

        async def receive_note() -> Message:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def discard(message: Message) -> None:
            pass

        await self.app(synthetic, receive_note, discard)
        logs.event(log, "call_cancelled", reason="response_stream_closed")


def _request_id(body: bytes) -> str | int | None:
    """The id of a JSON-RPC request body (not a notification, response or handshake)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(message, dict)
        or "method" not in message
        or message["method"] == "initialize"
    ):
        return None
    request_id = message.get("id")
    return (
        request_id
        if isinstance(request_id, str | int) and not isinstance(request_id, bool)
        else None
    )


# -- the application ---------------------------------------------------------------------------


def build_http_app(services: Services, plan: HttpPlan) -> HttpApp:
    """The ASGI application for a checked plan: the SDK's app inside rypsok's layers."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(plan.allowed_hosts),
        allowed_origins=list(plan.allowed_origins),
    )
    server = build_server(services)
    sdk_app = server.streamable_http_app(
        streamable_http_path=plan.path,
        json_response=False,  # SSE keeps closed-stream cancellation (research §5)
        stateless_http=False,  # sessions keep notifications/cancelled on the handshake revisions
        max_sessions=plan.sessions,
        transport_security=security,
        host=plan.host,
    )
    counters = ListenerCounters()
    app: ASGIApp = _ClosedStreamCancels(sdk_app, plan.path, DEFAULT_MAX_REQUEST_BODY_SIZE)
    app = _SessionBound(app, plan.path, plan.sessions, counters)
    if not plan.handshake_revisions:
        app = _ModernOnly(app, plan.path)
    app = _KeyGate(app, KeyVerifier(plan.keys), counters)
    app = _HostOrigin(app, security, counters)
    app = _TimeBound(app, plan.request_ms / 1000, counters)
    return HttpApp(asgi=_AccessLog(app, plan.path), counters=counters)


# -- serving -----------------------------------------------------------------------------------


def _head_bound_protocol(seconds: float, counters: ListenerCounters) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with LIM-H5 on reading a request head.

    uvicorn has no timeout for a head that arrives slowly; from the first
    byte of a connection or of a request, the head must be complete within
    `seconds`, else the connection gets 408 and is closed. Once the head is
    complete `_TimeBound` takes over.
    """

    class HeadBoundH11(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self._arm()
            super().data_received(data)

        def on_response_complete(self) -> None:
            self._disarm()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _expired(self) -> None:
            self._head_timer = None
            if self.cycle is not None and not self.cycle.response_complete:
                return  # the head is complete and the request is served: _TimeBound applies
            if self.transport.is_closing():
                return
            counters.requests_timed_out += 1
            logs.event(
                log,
                "request_timed_out",
                logging.WARNING,
                phase="head",
                limit_ms=round(seconds * 1000),
            )
            self.transport.write(_RAW_408)
            self.transport.close()

    return HeadBoundH11


class _Server(uvicorn.Server):
    """uvicorn's server, ending on SIGTERM or SIGINT without re-raising the signal afterwards."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            logs.event(log, "shutdown", reason=signal.Signals(sig).name.lower())
        super().handle_exit(sig, frame)


_ContextFactory = Callable[[uvicorn.Config, Callable[[], ssl.SSLContext]], ssl.SSLContext]


def _tls_context(cert_file: str, key_file: str) -> _ContextFactory:
    def factory(config: uvicorn.Config, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        return tls_server_context(cert_file, key_file)

    return factory


def make_server(app: HttpApp, plan: HttpPlan) -> uvicorn.Server:
    """uvicorn set up for rypsok: its logs through ours, no access log, HTTP/1.1, TLS by plan."""
    tls = None
    if plan.mode == "tls" and plan.tls_cert_file and plan.tls_key_file:
        tls = _tls_context(plan.tls_cert_file, plan.tls_key_file)
    config = uvicorn.Config(
        app.asgi,
        http=_head_bound_protocol(plan.request_ms / 1000, app.counters),
        ws="none",
        lifespan="on",
        log_config=None,  # records go to rypsok's JSON lines on stderr
        access_log=False,  # our own line never carries a query string or header
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        ssl_context_factory=tls,
    )
    try:
        config.load()
    except (ssl.SSLError, OSError):
        raise ConfigError(
            "http.tls_cert, http.tls_key: the certificate and key cannot be loaded"
        ) from None
    return _Server(config)


def open_listener(host: str, port: int) -> socket.socket:
    """The listening socket, bound before serving so a failure names the keys."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(
            f"http.host, http.port: cannot listen on {host}:{port} ({exc.strerror})"
        ) from None


def supported_revisions(plan: HttpPlan) -> list[str]:
    """The protocol revisions this listener serves, for the start-up log (REQ-MCP-006)."""
    handshake = list(HANDSHAKE_PROTOCOL_VERSIONS) if plan.handshake_revisions else []
    return [*handshake, *MODERN_PROTOCOL_VERSIONS]


async def serve_http(
    services: Services, plan: HttpPlan, listener: socket.socket | None = None
) -> None:
    """Serve until SIGTERM or SIGINT, then close the sessions and the services within LIM-O1.

    The listening socket is bound before uvicorn starts, so a taken address is
    a configuration error naming its keys; tests hand in an ephemeral one.
    """
    try:
        app = build_http_app(services, plan)
        server = make_server(app, plan)
        sock = listener or open_listener(plan.host, plan.port)
        logs.event(
            log,
            "serving",
            transport="http",
            url=plan.url,
            mode=plan.mode,
            certificate=certificate_statement(plan.mode),
            revisions=supported_revisions(plan),
            callers=len(plan.keys),
            sessions=plan.sessions,
            request_ms=plan.request_ms,
        )
        with sock:
            async with anyio.create_task_group() as group:
                group.start_soon(services.report_metrics)
                await server.serve(sockets=[sock])
                group.cancel_scope.cancel()
    finally:
        with anyio.move_on_after(CLOSE_GRACE_S, shield=True):
            await services.aclose()
        services.log_metrics("shutdown")
