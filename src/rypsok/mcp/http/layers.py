"""The ASGI layers around the SDK's Streamable HTTP app, and the application they make."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Final

import anyio
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.inbound import unsupported_protocol_version_rejection
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rypsok.core import limits, logs
from rypsok.core.services import Services
from rypsok.mcp.http.auth import KeyGate, KeyVerifier
from rypsok.mcp.http.exposition import MetricsEndpoint
from rypsok.mcp.http.oauth import OAuthVerifier
from rypsok.mcp.http.plan import HttpPlan
from rypsok.mcp.http.wire import (
    SESSION_HEADER,
    VERSION_HEADER,
    ListenerCounters,
    ResponseState,
    caller,
    header,
    is_handshake_request,
    jsonrpc_error,
)
from rypsok.mcp.server import build_server

log = logging.getLogger("rypsok.http")

# A refused handshake is told to come back later: sessions end when their
# client deletes them or after the SDK's idle timeout, so a slot frees up in time.
SESSION_RETRY_AFTER_S: Final = 30
# Delivering a cancellation into a session is one local request, done in well
# under LIM-O2; this only bounds it should the session be closing at that moment.
CANCEL_DELIVERY_BOUND_S: Final = limits.CANCEL_MS / 1000 * 5

# The JSON-RPC code of a request ended by LIM-H5 (next to auth.KEY_REFUSED).
REQUEST_TIMED_OUT: Final = -32011
SESSIONS_PER_CALLER_REFUSED: Final = -32012


@dataclass
class HttpApp:
    """The ASGI application served, with its counters."""

    asgi: ASGIApp
    counters: ListenerCounters = field(default_factory=ListenerCounters)


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
        state = ResponseState()
        try:
            await self.app(scope, receive, state.watch(send))
        finally:
            logs.event(
                log,
                "http_request",
                method=scope["method"],
                path=self.path if scope["path"] == self.path else "(other)",
                status=state.status,
                caller=caller(scope),
                duration_ms=round((time.monotonic() - started) * 1000, 2),
            )


class _TimeBound:
    """LIM-H5: a request ends after `seconds`, whatever its state, body or handler.

    Before a response has started the answer is 408; a started response (an
    SSE stream) cannot change its status any more, so it is ended instead.
    Cancelling the request also cancels its call: directly on the
    handshake-free revision, through `_ClosedStreamCancels` on the others.

    An open GET event stream is not a request waiting for its answer: it is
    bounded by its own lifetime (LIM-H7) and ends quietly there, since the
    client reconnects; that end is neither a timeout line nor a count, so the
    timeout counter stays fit for alerts (REQ-SEC-022, REQ-OBS-005).
    """

    def __init__(
        self,
        app: ASGIApp,
        seconds: float,
        stream_seconds: float,
        path: str,
        counters: ListenerCounters,
    ) -> None:
        self.app = app
        self.seconds = seconds
        self.stream_seconds = stream_seconds
        self.path = path
        self.counters = counters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        event_stream = scope["method"] == "GET" and scope["path"] == self.path
        state = ResponseState()
        limit_s = self.stream_seconds if event_stream else self.seconds
        with anyio.move_on_after(limit_s) as bound:
            await self.app(scope, receive, state.watch(send))
        if not bound.cancelled_caught or state.finished:
            return
        if event_stream and state.started:
            self.counters.streams_ended += 1
            logs.event(log, "stream_ended", logging.DEBUG, reason="lifetime")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        limit_ms = round(limit_s * 1000)
        self.counters.requests_timed_out += 1
        phase = "stream" if state.started else "request"
        logs.event(log, "request_timed_out", logging.WARNING, phase=phase, limit_ms=limit_ms)
        if state.started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        message = f"The request took longer than {limit_ms} ms and was ended; send it again."
        response = jsonrpc_error(REQUEST_TIMED_OUT, message, 408, {"connection": "close"})
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
            refused_total = self.counters.hosts_refused
        else:
            self.counters.origins_refused += 1
            refused_total = self.counters.origins_refused
        # rypsok's own line: the reason class and a count, never the value sent.
        logs.event(
            log,
            "request_refused",
            logging.WARNING,
            reason="host" if refusal.status_code == 421 else "origin",
            status=refusal.status_code,
            refused_total=refused_total,
        )
        refusal.headers["connection"] = "close"  # a refused client keeps no connection
        await refusal(scope, receive, send)


class _DropSdkRefusalMessages(logging.Filter):
    """Drops the SDK's own refusal messages, which quote what the client sent.

    The SDK's transport security logs the refused Host or Origin value and its
    session manager the session id a client sent; rypsok logs each of those
    refusals itself in fixed words (REQ-PRIV-004). Errors still pass.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


_QUOTING_SDK_LOGGERS: Final = (
    "mcp.server.transport_security",
    "mcp.server.streamable_http_manager",
)


def quiet_sdk_refusal_messages() -> None:
    """Install the filter once per process on the SDK loggers that quote client headers."""
    for name in _QUOTING_SDK_LOGGERS:
        sdk_logger = logging.getLogger(name)
        if not any(isinstance(f, _DropSdkRefusalMessages) for f in sdk_logger.filters):
            sdk_logger.addFilter(_DropSdkRefusalMessages())


class _ResourceMetadata:
    """RFC 9728: the Protected Resource Metadata, served without a key at its well-known path."""

    def __init__(self, app: ASGIApp, path: str, document: dict[str, object]) -> None:
        self.app = app
        self.path = path
        self.document = document

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        headers = {"cache-control": "public, max-age=3600"}
        await JSONResponse(self.document, headers=headers)(scope, receive, send)


class _ModernOnly:
    """REQ-MCP-006: with the handshake revisions disabled, their requests are told so."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        if not is_handshake_request(scope):
            await self.app(scope, receive, send)
            return
        requested = header(scope, VERSION_HEADER) or ""
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
    """LIM-H6 and LIM-H10: the session bounds, overall and per caller.

    The SDK decides the overall bound (`max_sessions`, under its own lock) and
    answers 503 without creating a session; that answer is completed here
    with Retry-After, logged and counted. Per caller, a handshake beyond
    LIM-H10 live sessions is refused here before it reaches the SDK, with
    429, Retry-After and the limit named, so one caller that never closes its
    sessions cannot take the pool from the others (REQ-SEC-019). A caller's
    openings in flight count, so concurrent handshakes cannot overshoot.
    Any refused opening request also loses the session id the SDK echoes on
    it, since no session was kept.
    """

    def __init__(
        self,
        app: ASGIApp,
        path: str,
        bounds: tuple[int, int],
        live: Callable[[], Container[str]],
        counters: ListenerCounters,
    ) -> None:
        self.app = app
        self.path = path
        self.bound, self.per_caller = bounds
        self.live = live  # the session ids the SDK still serves
        self.counters = counters
        self.sessions: dict[str, set[str]] = {}  # caller -> session ids it opened
        self.opening: dict[str, int] = {}  # caller -> handshakes in flight

    def held(self, caller_name: str) -> int:
        live = self.live()
        mine = {sid for sid in self.sessions.get(caller_name, set()) if sid in live}
        self.sessions[caller_name] = mine
        return len(mine) + self.opening.get(caller_name, 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        opening = (
            scope["type"] == "http"
            and scope["path"] == self.path
            and is_handshake_request(scope)
            and header(scope, SESSION_HEADER) is None
        )
        if not opening:
            await self.app(scope, receive, send)
            return
        who = caller(scope) or ""
        if scope["method"] != "POST":  # never opens a session; its refusal is still tidied
            await self.app(scope, receive, self._hinted(send, who))
            return
        if self.held(who) >= self.per_caller:
            await self._refuse_per_caller(scope, receive, send)
            return
        self.opening[who] = self.opening.get(who, 0) + 1
        try:
            await self.app(scope, receive, self._hinted(send, who))
        finally:
            self.opening[who] -= 1

    async def _refuse_per_caller(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.counters.caller_sessions_refused += 1
        logs.event(
            log,
            "session_refused",
            logging.WARNING,
            limit="LIM-H10",
            bound=self.per_caller,
            caller=caller(scope),
            retry_after_s=SESSION_RETRY_AFTER_S,
            refused_total=self.counters.caller_sessions_refused,
        )
        message = (
            f"This caller already holds {self.per_caller} open sessions (LIM-H10, "
            "http.sessions_per_caller): close one (DELETE) or let one idle out, then retry."
        )
        retry_ms = SESSION_RETRY_AFTER_S * 1000
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": SESSIONS_PER_CALLER_REFUSED,
                "message": message,
                "data": {"limit": "LIM-H10", "retry_after_ms": retry_ms},
            },
        }
        headers = {"retry-after": str(SESSION_RETRY_AFTER_S)}
        await JSONResponse(body, status_code=429, headers=headers)(scope, receive, send)

    def _hinted(self, send: Send, who: str) -> Send:
        async def hinted(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for key, value in message.get("headers", []):
                    if key == SESSION_HEADER:
                        self.sessions.setdefault(who, set()).add(bytes(value).decode("latin-1"))
            if message["type"] == "http.response.start" and message["status"] >= 400:
                # A refused opening request creates no session (the SDK discards it),
                # so it must not name one either.
                headers = [(k, v) for k, v in message.get("headers", []) if k != SESSION_HEADER]
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
                    limit="LIM-H6",
                    bound=self.bound,
                    retry_after_s=SESSION_RETRY_AFTER_S,
                    refused_total=self.counters.sessions_refused,
                )
            await send(message)

        return hinted


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
            and is_handshake_request(scope)
            and header(scope, SESSION_HEADER) is not None
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

        state = ResponseState()
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
    quiet_sdk_refusal_messages()
    services.divide_between_callers()  # several callers: each holds at most its share
    server = build_server(services)
    sdk_app = server.streamable_http_app(
        streamable_http_path=plan.path,
        json_response=False,  # SSE keeps closed-stream cancellation (research §5)
        stateless_http=False,  # sessions keep notifications/cancelled on the handshake revisions
        max_sessions=plan.sessions,
        session_idle_timeout=plan.session_idle_s,  # LIM-H11: an idle session closes quietly
        transport_security=security,
        host=plan.host,
    )
    counters = ListenerCounters()
    app: ASGIApp = _ClosedStreamCancels(sdk_app, plan.path, DEFAULT_MAX_REQUEST_BODY_SIZE)
    # The SDK offers no public view of its live sessions (mcp 2.3.0): its own
    # table tells which of a caller's sessions ended (DELETE or idle timeout).
    manager = server._session_manager
    if manager is None:  # never: streamable_http_app just made it
        raise RuntimeError("the SDK made no session manager")

    def live_sessions() -> Container[str]:
        return manager._server_instances

    bounds = (plan.sessions, plan.sessions_per_caller)
    app = _SessionBound(app, plan.path, bounds, live_sessions, counters)
    if not plan.handshake_revisions:
        app = _ModernOnly(app, plan.path)
    oauth = None
    if plan.oauth is not None:
        issuer_url = plan.oauth.jwks_url

        async def issuer_keys() -> bytes | None:
            return await services.issuer_document(issuer_url) if issuer_url else None

        oauth = OAuthVerifier(plan.oauth, issuer_keys)
    app = MetricsEndpoint(app, plan.metrics_path, services, counters)  # behind the key gate
    app = KeyGate(app, KeyVerifier(plan.keys, dict(plan.scopes)), counters, oauth)
    if plan.oauth is not None:
        app = _ResourceMetadata(app, plan.oauth.metadata_path, plan.oauth.metadata())
    app = _HostOrigin(app, security, counters)
    app = _TimeBound(app, plan.request_ms / 1000, plan.stream_ms / 1000, plan.path, counters)
    return HttpApp(asgi=_AccessLog(app, plan.path), counters=counters)
