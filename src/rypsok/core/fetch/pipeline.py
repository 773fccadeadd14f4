"""The web_fetch pipeline, in the order of REQ-PAGE-001.

    validation and credential check (services) → strict mode → scheme policy →
    egress policy (LIM-F9 on the URL as sent) → robots.txt → request
    (connect-time enforcement) → status (redirects: same host only, each hop
    re-checked from the start) → media type and content coding, both from
    the headers before any body byte is read → body, bounded while streaming
    after decompression → charset → bounded parse and extraction (off the
    event loop, at most LIM-C5 at a time) → truncation to max_chars → response

The media type is judged before the byte limit, not after it as REQ-PAGE-001
lists them: issue 9 asks that a 6 MiB PDF end unsupported_content, and
reading a body only to refuse its type would spend LIM-F3 on nothing.

Every step that refuses ends the call with one error of the contract
(`refusals.py`); no external text reaches an error except a redirect's
location and an unsupported media type, both validated external identifiers
(REQ-SEC-001). The whole call is bounded by LIM-F5; concurrency by LIM-C3 per
process and LIM-C4 per host, shared between callers (`slots.py`); nothing
fetched is kept after the call (REQ-CMP-006).

This module holds the call's flow and its URL policies; each other step is a
module of its own, which this one uses and none of which uses it:
`robots_gate.py` (robots.txt), `eligible.py` (status, media type and coding
from the headers), `extraction.py` (decode, parse and extract in a worker
thread, stopped at LIM-F5 and waited for, REQ-PAGE-008) and `respond.py`
(truncation, continuation and notices).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urljoin

import anyio

from rypsok.core import contract, limits
from rypsok.core.config import Config
from rypsok.core.contract import (
    DeniedReason,
    ErrorKind,
    Notice,
    NoticeCode,
    ToolError,
    UnavailableReason,
)
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.errors import (
    EgressBodyTooLarge,
    EgressDenied,
    EgressError,
    EgressTimeout,
)
from rypsok.core.egress.messages import AgentResponse, CheckedUrl
from rypsok.core.egress.policy import EgressRules
from rypsok.core.fetch.eligible import eligible_kind, wants_body
from rypsok.core.fetch.extraction import Extractor
from rypsok.core.fetch.refusals import (
    deadline_passed,
    denied,
    long_redirect,
    raise_for_status,
    strict_refusal,
)
from rypsok.core.fetch.respond import Page, respond
from rypsok.core.fetch.returned import BoundedReturnedUrls, ReturnedUrls
from rypsok.core.fetch.robots_gate import RobotsGate
from rypsok.core.fetch.slots import CallSlots, FetchSlots

# An http URL's authority ending in the http default port, written explicitly.
_HTTP_DEFAULT_PORT: Final = re.compile(r":0*80$")
_HTTP_AUTHORITY: Final = re.compile(r"^http://([^/?#]*)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FetchRequest:
    url: str
    max_chars: int
    start_char: int
    # Seconds the call spent before the fetch (its limits and strict checks): LIM-F5
    # bounds the whole call, so a slow shared check shortens the fetch, not the call.
    spent_s: float = 0.0


class FetchPipeline:
    """Shared by all calls of the process: robots verdicts and concurrency limits."""

    def __init__(
        self,
        egress: EgressClient,
        config: Config,
        clock: Callable[[], float] = time.monotonic,
        *,
        parse_slots: anyio.CapacityLimiter | None = None,
    ) -> None:
        self._egress = egress
        self._config = config.fetch
        self._rules = EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny)
        self._clock = clock
        self._robots = (
            RobotsGate(
                egress,
                clock,
                connect_timeout_ms=self._config.connect_timeout_ms,
                timeout_ms=self._config.timeout_ms,
            )
            if config.fetch.robots_txt
            else None
        )
        # LIM-C3 and LIM-C4, handed to waiting callers in turn and divided between them.
        self.slots = FetchSlots(config.fetch.fetches_in_flight, self._config.fetches_per_host)
        # LIM-C5: Services passes the one limiter the scraping drivers' parses share too.
        self.extractor = Extractor(
            parse_slots or anyio.CapacityLimiter(config.fetch.parse_tasks),
            clock,
            max_nodes=self._config.max_nodes,
            max_depth=self._config.max_depth,
        )
        # The only result URLs kept beyond a call, and only in strict mode (REQ-PRIV-003).
        self.returned_urls: ReturnedUrls | None = (
            BoundedReturnedUrls() if config.fetch.strict else None
        )

    # -- strict mode (REQ-SEC-021) --------------------------------------------------------

    def remember_returned(self, urls: list[str]) -> None:
        """URLs web_search returned: kept in strict mode only, where they are fetchable."""
        if self.returned_urls is not None:
            self.returned_urls.remember(urls)

    def _check_strict_unjudged(self, url: str) -> None:
        """Strict mode for a URL egress refused: no allow rule admitted its host either."""
        if self.returned_urls is not None and not self.returned_urls.contains(url):
            raise strict_refusal()

    def _check_strict(self, url: str, checked: CheckedUrl) -> None:
        if self.returned_urls is None or self.returned_urls.contains(url):
            return
        if self._rules.allows(checked.host, None):
            return
        raise strict_refusal()

    # -- policy ---------------------------------------------------------------------------

    def _checked(self, url: str) -> CheckedUrl:
        try:
            return self._egress.check_agent_url(url)
        except EgressDenied as refusal:
            raise denied(refusal.reason) from None

    def _scheme_policy(self, url: str, notices: list[Notice]) -> tuple[str, bool]:
        """(the URL to fetch, whether http was upgraded to https) (REQ-FETCH-010)."""
        if self._config.allow_http or _HTTP_AUTHORITY.match(url) is None:
            return url, False
        notices.append(
            Notice(
                code=NoticeCode.HTTP_UPGRADED,
                message="The http URL was fetched as https; url states what was fetched.",
            )
        )
        return https_for(url), True

    # -- one hop --------------------------------------------------------------------------

    async def _get(self, url: CheckedUrl, deadline: float) -> AgentResponse:
        """One request, made while the call holds a LIM-C3 slot and a slot of the host."""
        try:
            remaining_ms = int((deadline - self._clock()) * 1000)
            if remaining_ms <= 0:
                raise deadline_passed()
            return await self._egress.agent_get(
                url,
                max_body_bytes=self._config.max_bytes,
                connect_timeout_ms=min(self._config.connect_timeout_ms, remaining_ms),
                total_timeout_ms=min(self._config.timeout_ms, remaining_ms),
                read_body=wants_body,
            )
        except EgressDenied as refusal:
            raise denied(refusal.reason) from None
        except EgressBodyTooLarge:
            raise ToolError(
                ErrorKind.TOO_LARGE,
                f"The page is larger than {self._config.max_bytes} bytes; use another source.",
                maximum=self._config.max_bytes,
            ) from None
        except EgressTimeout:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "The site did not answer in time; retry later.",
                reason=UnavailableReason.DEADLINE,
                retryable=True,
            ) from None
        except EgressError:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                "The site could not be reached; retry later or use another source.",
                reason=UnavailableReason.UNREACHABLE,
                retryable=True,
            ) from None

    # -- the call -------------------------------------------------------------------------

    async def fetch(self, request: FetchRequest, notices: list[Notice]) -> contract.WebFetchOutput:
        ceiling_s = max(0.0, self._config.ceiling_ms / 1000.0 - request.spent_s)
        deadline = self._clock() + ceiling_s
        with anyio.move_on_after(ceiling_s):
            # Each hop takes a LIM-C3 slot and a slot of its host together and
            # waits holding neither (slots.py). The LIM-C3 slot is then kept until
            # extraction ends, so a body waiting to be parsed still counts:
            # memory stays within LIM-C3 x LIM-F3.
            async with self.slots.for_call() as held:
                page = await self._fetch_page(request, deadline, notices, held)
            return respond(page, request.start_char, request.max_chars, notices)
        raise deadline_passed()

    async def _fetch_page(
        self, request: FetchRequest, deadline: float, notices: list[Notice], held: CallSlots
    ) -> Page:
        target, upgraded = self._scheme_policy(request.url, notices)
        try:
            current = self._checked(target)
        except ToolError:
            # Strict mode is judged first (the order above): a URL web_search never
            # returned is refused as such, whatever the egress policy says of it.
            self._check_strict_unjudged(request.url)
            raise
        self._check_strict(request.url, current)
        for _ in range(self._config.redirects + 1):
            # robots.txt is read within the hop: a request to the host like the page's.
            async with held.hop(current.host):
                if self._robots is not None:
                    await self._robots.check(current, upgraded)
                try:
                    response = await self._get(current, deadline)
                except ToolError as failure:
                    if upgraded and failure.info.kind is ErrorKind.UNAVAILABLE:
                        raise denied("scheme") from None  # the https retry failed (REQ-FETCH-010)
                    raise
            location = response.headers.get("location")
            if 300 <= response.status < 400 and location is not None:
                current = await self._follow(current, location, deadline, notices)
                continue
            raise_for_status(response)
            kind = eligible_kind(response)
            window = slice(request.start_char, request.start_char + request.max_chars)
            extraction = await self.extractor.extract(kind, response, deadline, window)
            return Page(
                response.url, current.host, extraction.extracted, extraction.instruction_like
            )
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            f"The page redirected more than {self._config.redirects} times; use another URL.",
            reason=UnavailableReason.TOO_MANY_REDIRECTS,
            retryable=False,
        )

    async def _follow(
        self, current: CheckedUrl, location: str, deadline: float, notices: list[Notice]
    ) -> CheckedUrl:
        """The next hop of a redirect, or the error that ends the call (REQ-FETCH-006)."""
        if len(location) > limits.URL_MAX_CHARS:
            raise long_redirect()
        try:
            checked = self._egress.check_agent_url(_joined(current.text, location))
            if checked.host != current.host:
                # Named to the caller only if every address it resolves to passes.
                remaining_ms = max(1, int((deadline - self._clock()) * 1000))
                checked = await self._egress.judge_agent_destination(
                    checked, timeout_ms=min(self._config.connect_timeout_ms, remaining_ms)
                )
        except EgressDenied as refusal:
            if refusal.reason == "url_length":
                raise long_redirect() from None
            # The target is withheld: it failed the policy (REQ-SEC-008).
            raise ToolError(
                ErrorKind.DENIED,
                "The page redirected to a destination rypsok may not fetch.",
                reason=DeniedReason.EGRESS,
            ) from None
        if checked.host != current.host and not self._config.follow_cross_host_redirects:
            raise ToolError(
                ErrorKind.REDIRECTED,
                "The page moved to another host (detail.location, external data); fetch it "
                "there if you trust it.",
                location=checked.text,
            )
        notices.append(
            Notice(
                code=NoticeCode.REDIRECT_FOLLOWED,
                message="A redirect was followed; url states the page fetched.",
            )
        )
        return checked


def _joined(base: str, location: str) -> str:
    """The absolute URL a Location names; one urljoin cannot read is refused like bad notation.

    urljoin raises ValueError on an authority it cannot split (`http://[::1`): that is
    the site's malformed header, not rypsok's failure (REQ-FETCH-006).
    """
    try:
        return urljoin(base, location.strip())
    except ValueError:
        raise EgressDenied("url_syntax") from None


def https_for(url: str) -> str:
    """The https URL to try for an http one (REQ-FETCH-010).

    The scheme changes and an explicit :80, http's default port, goes with it,
    so that the https URL uses https's default; any other port is kept.
    """
    authority = _HTTP_AUTHORITY.match(url)
    if authority is None:
        return url
    host = _HTTP_DEFAULT_PORT.sub("", authority.group(1))
    return f"https://{host}{url[authority.end() :]}"
