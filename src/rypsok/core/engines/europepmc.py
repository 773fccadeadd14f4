"""Europe PMC: life-science literature through the Europe PMC REST API.

Provider: Europe PMC (EMBL-EBI), `GET
https://www.ebi.ac.uk/europepmc/webservices/rest/search` with `format=json`
(https://europepmc.org/RestfulWebService). It indexes PubMed, PubMed Central,
preprints (bioRxiv, medRxiv and others), Agricola, patents and more.
Admission record: docs/engines/europepmc.md.

Configuration (`[engines.europepmc]`):

    endpoint   replaces https://www.ebi.ac.uk/europepmc/webservices/rest/search,
               for a proxy. Result URLs stay on doi.org / europepmc.org.

Query. `query=<query>`, relevance order, `resultType=core` (the only result
type that carries the abstract), `pageSize` = the result count (at most 1,000).
Time range: the query becomes `(<query>) AND FIRST_PDATE:[<start> TO <today>]`
in UTC days (day 1, week 7, month 30, year 365 days); "now" comes from the
injected `clock`. No language selection.

Result. Title = `title` and snippet = `abstractText`, both raw (Europe PMC
keeps inline HTML such as <i>, <sup> and <h4> section heads). Date =
`firstPublicationDate`. URL = https://doi.org/<doi> when the record has a DOI,
else the record's page https://europepmc.org/article/<source>/<id>. The DOI
comes first because it is the persistent identifier of the version of record
and the form Crossref returns, so the same paper found by both science
engines merges into one result (REQ-RANK-004); records without a DOI (many
PubMed-only and Agricola records) still get Europe PMC's own page.

Traps. A query Europe PMC cannot run, and its intermittent cut-short answer,
both come with HTTP 200 as a JSON object holding `version` (and perhaps the
echoed `request`) but neither `hitCount` nor `resultList`. The two cannot be
told apart, and neither is "no results" nor a format drift: request_failure.
"""

from __future__ import annotations

from typing import ClassVar

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
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    decode_json,
    doi_url,
    iso_date,
    raise_for_status,
    utc_day,
    validate,
    validate_or_none,
    window_start,
)


class _ResultList(StrictModel):
    result: list[object]


class _Answer(StrictModel):
    hit_count: int = Field(alias="hitCount", ge=0)
    result_list: _ResultList = Field(alias="resultList")


class _Record(StrictModel):
    # Source codes are three capitals (MED, PMC, PPR, AGR, PAT, ...).
    source: str | None = Field(default=None, pattern=r"^[A-Z]{3}$")
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
    doi: str | None = None
    title: str = Field(min_length=1)
    abstract_text: str | None = Field(default=None, alias="abstractText")
    first_publication_date: str | None = Field(default=None, alias="firstPublicationDate")


class EuropePmc(Driver):
    """Europe PMC publications through `GET /webservices/rest/search`."""

    id: ClassVar[str] = "europepmc"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.SCIENCE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=200,  # no published limit (U): at most five requests a second
        max_concurrency=1,  # no published limit (U): one request at a time
        cacheable=True,  # bibliographic metadata (U: no statement on caching)
        attribution_required=False,  # results link to the record; content stays the holders'
        max_body_bytes=2 * 1024 * 1024,  # core records carry abstracts and author lists
    )
    default_endpoint: ClassVar[str] = "https://www.ebi.ac.uk/europepmc/webservices/rest/search"
    _max_per_request: ClassVar[int] = 1000  # pageSize ceiling
    _record_page: ClassVar[str] = "https://europepmc.org/article/"

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = params.query
        if params.time_range is not None:
            now = self.now()
            since = utc_day(window_start(params.time_range, now))
            query = f"({query}) AND FIRST_PDATE:[{since} TO {utc_day(now)}]"
        return EngineRequest(
            url=self.endpoint,
            params=(
                ("query", query),
                ("format", "json"),
                ("resultType", "core"),
                ("pageSize", str(min(params.results, self._max_per_request))),
            ),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        # No credential is sent, so a 403 refuses the client, not a key: blocked.
        raise_for_status(response)
        document = decode_json(response)
        if _is_refused_or_cut_short(document):
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        answer = validate(_Answer, document)
        return collect_hits(answer.result_list.result, self._hit)

    def _hit(self, position: int, item: object) -> RawHit | None:
        """One record, or None when it lacks a title or any URL: that record is skipped."""
        record = validate_or_none(_Record, item)
        if record is None:
            return None
        url = doi_url(record.doi) or self._page_url(record)
        if url is None:
            return None
        return RawHit(
            rank=position,
            url=url,
            title=record.title,
            snippet=record.abstract_text or "",
            date=iso_date(record.first_publication_date),
        )

    def _page_url(self, record: _Record) -> str | None:
        if record.source is None or record.id is None:
            return None
        return f"{self._record_page}{record.source}/{record.id}"


def _is_refused_or_cut_short(document: object) -> bool:
    """Europe PMC's 200 answer to a query it cannot run, or its cut-short answer."""
    return (
        isinstance(document, dict)
        and "version" in document
        and "hitCount" not in document
        and "resultList" not in document
    )
