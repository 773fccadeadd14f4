"""Bing: web results read from its result page (a scraping engine, opt-in only).

Provider: Microsoft Bing, `GET https://www.bing.com/search?q=`. Microsoft
retired the Bing Web Search API in 2025 and offers no syndication interface,
so this engine reads the human-facing page; the operator who enables it bears
Microsoft's terms. Admission record: docs/engines/bing.md; rules:
docs/rfc-015-scraping.md.

Configuration (`[engines.bing]`), only with `[scraping] enabled = true`:

    enabled    must be set true: a scraping engine is never on by default.
    endpoint   replaces https://www.bing.com/search.

Request. `q`, `count` = the result count (at most 50, U), `adlt` = off |
moderate | strict, `cc` = the operator's region when it is a two-letter
code. No language: Bing's market selection wants a browser's
Accept-Language, which a scraping driver never sends. No time range: Bing's
page filters it with script only.

Page. Results `ol#b_results > li.b_algo`; title and link `h2/a`; the link is
unwrapped from Bing's click-tracking `https://www.bing.com/ck/a?…&u=a1<base64url>`
here, in the driver; snippet the first `p` of the result (its icon span
removed). No-results marker `li.b_no`. Bing sometimes answers a client it
dislikes with a 200 page without results or marker: that is parse_failure,
never an empty answer.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import ClassVar, Final
from urllib.parse import parse_qs, urlsplit

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    FollowUp,
    RawHit,
    SafeSearch,
    SearchParams,
)
from rypsok.core.engines.scrape import (
    Element,
    first,
    has_class,
    read_page,
    results_or_marker,
    text_of,
)
from rypsok.core.trees import remove_keeping_tail

_CHALLENGE: Final = (b"b_captcha", b"/challenge/verify", b"turing/captcha")
_ADULT: Final = {
    SafeSearch.OFF: "off",
    SafeSearch.MODERATE: "moderate",
    SafeSearch.STRICT: "strict",
}
_COUNTRY: Final = re.compile(r"^[A-Za-z]{2}$")
_MAX_URL_CHARS: Final = 4_096


class Bing(Driver):
    """Bing's web result page, read with the scraping rules."""

    id: ClassVar[str] = "bing"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=3_000,  # U: no published rate; Bing degrades silently when pushed
        max_concurrency=1,
        cacheable=False,
        attribution_required=True,
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://www.bing.com/search"
    scraping: ClassVar[bool] = True
    default_enabled: ClassVar[bool] = False
    _max_per_request: ClassVar[int] = 50

    def build_request(self, params: SearchParams) -> EngineRequest:
        query = [
            ("q", params.query),
            ("count", str(min(params.results, self._max_per_request))),
            ("adlt", _ADULT[params.safe_search]),
        ]
        if params.region is not None and _COUNTRY.match(params.region):
            query.append(("cc", params.region.upper()))
        return EngineRequest(url=self.endpoint, params=tuple(query))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        page = read_page(response, self.endpoint, _CHALLENGE)
        if isinstance(page, FollowUp):
            return page
        results = page.xpath(f"//ol[@id='b_results']/li[{has_class('b_algo')}]")
        hits: list[RawHit] = []
        for result in results:
            hit = _hit(len(hits) + 1, result)
            if hit is not None:
                hits.append(hit)
        return results_or_marker(page, results, hits, f"//li[{has_class('b_no')}]")


def _hit(rank: int, result: Element) -> RawHit | None:
    link = first(result, ".//h2/a")
    if link is None:
        return None
    url = unwrap(link.get("href", ""))
    if url is None:
        return None
    paragraph = first(result, ".//p")
    if paragraph is not None:
        for icon in paragraph.xpath(f".//span[{has_class('algoSlug_icon')}]"):
            remove_keeping_tail(icon)
    return RawHit(rank=rank, url=url, title=text_of(link), snippet=text_of(paragraph))


def unwrap(href: str) -> str | None:
    """The target of a Bing link: `ck/a?…&u=a1<base64url>` decoded, a plain link as it is."""
    parts = urlsplit(href)
    if parts.netloc.endswith("bing.com") and parts.path == "/ck/a":
        encoded = parse_qs(parts.query).get("u", [""])[0]
        if not encoded.startswith("a1"):
            return None
        payload = encoded[2:]
        try:
            href = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
    if len(href) > _MAX_URL_CHARS or not href.startswith(("https://", "http://")):
        return None
    return href
