"""Pipeline internals that no MCP answer shows directly: what is recorded, and when."""

from __future__ import annotations

import pytest

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
from tests.support import config_from


class _Unreachable:
    """A transport the test never lets the pipeline reach."""

    async def engine_get(
        self,
        request: EngineRequest,
        *,
        explicit_endpoint: bool,
        max_body_bytes: int,
        connect_timeout_ms: int,
        total_timeout_ms: int,
    ) -> EngineResponse:
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


@pytest.mark.req("REQ-RANK-002", "REQ-RANK-003")
def test_a_call_reads_each_raw_url_once_and_answers_as_the_reading_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-RANK-002: a URL two engines returned is read once; the answer is the reading's."""
    read: list[str] = []

    def counting(raw: str) -> ResultUrl | UrlRejection:
        read.append(raw)
        return normalize_result_url(raw)

    monkeypatch.setattr(aggregate, "normalize_result_url", counting)
    shared, refused = "https://A.example/x?utm_source=a&k=1", "javascript:alert(1)"
    urls = aggregate._CallUrls()
    urls.read([RawHit(1, shared, "one"), RawHit(2, refused, "two")])
    urls.read([RawHit(1, shared, "again")])  # a second engine's answer
    assert urls.of(shared) == ResultUrl("https://a.example/x?k=1", "https://a.example/x?k=1")
    assert urls.of(refused) is UrlRejection.NOT_HTTP
    assert urls.of("https://b.example/") == ResultUrl("https://b.example/", "https://b.example/")
    assert read == [shared, refused, "https://b.example/"]
