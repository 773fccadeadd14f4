"""You.com: web and news results through the You.com Search API (keyed).

Provider: You.com, `GET https://ydc-index.io/v1/search`
(https://you.com/docs/api-reference/search/v1-search). Admission record:
docs/engines/you.md.

Configuration (`[engines.you]`):

    api_key    required, by reference; sent as the header `X-API-Key`.
    endpoint   replaces https://ydc-index.io/v1/search.

Request. `query`, `count` = the count (at most 100), `safesearch` = off |
moderate | strict, `language` (upper-case ISO 639-1), `freshness` = day |
week | month | year, `country` = the operator's region when it is a two-letter code.

Result. `results.web[]` for general, `results.news[]` for news: title, url,
`description` (else the first of `snippets`) as the snippet, `page_age` as
the date. A reply without the block is the empty answer.
"""

from __future__ import annotations

import re
from typing import ClassVar, Final

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
    iso_date,
    raise_for_status,
    read_answer,
    validate_or_none,
)

_KEY_HEADER: Final = "X-API-Key"
_COUNTRY: Final = re.compile(r"^[A-Za-z]{2}$")
# Languages You.com documents for `language` (U: the full list).
_LANGUAGES: Final = frozenset(
    {"en", "de", "fr", "es", "it", "pt", "nl", "pl", "sv", "da", "fi", "no", "ja", "ko", "zh"}
)


class _Blocks(StrictModel):
    web: list[object] | None = None
    news: list[object] | None = None


class _Answer(StrictModel):
    results: _Blocks


class _Result(StrictModel):
    url: str = Field(min_length=1)
    title: str = Field(min_length=1)
    description: str | None = None
    snippets: list[str] | str | None = None  # a list; one string is read as one entry
    page_age: str | None = None


class You(Driver):
    """You.com search through `GET /v1/search`."""

    id: ClassVar[str] = "you"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL, Category.NEWS})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    languages: ClassVar[frozenset[str]] = _LANGUAGES
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=100,  # self-serve default: 10 requests a second
        max_concurrency=2,
        cacheable=False,  # U
        attribution_required=False,  # U
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://ydc-index.io/v1/search"
    requires_key: ClassVar[bool] = True
    _max_per_request: ClassVar[int] = 100

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = [
            ("query", params.query),
            ("count", str(min(params.results, self._max_per_request))),
            ("safesearch", params.safe_search.value),
        ]
        if params.language is not None and params.language in _LANGUAGES:
            query.append(("language", params.language.upper()))
        if params.time_range is not None:
            query.append(("freshness", params.time_range.value))
        if params.region is not None and _COUNTRY.match(params.region):
            query.append(("country", params.region.upper()))
        headers = [("Accept", "application/json")]
        credentials: frozenset[str] = frozenset()
        if self.settings.api_key is not None:
            headers.append((_KEY_HEADER, self.settings.api_key))
            credentials = frozenset({_KEY_HEADER})
        return EngineRequest(
            url=self.endpoint,
            params=tuple(query),
            headers=tuple(headers),
            credential_headers=credentials,
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        keyed = self.settings.api_key is not None
        raise_for_status(response, credentials_sent=keyed)
        # `{status, code, title, detail}` is You.com's error document.
        blocks = read_answer(_Answer, response, "results", credentials_sent=keyed).results
        # One reply may hold both blocks: `news` comes when You.com's classifier
        # finds news intent, whatever was asked. Web results first, then news,
        # in the provider's order; a URL in both merges downstream.
        return collect_hits([*(blocks.web or []), *(blocks.news or [])], _hit)


def _hit(position: int, item: object) -> RawHit | None:
    result = validate_or_none(_Result, item)
    if result is None:
        return None
    snippets = [result.snippets] if isinstance(result.snippets, str) else result.snippets or []
    snippet = result.description or next(iter(snippets), "")
    return RawHit(
        rank=position,
        url=result.url,
        title=result.title,
        snippet=snippet,
        date=iso_date(result.page_age),
    )
