"""The errors that end a web_fetch call, each one of the contract's fixed kinds.

No external text reaches them except a redirect's location and an
unsupported media type, both validated external identifiers, which the
callers put in (REQ-SEC-001).
"""

from __future__ import annotations

from typing import Final

from rypsok.core import limits
from rypsok.core.contract import DeniedReason, ErrorKind, ToolError, UnavailableReason
from rypsok.core.egress.messages import AgentResponse
from rypsok.core.headers import retry_after_ms

RETRYABLE_STATUSES: Final = frozenset({408, 425, 429})

_DENIED_MESSAGES: Final = {
    "egress": "The URL's destination is not a public internet address; use a public URL.",
    "scheme": "Only https URLs are fetched; use an https URL.",
    "port": "The URL's port is not allowed; use the standard port.",
    "url_credentials": "URLs with credentials (user:password@) are refused; remove them.",
    "url_host": "The URL's host is written in a form rypsok does not accept; write it plainly.",
    "credential_origin": "The URL's destination is not allowed; use a public URL.",
}
_URL_SYNTAX_MESSAGE: Final = (
    f"url must be an absolute https URL of at most {limits.URL_MAX_CHARS} characters."
)
_URL_LENGTH_MESSAGE: Final = (
    f"url is longer than {limits.URL_MAX_CHARS} characters as it would be sent (non-ASCII "
    "host names and path characters are sent encoded, which lengthens them); use a "
    "shorter URL."
)


def denied(reason: str) -> ToolError:
    """The refusal of a URL for an egress reason (the URL's own faults are invalid_request)."""
    if reason == "url_length":
        return ToolError(
            ErrorKind.INVALID_REQUEST,
            _URL_LENGTH_MESSAGE,
            parameter="url",
            maximum=limits.URL_MAX_CHARS,
        )
    if reason == "url_syntax":
        return ToolError(ErrorKind.INVALID_REQUEST, _URL_SYNTAX_MESSAGE, parameter="url")
    known = reason if reason in {r.value for r in DeniedReason} else DeniedReason.EGRESS
    return ToolError(
        ErrorKind.DENIED,
        _DENIED_MESSAGES.get(reason, _DENIED_MESSAGES["egress"]),
        reason=known,
        parameter="url",
    )


def deadline_passed() -> ToolError:
    return ToolError(
        ErrorKind.UNAVAILABLE,
        "The fetch hit its time limit; retry later.",
        reason=UnavailableReason.DEADLINE,
        retryable=True,
    )


def strict_refusal() -> ToolError:
    return ToolError(
        ErrorKind.DENIED,
        "Strict mode: only URLs that web_search returned, or the operator allows, are "
        "fetched; pick a URL from a search result.",
        reason=DeniedReason.STRICT_MODE,
        parameter="url",
    )


def long_redirect() -> ToolError:
    # Neither followed nor named: a location past LIM-F9 cannot be returned in
    # detail.location, and it is the site's doing, not the caller's.
    return ToolError(
        ErrorKind.UNAVAILABLE,
        f"The page redirected to a URL longer than {limits.URL_MAX_CHARS} characters, which "
        "rypsok does not follow; use another source.",
        reason=UnavailableReason.UNREACHABLE,
        retryable=False,
        maximum=limits.URL_MAX_CHARS,
    )


def raise_for_status(response: AgentResponse) -> None:
    """Nothing for a 2xx; otherwise unavailable with the status, and whether to retry."""
    status = response.status
    if 200 <= status < 300:
        return
    retryable = status in RETRYABLE_STATUSES or status >= 500
    retry_after = retry_after_ms(response.headers) if retryable else None
    advice = "retry later" if retryable else "the same URL will not help"
    raise ToolError(
        ErrorKind.UNAVAILABLE,
        f"The site answered HTTP {status}; {advice}.",
        reason=UnavailableReason.HTTP_STATUS,
        status=status,
        retryable=retryable,
        retry_after_ms=retry_after,
    )
