"""Bench-only engines: pure build and parse of the format in `bench.payloads`, no spacing.

They stand in for real drivers where a benchmark needs more engines than one
category has (at most two today) or no provider spacing: `Admission(min_interval_ms=0,
max_concurrency=8)`, category general. Engine `i` has id `bench<i>` and its
endpoint at `<base_url>/bench/<i>` on the fake server.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rypsok.core.config import Config
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.policy import EgressRules
from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineFailure,
    EngineRequest,
    EngineResponse,
    EngineSettings,
    FailureClass,
    RawHit,
    SearchParams,
    classify_status,
)
from rypsok.core.engines.transport import EngineEgress
from rypsok.core.metrics import Metrics
from rypsok.core.search.aggregate import SearchPipeline
from rypsok.core.services import Services, user_agent


class BenchDriver(Driver):
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    admission: ClassVar[Admission] = Admission(min_interval_ms=0, max_concurrency=8)
    default_endpoint: ClassVar[str] = "http://127.0.0.1/bench"

    def build_request(self, params: SearchParams) -> EngineRequest:
        return EngineRequest(
            url=self.endpoint, params=(("q", params.query), ("n", str(params.results)))
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        failure = classify_status(response.status)
        if failure is not None:
            raise EngineFailure(failure)
        try:
            document: Any = json.loads(response.body)
            items = document["results"]
            return [
                RawHit(
                    rank=rank,
                    url=item["url"],
                    title=item["title"],
                    snippet=item.get("snippet", ""),
                    date=item.get("date"),
                )
                for rank, item in enumerate(items, start=1)
            ]
        except (ValueError, KeyError, TypeError):
            raise EngineFailure(FailureClass.PARSE_FAILURE) from None


def driver_class(index: int) -> type[BenchDriver]:
    """The distinct class of bench engine `index` (its own id, so its own queue)."""
    return type(f"Bench{index}", (BenchDriver,), {"id": f"bench{index}"})


def bench_path(index: int) -> str:
    return f"/bench/{index}"


def bench_drivers(base_url: str, count: int) -> list[Driver]:
    return [
        driver_class(i)(EngineSettings(endpoint=f"{base_url}{bench_path(i)}")) for i in range(count)
    ]


def bench_routes(
    delays_ms: list[float], *, count: int | None = None, snippet_words: int = 28
) -> dict[str, dict[str, Any]]:
    """Fake-server routes for bench engines 0..n-1 with these fixed latencies."""
    return {
        bench_path(i): {
            "delay_ms": delay,
            "bench": {"index": i, "count": count, "snippet_words": snippet_words},
        }
        for i, delay in enumerate(delays_ms)
    }


def egress_client(config: Config) -> EgressClient:
    """The real egress client, as `Services` builds it (loopback allowed by an explicit rule)."""
    return EgressClient(
        user_agent=user_agent(config.operator.contact),
        rules=EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny),
    )


def bench_pipeline(
    drivers: list[Driver], config: Config
) -> tuple[SearchPipeline, EgressClient, Metrics]:
    egress = egress_client(config)
    metrics = Metrics()
    return SearchPipeline(drivers, EngineEgress(egress), config, metrics), egress, metrics


def services_with(drivers: list[Driver], config: Config) -> Services:
    """`Services` whose search pipeline queries these drivers instead of the registered ones.

    Everything else (invocation limit, validation, credential check, response
    model, call log, metrics) is the production path. The tool list keeps the
    registered engines' categories, which include general.
    """
    services = Services(config)
    services.engines = [(driver, True) for driver in drivers]
    services.search_pipeline = SearchPipeline(
        drivers, EngineEgress(services.egress), config, services.metrics
    )
    return services
