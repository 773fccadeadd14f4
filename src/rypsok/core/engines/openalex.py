"""OpenAlex: scholarly works through the OpenAlex API (keyed, free key).

Provider: OurResearch, `GET https://api.openalex.org/works?search=`
(https://developers.openalex.org/). Admission record: docs/engines/openalex.md.

Configuration (`[engines.openalex]`):

    api_key    required (a free key since 2026-02-13), by reference; sent as
               the `api_key` parameter, the one place OpenAlex reads it.
    endpoint   replaces https://api.openalex.org/works.

Request. `search` = the query, `per_page` = the count (at most 200), `select`
= only the fields read, and a `filter` of `language:<code>` and
`from_publication_date:`/`to_publication_date:` (UTC days) when asked.

Result (bibliographic, issue 11 item 6). URL = the DOI landing page, else
`primary_location.landing_page_url` (the publisher), else the OpenAlex id.
Title = `display_name`. Snippet = the abstract rebuilt from
`abstract_inverted_index` (word -> positions), else the venue. Date =
`publication_date`.

Budget. An answer whose `X-RateLimit-Remaining` is 0 spent the day's
budget: its hits come with a pause of LIM-B4 (`PausingHits`).

Failures. 403 "Rate limit exceeded" and 429 "Daily limit exceeded" are both
rate_limited (the daily budget is spent); another 401/403 is auth_failure.
"""

from __future__ import annotations

import json
from typing import ClassVar, Final

from pydantic import Field

from rypsok.core import limits
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
    collect_hits,
    doi_url,
    iso_date,
    listed_or_empty,
    raise_for_status,
    read_answer,
    utc_day,
    validate_or_none,
    window_start,
)

_SELECT: Final = "id,doi,display_name,publication_date,primary_location,abstract_inverted_index"
# An abstract is rebuilt up to this many words: the index is the provider's
# data, and its positions must not size our memory.
_ABSTRACT_WORDS: Final = 400
# OpenAlex tags works with ISO 639-1 codes; these are the ones with sizeable corpora (U).
_LANGUAGES: Final = frozenset(
    {"en", "de", "fr", "es", "it", "pt", "nl", "ru", "zh", "ja", "ko", "pl", "sv", "tr", "id"}
)


class _Meta(StrictModel):
    count: int | None = None


class _Answer(StrictModel):
    results: list[object] | None = None  # absent: empty only when `meta.count` is 0
    meta: _Meta = _Meta()


class _Source(StrictModel):
    display_name: str | None = None


class _Location(StrictModel):
    landing_page_url: str | None = None
    source: _Source | None = None


class _Work(StrictModel):
    id: str
    display_name: str = Field(min_length=1)
    doi: str | None = None
    publication_date: str | None = None
    primary_location: _Location | None = None
    abstract_inverted_index: dict[str, list[int]] | None = None


class OpenAlex(Driver):
    """OpenAlex works through `GET /works?search=`."""

    id: ClassVar[str] = "openalex"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.SCIENCE})
    languages: ClassVar[frozenset[str]] = _LANGUAGES
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=100,  # 100 requests a second for everyone; the daily budget binds first
        max_concurrency=2,
        cacheable=True,  # CC0 (S)
        attribution_required=False,
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.openalex.org/works"
    requires_key: ClassVar[bool] = True
    _max_per_request: ClassVar[int] = 200

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = [
            ("search", params.query),
            ("per_page", str(min(params.results, self._max_per_request))),
            ("select", _SELECT),
        ]
        filters = []
        if params.language is not None and params.language in _LANGUAGES:
            filters.append(f"language:{params.language}")
        if params.time_range is not None:
            now = self.now()
            since = utc_day(window_start(params.time_range, now))
            filters += [f"from_publication_date:{since}", f"to_publication_date:{utc_day(now)}"]
        if filters:
            query.append(("filter", ",".join(filters)))
        if self.settings.api_key is not None:
            query.append(("api_key", self.settings.api_key))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        if response.status in (403, 429) and _is_rate_limit(response):
            raise EngineFailure(
                FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
            )
        keyed = self.settings.api_key is not None
        raise_for_status(response, credentials_sent=keyed)
        # `{"error", "message"}` is OpenAlex's error document, whatever the status.
        answer = read_answer(_Answer, response, "results", credentials_sent=keyed)
        hits = collect_hits(listed_or_empty(answer.results, answer.meta.count), _hit)
        if response.headers.get("x-ratelimit-remaining", "").strip() == "0":
            # The day's budget is spent with this answer: the next request would
            # only meet a 429, so the queue waits as long as it ever does.
            return PausingHits(hits, pause_ms=limits.RETRY_AFTER_MAX_MS)
        return hits


def _is_rate_limit(response: EngineResponse) -> bool:
    """OpenAlex's 429, or a 403 whose error text speaks of a limit (its per-second limit)."""
    if response.status == 429:
        return True
    try:
        document = json.loads(response.body)
    except (ValueError, RecursionError):
        return False
    texts = [document.get(k) for k in ("error", "message")] if isinstance(document, dict) else []
    return any(isinstance(text, str) and "limit" in text.lower() for text in texts)


def _hit(position: int, item: object) -> RawHit | None:
    work = validate_or_none(_Work, item)
    if work is None:
        return None
    location = work.primary_location or _Location()
    landing = location.landing_page_url
    url = (
        doi_url((work.doi or "").removeprefix("https://doi.org/"))
        or (landing if landing and landing.startswith(("https://", "http://")) else None)
        or (work.id if work.id.startswith("https://openalex.org/") else None)
    )
    if url is None:
        return None
    venue = location.source.display_name if location.source else None
    return RawHit(
        rank=position,
        url=url,
        title=work.display_name,
        snippet=_abstract(work.abstract_inverted_index) or venue or "",
        date=iso_date(work.publication_date),
    )


def _abstract(index: dict[str, list[int]] | None) -> str:
    """The abstract from OpenAlex's inverted index, in position order, bounded."""
    if not index:
        return ""
    words: dict[int, str] = {}
    for word, positions in index.items():
        for position in positions:
            if 0 <= position < _ABSTRACT_WORDS:
                words[position] = word
    return " ".join(words[p] for p in sorted(words))
