"""Calls per second in one process: N concurrent callers for a fixed duration.

Every engine answers after 5 ms from the fake server (its own process).
Each caller loops: one web_search with a query of its own, then the next.
Counted: completed calls (ok, partial or empty) per second, the latency of
each call, refusals, and the CPU seconds of the rypsok process and of the
fake server (the two share the machine's CPUs: when the fake server is busy
its share is not available to rypsok).

Scenarios:

* bench: 5 bench engines with no spacing, through `SearchPipeline.search`,
  `Services.call`, the SDK's in-memory client and stdio (`bench.stdio_serve`,
  a child process speaking MCP over pipes). There is no HTTP transport yet.
* real: the registered drivers on recorded answers (tests/fixtures), through
  the in-memory client: general (wikipedia, wikidata) and code (github,
  hackernews). Their admission records space requests (LIM-C9), which bounds
  the throughput; the requests the fake server saw and the queue backlog
  left behind show it.

LIM-C6 is set to its ceiling, 6,000 calls per minute, for every scenario; a
fresh `Services` per scenario keeps the sliding window from carrying over.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client

from bench.common import (
    ENGINE_PATHS,
    bench_config,
    emit,
    fixture_routes,
    percentile,
    table,
)
from bench.drivers import bench_drivers, bench_pipeline, bench_routes, services_with
from bench.fakeserver import REPO, FakeServer, Stats
from bench.overhead import _request
from bench.stdio_client import StdioPeer
from rypsok.core.config import parse_config
from rypsok.core.engines import registry
from rypsok.core.engines.base import Category, Driver
from rypsok.core.engines.queue import SPACING_MARGIN_MS
from rypsok.core.services import Services
from rypsok.mcp.server import build_server

LATENCY_MS = 5.0
ENGINES = 5
THROUGHPUT_TARGET = 200.0  # calls/s in one process at 5 engines (issue 14)
ANSWERED = ("ok", "partial", "empty")

Call = Callable[[str], Awaitable[str]]


@dataclass
class Run:
    label: str
    callers: int
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    timings: list[tuple[str, float, float]] = field(default_factory=list)
    cpu_s: float = 0.0
    server_cpu_s: float = 0.0
    after_ms: list[float] = field(default_factory=list)
    notes: str = ""
    target: float | None = None  # calls/s: the target (issue 14: 200 in one process)
    bound: float | None = None  # calls/s the providers' spacing allows (`spacing_markdown`)

    @property
    def answered(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k in ANSWERED)

    def row(self) -> list[object]:
        per_call = self.cpu_s * 1000 / max(1, len(self.latencies_ms))
        rate = self.answered / self.seconds if self.seconds else 0.0
        return [
            self.label,
            self.callers,
            self.answered,
            rate,
            _target(self.target, self.bound),
            _verdict(rate, self.target, self.bound),
            percentile(self.latencies_ms, 50),
            percentile(self.latencies_ms, 99),
            per_call,
            self.cpu_s / self.seconds * 100 if self.seconds else 0.0,
            self.server_cpu_s / self.seconds * 100 if self.seconds else 0.0,
            percentile(self.after_ms, 50) if self.after_ms else "-",
            percentile(self.after_ms, 99) if self.after_ms else "-",
            ",".join(f"{k}:{v}" for k, v in sorted(self.outcomes.items())),
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "callers": self.callers,
            "seconds": self.seconds,
            "answered": self.answered,
            "calls_per_s": self.answered / self.seconds if self.seconds else 0.0,
            "latency_ms_p50": percentile(self.latencies_ms, 50),
            "latency_ms_p99": percentile(self.latencies_ms, 99),
            "cpu_ms_per_call": self.cpu_s * 1000 / max(1, len(self.latencies_ms)),
            "server_cpu_percent": self.server_cpu_s / self.seconds * 100 if self.seconds else 0,
            "after_ms_p50": percentile(self.after_ms, 50) if self.after_ms else None,
            "after_ms_p99": percentile(self.after_ms, 99) if self.after_ms else None,
            "outcomes": self.outcomes,
            "notes": self.notes,
        }


def _target(target: float | None, bound: float | None) -> str:
    if target is not None:
        return f">= {target:.0f}"
    return "-" if bound is None else f"bound {bound:.2f}"


def _verdict(rate: float, target: float | None, bound: float | None) -> str:
    if target is not None:
        return "met" if rate >= target else "missed"
    if bound is None:
        return "-"
    # Calls beyond the bound go without the slowest-spaced engine: the run then shows partial.
    return "at the bound" if rate >= 0.9 * bound else "below the bound"


HEADER = ["path", "N", "calls", "calls/s", "target", "verdict", "p50 ms", "p99 ms", "cpu ms/call",
          "rypsok cpu%", "fake cpu%", "after p50", "after p99", "outcomes"]  # fmt: skip


async def _drive(
    call: Call,
    run: Run,
    duration_s: float,
    warmup_s: float,
    cpu: Callable[[], float] = time.process_time,
) -> Run:
    """`run.callers` loops calling through warm-up and the window; counts calls ending in it.

    Callers start no call after the window; calls still running then finish
    but are not counted (their end is outside the window).
    """

    async def caller(k: int) -> None:
        i = 0
        while time.monotonic() < stop:
            tag = f"{run.label} {k} {i}"
            i += 1
            start = time.monotonic()
            outcome = await call(tag)
            end = time.monotonic()
            if measured_from <= end <= stop:
                run.latencies_ms.append((end - start) * 1000)
                run.outcomes[outcome] = run.outcomes.get(outcome, 0) + 1
                run.timings.append((tag, start, end))

    begin = time.monotonic()
    measured_from = begin + warmup_s
    stop = measured_from + duration_s
    async with anyio.create_task_group() as group:
        for k in range(run.callers):
            group.start_soon(caller, k)
        await anyio.sleep(max(0.0, measured_from - time.monotonic()))
        cpu0 = cpu()
        await anyio.sleep(max(0.0, stop - time.monotonic()))
        run.cpu_s = cpu() - cpu0
    run.seconds = duration_s
    return run


def _after(run: Run, stats: Stats, engines: int) -> None:
    """Per counted call: last answer written at the server -> call end (the post-engine work)."""
    by_tag = stats.by_tag()
    for tag, _, end in run.timings:
        records = by_tag.get(tag, [])
        if len(records) == engines:
            run.after_ms.append((end - max(r[3] for r in records)) * 1000)


async def _bench_runs(callers: int, duration_s: float, warmup_s: float) -> list[Run]:
    runs: list[Run] = []
    config = bench_config()
    with FakeServer(bench_routes([LATENCY_MS] * ENGINES)) as server:

        async def measured(label: str, n: int, call: Call) -> None:
            server.reset()
            cpu0 = server.stats().cpu_s
            target = THROUGHPUT_TARGET if n > 1 else None
            run = await _drive(call, Run(label, n, target=target), duration_s, warmup_s)
            stats = server.stats()
            run.server_cpu_s = stats.cpu_s - cpu0
            run.server_cpu_s *= duration_s / (duration_s + warmup_s)  # whole run -> window
            _after(run, stats, ENGINES)
            runs.append(run)

        pipeline, egress, _ = bench_pipeline(bench_drivers(server.base_url, ENGINES), config)
        try:

            async def pipeline_call(tag: str) -> str:
                output = await pipeline.search(_request(tag), [])
                return str(output.outcome.value)

            await measured("pipeline", callers, pipeline_call)
        finally:
            await egress.aclose()

        services = services_with(bench_drivers(server.base_url, ENGINES), config)
        try:

            async def service_call(tag: str) -> str:
                answer = await services.call("web_search", {"query": tag})
                return _outcome(answer.payload)

            await measured("Services", callers, service_call)
        finally:
            await services.aclose()

        for n in (1, callers):
            services = services_with(bench_drivers(server.base_url, ENGINES), config)
            try:
                async with Client(build_server(services)) as client:

                    async def mcp_call(tag: str, client: Client = client) -> str:
                        result = await client.call_tool("web_search", {"query": tag})
                        return _outcome(result.structured_content or {})

                    await measured("MCP mem", n, mcp_call)
            finally:
                await services.aclose()

        runs.append(await _stdio_run(server, callers, duration_s, warmup_s))
    return runs


def _outcome(payload: dict[str, Any]) -> str:
    outcome = str(payload.get("outcome", "unknown"))
    if outcome == "error":
        error = payload.get("error") or {}
        return str((error.get("detail") or {}).get("reason") or error.get("kind") or "error")
    return outcome


async def _stdio_run(server: FakeServer, callers: int, duration_s: float, warmup_s: float) -> Run:
    peer = await StdioPeer.start(
        [sys.executable, "-m", "bench.stdio_serve", server.base_url, str(ENGINES)], cwd=str(REPO)
    )
    try:
        await peer.initialize()
        server.reset()
        cpu0 = server.stats().cpu_s
        run = await _drive(
            peer.search,
            Run("stdio", callers, target=THROUGHPUT_TARGET),
            duration_s,
            warmup_s,
            peer.cpu_seconds,
        )
        stats = server.stats()
        run.server_cpu_s = (stats.cpu_s - cpu0) * duration_s / (duration_s + warmup_s)
        _after(run, stats, ENGINES)
        run.notes = "cpu = the stdio server process (child), not the client"
        return run
    finally:
        await peer.close()


def _backlogs(pipeline: Any, engines: list[Any]) -> dict[str, float | str]:
    """How far in the future each engine's next free start is (private state, read only)."""
    now = time.monotonic()
    queues = getattr(pipeline, "_queues", {})
    backlogs: dict[str, float | str] = {}
    for driver in engines:
        next_start = getattr(queues.get(driver.id), "_next_start", None)
        backlogs[driver.id] = max(0.0, next_start - now) if next_start is not None else "?"
    return backlogs


def _arrival_rate(stats: Stats, path: str) -> tuple[int, float, float | str]:
    """Requests to a path, their rate (req/s between first and last) and the smallest gap (ms)."""
    arrivals = sorted(r[2] for r in stats.records if r[0] == path)
    if len(arrivals) < 2:
        return len(arrivals), 0.0, "-"
    gaps = [b - a for a, b in itertools.pairwise(arrivals)]
    return len(arrivals), (len(arrivals) - 1) / (arrivals[-1] - arrivals[0]), min(gaps) * 1000


async def _real_runs(
    callers: int, duration_s: float, warmup_s: float
) -> tuple[list[Run], list[list[object]]]:
    runs: list[Run] = []
    spacing_rows: list[list[object]] = []
    with FakeServer(fixture_routes(REPO, LATENCY_MS)) as server:
        for category in (Category.GENERAL, Category.CODE):
            services = Services(bench_config(server.base_url))
            pipeline = services.search_pipeline
            engines = [
                d for d in pipeline.engines if category in d.categories and d.id in ENGINE_PATHS
            ]
            label = f"real {category.value}"
            try:
                async with Client(build_server(services)) as client:

                    async def call(
                        tag: str, client: Client = client, c: str = category.value
                    ) -> str:
                        result = await client.call_tool("web_search", {"query": tag, "category": c})
                        return _outcome(result.structured_content or {})

                    server.reset()
                    cpu0 = server.stats().cpu_s
                    bound = category_bound(engines)
                    run = await _drive(call, Run(label, callers, bound=bound), duration_s, warmup_s)
                    stats = server.stats()
                    run.server_cpu_s = (stats.cpu_s - cpu0) * duration_s / (duration_s + warmup_s)
                    runs.append(run)
                    backlogs = _backlogs(pipeline, engines)
                    # One more call once the burst is over: which engines does it reach?
                    server.reset()
                    probe_started = time.monotonic()
                    probe_outcome = await call(f"{label} probe")
                    probe_ms = (time.monotonic() - probe_started) * 1000
                    probed = server.stats()
            finally:
                await services.aclose()
            for driver in engines:
                path = ENGINE_PATHS[driver.id]
                sent, rate, gap = _arrival_rate(stats, path)
                spacing_rows.append([
                    label, driver.id, driver.admission.min_interval_ms,
                    driver.admission.max_concurrency, sent, rate, gap, backlogs[driver.id],
                    "yes" if probed.count(path) else "no", probe_ms, probe_outcome,
                ])  # fmt: skip
    return runs, spacing_rows


async def run(quick: bool = False) -> dict[str, Any]:
    callers = 16
    duration_s, warmup_s = (1.5, 0.3) if quick else (2.5, 0.5)
    bench = await _bench_runs(callers, duration_s, warmup_s)
    emit(
        table(
            f"Throughput, {ENGINES} bench engines (no spacing) at {LATENCY_MS:.0f} ms, "
            f"{duration_s:g} s per row (after = last engine answer written -> call end)",
            HEADER,
            [r.row() for r in bench],
        )
    )
    real, spacing = await _real_runs(callers, duration_s, warmup_s)
    emit()
    emit(
        table(
            "Throughput, registered drivers on recorded answers, in-memory MCP client",
            HEADER,
            [r.row() for r in real],
        )
    )
    emit()
    emit(
        table(
            "Provider spacing during those runs (requests the fake server saw; backlog = how "
            "far in the future the engine's next free start was left; next call sent = whether "
            "one more call right after the run reached the engine)",
            [
                "run",
                "engine",
                "record ms",
                "conc",
                "requests",
                "req/s",
                "min gap ms",
                "backlog s",
                "next call sent",
                "next call ms",
                "next call outcome",
            ],
            spacing,
        )
    )
    emit()
    emit("The bound the providers' spacing sets, from the admission records (docs/performance.md):")
    emit(spacing_markdown())
    return {
        "bench": [r.as_dict() for r in bench],
        "real": [r.as_dict() for r in real],
        "spacing": spacing,
    }


# -- the bound that provider spacing sets (computed from the admission records) -------------

CACHE_HIT_RATIOS = (0.5, 0.9)
SPACING_BEGIN = "<!-- spacing table: generated by `python -m bench.throughput --spacing` -->"
SPACING_END = "<!-- end of the generated spacing table -->"


def _requests_per_s(interval_ms: int) -> float | None:
    """Request starts per second one engine's queue allows: its spacing plus the margin."""
    return 1000 / (interval_ms + SPACING_MARGIN_MS) if interval_ms else None


def _rate(value: float | None) -> str:
    return "no spacing" if value is None else f"{value:.2f}"


def category_bound(engines: list[Driver]) -> float | None:
    """Calls/s at which every one of these engines is asked: the slowest-spaced one's rate."""
    rates = [_requests_per_s(d.admission.min_interval_ms) for d in engines]
    spaced = [r for r in rates if r is not None]
    return min(spaced) if spaced else None


def _default_engines(category: Category) -> list[Driver]:
    """What a search of `category` asks with the default configuration (first LIM-S8)."""
    config = parse_config({"schema_version": 1}, known_engines=registry.known_ids())
    serving = [
        driver
        for driver, enabled in registry.configured_engines(config)
        if enabled and driver.active and category in driver.categories
    ]
    return serving[: config.search.max_engines]


def _by_default(driver: Driver, enabled: bool) -> str:
    if driver.scraping:
        return "no (scraping)"
    if not enabled:
        return "no (off)"
    return "yes" if driver.active else "no (needs a key, endpoint or contact)"


def spacing_markdown() -> str:
    """Two Markdown tables: each engine's record and rate, and each category's bound."""
    config = parse_config({"schema_version": 1}, known_engines=registry.known_ids())
    engine_rows = [
        "| engine | categories | by default | spacing ms | concurrency | requests/s |",
        "|---|---|---|---|---|---|",
    ]
    for driver, enabled in registry.configured_engines(config):
        record = driver.admission
        default = _by_default(driver, enabled)
        categories = ", ".join(sorted(c.value for c in driver.categories))
        engine_rows.append(
            f"| {driver.id} | {categories} | {default} | {record.min_interval_ms:,} | "
            f"{record.max_concurrency} | {_rate(_requests_per_s(record.min_interval_ms))} |"
        )
    hits = " | ".join(f"{h:.0%} cache hits" for h in CACHE_HIT_RATIOS)
    category_rows = [
        f"| category | engines by default | calls/s, every engine asked | calls/s, one engine "
        f"asked | {hits} |",
        "|---|---|---|---|" + "---|" * len(CACHE_HIT_RATIOS),
    ]
    for category in Category:
        engines = _default_engines(category)
        rates = [_requests_per_s(d.admission.min_interval_ms) for d in engines]
        spaced = [r for r in rates if r is not None]
        every = category_bound(engines)
        one = max(spaced) if spaced and len(spaced) == len(rates) else None
        cached = " | ".join(
            _rate(None if every is None else every / (1 - h)) for h in CACHE_HIT_RATIOS
        )
        names = ", ".join(d.id for d in engines)
        category_rows.append(
            f"| {category.value} | {names} | {_rate(every)} | {_rate(one)} | {cached} |"
        )
    return "\n".join([SPACING_BEGIN, "", *engine_rows, "", *category_rows, "", SPACING_END])


if __name__ == "__main__":
    if sys.argv[1:] == ["--spacing"]:
        emit(spacing_markdown())
        sys.exit(0)
    sys.exit("run it as `python -m bench throughput`, or with --spacing for the table")
