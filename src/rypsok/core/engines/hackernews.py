"""Hacker News: stories through Algolia's HN Search API.

Provider: Algolia's public search over Hacker News (https://hn.algolia.com/api),
endpoint `GET /api/v1/search` (relevance order). Admission record:
docs/engines/hackernews.md.

Configuration (`[engines.hackernews]`):

    endpoint   replaces https://hn.algolia.com/api/v1/search, for a proxy.

Only stories are searched (`tags=story`): a comment has no title of its own.
Result URL = the story's `url`, or its discussion page
https://news.ycombinator.com/item?id=<objectID> when it has none (Ask HN,
Show HN without a link). Snippet = `story_text` (HTML, raw) or empty.
Date = `created_at`.

Time range. `numericFilters=created_at_i>T` with T = now minus the range
(day 1, week 7, month 30, year 365 days). "Now" is the one impure input of
`build_request`: it comes from the injected `clock` (the wall clock by
default), so tests pin it and `parse` stays pure.

No language selection: the index carries no language field.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from typing import ClassVar, Final, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
_M = TypeVar("_M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class _Answer(_Model):
    hits: list[object]


class _Story(_Model):
    object_id: str = Field(alias="objectID", pattern=r"^[0-9]{1,12}$")
    title: str = Field(min_length=1)
    url: str | None = None
    story_text: str | None = None
    created_at: str | None = None
    created_at_i: int | None = None


class HackerNews(Driver):
    """Hacker News stories through `GET /api/v1/search`."""

    id: ClassVar[str] = "hackernews"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.NEWS, Category.CODE})
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=360,  # 10,000 requests per hour and IP
        cacheable=True,
        attribution_required=False,
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://hn.algolia.com/api/v1/search"
    _max_per_request: ClassVar[int] = 1000  # hitsPerPage ceiling
    _item_page: ClassVar[str] = "https://news.ycombinator.com/item?id="

    def __init__(
        self, settings: EngineSettings | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(settings)
        self._clock = clock

    def build_request(self, params: SearchParams) -> EngineRequest:
        query: list[tuple[str, str]] = [
            ("query", params.query),
            ("tags", "story"),
            ("hitsPerPage", str(min(params.results, self._max_per_request))),
        ]
        if params.time_range is not None:
            since = int(self._clock()) - _WINDOW_DAYS[params.time_range] * 86_400
            query.append(("numericFilters", f"created_at_i>{since}"))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        _raise_for_status(response)
        answer = _validate(_Answer, _decode_json(response))
        hits = [
            hit
            for position, item in enumerate(answer.hits, start=1)
            if (hit := self._hit(position, item)) is not None
        ]
        # Hits that all fail validation are a format drift, not "no results".
        if answer.hits and not hits:
            raise EngineFailure(FailureClass.PARSE_FAILURE)
        return hits

    def _hit(self, position: int, item: object) -> RawHit | None:
        """One story, or None when it lacks an id or a title: that hit is skipped."""
        try:
            story = _Story.model_validate(item)
        except ValidationError:
            return None
        return RawHit(
            rank=position,
            url=story.url or f"{self._item_page}{story.object_id}",
            title=story.title,
            snippet=story.story_text or "",
            date=_story_date(story),
        )


def _story_date(story: _Story) -> str | None:
    """The creation date; a malformed one is dropped, the story is kept."""
    if story.created_at is not None:
        try:
            return date.fromisoformat(story.created_at[:10]).isoformat()
        except ValueError:
            pass
    if story.created_at_i is not None and 0 <= story.created_at_i < 10**11:
        return datetime.fromtimestamp(story.created_at_i, tz=UTC).date().isoformat()
    return None


def _raise_for_status(response: EngineResponse) -> None:
    """Raise the failure that the status, headers or an interstitial page signal."""
    status = response.status
    if status == 429:
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    if _is_html(response) and _has_challenge(response.body):
        raise EngineFailure(FailureClass.BLOCKED)
    if 200 <= status < 300:
        return
    if status == 403:
        # No credential is sent, so a 403 refuses the client (an address on the
        # provider's block list), not a key: blocked, never auth_failure.
        raise EngineFailure(FailureClass.BLOCKED)
    failure_class = classify_status(status) or FailureClass.REQUEST_FAILURE
    raise EngineFailure(failure_class, retry_after_ms=retry_after_ms(response.headers))


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
