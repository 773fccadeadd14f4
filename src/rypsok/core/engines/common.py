"""Provider-neutral reading steps that drivers share.

Nothing here knows a provider: these are the generic parts of reading an HTTP
answer (media type, interstitial pages, JSON decoding, typed validation,
status classes), of turning a list of items into ranked hits, and of the
standard forms drivers meet (ISO dates, Unix times, time windows, DOIs).
Provider-specific signals stay in each driver (REQ-ARCH-002). Every failure is
raised outside any `except` block, so no exception holding provider text is
ever chained to an `EngineFailure` (REQ-ENG-006).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import Annotated, Any, Final, TypeVar
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rypsok.core import limits
from rypsok.core.engines.base import (
    EngineFailure,
    EngineResponse,
    FailureClass,
    RawHit,
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
_SECONDS_PER_DAY: Final = 86_400
# Unix times at or beyond this (year 5138) are garbage, not dates.
_EPOCH_CEILING: Final = 10**11
# Characters a DOI may keep in a URL path; everything else is percent-encoded,
# so `#`, `?`, `%`, spaces and angle brackets in old DOIs stay in the path.
_DOI_PATH_SAFE: Final = "/:;()[]-._~!$&'*+,=@"

_M = TypeVar("_M", bound=BaseModel)
_I = TypeVar("_I")


class StrictModel(BaseModel):
    """The base of driver-side answer models: strict types, unknown keys ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, defer_build=True)


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


def is_throttle(response: EngineResponse) -> bool:
    """A 429, or a 503 with a Retry-After: the provider asks us to slow down."""
    status = response.status
    return status == 429 or (status == 503 and retry_after_ms(response.headers) is not None)


def raise_for_throttle(response: EngineResponse) -> None:
    """`rate_limited` with the provider's Retry-After when the answer is a throttle."""
    if is_throttle(response):
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )


def raise_for_status(response: EngineResponse, *, credentials_sent: bool = False) -> None:
    """The failure that the status, headers or an interstitial page signal, if any.

    A 403 to a request that carried no credential refuses the client (an
    address or User-Agent policy), not a key: `blocked`, never `auth_failure`.
    A 503 that says when to come back (Retry-After) is the provider shedding
    load, the same signal as a 429: `rate_limited` (REQ-RES-002). Every other
    failure keeps its Retry-After too, so the queue can widen the engine's
    spacing whatever the status (REQ-CMP-002).
    """
    raise_for_throttle(response)
    raise_for_interstitial(response)
    status = response.status
    if 200 <= status < 300:
        return
    if status == 403 and not credentials_sent:
        raise EngineFailure(FailureClass.BLOCKED)
    failure_class = classify_status(status) or FailureClass.REQUEST_FAILURE
    raise EngineFailure(failure_class, retry_after_ms=retry_after_ms(response.headers))


def _raise_unless_json(response: EngineResponse) -> None:
    """parse_failure for an answer labelled as anything but JSON (HTML, text)."""
    kind = media_type(response.headers)
    if kind and kind != "application/json" and not kind.endswith("+json"):
        raise EngineFailure(FailureClass.PARSE_FAILURE)


def decode_json(response: EngineResponse) -> object:
    """The JSON document, or parse_failure for anything else (HTML, text, truncation)."""
    _raise_unless_json(response)
    try:
        return json.loads(response.body)
    except (ValueError, RecursionError):
        pass
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def json_model(model: type[_M], response: EngineResponse) -> _M | None:
    """The JSON body as `model` in one pass over its bytes; None when that pass refuses it.

    pydantic's JSON mode builds only what the model reads, where `json.loads`
    builds every value of the answer before `validate` reads a few (issue 14,
    performance §20.2). What it accepts, `validate(model, decode_json(...))`
    accepts with an equal model: the same strict types read the same JSON
    values (a test holds the two to it). It refuses more (a UTF-8 BOM, other
    encodings, a lone surrogate escape, nesting past 200): the caller then
    takes the two steps, which decide the answer. parse_failure, like
    `decode_json`, for an answer labelled as anything but JSON.
    """
    _raise_unless_json(response)
    try:
        return model.model_validate_json(response.body)
    except (ValueError, RecursionError):  # ValidationError is a ValueError
        return None


def read_json(model: type[_M], response: EngineResponse) -> _M:
    """`validate(model, decode_json(response))`, in one pass where `json_model` can."""
    answer = json_model(model, response)
    return answer if answer is not None else validate(model, decode_json(response))


def validate(model: type[_M], document: object) -> _M:
    """The document as a typed model, or parse_failure."""
    try:
        return model.model_validate(document)
    except ValidationError:
        pass
    raise EngineFailure(FailureClass.PARSE_FAILURE)


# An item of an answer's list: the item model when the item is one, else the
# item as it came (a bad item is skipped, not fatal). The list is then validated
# with the answer, in one pass (`json_model`), and each driver keeps its items
# that are models.
Lenient = Annotated[_M | Any, Field(union_mode="left_to_right")]


def validate_or_none(model: type[_M], item: object) -> _M | None:
    """One item as a typed model, or None: a bad item is skipped, not fatal."""
    try:
        return model.model_validate(item)
    except ValidationError:
        return None


def collect_hits(items: Sequence[_I], make_hit: Callable[[int, _I], RawHit | None]) -> list[RawHit]:
    """The usable hits of `items`, each ranked by its 1-based provider position.

    A skipped item leaves a gap in the ranks. Items that are all unusable are
    a format drift, not "no results": parse_failure.
    """
    hits = [
        hit
        for position, item in enumerate(items, start=1)
        if (hit := make_hit(position, item)) is not None
    ]
    if items and not hits:
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    return hits


def iso_date(value: str | None) -> str | None:
    """YYYY-MM-DD from an ISO 8601 date or timestamp; None when malformed."""
    if value is None:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


def web_date(value: str | None) -> str | None:
    """YYYY-MM-DD (UTC) from an ISO 8601 or an RFC 2822 date ("Wed, 23 Oct 2024 19:45:00 GMT").

    News APIs pass on the date their source page gave, in either form.
    """
    found = iso_date(value)
    if found is not None or value is None:
        return found
    try:
        stamp = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):  # a date no calendar holds
        return None
    if stamp.tzinfo is not None:
        stamp = stamp.astimezone(UTC)
    return stamp.date().isoformat()


def epoch_date(seconds: int | None) -> str | None:
    """YYYY-MM-DD (UTC) of a Unix time; None when absent or out of range."""
    if seconds is None or not 0 <= seconds < _EPOCH_CEILING:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).date().isoformat()


def window_start(time_range: TimeRange, now: float) -> float:
    """The Unix time at which a time range starts, seen from `now`."""
    return now - WINDOW_DAYS[time_range] * _SECONDS_PER_DAY


def utc_day(epoch: float) -> str:
    """YYYY-MM-DD (UTC) of a Unix time the driver computed itself."""
    return datetime.fromtimestamp(epoch, tz=UTC).date().isoformat()


def capped_wait_ms(seconds: int) -> int | None:
    """A provider's wait in seconds as milliseconds, capped at LIM-B4; None unless positive."""
    if seconds <= 0:
        return None
    return min(seconds * 1000, limits.RETRY_AFTER_MAX_MS)


def doi_url(doi: str | None) -> str | None:
    """The https://doi.org/ URL of a DOI; None when the value is not a DOI.

    DOI names are case-insensitive (ASCII), so the ASCII letters are
    lower-cased: two engines that report the same work in different case then
    return the same URL and their observations merge (REQ-RANK-004).
    """
    name = (doi or "").strip()
    if not _is_doi(name):
        return None
    lowered = "".join(char.lower() if char.isascii() else char for char in name)
    return f"https://doi.org/{quote(lowered, safe=_DOI_PATH_SAFE)}"


def _is_doi(name: str) -> bool:
    """`10.<digits and dots>/<suffix>`, printable and without spaces."""
    prefix, _, suffix = name.partition("/")
    registrant = prefix.removeprefix("10.").replace(".", "")
    return (
        prefix.startswith("10.")
        and registrant.isascii()
        and registrant.isdigit()
        and bool(suffix)
        and name.isprintable()
        and " " not in name
    )


# Keys under which providers put an error document, often under HTTP 200
# (NCBI, Kagi, crates.io, npm, Tavily's keyless mode, Exa).
_ERROR_KEYS: Final = ("error", "errors", "ERROR", "detail")
# Words of a provider's throttle or spent-budget message (lower case).
_THROTTLE_WORDS: Final = (
    "rate limit",
    "rate-limit",
    "ratelimit",
    "too many requests",
    "usage limit",
    "quota",
    "limit exceeded",
    "excessive requests",
    "slow down",
)
# Words of a refused credential or client (lower case).
_REFUSAL_WORDS: Final = (
    "api key",
    "api_key",
    "apikey",
    "unauthorized",
    "unauthorised",
    "not authorized",
    "forbidden",
    "authenticat",
    "invalid key",
)
_WAIT_KEYS: Final = frozenset({"retry_after_seconds", "retry_after", "retryafter"})
_CODE_KEYS: Final = frozenset({"code", "status", "status_code"})
_SIGNALS_MAX: Final = 32  # values read from one error document: it is the provider's data


class _ErrorSignals:
    """What an error document says, as classes of words and numbers; no provider text kept."""

    def __init__(self) -> None:
        self.throttle = False
        self.refusal = False
        self.codes: set[int] = set()
        self.wait_s: int | None = None
        self.read = 0

    def take(self, value: object, key: str = "", depth: int = 0) -> None:
        if self.read >= _SIGNALS_MAX or depth > 3:
            return
        self.read += 1
        if isinstance(value, dict):
            for name, item in value.items():
                self.take(item, str(name).lower(), depth + 1)
        elif isinstance(value, list):
            for item in value:
                self.take(item, key, depth + 1)
        elif isinstance(value, str):
            self._take_text(value.lower(), key)
        elif isinstance(value, int) and not isinstance(value, bool):
            self._take_number(value, key)

    def _take_text(self, text: str, key: str) -> None:
        self.throttle = self.throttle or any(word in text for word in _THROTTLE_WORDS)
        self.refusal = self.refusal or any(word in text for word in _REFUSAL_WORDS)
        if text.isdigit() and len(text) < 6:
            self._take_number(int(text), key)

    def _take_number(self, number: int, key: str) -> None:
        if key in _WAIT_KEYS:
            self.wait_s = number
        elif key in _CODE_KEYS:
            self.codes.add(number)


def raise_for_error_document(
    document: object,
    results_key: str,
    *,
    credentials_sent: bool = False,
    header_wait_ms: int | None = None,
) -> None:
    """The failure a provider's error document signals, whatever the HTTP status.

    Many providers send errors under 200: an answer without its results (no
    `results_key`, or an empty one) that carries `error`, `errors`, `ERROR`
    or `detail` is the provider's refusal, not a drifted format. It is read
    for classes only: a throttle or spent budget (429, rate-limit words, a
    retry-after) is `rate_limited` with the wait; a refused key or client
    (401, 403, key words) `auth_failure`, or `blocked` when no credential
    was sent; anything else `request_failure`. No provider text is kept.
    A throttle without a wait of its own keeps the answer's Retry-After
    (`header_wait_ms`).
    """
    if not isinstance(document, dict) or document.get(results_key):
        return
    errors = [document[key] for key in _ERROR_KEYS if document.get(key)]
    if not errors:
        return
    signals = _ErrorSignals()
    for error in errors:
        signals.take(error)
    for key in _CODE_KEYS:
        signals.take(document.get(key), key)
    if signals.throttle or 429 in signals.codes or signals.wait_s is not None:
        wait_ms = capped_wait_ms(signals.wait_s or 0)
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=wait_ms if wait_ms else header_wait_ms
        )
    if signals.refusal or signals.codes & {401, 403}:
        raise EngineFailure(FailureClass.AUTH_FAILURE if credentials_sent else FailureClass.BLOCKED)
    raise EngineFailure(FailureClass.REQUEST_FAILURE)


def read_answer(
    model: type[_M], response: EngineResponse, results_key: str, *, credentials_sent: bool = False
) -> _M:
    """The JSON answer as `model`, after its error document (if any) is classified."""
    document = decode_json(response)
    raise_for_error_document(
        document,
        results_key,
        credentials_sent=credentials_sent,
        header_wait_ms=retry_after_ms(response.headers),
    )
    return validate(model, document)


def listed_or_empty(items: list[_I] | None, total: object) -> list[_I]:
    """The answer's result list; one without it is empty only when its own total says 0.

    Providers drop the list key from an empty answer (dblp's `hits` without
    `hit`); an answer that lost the list while counting results drifted.
    """
    if items is not None:
        return items
    if total in (0, "0"):
        return []
    raise EngineFailure(FailureClass.PARSE_FAILURE)
