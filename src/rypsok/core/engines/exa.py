"""Exa: web results through the Exa search API (keyed, third-party AI search).

Provider: Exa Labs, `POST https://api.exa.ai/search` (https://exa.ai/docs/reference/search).
Admission record: docs/engines/exa.md.

Configuration (`[engines.exa]`), typed (`ExaConfig`):

    api_key      required, by reference; sent as the header `x-api-key`.
    endpoint     replaces https://api.exa.ai/search.
    search_type  Exa's `type`: "auto" (default), "fast" or "keyword"-like
                 "instant"; the deep types cost more and are not offered.

Request body. `query`, `numResults` = the count (at most 100), `type`,
`contents.highlights` (a few sentences per result, the snippet),
`startPublishedDate` (ISO 8601, the start of the time range) and
`moderation` = true unless safe search is off. No language parameter.

Result. `results[]`: title, url, the first `highlights` entry (else `text`,
else `summary`) as the snippet, `publishedDate` as the date.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar, Final

from pydantic import Field

from rypsok.core.config import EngineConfig
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    RawHit,
    SafeSearch,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    iso_date,
    raise_for_status,
    read_answer,
    validate_or_none,
    window_start,
)
from rypsok.core.engines.options import ExaConfig
from rypsok.core.engines.post import json_post

_KEY_HEADER: Final = "x-api-key"


class _Answer(StrictModel):
    results: list[object]


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str | None = None
    publishedDate: str | None = None
    highlights: list[str] | str | None = None  # a list; one string is read as one entry
    text: str | None = None
    summary: str | None = None


class Exa(Driver):
    """Exa search through `POST /search`."""

    id: ClassVar[str] = "exa"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=100,  # 10 requests a second on /search
        max_concurrency=2,
        cacheable=False,  # U
        attribution_required=False,  # U
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.exa.ai/search"
    requires_key: ClassVar[bool] = True
    options_model: ClassVar[type[EngineConfig]] = ExaConfig
    _max_per_request: ClassVar[int] = 100

    def build_request(self, params: SearchParams) -> EngineRequest:
        payload: dict[str, object] = {
            "query": params.query,
            "numResults": min(params.results, self._max_per_request),
            "type": self.typed_options(ExaConfig).search_type,
            "contents": {"highlights": {"numSentences": 2, "highlightsPerUrl": 1}},
            "moderation": params.safe_search is not SafeSearch.OFF,
        }
        if params.time_range is not None:
            start = window_start(params.time_range, self.now())
            payload["startPublishedDate"] = datetime.fromtimestamp(start, tz=UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            )
        key = self.settings.api_key
        return json_post(
            self.endpoint, payload, credential=(_KEY_HEADER, key) if key is not None else None
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        keyed = self.settings.api_key is not None
        raise_for_status(response, credentials_sent=keyed)
        # `{"requestId", "error", "tag"}` is Exa's error document, whatever the status.
        answer = read_answer(_Answer, response, "results", credentials_sent=keyed)
        return collect_hits(answer.results, _hit)


def _hit(position: int, item: object) -> RawHit | None:
    result = validate_or_none(_Result, item)
    if result is None or not result.title:
        return None
    highlights = [result.highlights] if isinstance(result.highlights, str) else result.highlights
    snippet = (highlights or [""])[0] or result.text or result.summary or ""
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=snippet,
        date=iso_date(result.publishedDate),
    )
