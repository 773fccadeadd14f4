"""The pipeline's robots.txt step (REQ-CMP-005): read, remember reachability, refuse.

`robots.py` parses files and caches verdicts per origin; this module reads
`<origin>/robots.txt` through the egress client (each redirect hop checked)
and turns a disallow into the error the call ends with. An origin whose
robots.txt could not be reached is remembered beside the verdicts: when the
egress policy refused it, the page is refused as egress; for an http URL
upgraded to https, unreachable means the site has no https (REQ-FETCH-010).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Final
from urllib.parse import urljoin

from rypsok.core import limits
from rypsok.core.contract import DeniedReason, ErrorKind, ToolError
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.errors import EgressDenied, EgressError
from rypsok.core.egress.messages import CheckedUrl
from rypsok.core.fetch.refusals import denied
from rypsok.core.fetch.robots import RobotsAnswer, RobotsCache, origin_and_path

ROBOTS_REDIRECTS: Final = 5  # RFC 9309 §2.3.1.2
# Origins whose robots.txt could not be reached, remembered with the verdicts.
UNREACHABLE_ORIGINS_KEPT: Final = 10_000


class RobotsGate:
    """robots.txt verdicts for the fetches of the process, shared by all calls."""

    def __init__(
        self,
        egress: EgressClient,
        clock: Callable[[], float],
        *,
        connect_timeout_ms: int,
        timeout_ms: int,
    ) -> None:
        self._egress = egress
        self._connect_timeout_ms = connect_timeout_ms
        self._timeout_ms = timeout_ms
        self._cache = RobotsCache(self._read, clock=clock)
        # Origins whose robots.txt could not be reached at all (True: the egress
        # policy refused the destination).
        self._unreachable: collections.OrderedDict[str, bool] = collections.OrderedDict()

    async def check(self, url: CheckedUrl, upgraded: bool) -> None:
        """Nothing when robots.txt allows the URL; otherwise the error that ends the call."""
        if await self._cache.allowed(url.text):
            return
        origin = origin_and_path(url.text)[0]
        if self._unreachable.get(origin):
            raise denied("egress")  # robots.txt was refused by the egress policy
        if upgraded and origin in self._unreachable:
            raise denied("scheme")  # the https retry could not reach the site
        raise ToolError(
            ErrorKind.DENIED,
            "The site's robots.txt does not allow rypsok to fetch this page; use another source.",
            reason=DeniedReason.ROBOTS_TXT,
        )

    async def _read(self, origin: str) -> RobotsAnswer:
        """GET <origin>/robots.txt, following up to five redirects, each hop checked."""
        url = f"{origin}/robots.txt"
        for _ in range(ROBOTS_REDIRECTS + 1):
            try:
                answer = await self._egress.agent_get(
                    self._egress.check_agent_url(url),
                    max_body_bytes=limits.ROBOTS_MAX_BYTES,
                    connect_timeout_ms=self._connect_timeout_ms,
                    total_timeout_ms=self._timeout_ms,
                    truncate=True,
                )
            except EgressDenied as refusal:
                # The destination itself is refused: the page would be too. A
                # redirect to a URL past LIM-F9 is merely unreachable.
                refused = refusal.reason != "url_length"
                self._note_reachability(origin, reachable=False, refused=refused)
                return RobotsAnswer(status=None, body=b"")
            except EgressError:
                self._note_reachability(origin, reachable=False)
                return RobotsAnswer(status=None, body=b"")
            self._note_reachability(origin, reachable=True)
            location = answer.headers.get("location")
            if not 300 <= answer.status < 400 or location is None:
                return RobotsAnswer(status=answer.status, body=answer.body)
            url = urljoin(url, location)
        return RobotsAnswer(status=None, body=b"")  # redirects exhausted: unreachable

    def _note_reachability(self, origin: str, *, reachable: bool, refused: bool = False) -> None:
        self._unreachable.pop(origin, None)
        if not reachable:
            self._unreachable[origin] = refused
            while len(self._unreachable) > UNREACHABLE_ORIGINS_KEPT:
                self._unreachable.popitem(last=False)
