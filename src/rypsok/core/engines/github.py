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
from email.utils import parsedate_to_datetime
from typing import ClassVar, Final

from pydantic import Field, ValidationError

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
    StrictModel,
    capped_wait_ms,
    collect_hits,
    decode_json,
    iso_date,
    raise_for_status,
    utc_day,
    validate,
    validate_or_none,
    window_start,
)

_AUTHORIZATION: Final = "Authorization"


class _Answer(StrictModel):
    items: list[object]


class _Message(StrictModel):
    message: str = ""


class _Repository(StrictModel):
    full_name: str = Field(min_length=1)
    html_url: str = Field(min_length=1)
    description: str | None = None
    pushed_at: str | None = None
    updated_at: str | None = None


class GitHub(Driver):
    """GitHub repositories through `GET /search/repositories`."""

    id: ClassVar[str] = "github"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.CODE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
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

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = params.query
        if params.time_range is not None:
            since = utc_day(window_start(params.time_range, self.now()))
            query = f"{query} pushed:>={since}"
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
        status = response.status
        # GitHub's reset header gives the wait of a 429 too, not only Retry-After.
        if status == 429 or (status == 403 and _is_rate_limit(response)):
            raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=_retry_after(response))
        # A plain 403 with a token refused that token's rights (auth_failure);
        # without one it refused the client itself (abuse detection, missing
        # User-Agent): blocked. 422 (a query GitHub cannot run) is request_failure.
        raise_for_status(response, credentials_sent=bool(self.settings.api_key))
        answer = validate(_Answer, decode_json(response))
        return collect_hits(answer.items, _hit)


def _hit(position: int, item: object) -> RawHit | None:
    """One repository, or None when it lacks a name or a URL: that hit is skipped."""
    repository = validate_or_none(_Repository, item)
    if repository is None:
        return None
    return RawHit(
        rank=position,
        url=repository.html_url,
        title=repository.full_name,
        snippet=repository.description or "",
        date=iso_date(repository.pushed_at) or iso_date(repository.updated_at),
    )


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
    return capped_wait_ms(int(reset) - int(now))
