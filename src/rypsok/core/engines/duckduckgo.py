"""DuckDuckGo: web results read from its HTML page (a scraping engine, opt-in only).

Provider: DuckDuckGo, the no-JavaScript result page
`POST https://html.duckduckgo.com/html/` (form `q`, `kl`, `df`), with the
lite page `POST https://lite.duckduckgo.com/lite/` as the documented
fallback. Neither is an API: DuckDuckGo states it has no rights to syndicate
its results, so the operator who enables this engine bears its terms.
Admission record: docs/engines/duckduckgo.md; rules: docs/rfc-015-scraping.md.

Configuration (`[engines.duckduckgo]`), typed (`DuckDuckGoConfig`), only with
`[scraping] enabled = true` (REQ-ENG-013):

    enabled    must be set true: a scraping engine is never on by default.
    variant    "html" (default) or "lite", the fallback when the HTML page's
               markup changes.
    endpoint   replaces the page URL of the variant.

Request. A form POST of `q` (bang tokens quoted so `!x` never redirects to
another site), `kl` = the operator's region as DuckDuckGo's `<cc>-<lang>`
code (`wt-wt` for none) and `df` = d | w | m | y for a time range. First page
only: later pages need the page's own `vqd` token, which is a bot signal when
forged. Only the standard User-Agent and no browser-like header is sent.

Page. Results `div.result` (ads `result--ad` and `y.js` ad targets dropped),
title and link `a.result__a` (the link unwrapped from `/l/?uddg=`), snippet
`.result__snippet`. No-results marker `div.no-results`. Challenge: HTTP 202,
or a page with the anomaly form (`challenge-form`, `anomaly-modal`).
Lite: rows with `a.result-link` and `td.result-snippet`; sponsored rows
dropped; no-results marker "No results." (U).
"""

from __future__ import annotations

from typing import ClassVar, Final
from urllib.parse import parse_qs, urlencode, urlsplit

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
from rypsok.core.engines.options import DuckDuckGoConfig
from rypsok.core.engines.scrape import (
    Element,
    first,
    has_class,
    read_page,
    results_or_marker,
    text_of,
)

_ENDPOINTS: Final = {
    "html": "https://html.duckduckgo.com/html/",
    "lite": "https://lite.duckduckgo.com/lite/",
}
_CHALLENGE: Final = (b'id="challenge-form"', b"anomaly-modal", b"anomaly.js")
_DF: Final = {TimeRange.DAY: "d", TimeRange.WEEK: "w", TimeRange.MONTH: "m", TimeRange.YEAR: "y"}
_AD_TARGET: Final = "duckduckgo.com/y.js"
_QUERY_MAX: Final = 499  # DuckDuckGo refuses longer queries


class DuckDuckGo(Driver):
    """DuckDuckGo's HTML (or lite) result page, read with the scraping rules."""

    id: ClassVar[str] = "duckduckgo"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset(TimeRange)
    max_query_chars: ClassVar[int] = _QUERY_MAX
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=3_000,  # U: no published rate; blocking is per address
        max_concurrency=1,
        cacheable=False,  # DuckDuckGo grants no rights to its results
        attribution_required=True,
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = _ENDPOINTS["html"]
    scraping: ClassVar[bool] = True
    default_enabled: ClassVar[bool] = False
    options_model: ClassVar[type[EngineConfig]] = DuckDuckGoConfig

    @property
    def variant(self) -> str:
        return self.typed_options(DuckDuckGoConfig).variant

    @property
    def endpoint(self) -> str:
        return self.settings.endpoint or _ENDPOINTS[self.variant]

    def build_request(self, params: SearchParams) -> EngineRequest:
        form = [("q", _quote_bangs(params.query)), ("b", ""), ("kl", _region(params.region))]
        if params.time_range is not None:
            form.append(("df", _DF[params.time_range]))
        return EngineRequest(
            url=self.endpoint,
            method="POST",
            body=urlencode(form).encode("ascii"),
            headers=(("Content-Type", "application/x-www-form-urlencoded"),),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        if response.status == 202:  # DuckDuckGo's anomaly challenge
            raise EngineFailure(FailureClass.BLOCKED)
        page = read_page(response, self.endpoint, _CHALLENGE)
        if isinstance(page, FollowUp):
            return page
        if self.variant == "lite":
            return _lite_hits(page)
        return _html_hits(page)


def _html_hits(root: Element) -> list[RawHit]:
    results = root.xpath(f"//div[{has_class('result')}]")
    hits: list[RawHit] = []
    for result in results:
        if result.xpath(f"self::*[{has_class('result--ad')}]"):
            continue
        link = first(result, f".//a[{has_class('result__a')}]")
        url = _target(link.get("href", "") if link is not None else "")
        if url is None:
            continue
        snippet = first(result, f".//*[{has_class('result__snippet')}]")
        hits.append(
            RawHit(rank=len(hits) + 1, url=url, title=text_of(link), snippet=text_of(snippet))
        )
    return results_or_marker(root, results, hits, f"//div[{has_class('no-results')}]")


def _lite_hits(root: Element) -> list[RawHit]:
    links = root.xpath(f"//a[{has_class('result-link')}]")
    hits: list[RawHit] = []
    for link in links:
        row = first(link, "ancestor::tr[1]")
        if row is not None and row.xpath(f"self::*[{has_class('result-sponsored')}]"):
            continue
        url = _target(link.get("href", ""))
        if url is None:
            continue
        snippet_row = first(row, "following-sibling::tr[1]") if row is not None else None
        snippet = (
            first(snippet_row, f".//td[{has_class('result-snippet')}]")
            if snippet_row is not None
            else None
        )
        hits.append(
            RawHit(rank=len(hits) + 1, url=url, title=text_of(link), snippet=text_of(snippet))
        )
    marker = "//td[normalize-space(.)='No results.']"
    return results_or_marker(root, links, hits, marker)


def _target(href: str) -> str | None:
    """The result's own URL: `//duckduckgo.com/l/?uddg=<url>` unwrapped; ads and junk None."""
    if href.startswith("//"):
        href = "https:" + href
    parts = urlsplit(href)
    if parts.netloc.endswith("duckduckgo.com") and parts.path == "/l/":
        href = parse_qs(parts.query).get("uddg", [""])[0]
    if _AD_TARGET in href or not href.startswith(("https://", "http://")):
        return None
    return href


def _quote_bangs(query: str) -> str:
    """`!bang` tokens quoted: DuckDuckGo would otherwise redirect to the bang's site."""
    return " ".join(f"'{word}'" if word.startswith("!") else word for word in query.split(" "))


def _region(region: str | None) -> str:
    """DuckDuckGo's `kl` for the operator's region: `us-en` style, `wt-wt` for none."""
    code = (region or "").strip().lower()
    if len(code) == 2 and code.isalpha():
        return f"{code}-{'en' if code in ('us', 'uk', 'au', 'ca', 'ie', 'nz') else code}"
    return "wt-wt"
