"""Each wait of an engine's part of a call ends at the call's engine deadline (REQ-AGG-002).

The engine's turn and request end there in `SearchPipeline._ask`; the two
other waits, a cache lookup and an identical request of the same caller
already in flight, end there in their own scope. Each way the engine is
reported as a timeout and the call returns by the deadline with the other
engines' results. Through `SearchPipeline.search` with fake transports.
"""

from __future__ import annotations

import time
from typing import ClassVar

import anyio
import pytest

from rypsok.core.cache.entries import CachedHits, EntryScope
from rypsok.core.contract import Notice
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    RawHit,
    SearchParams,
)
from rypsok.core.metrics import Metrics
from rypsok.core.search.aggregate import SearchPipeline, SearchRequest, _Shared
from tests.core.search.fake_transport import FakeTransport
from tests.support import config_from

# deadline_ms - reserve_ms: the engines' share of the call.
SEARCH = {
    "deadline_ms": 1_500,
    "reserve_ms": 1_000,
    "engine_timeout_ms": 500,
    "connect_timeout_ms": 400,
}
ENGINE_DEADLINE_S = 0.5
JSON = {"content-type": "application/json"}


class _Fast(Driver):
    id: ClassVar[str] = "fast"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    admission: ClassVar[Admission] = Admission(min_interval_ms=0, max_concurrency=2)
    default_endpoint: ClassVar[str] = "http://127.0.0.1:1/fast"

    def build_request(self, params: SearchParams) -> EngineRequest:
        return EngineRequest(url=self.endpoint, params=(("q", params.query),))

    def parse(self, response: EngineResponse) -> list[RawHit]:
        return [RawHit(rank=1, url=f"https://example.org/{self.id}", title=self.id)]


class _Other(_Fast):
    id: ClassVar[str] = "other"
    default_endpoint: ClassVar[str] = "http://127.0.0.1:1/other"


class _Instant(FakeTransport):
    """Answers every request at once."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def answer(self, request: EngineRequest) -> EngineResponse:
        self.sent.append(request.url.rsplit("/", 1)[-1])
        return EngineResponse(200, JSON, b"{}")


class _HangingFor:
    """A cache whose lookups for one engine never end (a stalled shared store)."""

    def __init__(self, engine: str) -> None:
        self.engine = engine
        self.stored: list[str] = []

    async def get(self, scope: EntryScope, *, budget_s: float) -> CachedHits | None:
        if scope.engine == self.engine:
            await anyio.sleep_forever()
        return None

    async def put(self, scope: EntryScope, hits: tuple[RawHit, ...], *, budget_s: float) -> None:
        self.stored.append(scope.engine)


def _request() -> SearchRequest:
    return SearchRequest(
        query="q", category=Category.GENERAL, max_results=5, language=None, time_range=None
    )


def _timed_out(notices: list[Notice]) -> list[str]:
    return [n.message for n in notices if "timeout" in n.message]


@pytest.mark.req("REQ-AGG-002", "REQ-AGG-007")
async def test_a_cache_lookup_that_never_ends_is_a_timeout_at_the_engine_deadline() -> None:
    """REQ-AGG-002, REQ-AGG-007: the stalled lookup costs that engine, not the call."""
    cache = _HangingFor("fast")
    transport = _Instant()
    pipeline = SearchPipeline(
        [_Fast(), _Other()], transport, config_from({"search": SEARCH}), Metrics(), cache=cache
    )
    notices: list[Notice] = []
    started = time.monotonic()
    with anyio.fail_after(5):  # a wait left unbounded fails here instead of hanging
        response = await pipeline.search(_request(), notices)
    elapsed = time.monotonic() - started
    assert ENGINE_DEADLINE_S * 0.9 <= elapsed < ENGINE_DEADLINE_S + 0.4
    assert response.outcome.value == "partial"
    assert [r.url for r in response.results or ()] == ["https://example.org/other"]
    assert _timed_out(notices) == [
        "Engine fast did not answer (timeout); results may be incomplete."
    ]
    assert transport.sent == ["other"]  # the provider of the stalled lookup was never asked
    assert cache.stored == ["other"]


@pytest.mark.req("REQ-AGG-002", "REQ-ENG-002")
async def test_waiting_for_a_shared_request_ends_at_this_calls_engine_deadline() -> None:
    """REQ-AGG-002, REQ-ENG-002 (decision 2): a follower does not outwait its own deadline.

    The identical request of the same caller it waits for is held in flight
    past this call's deadline (its leader, here, never answers).
    """
    transport = _Instant()
    metrics = Metrics()
    pipeline = SearchPipeline([_Fast(), _Other()], transport, config_from({"search": SEARCH}),
                              metrics)  # fmt: skip
    request = _request()
    params = pipeline._params(request)  # the key the call will look up
    pipeline._in_flight[(request.caller, "fast", params)] = _Shared()  # a leader, never done
    notices: list[Notice] = []
    started = time.monotonic()
    with anyio.fail_after(5):
        response = await pipeline.search(request, notices)
    elapsed = time.monotonic() - started
    assert ENGINE_DEADLINE_S * 0.9 <= elapsed < ENGINE_DEADLINE_S + 0.4
    assert [r.url for r in response.results or ()] == ["https://example.org/other"]
    assert _timed_out(notices) == [
        "Engine fast did not answer (timeout); results may be incomplete."
    ]
    assert transport.sent == ["other"]
    assert metrics.engine_errors[("fast", "timeout")] == 1


class _Hanging(FakeTransport):
    """Never answers; records the task each request ran in and whether it was cancelled."""

    def __init__(self) -> None:
        self.tasks: list[int] = []
        self.cancelled = 0
        self.asked = anyio.Event()

    async def answer(self, request: EngineRequest) -> EngineResponse:
        self.tasks.append(anyio.get_current_task().id)
        self.asked.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


@pytest.mark.req("REQ-AGG-006", "REQ-AGG-002")
async def test_one_engine_is_asked_in_the_calls_task_and_cancelled_with_it() -> None:
    """REQ-AGG-006: cancelling a one-engine call cancels its request; no verdict is kept.

    With one engine there is no task per engine: the request runs in the
    call's own task (no task to start, no hop back when the answer is in).
    """
    transport = _Hanging()
    pipeline = SearchPipeline([_Fast()], transport, config_from({"search": SEARCH}), Metrics())
    caller_task: list[int] = []

    async def call() -> None:
        caller_task.append(anyio.get_current_task().id)
        await pipeline.search(_request(), [])

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(call)
            await transport.asked.wait()
            group.cancel_scope.cancel()
    assert transport.tasks == caller_task
    assert transport.cancelled == 1
    breaker = pipeline.breakers["fast"]
    assert breaker.state.value == "closed" and breaker.admit()  # the cancel is no failure
