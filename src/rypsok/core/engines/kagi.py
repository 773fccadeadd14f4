"""Kagi: web and news results through the Kagi Search API v1 (keyed, paid).

Provider: Kagi Inc., `POST https://kagi.com/api/v1/search` (OpenAPI-described
v1, pinned here: the driver speaks v1 only; the legacy v0 `GET /api/v0/search`
is not used). Admission record: docs/engines/kagi.md.

Configuration (`[engines.kagi]`):

    api_key    required, by reference; sent as `Authorization: Bearer <key>`,
               a declared credential header (REQ-SEC-017).
    endpoint   replaces https://kagi.com/api/v1/search.

Request body. `query`, `workflow` = "search" (general) or "news", `limit` =
the count, `safe_search` = false only for safe search off, and `filters`:
`region` (the operator's region, ISO 3166 alpha-2) and `after` (the start of
the time range, YYYY-MM-DD UTC). Kagi has no language parameter.

Result. `data.search[]` (or `data.news[]`): title, url, snippet, `time` as
the date. `data` without the list is Kagi's empty answer.

Failures. 429 ("rate limited or usage limit exhausted") rate_limited; 401 and
403 ("IP address not authorized") auth_failure; an `error` list under 200
request_failure.
"""

from __future__ import annotations

import re
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
    utc_day,
    validate_or_none,
    window_start,
)
from rypsok.core.engines.post import json_post

_AUTHORIZATION: Final = "Authorization"
_REGION: Final = re.compile(r"^[A-Za-z]{2}$")


class _Data(StrictModel):
    search: list[object] | None = None
    news: list[object] | None = None


class _Answer(StrictModel):
    data: _Data | list[object]
    error: list[object] | None = None


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str = Field(min_length=1)
    snippet: str | None = None
    time: str | None = None


class Kagi(Driver):
    """Kagi web and news search through the v1 API."""

    id: ClassVar[str] = "kagi"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL, Category.NEWS})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=1_000,  # U: Kagi publishes no rate; 429 backs the spacing off
        max_concurrency=1,
        cacheable=False,  # U: storage terms not verified
        attribution_required=True,  # U: the safe side
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://kagi.com/api/v1/search"
    requires_key: ClassVar[bool] = True
    _max_per_request: ClassVar[int] = 100

    def build_request(self, params: SearchParams) -> EngineRequest:
        news = params.category is Category.NEWS
        filters: dict[str, str] = {}
        if params.region is not None and _REGION.match(params.region):
            filters["region"] = params.region.upper()
        if params.time_range is not None:
            filters["after"] = utc_day(window_start(params.time_range, self.now()))
        payload: dict[str, object] = {
            "query": params.query,
            "workflow": "news" if news else "search",
            "limit": min(params.results, self._max_per_request),
            "safe_search": params.safe_search is not SafeSearch.OFF,
        }
        if filters:
            payload["filters"] = filters
        key = self.settings.api_key
        credential = (_AUTHORIZATION, f"Bearer {key}") if key is not None else None
        return json_post(self.endpoint, payload, credential=credential)

    def parse(self, response: EngineResponse) -> list[RawHit]:
        keyed = self.settings.api_key is not None
        raise_for_status(response, credentials_sent=keyed)
        # The v1 error envelope (`data: []`, `error: [{code, message}]`) may
        # come under 200: its codes and words decide the class.
        answer = read_answer(_Answer, response, "data", credentials_sent=keyed)
        if answer.error:
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        if not isinstance(answer.data, _Data):
            raise EngineFailure(FailureClass.PARSE_FAILURE)
        items = answer.data.search if answer.data.search is not None else answer.data.news
        return collect_hits(items or [], _hit)


def _hit(position: int, item: object) -> RawHit | None:
    result = validate_or_none(_Result, item)
    if result is None:
        return None
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=result.snippet or "",
        date=iso_date(result.time),
    )
