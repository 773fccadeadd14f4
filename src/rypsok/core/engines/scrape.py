"""What every scraping driver shares: reading a human-facing page safely (RFC 015).

Scraping drivers (`Driver.scraping = True`) read a provider's result page,
not an API. The rules of REQ-ENG-013…015, in the order a page meets them:

1. Status. 429 is `rate_limited`; a challenge or CAPTCHA page (the common
   markers, plus the driver's own) is `blocked` whatever its status; then
   503 is `rate_limited` and 403 `blocked`. Nothing is retried or worked
   around.
2. Redirects. A 3xx whose Location stays on the provider's host (scheme and
   host of the engine's endpoint) is followed once, as a `FollowUp` in the
   same turn; one off that host (a challenge host, a consent page) is
   `blocked` and is never requested, and so is one on the host whose
   Location names a challenge (Bing's `/turing/captcha/…`, Startpage's
   `/sp/captcha`): reading the CAPTCHA would only be a step towards solving it.
3. Bounds. The body is bounded by the admission's `max_body_bytes` in egress;
   the document is parsed by web_fetch's bounded parser with the same node and
   depth bounds (LIM-F10, LIM-F11), so a hostile page costs no more than a
   fetched one. Parsing happens off the event loop under LIM-C5 (`exchange`).
4. Results or marker. A page with results gives them in page order; a page
   with the provider's own no-results marker is empty (the marker may sit in
   a result container of its own, as DuckDuckGo's does); anything else (a
   drifted layout, an unannounced empty page) is `parse_failure`, never empty.
   So is a page cut short (no closing `</html>`): it may have lost results
   without a sign.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final
from urllib.parse import parse_qsl, urljoin, urlsplit, urlunsplit

from rypsok.core import limits
from rypsok.core.engines.base import (
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    FollowUp,
    RawHit,
    retry_after_ms,
)
from rypsok.core.engines.common import (
    is_html,
    media_type,
    raise_for_interstitial,
    raise_for_status,
)

Element = Any  # lxml has no type stubs

# The bounds web_fetch applies by default (LIM-F10, LIM-F11).
PAGE_MAX_NODES: Final = limits.PARSED_NODES
PAGE_MAX_DEPTH: Final = limits.NESTING_DEPTH
_REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_END_OF_PAGE: Final = b"</html>"
_TAIL_BYTES: Final = 4_096
# Words of a redirect to a challenge, on the provider's host or off it.
_CHALLENGE_PATHS: Final = ("captcha", "challenge", "/sorry", "anomaly")


def raise_for_page_status(response: EngineResponse, challenge_markers: Iterable[bytes]) -> None:
    """Classify what is not a result page: throttles, refusals and challenges."""
    if response.status == 429:
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    # A challenge is blocked whatever its status, a 503 challenge included.
    raise_for_interstitial(response)
    sample = response.body[:65_536].lower()
    if any(marker in sample for marker in challenge_markers):
        raise EngineFailure(FailureClass.BLOCKED)
    if response.status == 503:  # the provider sheds load: back off as for a 429
        raise EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    if response.status == 403:
        raise EngineFailure(FailureClass.BLOCKED)


def follow_on_host(response: EngineResponse, endpoint: str) -> FollowUp | None:
    """The on-host redirect as a follow-up GET; `blocked` for one off the provider's host."""
    if response.status not in _REDIRECTS:
        return None
    location = response.headers.get("location", "").strip()
    target = urlsplit(urljoin(endpoint, location))
    origin = urlsplit(endpoint)
    if not location or (target.scheme, target.netloc) != (origin.scheme, origin.netloc):
        raise EngineFailure(FailureClass.BLOCKED)
    # The path only: the query carries the caller's words, which may be "captcha".
    if any(word in target.path.lower() for word in _CHALLENGE_PATHS):
        raise EngineFailure(FailureClass.BLOCKED)  # a challenge on the provider's own host
    url = urlunsplit((target.scheme, target.netloc, target.path or "/", "", ""))
    params = tuple(parse_qsl(target.query, keep_blank_values=True))
    return FollowUp(EngineRequest(url=url, params=params))


def read_page(
    response: EngineResponse, endpoint: str, challenge_markers: Iterable[bytes]
) -> Element | FollowUp:
    """A result page's bounded tree, an on-host redirect to follow, or the failure."""
    raise_for_page_status(response, challenge_markers)
    follow_up = follow_on_host(response, endpoint)
    if follow_up is not None:
        return follow_up
    raise_for_status(response)  # 401, 408/504 and the other non-2xx
    kind = media_type(response.headers)
    if kind not in _HTML_TYPES and (kind or not is_html(response)):
        raise EngineFailure(FailureClass.PARSE_FAILURE)  # not the provider's page
    if _END_OF_PAGE not in response.body[-_TAIL_BYTES:].lower():
        # A result page ends with </html>; one cut short may have lost results
        # silently, which is not the provider's answer either.
        raise EngineFailure(FailureClass.PARSE_FAILURE)
    # Imported here: lxml and the decoder cost start-up time, and the scraping
    # engines are off unless an operator turns them on.
    from rypsok.core.fetch.decode import decode_body  # noqa: PLC0415
    from rypsok.core.fetch.parse import Unparseable, parse_bounded  # noqa: PLC0415

    text, _ = decode_body(response.body, response.headers.get("content-type"))
    try:
        return parse_bounded(text, max_nodes=PAGE_MAX_NODES, max_depth=PAGE_MAX_DEPTH).root
    except Unparseable:
        # A page with no element to build a tree from (FZ-3: "</html>" alone): a
        # driver answers with an EngineFailure, never with the parser's own error.
        raise EngineFailure(FailureClass.PARSE_FAILURE) from None


def results_or_marker(
    root: Element, found: list[Element], hits: list[RawHit], marker: str
) -> list[RawHit]:
    """The page's hits; [] under the provider's no-results marker; otherwise parse_failure.

    `found` are the result containers the driver's path matched. A container
    that holds the marker is the marker (DuckDuckGo's "No results." item is a
    `web-result` div of its own); any other container without a hit is a
    result the driver could not read: the page drifted, it is not empty.
    """
    if hits:
        return hits
    markers = root.xpath(marker)
    holders = {id(element) for mark in markers for element in (mark, *mark.iterancestors())}
    if markers and all(id(container) in holders for container in found):
        return []
    raise EngineFailure(FailureClass.PARSE_FAILURE)


def has_class(name: str) -> str:
    """An XPath predicate: the element's class list contains `name`."""
    return f'contains(concat(" ", normalize-space(@class), " "), " {name} ")'


def text_of(element: Element | None) -> str:
    """The element's text content with whitespace runs collapsed; "" for None."""
    if element is None:
        return ""
    return " ".join("".join(element.itertext()).split())


def first(element: Element, path: str) -> Element | None:
    found = element.xpath(path)
    return found[0] if found else None
