"""Issue 12: what the result cache costs and saves, and the spacing two instances keep.

Part 1, cached against live. Five bench engines answer after 20 ms from the
fake server (its own process). Through the SDK's in-memory client, the wall
time of one web_search call:

* live, cache off: the baseline;
* memory miss / memory hit: `[cache] enabled`, in-process LRU;
* redis miss / redis hit: `backend = "redis"` on a local redis-server (Unix
  socket), five sealed entries read or written per call.

A miss is a live call plus the lookups and stores; a hit sends no request.

Part 2, two instances on one Redis. Two `Services` (each its own Redis
connection and queues, as two processes would have) serve concurrent searches
against one bench engine whose record asks for 500 ms between requests; the
fake server's arrival times give the smallest and the median gap between two
requests, with the shared reservation and without it (memory backend).

Needs `redis-server` on PATH (Debian: apt-get install redis-server).
"""

from __future__ import annotations

import contextlib
import itertools
import pathlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import anyio
from mcp import Client

from bench.common import bench_config, emit, median, summary, table
from bench.drivers import BenchDriver, bench_drivers, bench_routes
from bench.fakeserver import FakeServer
from rypsok.core.engines.base import Admission, Driver, EngineSettings
from rypsok.core.engines.transport import EngineEgress
from rypsok.core.search.aggregate import SearchPipeline
from rypsok.core.services import Services
from rypsok.mcp.server import build_server

ENGINES, DELAY_MS = 5, 20.0
SPACED_MS = 500
HMAC = "bench-hmac-key-0123456789abcdef"


class SpacedBench(BenchDriver):
    """A bench engine whose record asks for SPACED_MS between request starts."""

    id: ClassVar[str] = "spaced"
    admission: ClassVar[Admission] = Admission(min_interval_ms=SPACED_MS, max_concurrency=8)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("bench cache needs redis-server on PATH (apt-get install redis-server)")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="rkb"))
    sock = directory / "redis.sock"
    process = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", str(sock), "--save", "", "--appendonly", "no",
         "--dir", str(directory)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            if time.monotonic() > deadline:
                raise SystemExit("redis-server did not start")
            time.sleep(0.02)
        (directory / "url").write_text(f"unix://{sock}", encoding="utf-8")
        (directory / "hmac").write_text(HMAC, encoding="utf-8")
        yield str(directory)
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(directory, ignore_errors=True)


def redis_cache(directory: str, **extra: Any) -> dict[str, Any]:
    return {"backend": "redis", "redis_url": {"file": f"{directory}/url"},
            "hmac_key": {"file": f"{directory}/hmac"}, **extra}  # fmt: skip


def services_for(drivers: list[Driver], **sections: Any) -> Services:
    """Services on these drivers, with the cache and queues its configuration builds."""
    config = bench_config(None, **sections)
    services = Services(config)
    services.engines = [(driver, True) for driver in drivers]
    services.search_pipeline = SearchPipeline(
        drivers, EngineEgress(services.egress), config, services.metrics,
        cache=services.shared.cache, queue_factory=services.shared.queue_factory,
    )  # fmt: skip
    return services


async def timed_calls(services: Services, queries: list[str]) -> list[float]:
    times = []
    async with Client(build_server(services)) as client:
        for query in queries:
            started = time.perf_counter()
            result = await client.call_tool("web_search", {"query": query})
            times.append((time.perf_counter() - started) * 1000.0)
            assert result.structured_content is not None
            assert result.structured_content["outcome"] == "ok", result.structured_content
    return times


async def cached_vs_live(server: FakeServer, redis_dir: str, calls: int) -> dict[str, Any]:
    queries = [f"cache bench {n}" for n in range(calls)]
    figures: dict[str, Any] = {}
    drivers = bench_drivers(server.base_url, ENGINES)
    for label, cache in (
        ("live, cache off", {}),
        ("memory", {"enabled": True}),
        ("redis", redis_cache(redis_dir, enabled=True)),
    ):
        services = services_for(drivers, cache=cache)
        await timed_calls(services, ["warm up"])  # connections, scripts, first imports
        if cache:
            figures[f"{label} miss"] = summary(await timed_calls(services, queries))
            figures[f"{label} hit"] = summary(await timed_calls(services, queries))
        else:
            figures[label] = summary(await timed_calls(services, queries))
        await services.aclose()
    rows = [[label, f["n"], f["p50"], f["p95"], f["max"]] for label, f in figures.items()]
    emit(table(f"web_search wall time, ms ({ENGINES} engines answering after {DELAY_MS:.0f} ms)",
               ["call", "n", "p50", "p95", "max"], rows))  # fmt: skip
    return figures


async def two_instances(server: FakeServer, redis_dir: str | None, searches: int) -> list[float]:
    """Arrival gaps at the spaced engine for `searches` split over two instances."""
    server.reset()
    endpoint = f"{server.base_url}/bench/0"
    cache = redis_cache(redis_dir) if redis_dir else {}
    instances = [services_for([SpacedBench(EngineSettings(endpoint=endpoint))], cache=cache)
                 for _ in range(2)]  # fmt: skip

    async def search(services: Services, n: int) -> None:
        async with Client(build_server(services)) as client:
            await client.call_tool("web_search", {"query": f"spacing {n}"})

    async with anyio.create_task_group() as group:
        for n, services in zip(range(searches), itertools.cycle(instances), strict=False):
            group.start_soon(search, services, n)
    for services in instances:
        await services.aclose()
    arrivals = sorted(record[2] for record in server.stats().records)
    return [(b - a) * 1000.0 for a, b in itertools.pairwise(arrivals)]


async def run(quick: bool) -> dict[str, Any]:
    calls = 20 if quick else 200
    searches = 6 if quick else 10
    routes = bench_routes([DELAY_MS] * ENGINES)
    results: dict[str, Any] = {}
    with redis_server() as redis_dir, FakeServer(routes) as server:
        results["cached_vs_live"] = await cached_vs_live(server, redis_dir, calls)
        rows = []
        for label, directory in (("shared (redis)", redis_dir), ("not shared (memory)", None)):
            found = await two_instances(server, directory, searches)
            results[label] = {"gaps_ms": found}
            rows.append([label, len(found) + 1, min(found, default=float("nan")),
                         median(found)])  # fmt: skip
        emit(table(f"two instances, one engine spaced {SPACED_MS} ms: gaps between arrivals",
                   ["state", "requests", "min ms", "median ms"], rows))  # fmt: skip
    return results
