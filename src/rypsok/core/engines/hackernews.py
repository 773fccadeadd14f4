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

Language. The index is of an English-language site: English is honoured
without a parameter (`default_language`), any other language skips the engine.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    RawHit,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    decode_json,
    epoch_date,
    iso_date,
    raise_for_status,
    validate,
    validate_or_none,
    window_start,
)


class _Answer(StrictModel):
    hits: list[object]


class _Story(StrictModel):
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
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    # An English-language index: English is honoured by the index itself, with
    # no parameter (REQ-SEARCH-004).
    languages: ClassVar[frozenset[str]] = frozenset({"en"})
    default_language: ClassVar[str | None] = "en"
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

    def build_request(self, params: SearchParams) -> EngineRequest:
        query: list[tuple[str, str]] = [
            ("query", params.query),
            ("tags", "story"),
            ("hitsPerPage", str(min(params.results, self._max_per_request))),
        ]
        if params.time_range is not None:
            since = int(window_start(params.time_range, self.now()))
            query.append(("numericFilters", f"created_at_i>{since}"))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        # No credential is sent, so a 403 refuses the client (an address on the
        # provider's block list), not a key: blocked, never auth_failure.
        raise_for_status(response)
        answer = validate(_Answer, decode_json(response))
        return collect_hits(answer.hits, self._hit)

    def _hit(self, position: int, item: object) -> RawHit | None:
        """One story, or None when it lacks an id or a title: that hit is skipped."""
        story = validate_or_none(_Story, item)
        if story is None:
            return None
        return RawHit(
            rank=position,
            url=story.url or f"{self._item_page}{story.object_id}",
            title=story.title,
            snippet=story.story_text or "",
            # A malformed creation date is dropped, the story is kept.
            date=iso_date(story.created_at) or epoch_date(story.created_at_i),
        )
