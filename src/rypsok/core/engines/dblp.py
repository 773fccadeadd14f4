"""dblp: computer-science publications through the dblp search API.

Provider: dblp computer science bibliography (Schloss Dagstuhl),
`GET https://dblp.org/search/publ/api?format=json` (https://dblp.org/faq/13501473).
Admission record: docs/engines/dblp.md.

Configuration (`[engines.dblp]`):

    endpoint   replaces https://dblp.org/search/publ/api (e.g. the mirror
               https://dblp.uni-trier.de/search/publ/api).

Request. `q` = the query, `format=json`, `h` = the result count (at most
1,000), `c=0` (no completions, which dblp computes otherwise).

Result (a bibliographic source, issue 11 item 6). URL = the DOI landing page
(`doi`), else the publisher's page (`ee`, a string or a list), else the dblp
record (`url`). Title = `title` without the full stop dblp appends. dblp
has no abstract, so the snippet is composed from its own fields:
"<authors> · <venue> <year>" (at most five authors, then "et al."); the
record says so. No date: dblp gives the year only.

Traps. `hit`, `authors.author` and `venue` are each an object (or string)
when single and a list otherwise; an author is `{"text": ...}` or a plain
string. An empty answer has `hits` without a `hit` key. Overload is 429 with
an empty body and Retry-After.
"""

from __future__ import annotations

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
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    decode_json,
    doi_url,
    listed_or_empty,
    raise_for_status,
    validate,
    validate_or_none,
)

_AUTHORS_SHOWN: Final = 5
_WEB: Final = ("https://", "http://")
_DOI_HOSTS: Final = frozenset({"doi.org", "dx.doi.org"})


class _Status(StrictModel):
    code: str = Field(alias="@code")


class _Hits(StrictModel):
    hit: object = None  # absent: no results; an object when one, a list otherwise
    total: str | int | None = Field(default=None, alias="@total")


class _Result(StrictModel):
    status: _Status | None = None  # absent: the answer is read by its hits alone
    hits: _Hits


class _Answer(StrictModel):
    result: _Result


class _Author(StrictModel):
    text: str


class _Authors(StrictModel):
    author: object = None


class _Info(StrictModel):
    title: str = Field(min_length=1)
    url: str | None = None
    doi: str | None = None
    ee: object = None
    venue: object = None
    year: str | int | None = None  # a string in dblp's JSON; a number is the same year
    authors: _Authors | None = None


class _Hit(StrictModel):
    info: _Info


class Dblp(Driver):
    """dblp publications through `GET /search/publ/api`."""

    id: ClassVar[str] = "dblp"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.SCIENCE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=2_000,  # "wait at least one or two seconds between two requests"
        max_concurrency=1,
        cacheable=True,  # CC0 1.0
        attribution_required=False,  # CC0: none required
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://dblp.org/search/publ/api"
    _max_per_request: ClassVar[int] = 1000  # h ceiling

    def build_request(self, params: SearchParams) -> EngineRequest:
        count = min(params.results, self._max_per_request)
        return EngineRequest(
            url=self.endpoint,
            params=(("q", params.query), ("format", "json"), ("h", str(count)), ("c", "0")),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        # 429 with Retry-After is dblp's overload signal (rate_limited).
        raise_for_status(response)
        answer = validate(_Answer, decode_json(response))
        status = answer.result.status
        if status is not None and status.code != "200":
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        hits = answer.result.hits
        # No `hit` key is dblp's empty answer, when `@total` agrees (or is absent).
        listed = None if hits.hit is None else _as_list(hits.hit)
        return collect_hits(listed_or_empty(listed, hits.total or 0), _hit)


def _as_list(value: object) -> list[object]:
    """dblp's one-or-many field as a list: absent is none, a single value is one."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _hit(position: int, item: object) -> RawHit | None:
    """One publication, or None when it has no title or no URL at all."""
    hit = validate_or_none(_Hit, item)
    if hit is None:
        return None
    info = hit.info
    url = _url(info)
    title = info.title.removesuffix(".").strip()
    if url is None or not title:
        return None
    return RawHit(rank=position, url=url, title=title, snippet=_snippet(info))


def _url(info: _Info) -> str | None:
    """The DOI landing page, else the publisher's page, else the dblp record."""
    by_doi = doi_url(info.doi)
    if by_doi is not None:
        return by_doi
    # Older records link the publisher over plain http: still the publisher's page.
    pages = [ee for ee in _as_list(info.ee) if isinstance(ee, str) and ee.startswith(_WEB)]
    if pages:
        return doi_url(_doi_in(pages[0])) or pages[0]
    return info.url if info.url and info.url.startswith("https://") else None


def _doi_in(page: str) -> str:
    """The DOI of a doi.org resolver link (any scheme, `dx.` or not); "" for another page."""
    scheme, _, rest = page.partition("://")
    host, _, path = rest.partition("/")
    return path if host.lower() in _DOI_HOSTS and scheme in ("https", "http") else ""


def _snippet(info: _Info) -> str:
    """ "<authors> · <venue> <year>", composed from dblp's fields (it has no abstract)."""
    names = [name for name in map(_author_name, _as_list(info.authors and info.authors.author))
             if name]  # fmt: skip
    shown = ", ".join(names[:_AUTHORS_SHOWN]) + (" et al." if len(names) > _AUTHORS_SHOWN else "")
    venues = [venue for venue in _as_list(info.venue) if isinstance(venue, str)]
    year = str(info.year) if info.year is not None else ""
    where = " ".join(part for part in (", ".join(venues), year) if part)
    return " · ".join(part for part in (shown, where) if part)


def _author_name(value: object) -> str:
    if isinstance(value, str):
        return value
    author = validate_or_none(_Author, value)
    return author.text if author is not None else ""
