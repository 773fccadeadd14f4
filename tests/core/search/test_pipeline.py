"""Pipeline internals that no MCP answer shows directly: what is recorded, and when."""

from __future__ import annotations

import pytest

from rypsok.core.engines.base import (
    Category,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    FailureClass,
)
from rypsok.core.engines.hackernews import HackerNews
from rypsok.core.metrics import Metrics
from rypsok.core.search.aggregate import SearchPipeline, SearchRequest, _Shared
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
