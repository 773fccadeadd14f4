"""Pipeline internals that no MCP answer shows directly: what is recorded, and when."""

from __future__ import annotations

import pytest
from bench.drivers import bench_drivers
from bench.payloads import bench_body

from rypsok.core.engines.base import (
    Category,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
    RawHit,
)
from rypsok.core.engines.hackernews import HackerNews
from rypsok.core.metrics import Metrics
from rypsok.core.search import aggregate
from rypsok.core.search.aggregate import SearchPipeline, SearchRequest, _Shared
from rypsok.core.search.urls import ResultUrl, UrlRejection, normalize_result_url
from tests.core.search.fake_transport import FakeTransport
from tests.support import config_from


class _Unreachable(FakeTransport):
    """A transport the test never lets the pipeline reach."""

    async def answer(self, request: EngineRequest) -> EngineResponse:
        raise EngineFailure(FailureClass.REQUEST_FAILURE)


@pytest.mark.req("REQ-AGG-003", "REQ-STATUS-001")
async def test_a_timed_out_follower_records_the_time_it_waited() -> None:
    """REQ-AGG-003, REQ-STATUS-001: a follower cut at the deadline waited the whole budget.

    An identical request of the same caller is in flight and never finishes, so
    this call follows it until the deadline (1,000 - 500 ms). The latency it
    records is measured from its own start, not from the deadline (which
    would record about 0 ms and pull engine_status's median down).
    """
    config = config_from(
        {
            "search": {
                "deadline_ms": 1_000,
                "reserve_ms": 500,
                "engine_timeout_ms": 500,
                "connect_timeout_ms": 500,
            }
        }
    )
    metrics = Metrics()
    driver = HackerNews()
    pipeline = SearchPipeline([driver], _Unreachable(), config, metrics)
    request = SearchRequest(
        query="rust", category=Category.NEWS, max_results=5, language=None, time_range=None
    )
    params = pipeline._params(request)
    pipeline._in_flight[("local", driver.id, params)] = _Shared()  # a leader that never ends
    (answer,) = await pipeline._ask_all("local", [driver], params)
    assert answer.failure is FailureClass.TIMEOUT
    (recorded,) = metrics.engine_latency_ms[driver.id]
    assert 450 <= recorded < 1_000
    assert metrics.engine_errors[(driver.id, "timeout")] == 1


@pytest.mark.req("REQ-RANK-002", "REQ-RANK-003", "REQ-CTX-006")
def test_answers_taken_in_as_they_arrive_give_the_candidates_of_taking_them_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-RANK-002: a URL two engines returned is read once; candidates keep preference order.

    The pipeline takes each answer in as it arrives; the candidates come out in
    the order of the answers asked for, whatever the arrival order, and the
    dropped URL is counted once.
    """
    read: list[str] = []

    def counting(raw: str) -> ResultUrl | UrlRejection:
        read.append(raw)
        return normalize_result_url(raw)

    monkeypatch.setattr(aggregate, "normalize_result_url", counting)
    shared, refused = "https://A.example/x?utm_source=a&k=1", "javascript:alert(1)"
    first = aggregate.EngineAnswer("first", (RawHit(1, shared, "one"), RawHit(2, refused, "two")))
    second = aggregate.EngineAnswer("second", (RawHit(1, shared, "again", date="2024-01-02"),))
    intake = aggregate._Intake(drop_flagged=False)
    intake.take(second)  # arrived first
    intake.take(first)
    intake.take(second)  # taken once only
    candidates = intake.candidates([first, second])
    assert [(c.engine, c.rank, c.url, c.key, c.title, c.date) for c in candidates] == [
        ("first", 1, "https://a.example/x?k=1", "https://a.example/x?k=1", "one", None),
        ("second", 1, "https://a.example/x?k=1", "https://a.example/x?k=1", "again", "2024-01-02"),
    ]
    assert intake.tally.counts == {aggregate.NoticeCode.URL_DROPPED: 1}
    assert read == [shared, refused]
    assert intake.urls.of("https://b.example/") == ResultUrl(
        "https://b.example/", "https://b.example/"
    )


class _Recording(FakeTransport):
    """Answers every bench engine at once with its bench answer; records the order of sending."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def answer(self, request: EngineRequest) -> EngineResponse:
        self.sent.append(request.url.rsplit("/", 1)[-1])
        body = bench_body(int(self.sent[-1]))
        return EngineResponse(200, {"content-type": "application/json"}, body)


@pytest.mark.req("REQ-PERF-004", "REQ-AGG-001", "REQ-STATUS-001")
async def test_the_engine_slowest_lately_is_asked_first_and_the_answer_does_not_change() -> None:
    """REQ-PERF-004: requests go out slowest-first by recent median; output stays the same.

    Without a history the order is the preference order; with one, the engine
    whose recent requests took longest is sent first, ties in preference order.
    """
    request = SearchRequest(
        query="tides", category=Category.GENERAL, max_results=10, language=None, time_range=None
    )
    fresh, recorded = _Recording(), _Recording()
    history = Metrics()
    for engine, elapsed_ms in (("bench0", 5.0), ("bench1", 300.0), ("bench2", 50.0)):
        history.engine_finished(engine, elapsed_ms, None)
    outputs = []
    for transport, metrics in ((fresh, Metrics()), (recorded, history)):
        drivers = bench_drivers("http://127.0.0.1:1", 4)
        pipeline = SearchPipeline(drivers, transport, config_from({}), metrics)
        outputs.append((await pipeline.search(request, [])).wire())
    assert fresh.sent == ["0", "1", "2", "3"]
    assert recorded.sent == ["1", "2", "0", "3"]  # bench3 has no history: last, as 0 ms
    assert outputs[0] == outputs[1]
    assert len(outputs[0]["results"]) == 10
