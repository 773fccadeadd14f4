"""Driver.exchange: follow-ups within one search, bounded, and scraping parsed off the loop."""

from __future__ import annotations

import threading
from typing import ClassVar

import anyio
import pytest

from rypsok.core.engines.base import (
    MAX_REQUESTS_PER_SEARCH,
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
)


class _Chain(Driver):
    """Every answer names one more request: a chain that never ends by itself."""

    id: ClassVar[str] = "chain"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    admission: ClassVar[Admission] = Admission(min_interval_ms=0)
    default_endpoint: ClassVar[str] = "https://chain.example.test/"
    parsed_on: ClassVar[list[str]] = []

    def build_request(self, params: SearchParams) -> EngineRequest:
        return EngineRequest(url=self.endpoint)

    def parse(self, response: EngineResponse) -> list[RawHit]:
        self.parsed_on.append(threading.current_thread().name)
        if response.body == b"done":
            return [RawHit(rank=1, url="https://a.example.test/", title="a")]
        return FollowUp(EngineRequest(url=self.endpoint))


class _ScrapingChain(_Chain):
    scraping: ClassVar[bool] = True


async def _run(driver: Driver, bodies: list[bytes]) -> tuple[list[RawHit], int]:
    sent: list[EngineRequest] = []

    async def send(request: EngineRequest) -> EngineResponse:
        sent.append(request)
        return EngineResponse(200, {}, bodies[len(sent) - 1])

    hits = await driver.exchange(
        SearchParams(query="q"), send, parse_slots=anyio.CapacityLimiter(1)
    )
    return hits, len(sent)


@pytest.mark.req("REQ-ENG-005", "REQ-ENG-015")
def test_a_follow_up_chain_stops_at_the_request_bound_as_parse_failure() -> None:
    """REQ-ENG-005, REQ-ENG-015: at most MAX_REQUESTS_PER_SEARCH requests, then parse_failure."""
    hits, sent = anyio.run(_run, _Chain(), [b"more", b"done"])
    assert len(hits) == 1 and sent == 2
    with pytest.raises(EngineFailure) as caught:
        anyio.run(_run, _Chain(), [b"more"] * (MAX_REQUESTS_PER_SEARCH + 1))
    assert caught.value.failure_class is FailureClass.PARSE_FAILURE


@pytest.mark.req("REQ-ENG-015")
def test_scraping_drivers_parse_off_the_event_loop() -> None:
    """REQ-ENG-015: a scraping driver's parse runs in a worker thread, not the loop's."""
    _Chain.parsed_on.clear()
    anyio.run(_run, _ScrapingChain(), [b"done"])
    anyio.run(_run, _Chain(), [b"done"])
    loop_thread = threading.current_thread().name
    assert _Chain.parsed_on[0] != loop_thread
    assert _Chain.parsed_on[1] == loop_thread
