"""arXiv: e-print metadata through the arXiv API.

Provider: arXiv (Cornell University), `GET https://export.arxiv.org/api/query`,
an Atom 1.0 feed (https://info.arxiv.org/help/api/user-manual.html; terms at
https://info.arxiv.org/help/api/tou.html). Admission record:
docs/engines/arxiv.md.

Configuration (`[engines.arxiv]`):

    endpoint   replaces https://export.arxiv.org/api/query, for a proxy.

The terms allow one request every three seconds over a single connection, so
the admission is 3,000 ms spacing and concurrency 1; the queue enforces it
process-wide.

Query. `search_query=all:<query>`, relevance order. Time range: the query
becomes `(all:<query>) AND submittedDate:[<start> TO <now>]` in UTC
(day 1, week 7, month 30, year 365 days); "now" comes from the injected
`clock` (the wall clock by default). No language selection.

Result. Title = `entry/title`, snippet = `entry/summary` (both raw: arXiv
wraps long titles over lines and keeps TeX), URL = the entry's
`link[@rel="alternate"]` exactly as given (the feed writes the https abs
page), else `entry/id` as given; date = `entry/published` (first version).

Parsing is safe by construction: a document with a DTD is refused, and lxml
runs without entity expansion, network access or huge-tree support.

Traps. Errors come as a feed whose single entry has an id under
`/api/errors` (HTTP 400): request_failure. A feed with no entries but a
positive `opensearch:totalResults` is arXiv's transient empty page, a failure
(request_failure), not an empty answer. 503 with Retry-After is arXiv's
throttle: rate_limited.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Final

from lxml import etree  # type: ignore[import-untyped]

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
    collect_hits,
    iso_date,
    media_type,
    raise_for_interstitial,
    raise_for_status,
    raise_for_throttle,
    window_start,
)

_NS: Final = {
    "atom": "http://www.w3.org/2005/Atom",
    "opensearch": "http://a9.com/-/spec/opensearch/1.1/",
}
_FEED: Final = "{http://www.w3.org/2005/Atom}feed"
_XML_TYPES: Final = frozenset({"application/atom+xml", "application/xml", "text/xml"})


class ArXiv(Driver):
    """arXiv e-prints through `GET /api/query`."""

    id: ClassVar[str] = "arxiv"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.SCIENCE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=3_000,  # terms of use: one request every three seconds
        max_concurrency=1,  # terms of use: a single connection at a time
        cacheable=True,  # metadata is CC0
        attribution_required=False,  # results link back to arxiv.org
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://export.arxiv.org/api/query"
    _max_per_request: ClassVar[int] = 2000  # max_results ceiling per call

    def build_request(self, params: SearchParams) -> EngineRequest:
        search_query = f"all:{params.query}"
        if params.time_range is not None:
            now = self.now()
            start = window_start(params.time_range, now)
            search_query = f"({search_query}) AND submittedDate:[{_stamp(start)} TO {_stamp(now)}]"
        return EngineRequest(
            url=self.endpoint,
            params=(
                ("search_query", search_query),
                ("start", "0"),
                ("max_results", str(min(params.results, self._max_per_request))),
                ("sortBy", "relevance"),
                ("sortOrder", "descending"),
            ),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        _raise_for_signals(response)
        feed = _feed(response.body) if _may_be_atom(response) else None
        # The error feed comes with 400, but is recognised whatever the status.
        if feed is not None and _is_error_feed(feed):
            raise EngineFailure(FailureClass.REQUEST_FAILURE)
        # No credential is sent, so a 403 refuses the client, not a key.
        raise_for_status(response)
        if feed is None:
            # HTML, JSON, text or broken XML under 2xx: not the provider's answer.
            raise EngineFailure(FailureClass.PARSE_FAILURE)
        return _hits(feed)


def _raise_for_signals(response: EngineResponse) -> None:
    """Raise on a throttle or an interstitial, whatever else the answer holds."""
    raise_for_throttle(response)
    raise_for_interstitial(response)


def _hits(feed: Any) -> list[RawHit]:
    entries = feed.findall("atom:entry", _NS)
    if not entries:
        return _empty(feed)
    # Entries that all fail validation are a format drift, not "no results".
    return collect_hits(entries, _hit)


def _empty(feed: Any) -> list[RawHit]:
    """No entries: a true empty answer only if the feed says there are no results."""
    total = _text(feed, "opensearch:totalResults")
    if total is None or not total.strip().isdigit():
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    if int(total) > 0:
        # The transient empty page: results exist but none came. Not "no results".
        raise EngineFailure(FailureClass.REQUEST_FAILURE)
    return []


def _hit(position: int, entry: Any) -> RawHit | None:
    """One entry, or None when it lacks a title or a URL: that entry is skipped."""
    title = _text(entry, "atom:title")
    url = _alternate_link(entry) or _text(entry, "atom:id")
    if not title or not title.strip() or not url or not url.strip():
        return None
    return RawHit(
        rank=position,
        url=url.strip(),
        title=title,
        snippet=_text(entry, "atom:summary") or "",
        date=_published(entry),
    )


def _alternate_link(entry: Any) -> str | None:
    """The HTML abs page; an Atom link without rel is an alternate link too."""
    for link in entry.findall("atom:link", _NS):
        rel = link.get("rel", "alternate")
        kind = link.get("type", "text/html")
        href = link.get("href")
        if rel == "alternate" and kind == "text/html" and isinstance(href, str) and href:
            return href
    return None


def _is_error_feed(feed: Any) -> bool:
    # Matched on the id, not the title: a paper may well be titled "Error".
    return any(
        "/api/errors" in (_text(entry, "atom:id") or "")
        for entry in feed.findall("atom:entry", _NS)
    )


def _feed(body: bytes) -> Any | None:
    """The Atom feed element, or None when the body is not a well-formed, DTD-free Atom feed."""
    if b"<!doctype" in body[:4096].lower():
        return None  # no DTD in an Atom feed; refusing it rules out entity tricks
    parser = etree.XMLParser(
        resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False
    )
    try:
        root = etree.fromstring(body, parser)
    except (etree.XMLSyntaxError, ValueError):
        return None
    if root is None or root.tag != _FEED or root.getroottree().docinfo.internalDTD is not None:
        return None
    return root


def _text(element: Any, path: str) -> str | None:
    value = element.findtext(path, namespaces=_NS)
    return value if isinstance(value, str) else None


def _stamp(epoch: float) -> str:
    """arXiv's submittedDate form: YYYYMMDDHHMM in UTC."""
    return datetime.fromtimestamp(epoch, tz=UTC).strftime("%Y%m%d%H%M")


def _published(entry: Any) -> str | None:
    """The first version's date; arXiv may pad the element with whitespace."""
    published = _text(entry, "atom:published")
    return iso_date(published.strip()) if published is not None else None


def _may_be_atom(response: EngineResponse) -> bool:
    kind = media_type(response.headers)
    return not kind or kind in _XML_TYPES
