"""Brave: web and news results through the Brave Search API (keyed).

Provider: Brave Search API (https://api-dashboard.search.brave.com/documentation),
`GET /res/v1/web/search` for the general category and `GET /res/v1/news/search`
for news. Admission record: docs/engines/brave.md.

Configuration (`[engines.brave]`):

    api_key    required, by reference (REQ-CFG-004). Sent only as the header
               `X-Subscription-Token`, declared a credential header, so egress
               sends it to the configured origin only (REQ-SEC-017).
    endpoint   replaces the base URL https://api.search.brave.com/res/v1 (a
               proxy, a test server). It is a base, not a full URL: one driver
               serves both categories, so the path `/web/search` or
               `/news/search` is appended according to the requested category.

Request. `q`, `count` = the result count asked for, at most 20 (web) or 50
(news); `search_lang` from the language, `country` from the operator's region
when Brave supports that country (an unsupported one is left out rather than
refused), `safesearch` = off | moderate | strict, `freshness` = pd | pw | pm |
py for day | week | month | year. Web requests also send `result_filter=web`
(only the block we read) and `text_decorations=false` (no highlight markers).

Result. Title = `title`, URL = `url`, snippet = `description` (raw, may hold
markup), date = `page_age` (ISO timestamp). The answer's `type` says which
endpoint answered ("search" or "news"), so `parse` needs no request state.
A web answer without a `web` block is Brave's empty answer.

Failures. 429 is rate_limited; the wait comes from Retry-After when present,
else from `X-RateLimit-Reset` (seconds until each window resets, read against
`X-RateLimit-Remaining` to find the exhausted window), else LIM-B4 for the
body code `QUOTA_LIMITED`; all capped at LIM-B4. Brave refuses a bad key with
422 `SUBSCRIPTION_TOKEN_INVALID` and an unsubscribed one with 404
`SUBSCRIPTION_NOT_FOUND`: both auth_failure, as are 401 and 403. Only the
error code is read, never its text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, ClassVar, Final, Literal

from pydantic import ConfigDict, Field, RootModel

from rypsok.core import limits
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    RawHit,
    SearchParams,
    TimeRange,
    retry_after_ms,
)
from rypsok.core.engines.common import (
    Lenient,
    StrictModel,
    capped_wait_ms,
    collect_hits,
    decode_json,
    iso_date,
    json_model,
    raise_for_interstitial,
    raise_for_status,
    validate,
    validate_or_none,
)

_KEY_HEADER: Final = "X-Subscription-Token"
_WEB_PATH: Final = "/web/search"
_NEWS_PATH: Final = "/news/search"
_WEB_MAX: Final = 20  # `count` ceiling of the web endpoint
_NEWS_MAX: Final = 50  # `count` ceiling of the news endpoint
_FRESHNESS: Final = {
    TimeRange.DAY: "pd",
    TimeRange.WEEK: "pw",
    TimeRange.MONTH: "pm",
    TimeRange.YEAR: "py",
}
# ISO 639-1 code -> Brave's `search_lang` value. Brave spells some differently:
# Japanese is "jp", Chinese and Portuguese need a script or variety (the larger
# web is chosen), Norwegian is Bokmål.
_SEARCH_LANG: Final = {
    "ar": "ar", "bg": "bg", "bn": "bn", "ca": "ca", "cs": "cs", "da": "da", "de": "de",
    "en": "en", "es": "es", "et": "et", "eu": "eu", "fi": "fi", "fr": "fr", "gl": "gl",
    "gu": "gu", "he": "he", "hi": "hi", "hr": "hr", "hu": "hu", "is": "is", "it": "it",
    "ja": "jp", "kn": "kn", "ko": "ko", "lt": "lt", "lv": "lv", "ml": "ml", "mr": "mr",
    "ms": "ms", "nb": "nb", "nl": "nl", "no": "nb", "pa": "pa", "pl": "pl", "pt": "pt-br",
    "ro": "ro", "ru": "ru", "sk": "sk", "sl": "sl", "sr": "sr", "sv": "sv", "ta": "ta",
    "te": "te", "th": "th", "tr": "tr", "uk": "uk", "vi": "vi", "zh": "zh-hans",
}  # fmt: skip
# Countries Brave accepts in `country`; anything else is answered with 422.
_COUNTRIES: Final = frozenset(
    {
        "ALL", "AR", "AT", "AU", "BE", "BR", "CA", "CH", "CL", "CN", "DE", "DK", "ES",
        "FI", "FR", "GB", "HK", "ID", "IN", "IT", "JP", "KR", "MX", "MY", "NL", "NO",
        "NZ", "PH", "PL", "PT", "RU", "SA", "SE", "TR", "TW", "US", "ZA",
    }
)  # fmt: skip
# Error codes that mean "this key may not do this", whatever the status.
_KEY_REFUSALS: Final = frozenset({"SUBSCRIPTION_TOKEN_INVALID", "SUBSCRIPTION_NOT_FOUND"})
_QUOTA_EXHAUSTED: Final = "QUOTA_LIMITED"
_MAX_WINDOWS: Final = 8  # rate-limit windows read from one header; Brave sends two


class _Kind(StrictModel):
    type: str


class _Result(StrictModel):
    title: str = Field(min_length=1)
    url: str = Field(min_length=1)
    # Optional fields are read leniently: a malformed one is dropped, not fatal.
    description: object = None
    page_age: object = None


class _WebBlock(StrictModel):
    results: list[Lenient[_Result]]


class _WebAnswer(StrictModel):
    type: Literal["search"]
    web: _WebBlock | None = None  # absent: Brave found nothing


class _NewsAnswer(StrictModel):
    type: Literal["news"]
    results: list[Lenient[_Result]]


class _Answer(RootModel[Annotated[_WebAnswer | _NewsAnswer, Field(discriminator="type")]]):
    """Either answer, told apart by `type`, for the one pass of `json_model`."""

    model_config = ConfigDict(frozen=True, strict=True, defer_build=True)


class _ErrorDetail(StrictModel):
    code: str = Field(max_length=64)


class _ErrorBody(StrictModel):
    # The reference shows both a single `error` and a list `errors`.
    error: _ErrorDetail | None = None
    errors: list[_ErrorDetail] | None = None


class Brave(Driver):
    """Brave web and news search through the Brave Search API."""

    id: ClassVar[str] = "brave"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL, Category.NEWS})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    languages: ClassVar[frozenset[str]] = frozenset(_SEARCH_LANG)
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    max_query_chars: ClassVar[int] = 400  # Brave refuses longer queries (and > 50 words)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=1_000,  # the smallest plan allows 1 request per second
        max_concurrency=1,  # a per-second window: parallel requests would only meet a 429
        cacheable=False,  # storage only on plans with storage rights; not assumed
        attribution_required=True,  # U: terms not verified; the safe side
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.search.brave.com/res/v1"
    requires_key: ClassVar[bool] = True

    def build_request(self, params: SearchParams) -> EngineRequest:
        news = params.category is Category.NEWS
        path, ceiling = (_NEWS_PATH, _NEWS_MAX) if news else (_WEB_PATH, _WEB_MAX)
        query: list[tuple[str, str]] = [
            ("q", params.query),
            ("count", str(min(params.results, ceiling))),
            ("safesearch", params.safe_search.value),
        ]
        if not news:
            query += [("result_filter", "web"), ("text_decorations", "false")]
        if params.language is not None and params.language in _SEARCH_LANG:
            query.append(("search_lang", _SEARCH_LANG[params.language]))
        country = _country(params.region)
        if country is not None:
            query.append(("country", country))
        if params.time_range is not None:
            query.append(("freshness", _FRESHNESS[params.time_range]))
        headers = [("Accept", "application/json")]
        credentials: frozenset[str] = frozenset()
        if self.settings.api_key is not None:
            # The one place the key goes (REQ-CFG-004, REQ-SEC-017).
            headers.append((_KEY_HEADER, self.settings.api_key))
            credentials = frozenset({_KEY_HEADER})
        return EngineRequest(
            url=f"{self.endpoint.rstrip('/')}{path}",
            params=tuple(query),
            headers=tuple(headers),
            credential_headers=credentials,
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        self._raise_for_failure(response)
        answer = json_model(_Answer, response)
        if answer is not None:
            return _hits_of(answer.root)
        # Refused in one pass: the two steps decide (`json_model`).
        document = decode_json(response)
        kind = validate(_Kind, document).type
        if kind == "search":
            return _hits_of(validate(_WebAnswer, document))
        if kind == "news":
            return _hits_of(validate(_NewsAnswer, document))
        raise EngineFailure(FailureClass.PARSE_FAILURE)

    def _raise_for_failure(self, response: EngineResponse) -> None:
        """Raise the failure that the status, the headers or the error code signal."""
        if response.status == 429:
            raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=_wait_ms(response))
        # A challenge page is blocked even on a 401/403.
        raise_for_interstitial(response)
        if 200 <= response.status < 300:
            return
        keyed = self.settings.api_key is not None
        if keyed and _error_code(response) in _KEY_REFUSALS:
            raise EngineFailure(FailureClass.AUTH_FAILURE)
        # With the key sent, 401/403 are auth_failure; 408/504 timeout; 422
        # VALIDATION (a request Brave cannot run) and the rest request_failure.
        raise_for_status(response, credentials_sent=keyed)


def _hits_of(answer: _WebAnswer | _NewsAnswer) -> list[RawHit]:
    if isinstance(answer, _NewsAnswer):
        return collect_hits(answer.results, _hit)
    return collect_hits(answer.web.results if answer.web is not None else [], _hit)


def _hit(position: int, item: object) -> RawHit | None:
    """One result, or None when it lacks a title or a URL: that result is skipped."""
    if not isinstance(item, _Result):
        return None
    result = item
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=result.description if isinstance(result.description, str) else "",
        date=iso_date(result.page_age) if isinstance(result.page_age, str) else None,
    )


def _country(region: str | None) -> str | None:
    """Brave's `country` for the operator's region, or None when Brave has no such market."""
    if region is None:
        return None
    code = region.strip().upper()
    return code if code in _COUNTRIES else None


def _wait_ms(response: EngineResponse) -> int | None:
    """How long a 429 asks us to wait: Retry-After, the exhausted window, or the quota."""
    explicit = retry_after_ms(response.headers)
    if explicit is not None:
        return explicit
    window = _window_reset_ms(response.headers)
    if window is not None:
        return window
    # A spent monthly quota without headers: wait as long as we ever do.
    return limits.RETRY_AFTER_MAX_MS if _error_code(response) == _QUOTA_EXHAUSTED else None


def _window_reset_ms(headers: Mapping[str, str]) -> int | None:
    """The reset of the exhausted window(s), else of the soonest one, capped at LIM-B4.

    `X-RateLimit-Reset: 1, 1419704` gives seconds until each window (per
    second, per month) resets; `X-RateLimit-Remaining: 0, 990` says which is
    spent. Without a matching Remaining, the soonest reset is the first moment
    a request could succeed.
    """
    resets = _counts(headers.get("x-ratelimit-reset", ""))
    if not resets:
        return None
    remaining = _counts(headers.get("x-ratelimit-remaining", ""))
    spent = [reset for reset, left in zip(resets, remaining, strict=False) if left == 0]
    return capped_wait_ms(max(spent) if spent and len(remaining) == len(resets) else min(resets))


def _counts(value: str) -> tuple[int, ...]:
    """A comma-separated list of small non-negative integers; () when malformed."""
    parts = [part.strip() for part in value.split(",")] if value.strip() else []
    if not parts or len(parts) > _MAX_WINDOWS:
        return ()
    if not all(part.isdigit() and len(part) <= 10 for part in parts):
        return ()
    return tuple(int(part) for part in parts)


def _error_code(response: EngineResponse) -> str | None:
    """Brave's error code from an `ErrorResponse` body; None for any other body.

    Only the code is kept, and only to compare with known codes: the body's
    `detail` text may echo the request (even the key) and is never read.
    """
    try:
        document = json.loads(response.body)
    except (ValueError, RecursionError):
        return None
    body = validate_or_none(_ErrorBody, document)
    if body is None:
        return None
    if body.error is not None:
        return body.error.code
    return body.errors[0].code if body.errors else None
