"""PubMed: biomedical literature through NCBI's E-utilities (esearch, then esummary).

Provider: NCBI / U.S. National Library of Medicine, E-utilities
(https://www.ncbi.nlm.nih.gov/books/NBK25497/). Admission record:
docs/engines/pubmed.md, which carries NCBI's disclaimer.

One search is one request pair within one turn and deadline (`FollowUp`):
`esearch.fcgi` finds the PubMed ids in relevance order, `esummary.fcgi`
gives their titles, journals, authors, dates and DOIs. An esearch answer
without ids is the empty answer; no second request is made.

Configuration (`[engines.pubmed]`), typed (`PubMedConfig`):

    enabled    PubMed is outside the zero-configuration set: set it true.
    endpoint   replaces the E-utilities base https://eutils.ncbi.nlm.nih.gov/entrez/eutils/.
    api_key    optional, the operator's own NCBI key (NCBI wants each user of a
               third-party tool to bring theirs), sent as `api_key`.
    tool       the `tool` name registered with NCBI (default "rypsok").
    email      the `email` registered with NCBI; default: `[operator] contact`
               when that is an e-mail address.

Request. esearch: `db=pubmed`, `term` = the query (with `AND <language>[la]`
for a language), `retmode=json`, `retmax` = the count, `sort=relevance`, and
for a time range `datetype=pdat&mindate=&maxdate=` (YYYY/MM/DD, UTC).

Result (a bibliographic source, issue 11 item 6). URL = the DOI landing page
when esummary lists a DOI, else the PubMed page https://pubmed.ncbi.nlm.nih.gov/<id>/.
Title = `title`; snippet = "<authors> · <journal> <year>" (esummary has no
abstract); date = `sortpubdate` (YYYY/MM/DD).

Failures. NCBI sends its rate limit as 429 or as `{"error": "API rate limit
exceeded"}` under 200: both rate_limited. An esearch `ERROR` or any other
`error` document is request_failure.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import ClassVar, Final

from pydantic import Field

from rypsok.core.config import EngineConfig
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    FollowUp,
    RawHit,
    SearchParams,
    TimeRange,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    decode_json,
    doi_url,
    listed_or_empty,
    raise_for_error_document,
    raise_for_status,
    validate,
    validate_or_none,
    window_start,
)
from rypsok.core.engines.options import EMAIL as _EMAIL
from rypsok.core.engines.options import PubMedConfig

_PMID: Final = re.compile(r"^[0-9]{1,10}$")
_AUTHORS_SHOWN: Final = 5
# ISO 639-1 code -> PubMed's language name for the [la] field.
_LANGUAGE_NAMES: Final = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
    "ja": "japanese", "ru": "russian", "zh": "chinese", "pt": "portuguese", "nl": "dutch",
    "pl": "polish",
}  # fmt: skip


class _SearchResult(StrictModel):
    idlist: list[str] | None = None  # absent: empty only when `count` is "0"
    count: str | None = None
    error: str | None = Field(default=None, alias="ERROR")


class _Search(StrictModel):
    esearchresult: _SearchResult


class _Summaries(StrictModel):
    result: dict[str, object]


class _Uids(StrictModel):
    uids: list[str]


class _Author(StrictModel):
    name: str


class _ArticleId(StrictModel):
    idtype: str
    value: str


class _Summary(StrictModel):
    uid: str
    title: str = Field(min_length=1)
    fulljournalname: str = ""
    source: str = ""
    pubdate: str = ""
    sortpubdate: str = ""
    authors: list[object] = Field(default_factory=list)
    articleids: list[object] = Field(default_factory=list)


class PubMed(Driver):
    """PubMed through E-utilities: esearch for ids, esummary for their records."""

    id: ClassVar[str] = "pubmed"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.SCIENCE})
    languages: ClassVar[frozenset[str]] = frozenset(_LANGUAGE_NAMES)
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        # Three requests a second per address without a key; a search is two
        # requests in one turn, so turns start at most 1.5 times a second.
        min_interval_ms=700,
        max_concurrency=1,
        cacheable=True,  # NCBI allows local copies
        attribution_required=True,  # NCBI's disclaimer and copyright notice
        max_body_bytes=2 * 1024 * 1024,
    )
    # With the operator's own key NCBI allows ten requests a second: five turns.
    keyed_admission: ClassVar[Admission | None] = Admission(
        min_interval_ms=200,
        max_concurrency=1,
        cacheable=True,
        attribution_required=True,
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils/"
    default_enabled: ClassVar[bool] = False
    options_model: ClassVar[type[EngineConfig]] = PubMedConfig
    _max_per_request: ClassVar[int] = 100  # kept small: esummary is asked for every id

    def _url(self, name: str) -> str:
        return f"{self.endpoint.rstrip('/')}/{name}"

    def _identity(self) -> list[tuple[str, str]]:
        """tool, email and the operator's key: NCBI asks for them on every request."""
        options = self.typed_options(PubMedConfig)
        pairs = [("tool", options.tool)]
        contact = (self.settings.contact or "").removeprefix("mailto:")
        email = options.email or (contact if _EMAIL.match(contact) else None)
        if email is not None:
            pairs.append(("email", email))
        if self.settings.api_key is not None:
            pairs.append(("api_key", self.settings.api_key))
        return pairs

    def build_request(self, params: SearchParams) -> EngineRequest:
        term = params.query
        if params.language is not None and params.language in _LANGUAGE_NAMES:
            term = f"({term}) AND {_LANGUAGE_NAMES[params.language]}[la]"
        query = [
            ("db", "pubmed"),
            ("term", term),
            ("retmode", "json"),
            ("retmax", str(min(params.results, self._max_per_request))),
            ("sort", "relevance"),
        ]
        if params.time_range is not None:
            now = self.now()
            query += [
                ("datetype", "pdat"),
                ("mindate", _ncbi_day(window_start(params.time_range, now))),
                ("maxdate", _ncbi_day(now)),
            ]
        return EngineRequest(url=self._url("esearch.fcgi"), params=(*query, *self._identity()))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        raise_for_status(response)
        document = decode_json(response)
        # NCBI's `{"error": "API rate limit exceeded"}` often comes under 200.
        raise_for_error_document(document, "result")
        if isinstance(document, dict) and "esummaryresult" in document and "result" not in document:
            # esummary's own refusal ("Invalid uid", "Empty id list"): no records.
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        if isinstance(document, dict) and "esearchresult" in document:
            return self._after_search(validate(_Search, document).esearchresult)
        summaries = validate(_Summaries, document).result
        uids = validate(_Uids, summaries).uids
        return collect_hits([summaries.get(uid) for uid in uids], _hit)

    def _after_search(self, found: _SearchResult) -> list[RawHit]:
        """No ids: the empty answer. Ids: the esummary request for them, as a follow-up."""
        if found.error is not None:
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        listed = listed_or_empty(found.idlist, found.count)
        ids = [pmid for pmid in listed if _PMID.match(pmid)]
        if listed and not ids:
            raise EngineFailure(FailureClass.PARSE_FAILURE)
        if not ids:
            return []
        query = (("db", "pubmed"), ("id", ",".join(ids)), ("retmode", "json"))
        return FollowUp(
            EngineRequest(url=self._url("esummary.fcgi"), params=(*query, *self._identity()))
        )


def _ncbi_day(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y/%m/%d")


def _hit(position: int, item: object) -> RawHit | None:
    """One summary, or None when it lacks a title or a valid id: that record is skipped."""
    summary = validate_or_none(_Summary, item)
    if summary is None or not _PMID.match(summary.uid):
        return None
    ids = [i for i in map(lambda v: validate_or_none(_ArticleId, v), summary.articleids) if i]
    doi = next((i.value for i in ids if i.idtype == "doi"), None)
    url = doi_url(doi) or f"https://pubmed.ncbi.nlm.nih.gov/{summary.uid}/"
    return RawHit(
        rank=position,
        url=url,
        title=summary.title,
        snippet=_snippet(summary),
        date=_sort_date(summary.sortpubdate),
    )


def _snippet(summary: _Summary) -> str:
    """ "<authors> · <journal> <year>" from the summary (esummary has no abstract)."""
    names = [a.name for a in map(lambda v: validate_or_none(_Author, v), summary.authors) if a]
    shown = ", ".join(names[:_AUTHORS_SHOWN]) + (" et al." if len(names) > _AUTHORS_SHOWN else "")
    journal = summary.fulljournalname or summary.source
    where = " ".join(part for part in (journal, summary.pubdate[:4]) if part)
    return " · ".join(part for part in (shown, where) if part)


def _sort_date(value: str) -> str | None:
    """YYYY-MM-DD of `sortpubdate` ("2016/04/21 00:00"); None when malformed."""
    try:
        return datetime.strptime(value[:10], "%Y/%m/%d").date().isoformat()
    except ValueError:
        return None
