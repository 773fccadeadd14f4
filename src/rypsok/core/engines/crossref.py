"""Crossref: scholarly works by DOI metadata through the Crossref REST API.

Provider: Crossref, `GET https://api.crossref.org/works`
(https://api.crossref.org/swagger-ui/index.html; access and pools at
https://www.crossref.org/documentation/retrieve-metadata/rest-api/). Admission
record: docs/engines/crossref.md.

Configuration (`[engines.crossref]`):

    endpoint   replaces https://api.crossref.org/works, for a proxy.

Polite pool. When the operator's contact (`[operator] contact`) is an e-mail
address or a `mailto:` URI, the address is sent as `mailto=<address>`, which
puts the requests in Crossref's "polite" pool. Any other contact (a URL) adds
nothing; the engine then uses the public pool, which works without it. The
admission keeps the public pool's figures (5 requests a second, one at a
time), which are safe in either pool.

Query. `query=<query>` in relevance order, `rows` = the result count (at most
1,000), `select` = only the fields the driver reads (a work's reference list
alone can be larger than ten whole results). Time range:
`filter=from-pub-date:<start>,until-pub-date:<today>` in UTC days (day 1,
week 7, month 30, year 365 days); "now" comes from the injected `clock`. No
language selection.

Result. Title = `title[0]` (titles are lists; raw, with the JATS/HTML inline
markup publishers deposit), snippet = `abstract` (JATS XML, raw) or else the
container title (journal, book or proceedings), URL = https://doi.org/<DOI>
(the DOI's resolver, not the landing page a publisher may move), date = the
first complete `[year, month, day]` of `published`, then `issued`. A date
with only a year or a month, or `[[null]]`, is dropped rather than invented.

Failure signals. 429 is Crossref's rate and concurrency limit; its wait is
Retry-After, else one `x-rate-limit-interval` (e.g. "1s"). A validation
failure (a parameter Crossref refuses) comes as 400 with a JSON error
document: request_failure, like an error document (`"status": "failed"`)
under 200.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
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
    SearchParams,
    TimeRange,
    retry_after_ms,
)
from rypsok.core.engines.common import (
    StrictModel,
    capped_wait_ms,
    collect_hits,
    decode_json,
    doi_url,
    raise_for_status,
    utc_day,
    validate,
    validate_or_none,
    window_start,
)

# The fields the driver reads; everything else (references, authors, licences) is left out.
_SELECT: Final = "DOI,title,container-title,abstract,published,issued"
# A deliberately plain e-mail shape: one @, a dot in the domain, no spaces or separators.
_EMAIL: Final = re.compile(r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$")
_INTERVAL: Final = re.compile(r"^([0-9]{1,5})s$")


class _Items(StrictModel):
    items: list[object]


class _Answer(StrictModel):
    message: _Items


class _DateParts(StrictModel):
    date_parts: list[list[int | None]] = Field(alias="date-parts")


class _Work(StrictModel):
    doi: str = Field(alias="DOI")
    title: list[str] = Field(min_length=1)
    container_title: list[str] = Field(default_factory=list, alias="container-title")
    abstract: str | None = None
    # Validated apart (see `_date`): a malformed date drops the date, not the work.
    published: object = None
    issued: object = None


class Crossref(Driver):
    """Crossref works through `GET /works`."""

    id: ClassVar[str] = "crossref"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.SCIENCE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=200,  # public pool: five requests a second
        max_concurrency=1,  # public pool: one request at a time
        cacheable=True,  # metadata "may be cached and incorporated"
        attribution_required=False,  # Crossref claims no rights in the metadata
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://api.crossref.org/works"
    _max_per_request: ClassVar[int] = 1000  # rows ceiling

    def build_request(self, params: SearchParams) -> EngineRequest:
        query: list[tuple[str, str]] = [
            ("query", params.query),
            ("rows", str(min(params.results, self._max_per_request))),
            ("select", _SELECT),
        ]
        if params.time_range is not None:
            now = self.now()
            since = utc_day(window_start(params.time_range, now))
            query.append(("filter", f"from-pub-date:{since},until-pub-date:{utc_day(now)}"))
        mailto = _polite_address(params.contact)
        if mailto is not None:
            query.append(("mailto", mailto))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        if response.status == 429:
            raise EngineFailure(FailureClass.RATE_LIMITED, retry_after_ms=_wait(response.headers))
        # No credential is sent, so a 403 refuses the client, not a key: blocked.
        # A 400 (Crossref's validation failure: a parameter it refuses) is request_failure.
        raise_for_status(response)
        document = decode_json(response)
        if _is_failed(document):
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        answer = validate(_Answer, document)
        return collect_hits(answer.message.items, _hit)


def _polite_address(contact: str | None) -> str | None:
    """The e-mail address in the operator's contact, for `mailto=`; None for a URL or nothing."""
    if contact is None:
        return None
    address = contact.strip().removeprefix("mailto:")
    return address if _EMAIL.match(address) else None


def _hit(position: int, item: object) -> RawHit | None:
    """One work, or None when it lacks a usable title or DOI: that work is skipped."""
    work = validate_or_none(_Work, item)
    if work is None or not work.title[0].strip():
        return None
    url = doi_url(work.doi)
    if url is None:
        return None
    container = work.container_title[0] if work.container_title else ""
    return RawHit(
        rank=position,
        url=url,
        title=work.title[0],
        snippet=work.abstract or container,
        date=_date(work.published) or _date(work.issued),
    )


def _date(value: object) -> str | None:
    """YYYY-MM-DD of a complete `date-parts` triple; None for a partial, null or bad date."""
    parts = validate_or_none(_DateParts, value)
    if parts is None or not parts.date_parts or len(parts.date_parts[0]) != 3:
        return None
    year, month, day = parts.date_parts[0]
    if year is None or month is None or day is None:
        return None
    try:
        return date(year, month, day).isoformat()
    except (
        ValueError,
        OverflowError,
    ):  # out of range, or a year beyond a C long (found by fuzzing)
        return None


def _is_failed(document: object) -> bool:
    """Crossref's error document: `"status": "failed"` (e.g. a validation failure)."""
    return isinstance(document, dict) and document.get("status") == "failed"


def _wait(headers: Mapping[str, str]) -> int | None:
    """Retry-After, else one rate-limit interval (`x-rate-limit-interval: 1s`)."""
    delay = retry_after_ms(headers)
    if delay is not None:
        return delay
    interval = _INTERVAL.match(headers.get("x-rate-limit-interval", "").strip())
    return capped_wait_ms(int(interval.group(1))) if interval else None
