"""What goes into egress and what comes out of it, in egress's own neutral terms.

Egress is a leaf of the core (REQ-ARCH-001): it knows HTTP and the egress
policy, not engines or fetching. Callers translate to and from these types
on their side; the engine side does so in `rypsok.core.engines.transport`.

    OutboundRequest   one GET or POST to a configured endpoint: URL, query, headers, body
    OutboundResponse  a complete, size-bounded answer to it
    CheckedUrl        a URL the agent-directed profile judged, as it will be sent
    AgentResponse     a complete, size-bounded answer to one agent-directed hop

A `CheckedUrl` is made only by `EgressClient.check_agent_url`; `agent_get`
takes one, so a URL is judged once per hop and what is judged is exactly
what is requested.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import httpx2

__all__ = ["AgentResponse", "CheckedUrl", "OutboundRequest", "OutboundResponse"]


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    """One GET, or a POST with a body. `url` has no query; egress encodes `params`."""

    url: str
    # The query and a key may be in here: neither shows in a repr (REQ-PRIV-004).
    params: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # Header names whose values are credentials: sent to the request's own
    # origin only (REQ-SEC-017) and never logged.
    credential_headers: frozenset[str] = frozenset()
    method: str = "GET"
    # A JSON API's request body (Kagi, Tavily, Exa): may hold the query, so no repr.
    body: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, slots=True)
class OutboundResponse:
    """A complete, size-bounded response. Header names are lower-case."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class CheckedUrl:
    """A URL that passed the agent-directed profile's URL checks, as it will be sent.

    `text` is the serialization the connection uses (IDNA host, percent-encoded
    path and query); its length is what LIM-F9 bounds. The parsed form stays
    inside egress.
    """

    text: str
    host: str  # ASCII (IDNA) host, lower case; an IPv6 literal without brackets
    _parsed: httpx2.URL = field(repr=False, compare=False)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class AgentResponse:
    """A complete, size-bounded agent-directed response. Header names are lower-case.

    `body_read` is False when the caller's `read_body` predicate declined the
    body after seeing the status and headers: `body` is then empty and the
    connection was dropped unread.
    """

    status: int
    headers: MappingProxyType[str, str]
    body: bytes
    url: str  # the URL as judged and requested (the CheckedUrl's text)
    body_read: bool = True
