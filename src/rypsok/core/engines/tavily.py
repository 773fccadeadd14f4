"""Tavily: web and news results through the Tavily Search API (keyed, third-party AI search).

Provider: Tavily, `POST https://api.tavily.com/search`
(https://docs.tavily.com/documentation/api-reference/endpoint/search).
Admission record: docs/engines/tavily.md.

Configuration (`[engines.tavily]`), typed (`TavilyConfig`):

    api_key       required, by reference; `Authorization: Bearer <key>`.
    endpoint      replaces https://api.tavily.com/search.
    search_depth  "basic" (1 credit, the default) or "advanced" (2 credits).

Request body. `query`, `topic` = "general" or "news", `max_results` = the
count (at most 20), `search_depth`, `time_range` = day | week | month | year,
`include_answer` false, `include_raw_content` false. Tavily has no language
parameter (only `country`, not sent).

Result. `results[]`: title, url, `content` as the snippet, `published_date`
(news) as the date.

Failures. 429 rate_limited; 432 (plan limit) and 433 (pay-as-you-go limit)
are a spent budget: rate_limited; 401 auth_failure; 400 request_failure.
"""

from __future__ import annotations

from typing import ClassVar, Final

from pydantic import Field

from rypsok.core import limits
from rypsok.core.config import EngineConfig
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
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    raise_for_status,
    read_answer,
    validate_or_none,
    web_date,
)
from rypsok.core.engines.options import TavilyConfig
from rypsok.core.engines.post import json_post

_AUTHORIZATION: Final = "Authorization"
_BUDGET_SPENT: Final = frozenset({432, 433})


class _Answer(StrictModel):
    results: list[object]


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str = Field(min_length=1)
    content: str | None = None
    published_date: str | None = None


class Tavily(Driver):
    """Tavily search through `POST /search`."""

    id: ClassVar[str] = "tavily"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL, Category.NEWS})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    max_query_chars: ClassVar[int] = 400  # Tavily refuses longer queries (S)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=600,  # development keys: 100 requests a minute
        max_concurrency=2,
        cacheable=False,  # U: storage terms not verified
        attribution_required=False,  # U
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.tavily.com/search"
    requires_key: ClassVar[bool] = True
    options_model: ClassVar[type[EngineConfig]] = TavilyConfig
    _max_per_request: ClassVar[int] = 20

    def build_request(self, params: SearchParams) -> EngineRequest:
        payload: dict[str, object] = {
            "query": params.query,
            "topic": "news" if params.category is Category.NEWS else "general",
            "max_results": min(params.results, self._max_per_request),
            "search_depth": self.typed_options(TavilyConfig).search_depth,
            "include_answer": False,
            "include_raw_content": False,
        }
        if params.time_range is not None:
            payload["time_range"] = params.time_range.value
        key = self.settings.api_key
        credential = (_AUTHORIZATION, f"Bearer {key}") if key is not None else None
        return json_post(self.endpoint, payload, credential=credential)

    def parse(self, response: EngineResponse) -> list[RawHit]:
        if response.status in _BUDGET_SPENT:
            # The plan's or pay-as-you-go budget is spent: wait as long as we ever do.
            raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=limits.RETRY_AFTER_MAX_MS)
        keyed = self.settings.api_key is not None
        raise_for_status(response, credentials_sent=keyed)
        # Tavily's `{"detail": {"error": ...}}` and its keyless-mode `error`
        # envelope (with `retry_after_seconds`) may come under 200.
        answer = read_answer(_Answer, response, "results", credentials_sent=keyed)
        return collect_hits(answer.results, _hit)


def _hit(position: int, item: object) -> RawHit | None:
    result = validate_or_none(_Result, item)
    if result is None:
        return None
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=result.content or "",
        date=web_date(result.published_date),
    )
