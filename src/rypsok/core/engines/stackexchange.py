"""Stack Exchange: Stack Overflow questions through the Stack Exchange API 2.3.

Provider: Stack Exchange, `GET https://api.stackexchange.com/2.3/search/advanced`
on the site `stackoverflow` (https://api.stackexchange.com/docs/advanced-search;
throttles at https://api.stackexchange.com/docs/throttle). Admission record:
docs/engines/stackexchange.md.

Configuration (`[engines.stackexchange]`):

    endpoint   replaces https://api.stackexchange.com/2.3/search/advanced, for
               a proxy. Result URLs are the question links as given.

Query. `q=<query>&site=stackoverflow&sort=relevance&order=desc`, `pagesize` =
the result count (at most 100), `filter=withbody` (the built-in filter that
adds the question body, the only text a snippet can come from). Time range:
`fromdate=<Unix time>` = now minus the range (day 1, week 7, month 30, year
365 days) on the creation date; "now" comes from the injected `clock`.
Language: Stack Overflow is an English site, so the engine honours "en" only.
Answers are gzip-compressed always; egress decodes them.

Result. Title = `title` (HTML-escaped by the API, raw), snippet = `body`
(HTML, raw), URL = `link` (the question page) as given, date =
`creation_date` (Unix time). Content is CC BY-SA: the admission requires
attribution.

Throttles. Without a key the API allows 300 requests a day per address.
Every answer reports `quota_remaining`; `quota_remaining: 0` is rate_limited
(the next request would be refused), with `backoff` as the wait when given.
An error document `error_id: 502` (`throttle_violation`, HTTP 400) is
rate_limited, its wait being `backoff`, else the seconds the error names,
else Retry-After, capped at LIM-B4. Other error documents: 400
`bad_parameter` and the rest request_failure; 401/403/405/406 (credential
errors) auth_failure.

`backoff` on a successful answer asks for that many seconds before the next
request to the same method. The hits are returned as `PausingHits`, and the
engine's queue holds its next request until the pause has passed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar, Final

from pydantic import Field

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    PausingHits,
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
    epoch_date,
    raise_for_status,
    validate,
    validate_or_none,
    window_start,
)

_THROTTLE_VIOLATION: Final = 502
# access_token_required, access_denied, key_required, access_token_compromised
_CREDENTIAL_ERRORS: Final = frozenset({401, 403, 405, 406})
# "... more requests available in 82626 seconds": only the number is read.
_WAIT_SECONDS: Final = re.compile(r"available in ([0-9]{1,9}) seconds?")


class _Error(StrictModel):
    error_id: int
    error_message: str = ""
    backoff: int | None = None


class _Answer(StrictModel):
    items: list[object]
    quota_remaining: int | None = None
    backoff: int | None = None


class _Question(StrictModel):
    title: str = Field(min_length=1)
    link: str = Field(min_length=1)
    body: str | None = None
    # Read apart (see `_created`): a malformed date drops the date, not the question.
    creation_date: object = None


class StackExchange(Driver):
    """Stack Overflow questions through `GET /2.3/search/advanced`."""

    id: ClassVar[str] = "stackexchange"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.CODE})
    languages: ClassVar[frozenset[str]] = frozenset({"en"})
    default_language: ClassVar[str | None] = "en"  # an English-language site, no parameter
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        # The daily quota (300 a day) is enforced by its own signals, not by a
        # spacing (288 s would leave the engine unusable); 10 s covers the usual
        # per-method `backoff`, which a successful answer passes on as a pause.
        min_interval_ms=10_000,
        max_concurrency=1,  # one at a time, so a `backoff` is seen before the next request
        cacheable=True,  # with attribution (U: API terms)
        attribution_required=True,  # CC BY-SA 4.0
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.stackexchange.com/2.3/search/advanced"
    _site: ClassVar[str] = "stackoverflow"
    _max_per_request: ClassVar[int] = 100  # pagesize ceiling

    def build_request(self, params: SearchParams) -> EngineRequest:
        query: list[tuple[str, str]] = [
            ("q", params.query),
            ("site", self._site),
            ("sort", "relevance"),
            ("order", "desc"),
            ("pagesize", str(min(params.results, self._max_per_request))),
            ("filter", "withbody"),
        ]
        if params.time_range is not None:
            since = int(window_start(params.time_range, self.now()))
            query.append(("fromdate", str(since)))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        # An interstitial page is not JSON: raise_for_status below classifies it.
        document = _json_or_none(response)
        error = _error(document)
        if error is not None:
            raise _error_failure(error, response.headers)
        # No key is sent, so a plain 403 refuses the client, not a key: blocked.
        raise_for_status(response)
        answer = validate(_Answer, document)
        if answer.quota_remaining == 0:
            # The day's quota is spent: the next request would be refused.
            raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=_seconds(answer.backoff))
        hits = collect_hits(answer.items, _hit)
        pause_ms = _seconds(answer.backoff)
        return PausingHits(hits, pause_ms=pause_ms) if pause_ms else hits


def _hit(position: int, item: object) -> RawHit | None:
    """One question, or None when it lacks a title or a link: that question is skipped."""
    question = validate_or_none(_Question, item)
    if question is None:
        return None
    return RawHit(
        rank=position,
        url=question.link,
        title=question.title,
        snippet=question.body or "",
        date=_created(question.creation_date),
    )


def _created(value: object) -> str | None:
    """The creation date of a Unix time; None for anything else (bool is not a time)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return epoch_date(value)


def _json_or_none(response: EngineResponse) -> object | None:
    """The JSON document, or None when the body is not JSON (its status then decides)."""
    try:
        return decode_json(response)
    except EngineFailure:
        return None


def _error(document: object) -> _Error | None:
    if not isinstance(document, dict) or "error_id" not in document:
        return None
    # An error document that is not one (error_id not a number) is a format drift.
    return validate(_Error, document)


def _error_failure(error: _Error, headers: Mapping[str, str]) -> EngineFailure:
    """The class of an error document; its name and message never leave the driver."""
    if error.error_id == _THROTTLE_VIOLATION:
        wait = (
            _seconds(error.backoff)
            or _seconds(_named_wait(error.error_message))
            or retry_after_ms(headers)
        )
        return EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=wait)
    if error.error_id in _CREDENTIAL_ERRORS:
        return EngineFailure(FailureClass.AUTH_FAILURE)
    return EngineFailure(FailureClass.REQUEST_FAILURE)


def _named_wait(message: str) -> int | None:
    match = _WAIT_SECONDS.search(message)
    return int(match.group(1)) if match else None


def _seconds(value: int | None) -> int | None:
    return capped_wait_ms(value) if value is not None else None
