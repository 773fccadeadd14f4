"""What an outbound request can end with, besides a response.

    EgressError                  base; str() is the kind, never a host or URL
    ├── EgressDenied             the egress policy refused the request (reason)
    ├── EgressTimeout            the connect timeout or the total deadline passed
    ├── EgressBodyTooLarge       the decoded body passed the caller's byte bound
    └── EgressRequestFailed      connection, TLS, protocol or decoding failure

Every HTTP-library exception is translated into one of these in one place
(`client.map_transport_errors`); nothing above egress sees httpx2 or
httpcore2 types. The text of an `EgressError` comes from the fixed
vocabularies below, so it may be logged and shown as it is (REQ-SEC-016).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DENIED_REASONS",
    "EgressBodyTooLarge",
    "EgressDenied",
    "EgressError",
    "EgressRequestFailed",
    "EgressTimeout",
]

# Why the policy refused a request. Destination refusals all read "egress"; the
# refused range name (a fixed vocabulary of its own) is kept apart in `range_name`.
DENIED_REASONS: Final[frozenset[str]] = frozenset(
    {
        "egress",  # the destination address or host is refused
        "scheme",  # not https (or http where allowed)
        "port",  # not a port of LIM-F8 or the operator's list
        "url_credentials",  # userinfo or '@' in the authority
        "url_host",  # a host notation whose readings could diverge
        "url_syntax",  # not an absolute URL the parser reads unambiguously
        "url_length",  # longer than LIM-F9
        "credential_origin",  # a credential header would leave its origin
    }
)


class EgressError(Exception):
    """An outbound request that produced no usable response."""

    kind: str = "egress_error"

    def __init__(self) -> None:
        super().__init__(self.kind)


class EgressDenied(EgressError):
    """The egress policy refused the request before or while connecting."""

    kind = "denied"

    def __init__(self, reason: str, *, range_name: str | None = None) -> None:
        if reason not in DENIED_REASONS:
            raise ValueError("unknown egress refusal reason")
        Exception.__init__(self, reason)
        self.reason = reason
        self.range_name = range_name


class EgressTimeout(EgressError):
    """No complete response within the connect timeout or the total deadline."""

    kind = "timeout"


class EgressBodyTooLarge(EgressError):
    """The body, counted after decompression, passed the caller's bound."""

    kind = "body_too_large"


class EgressRequestFailed(EgressError):
    """Connection, TLS, HTTP protocol or content-decoding failure."""

    kind = "request_failure"
