"""Serving: uvicorn on a bound socket, TLS from the plan, the head deadline, signals."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Final

import anyio
import uvicorn
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from uvicorn.protocols.http.h11_impl import H11Protocol

from rypsok.core import limits, logs
from rypsok.core.config import ConfigError
from rypsok.core.services import Services
from rypsok.mcp.heap import serving_heap
from rypsok.mcp.http.layers import HttpApp, build_http_app
from rypsok.mcp.http.plan import HttpPlan, recheck_certificate, tls_server_context
from rypsok.mcp.http.wire import ListenerCounters

log = logging.getLogger("rypsok.http")

# leaving the rest of LIM-O1 for the sessions and the services to close.
GRACEFUL_SHUTDOWN_S: Final = limits.SHUTDOWN_MS // 2000
CLOSE_GRACE_S: Final = limits.SHUTDOWN_MS / 1000 / 4
_HEAD_TIMEOUT_BODY: Final = b"the request head did not arrive in time\n"
_RAW_408: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: %d\r\nconnection: close\r\n\r\n%s"
) % (len(_HEAD_TIMEOUT_BODY), _HEAD_TIMEOUT_BODY)


def _head_bound_protocol(
    seconds: float, pending_cap: int, counters: ListenerCounters
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol: a head deadline (LIM-H8), a cap on headless ones (LIM-H9).

    uvicorn has no timeout for a head that arrives slowly; from the first
    byte of a connection or of a request, the head must be complete within
    `seconds`, else the connection gets 408 and is closed. Once the head is
    complete `_TimeBound` takes over.

    A connection that has not yet sent a complete head is unauthenticated:
    nobody knows who it is. At most `pending_cap` of them are kept; a new one
    beyond the cap drops the oldest, so a client holding many slow
    connections cannot exhaust file descriptors, and a real client, whose
    head arrives in milliseconds, is served (refusals close their connection,
    so every connection past its first head is an admitted caller's).
    """
    pending: dict[HeadBoundH11, None] = {}  # insertion order: oldest first

    class HeadBoundH11(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)  # type: ignore[arg-type]
            pending[self] = None
            while len(pending) > pending_cap:
                oldest = next(iter(pending))
                oldest.drop()
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self._arm()
            super().data_received(data)
            if self.cycle is not None:
                pending.pop(self, None)  # its head is complete: no longer anonymous

        def on_response_complete(self) -> None:
            self._disarm()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            pending.pop(self, None)
            self._disarm()
            super().connection_lost(exc)

        def drop(self) -> None:
            pending.pop(self, None)
            self._disarm()
            counters.connections_dropped += 1
            dropped = counters.connections_dropped
            if dropped == 1 or dropped % 100 == 0:  # a flood is one line per hundred
                logs.event(
                    log,
                    "connection_dropped",
                    logging.WARNING,
                    reason="pending_cap",
                    cap=pending_cap,
                    dropped_total=dropped,
                )
            self.transport.close()

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
            pending.pop(self, None)
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
    """uvicorn's server: SIGTERM or SIGINT end it (not re-raised afterwards); SIGHUP reloads TLS."""

    def __init__(self, config: uvicorn.Config, tls: _LiveCertificate | None) -> None:
        super().__init__(config)
        self.tls = tls

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        hangup = getattr(signal, "SIGHUP", None)  # Windows has none: renew by a restart
        if hangup is not None:
            previous[hangup] = signal.signal(hangup, self.handle_hangup)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            logs.event(log, "shutdown", reason=signal.Signals(sig).name.lower())
        super().handle_exit(sig, frame)

    def handle_hangup(self, sig: int, frame: FrameType | None) -> None:
        if self.tls is None:
            logs.event(log, "certificate_not_reloaded", reason="no_tls")
            return
        self.tls.reload()


_ContextFactory = Callable[[uvicorn.Config, Callable[[], ssl.SSLContext]], ssl.SSLContext]


class _LiveCertificate:
    """The listener's TLS context, whose certificate SIGHUP replaces in place.

    Connections already open keep the session they negotiated; new handshakes
    use the new certificate, so an ACME renewal needs no restart. A
    certificate that would be refused at start (unreadable, mismatched,
    expired, names not covering the hosts) is refused here too and the
    current one kept.
    """

    def __init__(self, plan: HttpPlan, cert_file: str, key_file: str) -> None:
        self.plan = plan
        self.cert_file = cert_file
        self.key_file = key_file
        self.context: ssl.SSLContext | None = None

    def factory(
        self, config: uvicorn.Config, default: Callable[[], ssl.SSLContext]
    ) -> ssl.SSLContext:
        self.context = tls_server_context(self.cert_file, self.key_file)
        return self.context

    def reload(self) -> None:
        try:
            tls_server_context(self.cert_file, self.key_file)  # the pair loads and matches
            problems = recheck_certificate(self.plan)
            if problems:
                raise ConfigError("; ".join(problems))
            if self.context is not None:
                self.context.load_cert_chain(self.cert_file, self.key_file)
        except (ConfigError, ssl.SSLError, OSError) as exc:
            logs.event(log, "certificate_not_reloaded", logging.ERROR, problem=str(exc))
            return
        logs.event(log, "certificate_reloaded")


def make_server(app: HttpApp, plan: HttpPlan) -> uvicorn.Server:
    """uvicorn set up for rypsok: its logs through ours, no access log, HTTP/1.1, TLS by plan."""
    live = None
    if plan.mode == "tls" and plan.tls_cert_file and plan.tls_key_file:
        live = _LiveCertificate(plan, plan.tls_cert_file, plan.tls_key_file)
    config = uvicorn.Config(
        app.asgi,
        http=_head_bound_protocol(plan.head_ms / 1000, plan.pending_connections, app.counters),
        ws="none",
        lifespan="on",
        log_config=None,  # records go to rypsok's JSON lines on stderr
        access_log=False,  # our own line never carries a query string or header
        server_header=False,
        proxy_headers=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        ssl_context_factory=live.factory if live is not None else None,
    )
    try:
        config.load()
    except (ssl.SSLError, OSError):
        raise ConfigError(
            "http.tls_cert, http.tls_key: the certificate and key cannot be loaded"
        ) from None
    return _Server(config, live)


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
            certificate=plan.certificate_words,
            revisions=supported_revisions(plan),
            callers=len(plan.keys),
            sessions=plan.sessions,
            request_ms=plan.request_ms,
        )
        for warning in plan.warnings:
            logs.event(log, "http_warning", logging.WARNING, warning=warning)
        with sock, serving_heap():
            async with anyio.create_task_group() as group:
                group.start_soon(services.report_metrics)
                await server.serve(sockets=[sock])
                group.cancel_scope.cancel()
    finally:
        with anyio.move_on_after(CLOSE_GRACE_S, shield=True):
            await services.aclose()
        services.log_metrics("shutdown")
