"""GitHub: repository search through the GitHub REST API.

Provider: GitHub, `GET /search/repositories`
(https://docs.github.com/rest/search/search#search-repositories), best-match
order. Admission record: docs/engines/github.md.

Configuration (`[engines.github]`):

    endpoint   replaces https://api.github.com/search/repositories (a proxy,
               or GitHub Enterprise Server's /api/v3/search/repositories).
    api_key    optional token, sent as `Authorization: Bearer <token>` and
               declared a credential header, so egress sends it to the
               configured origin only. The engine works without it.

Result. Title = `full_name`, snippet = `description` (raw), URL = `html_url`
as GitHub gives it, date = `pushed_at` (the last push), falling back to
`updated_at`. `pushed_at` is chosen because the time-range filter is
`pushed:>=` too, so the date shown is the one the filter judged.

Time range. The qualifier `pushed:>=YYYY-MM-DD` (UTC) is appended to the query,
with the start = now minus the range (day 1, week 7, month 30, year 365 days).
"Now" comes from the injected `clock` (the wall clock by default).

No natural-language selection: GitHub's `language:` is a programming language.

Rate limits. A 403 is a rate limit, not an auth failure, when it carries
`x-ratelimit-remaining: 0`, a `retry-after` header, or a body message about a
(secondary) rate limit. The wait comes from `retry-after`, else from
`x-ratelimit-reset` minus the reply's `date` header, so `parse` stays pure;
both are capped at LIM-B4.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import ClassVar, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rypsok.core import limits
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    EngineSettings,
    FailureClass,
    RawHit,
    SearchParams,
    TimeRange,
    classify_status,
    retry_after_ms,
)

# Lower-case byte strings that mark a CAPTCHA or anti-bot interstitial.
_CHALLENGE_MARKERS: Final = (
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
_WINDOW_DAYS: Final = {
    TimeRange.DAY: 1,
    TimeRange.WEEK: 7,
    TimeRange.MONTH: 30,
    TimeRange.YEAR: 365,
}
_AUTHORIZATION: Final = "Authorization"
_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class _Answer(_Model):
    items: list[object]


class _Message(_Model):
    message: str = ""


class _Repository(_Model):
    full_name: str = Field(min_length=1)
    html_url: str = Field(min_length=1)
    description: str | None = None
    pushed_at: str | None = None
    updated_at: str | None = None


class GitHub(Driver):
    """GitHub repositories through `GET /search/repositories`."""

    id: ClassVar[str] = "github"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.CODE})
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    # GitHub refuses search text longer than 256 characters (qualifiers excluded).
    max_query_chars: ClassVar[int] = 256
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=6_000,  # 10 search requests per minute without a token
        max_concurrency=1,  # GitHub asks for serial requests to avoid secondary limits
        cacheable=True,
        attribution_required=False,
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.github.com/search/repositories"
    _max_per_request: ClassVar[int] = 100  # per_page ceiling
    _api_version: ClassVar[str] = "2022-11-28"

    def __init__(
        self, settings: EngineSettings | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(settings)
        self._clock = clock

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = params.query
        if params.time_range is not None:
            since = self._clock() - _WINDOW_DAYS[params.time_range] * 86_400
            query = f"{query} pushed:>={datetime.fromtimestamp(since, tz=UTC).date().isoformat()}"
        headers = [
            ("Accept", "application/vnd.github+json"),
            ("X-GitHub-Api-Version", self._api_version),
        ]
        credentials: frozenset[str] = frozenset()
        if self.settings.api_key:
            headers.append((_AUTHORIZATION, f"Bearer {self.settings.api_key}"))
            credentials = frozenset({_AUTHORIZATION})
        return EngineRequest(
            url=self.endpoint,
            params=(("q", query), ("per_page", str(min(params.results, self._max_per_request)))),
            headers=tuple(headers),
            credential_headers=credentials,
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        self._raise_for_status(response)
        answer = _validate(_Answer, _decode_json(response))
        hits = [
            hit
            for position, item in enumerate(answer.items, start=1)
            if (hit := _hit(position, item)) is not None
        ]
        # Hits that all fail validation are a format drift, not "no results".
        if answer.items and not hits:
            raise EngineFailure(FailureClass.PARSE_FAILURE)
        return hits

    def _raise_for_status(self, response: EngineResponse) -> None:
        """Raise the failure that the status, headers or an interstitial page signal."""
        status = response.status
        if status == 429 or (status == 403 and _is_rate_limit(response)):
            raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=_retry_after(response))
        if _is_html(response) and _has_challenge(response.body):
            raise EngineFailure(FailureClass.BLOCKED)
        if 200 <= status < 300:
            return
        if status == 403:
            # With a token, GitHub refused that token's rights; without one it
            # refused the client itself (abuse detection, missing User-Agent).
            raise EngineFailure(
                FailureClass.AUTH_FAILURE if self.settings.api_key else FailureClass.BLOCKED
            )
        # 401 auth_failure, 408/504 timeout; 422 (a query GitHub cannot run) and
        # everything else request_failure.
        failure_class = classify_status(status) or FailureClass.REQUEST_FAILURE
        raise EngineFailure(failure_class, retry_after_ms=retry_after_ms(response.headers))


def _hit(position: int, item: object) -> RawHit | None:
    """One repository, or None when it lacks a name or a URL: that hit is skipped."""
    try:
        repository = _Repository.model_validate(item)
    except ValidationError:
        return None
    return RawHit(
        rank=position,
        url=repository.html_url,
        title=repository.full_name,
        snippet=repository.description or "",
        date=_iso_date(repository.pushed_at) or _iso_date(repository.updated_at),
    )


def _iso_date(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


def _is_rate_limit(response: EngineResponse) -> bool:
    """GitHub's primary and secondary rate-limit signals on a 403."""
    headers = response.headers
    if headers.get("x-ratelimit-remaining", "").strip() == "0" or "retry-after" in headers:
        return True
    try:
        message = _Message.model_validate(json.loads(response.body)).message
    except (ValueError, RecursionError, ValidationError):
        return False
    return "rate limit" in message.lower()


def _retry_after(response: EngineResponse) -> int | None:
    """Retry-After, else the primary limit's reset time relative to the reply's Date."""
    delay = retry_after_ms(response.headers)
    if delay is not None:
        return delay
    reset = response.headers.get("x-ratelimit-reset", "").strip()
    sent = response.headers.get("date", "")
    if not reset.isdigit() or len(reset) > 12 or not sent:
        return None
    try:
        now = parsedate_to_datetime(sent).timestamp()
    except (TypeError, ValueError):
        return None
    seconds = int(reset) - int(now)
    if seconds <= 0:
        return None
    return min(seconds * 1000, limits.RETRY_AFTER_MAX_MS)


def _media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _is_html(response: EngineResponse) -> bool:
    if _media_type(response.headers) in ("text/html", "application/xhtml+xml"):
        return True
    return response.body[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def _has_challenge(body: bytes) -> bool:
    sample = body[:65536].lower()
    return any(marker in sample for marker in _CHALLENGE_MARKERS)


def _decode_json(response: EngineResponse) -> object:
    """The JSON document, or parse_failure for anything else (HTML, text, truncation)."""
    media_type = _media_type(response.headers)
    if media_type and media_type != "application/json" and not media_type.endswith("+json"):
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    try:
        return json.loads(response.body)
    except (ValueError, RecursionError):
        pass
    # Raised outside the handler, so no exception holding the body is chained.
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def _validate(model: type[_M], document: object) -> _M:
    try:
        return model.model_validate(document)
    except ValidationError:
        pass
    raise EngineFailure(FailureClass.PARSE_FAILURE)
