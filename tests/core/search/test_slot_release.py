"""An engine's turn (LIM-C2, LIM-C1) counts a request in flight until its answer is read.

A driver that declares one request and no pause (`releases_turn_on_answer`)
gives its turn back before parsing, so the next call's request goes out while
the first answer is still being parsed; every other driver (a follow-up like
PubMed's, a pause, the default) keeps its turn until the parse ends. The
searches run through `SearchPipeline.search` with a loopback-free fake
transport that counts the requests it holds at once.
"""

from __future__ import annotations

import pathlib
from typing import ClassVar

import anyio
import pytest

from rypsok.core.contract import ErrorKind, ToolError
from rypsok.core.engines import registry
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    FollowUp,
    RawHit,
    SearchParams,
)
from rypsok.core.engines.pubmed import PubMed
from rypsok.core.metrics import Metrics
from rypsok.core.search.aggregate import SearchPipeline, SearchRequest
from tests.core.search.fake_transport import FakeTransport
from tests.support import config_from, wait_until

FIXTURES = pathlib.Path(__file__).parents[2] / "fixtures" / "engines"
ONE_AT_A_TIME = Admission(min_interval_ms=0, max_concurrency=1)  # LIM-C2 = 1, no spacing
JSON = {"content-type": "application/json"}


class _Counting(FakeTransport):
    """A fake provider: answers at once, counts requests held at once and all it got."""

    def __init__(self, answer: dict[str, bytes]) -> None:
        self._answer = answer  # the body by the request's last path segment
        self.received: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0

    async def answer(self, request: EngineRequest) -> EngineResponse:
        name = request.url.rsplit("/", 1)[-1]
        self.received.append(name)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await anyio.sleep(0.001)  # the answer is on the wire for a moment
            return EngineResponse(200, JSON, self._answer[name])
        finally:
            self.in_flight -= 1


class _GatedParse:
    """Parses wait on `gate` (the first search only), so a parse can be held open."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.parsing = 0

    async def hold(self) -> None:
        self.parsing += 1
        if self.parsing == 1:
            await self.gate.wait()


class _OneRequest(Driver):
    """One request, one JSON answer of one hit; its parse can be held open."""

    id: ClassVar[str] = "onerequest"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    admission: ClassVar[Admission] = ONE_AT_A_TIME
    default_endpoint: ClassVar[str] = "http://127.0.0.1:1/one"
    gated: ClassVar[_GatedParse]
    follow_up: ClassVar[bool] = False

    def build_request(self, params: SearchParams) -> EngineRequest:
        return EngineRequest(url=self.endpoint, params=(("q", params.query),))

    async def _parse_answer(
        self, response: EngineResponse, parse_slots: anyio.CapacityLimiter
    ) -> list[RawHit]:
        await self.gated.hold()
        return self.parse(response)

    def parse(self, response: EngineResponse) -> list[RawHit]:
        if self.follow_up:  # breaks its own declaration: a second request
            return FollowUp(EngineRequest(url=self.endpoint))
        return [RawHit(rank=1, url=f"https://example.org/{response.body.decode()}", title="t")]


class _Releasing(_OneRequest):
    releases_turn_on_answer: ClassVar[bool] = True


class _Holding(_OneRequest):
    """The default: the turn is held through the parse."""


class _GatedPubMed(PubMed):
    """The real PubMed exchange (esearch, then esummary) at LIM-C2 = 1, parses held open."""

    admission: ClassVar[Admission] = ONE_AT_A_TIME
    default_endpoint: ClassVar[str] = "http://127.0.0.1:1/eutils/"
    gated: ClassVar[_GatedParse]

    async def _parse_answer(
        self, response: EngineResponse, parse_slots: anyio.CapacityLimiter
    ) -> list[RawHit]:
        await self.gated.hold()
        return await super()._parse_answer(response, parse_slots)


def _request(query: str, category: Category = Category.GENERAL) -> SearchRequest:
    return SearchRequest(
        query=query, category=category, max_results=5, language=None, time_range=None
    )


async def _second_sent_while_first_parses(
    driver: Driver, gated: _GatedParse, transport: _Counting, category: Category
) -> tuple[list[str], int]:
    """Two searches (distinct queries, so not shared); the requests sent while the first parses."""
    pipeline = SearchPipeline([driver], transport, config_from({}), Metrics())
    answers: list[int] = []

    async def search(query: str) -> None:
        response = await pipeline.search(_request(query, category), [])
        answers.append(len(response.wire()["results"]))

    async with anyio.create_task_group() as tg:
        tg.start_soon(search, "first")
        await wait_until(lambda: gated.parsing == 1, 2.0)
        tg.start_soon(search, "second")
        with anyio.move_on_after(0.3):  # long enough for a free turn to be taken and sent
            await wait_until(lambda: len(transport.received) > 1, 1.0)
        sent_while_parsing = list(transport.received)
        gated.gate.set()
    return sent_while_parsing, len(answers)


@pytest.mark.req("REQ-AGG-005", "REQ-AGG-001")
async def test_a_second_request_is_sent_while_the_first_answer_is_parsed() -> None:
    """REQ-AGG-005, REQ-AGG-001: at LIM-C2 = 1 the turn goes back once the answer is read.

    The first search's answer is read and its parse held open; the second
    search's request reaches the fake before that parse ends, and the fake
    never holds more than LIM-C2 = 1 request at once.
    """
    _Releasing.gated = gated = _GatedParse()
    transport = _Counting({"one": b"a"})
    sent, answered = await _second_sent_while_first_parses(
        _Releasing(), gated, transport, Category.GENERAL
    )
    assert sent == ["one", "one"]
    assert answered == 2
    assert transport.most_in_flight == 1


@pytest.mark.req("REQ-AGG-005", "REQ-CMP-002")
async def test_a_driver_that_does_not_declare_it_keeps_its_turn_through_the_parse() -> None:
    """REQ-AGG-005, REQ-CMP-002: by default the turn is held until the parse ends.

    A pause or throttle the parse reads must reach the queue before the next
    start, so the second request waits for the first parse.
    """
    _Holding.gated = gated = _GatedParse()
    transport = _Counting({"one": b"a"})
    sent, answered = await _second_sent_while_first_parses(
        _Holding(), gated, transport, Category.GENERAL
    )
    assert sent == ["one"]
    assert answered == 2
    assert transport.received == ["one", "one"]
    assert transport.most_in_flight == 1


@pytest.mark.req("REQ-AGG-005", "REQ-AGG-002")
async def test_pubmed_keeps_its_turn_for_its_follow_up_and_its_last_parse() -> None:
    """REQ-AGG-005, REQ-AGG-002: esearch and esummary go out in one turn, held to the end.

    While the first search's esearch answer is parsed (held open), the second
    search sends nothing; afterwards each search sends its pair in order.
    """
    _GatedPubMed.gated = gated = _GatedParse()
    transport = _Counting(
        {
            "esearch.fcgi": (FIXTURES / "pubmed" / "search.json").read_bytes(),
            "esummary.fcgi": (FIXTURES / "pubmed" / "ok.json").read_bytes(),
        }
    )
    sent, answered = await _second_sent_while_first_parses(
        _GatedPubMed(), gated, transport, Category.SCIENCE
    )
    assert sent == ["esearch.fcgi"]
    assert answered == 2
    assert transport.received == ["esearch.fcgi", "esummary.fcgi"] * 2
    assert transport.most_in_flight == 1


@pytest.mark.req("REQ-AGG-005", "REQ-AGG-007")
async def test_a_driver_that_declared_one_request_cannot_send_a_second_without_a_turn() -> None:
    """REQ-AGG-005, REQ-AGG-007: a follow-up after the turn went back is never sent.

    The engine fails as a parse failure (a driver bug); the call ends in a fixed error kind.
    """

    class _Breaking(_Releasing):
        follow_up: ClassVar[bool] = True

    _Breaking.gated = gated = _GatedParse()
    gated.gate.set()
    transport = _Counting({"one": b"a"})
    metrics = Metrics()
    pipeline = SearchPipeline([_Breaking()], transport, config_from({}), metrics)
    with pytest.raises(ToolError) as refused:
        await pipeline.search(_request("one"), [])
    assert refused.value.info.kind is ErrorKind.UNAVAILABLE  # its one engine failed
    assert transport.received == ["one"]
    assert metrics.engine_errors[("onerequest", "parse_failure")] == 1


@pytest.mark.req("REQ-AGG-005", "REQ-CMP-002")
def test_only_one_request_drivers_without_a_pause_give_their_turn_back_early() -> None:
    """REQ-AGG-005, REQ-CMP-002: follow-ups, pauses and scraping keep the turn; default holds."""
    assert Driver.releases_turn_on_answer is False
    keeping = {"pubmed", "openalex", "stackexchange", "bing", "duckduckgo"}
    drivers = {driver_id: registry.driver_class(driver_id) for driver_id in registry.known_ids()}
    assert keeping <= drivers.keys()
    assert {d for d in keeping if drivers[d].releases_turn_on_answer} == set()
    assert drivers["searxng"].releases_turn_on_answer is True
