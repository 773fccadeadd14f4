"""Provider-neutral reading steps that drivers share.

Nothing here knows a provider: these are the generic parts of reading an HTTP
answer (media type, interstitial pages, JSON decoding, typed validation,
status classes). Provider-specific signals stay in each driver (REQ-ARCH-002).
Every failure is raised outside any `except` block, so no exception holding
provider text is ever chained to an `EngineFailure` (REQ-ENG-006).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Final, TypeVar

from pydantic import BaseModel, ValidationError

from rypsok.core.engines.base import (
    EngineFailure,
    EngineResponse,
    FailureClass,
    TimeRange,
    classify_status,
    retry_after_ms,
)

# Lower-case byte strings that mark a CAPTCHA or anti-bot interstitial.
CHALLENGE_MARKERS: Final = (
    b"captcha",
    b"cf-chl",
    b"challenge-platform",
    b"cf-browser-verification",
    b"just a moment...",
    b"attention required",
    b"verify you are human",
    b"are you a robot",
    b"unusual traffic",
    b"ddos-guard",
    b"_incapsula_resource",
)
# How far back each time range reaches, for providers that filter by a date.
WINDOW_DAYS: Final = {
    TimeRange.DAY: 1,
    TimeRange.WEEK: 7,
    TimeRange.MONTH: 30,
    TimeRange.YEAR: 365,
}
_CHALLENGE_SAMPLE_BYTES: Final = 65_536

_M = TypeVar("_M", bound=BaseModel)


def media_type(headers: Mapping[str, str]) -> str:
    """The media type of a Content-Type header, lower-cased, without parameters."""
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def is_html(response: EngineResponse) -> bool:
    if media_type(response.headers) in ("text/html", "application/xhtml+xml"):
        return True
    return response.body[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def has_challenge(body: bytes) -> bool:
    sample = body[:_CHALLENGE_SAMPLE_BYTES].lower()
    return any(marker in sample for marker in CHALLENGE_MARKERS)


def raise_for_interstitial(response: EngineResponse) -> None:
    """An anti-bot page, whatever its status, is `blocked` (REQ-ENG-009)."""
    if is_html(response) and has_challenge(response.body):
        raise EngineFailure(FailureClass.BLOCKED)


def raise_for_status(response: EngineResponse, *, credentials_sent: bool = False) -> None:
    """The failure that the status, headers or an interstitial page signal, if any.

    A 403 to a request that carried no credential refuses the client (an
    address or User-Agent policy), not a key: `blocked`, never `auth_failure`.
    """
    status = response.status
    if status == 429:
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    raise_for_interstitial(response)
    if 200 <= status < 300:
        return
    if status == 403 and not credentials_sent:
        raise EngineFailure(FailureClass.BLOCKED)
    failure_class = classify_status(status) or FailureClass.REQUEST_FAILURE
    raise EngineFailure(failure_class, retry_after_ms=retry_after_ms(response.headers))


def decode_json(response: EngineResponse) -> object:
    """The JSON document, or parse_failure for anything else (HTML, text, truncation)."""
    kind = media_type(response.headers)
    if kind and kind != "application/json" and not kind.endswith("+json"):
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    try:
        return json.loads(response.body)
    except (ValueError, RecursionError):
        pass
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def validate(model: type[_M], document: object) -> _M:
    """The document as a typed model, or parse_failure."""
    try:
        return model.model_validate(document)
    except ValidationError:
        pass
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def iso_date(value: str | None) -> str | None:
    """YYYY-MM-DD from an ISO 8601 date or timestamp; None when malformed."""
    if value is None:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None
