"""Small ASGI helpers shared by the HTTP layers, and the listener's counters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import JSONResponse, Response
from starlette.types import Message, Scope, Send

SESSION_HEADER: Final = b"mcp-session-id"
VERSION_HEADER: Final = b"mcp-protocol-version"


@dataclass
class ListenerCounters:
    """What the listener refused or ended, since start (logged as it happens)."""

    keys_refused: int = 0
    hosts_refused: int = 0
    origins_refused: int = 0
    sessions_refused: int = 0
    caller_sessions_refused: int = 0  # beyond LIM-H10 for one caller
    requests_timed_out: int = 0
    streams_ended: int = 0  # GET event streams that reached LIM-H7 (not timeouts)
    connections_dropped: int = 0  # connections without a head, dropped beyond LIM-H9


def jsonrpc_error(code: int, message: str, status: int, headers: dict[str, str]) -> Response:
    """An HTTP refusal whose body is a JSON-RPC error, which the SDK's client passes on."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def is_handshake_request(scope: Scope) -> bool:
    """Routed by the SDK to the handshake-era transport (the same test the SDK makes)."""
    version = header(scope, VERSION_HEADER)
    return version is None or version in HANDSHAKE_PROTOCOL_VERSIONS


def caller(scope: Scope) -> str | None:
    user = scope.get("user")
    return user.username if isinstance(user, AuthenticatedUser) else None


@dataclass
class ResponseState:
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
