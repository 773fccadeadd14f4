"""CPU of one kept-alive engine request, by layer (issue 14; docs/performance.md §16).

One fake provider in its own process (`bench.fakeserver`) answers at once with
a bench engine's answer (15 results, about 4.3 kB, and an empty one). Each
variant sends sequential GETs over one kept-alive loopback connection; per
request it reports the CPU time of this process (time.process_time, so the
fake server's work is not counted) and the wall time, p50 over the run.

Variants, from the whole engine path down to its floor:

* `EngineEgress.engine_get`: what the search pipeline calls (the engine
  side's translation, then egress);
* `EgressClient.engine_get`: egress as shipped (URL check, headers, the lean
  HTTP/1.1 path of `egress/origin.py` for an engine without a proxy: since
  §20.1 llhttp inside an asyncio protocol, the request head written as bytes);
* `httpx2 over httpcore2 (before)`: the path every engine request took
  before §16, and proxied ones still take: httpx2's request and response
  objects over an httpcore2 pool with the same guarded backend;
* `httpcore2 pool, no httpx2`: the same pool called with httpcore2's own
  request objects;
* `h11 over a guarded stream`: the floor of §16's design: one h11 exchange
  written by hand over an anyio stream the stock guarded backend opened, no
  pool, no decoding, no deadline. The shipped path is below it since §20.1.

Then the budget of one in-process call at 5 bench engines (76 hits, 10
returned): each stage the pipeline runs, timed alone without a profiler (CPU
per call, best of five rounds), next to the whole call's CPU measured on the
same fake server. The stages run the pipeline's own functions on the data of
one call, so the table works on an older tree too (where a helper is missing,
its older form is timed), which is how §16 compares before and after.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import h11
import httpcore2
import httpx2

from bench.common import bench_config, emit, percentile, table
from bench.drivers import bench_drivers, bench_path, bench_pipeline, bench_routes, driver_class
from bench.fakeserver import FakeServer
from bench.payloads import bench_body
from rypsok.core import contract, logs
from rypsok.core.egress import client as egress_client_module
from rypsok.core.egress.backend import GuardedBackend, PoolTransport
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.messages import OutboundRequest
from rypsok.core.egress.policy import EgressRules, EngineProfile
from rypsok.core.engines.base import Category, EngineRequest, EngineResponse, RawHit, SearchParams
from rypsok.core.engines.transport import EngineEgress
from rypsok.core.search import aggregate
from rypsok.core.search.aggregate import SearchRequest
from rypsok.core.search.rank import Candidate, rank_results
from rypsok.core.search.urls import ResultUrl, normalize_result_url

USER_AGENT = "rypsok-bench/1"
LOOPBACK = EgressRules.from_strings(allow=["127.0.0.1/32"], deny=[])
PARAMS = (("q", "bench query"), ("n", "10"))
MAX_BODY = 2 * 1024 * 1024
CONNECT_MS, TOTAL_MS = 1_000, 3_000
BODIES = (("15 hits", 15), ("no hits", 0))

Send = Callable[[], Awaitable[None]]


async def _measure(send: Send, requests: int, warmup: int) -> tuple[float, float]:
    """CPU per request (mean) and wall p50, in ms, of `requests` sequential sends."""
    for _ in range(warmup):
        await send()
    walls: list[float] = []
    cpu0 = time.process_time()
    for _ in range(requests):
        start = time.perf_counter()
        await send()
        walls.append((time.perf_counter() - start) * 1000)
    cpu_ms = (time.process_time() - cpu0) / requests * 1000
    return cpu_ms, percentile(walls, 50)


def _core_headers(port: int) -> list[tuple[bytes, bytes]]:
    return [
        (b"Host", f"127.0.0.1:{port}".encode()),
        (b"accept", b"*/*"),
        (b"accept-encoding", b"gzip, deflate, br, zstd"),
        (b"connection", b"keep-alive"),
        (b"user-agent", USER_AGENT.encode()),
    ]


async def _variants(port: int, base_url: str) -> list[tuple[str, Send, Callable[[], Any]]]:
    """(label, one request, cleanup) for each variant, against this server."""
    url = f"{base_url}{bench_path(0)}"
    target = f"{bench_path(0)}?q=bench+query&n=10".encode()
    policy = EngineProfile(LOOPBACK).address_policy(explicit_endpoint=True)
    egress = EgressClient(user_agent=USER_AGENT, rules=LOOPBACK)
    engine_side = EngineEgress(egress)
    outbound = OutboundRequest(url=url, params=PARAMS)
    engine_request = EngineRequest(url=url, params=PARAMS)

    async def engine_egress() -> None:
        response = await engine_side.engine_get(
            engine_request, explicit_endpoint=True, max_body_bytes=MAX_BODY,
            connect_timeout_ms=CONNECT_MS, total_timeout_ms=TOTAL_MS,
        )  # fmt: skip
        assert response.status == 200

    async def egress_client() -> None:
        response = await egress.engine_get(
            outbound, explicit_endpoint=True, max_body_bytes=MAX_BODY,
            connect_timeout_ms=CONNECT_MS, total_timeout_ms=TOTAL_MS,
        )  # fmt: skip
        assert response.status == 200

    before = PoolTransport(httpcore2.AsyncConnectionPool(network_backend=GuardedBackend(policy)))
    checked = httpx2.URL(url)
    headers = {"accept": "*/*", "accept-encoding": "gzip, deflate, br, zstd",
               "connection": "keep-alive", "user-agent": USER_AGENT}  # fmt: skip

    async def httpx2_before() -> None:
        status, _, _ = await egress_client_module._get(
            before, checked, params=PARAMS, headers=headers, max_body_bytes=MAX_BODY,
            connect_timeout_ms=CONNECT_MS, total_timeout_ms=TOTAL_MS,
        )  # fmt: skip
        assert status == 200

    pool = httpcore2.AsyncConnectionPool(network_backend=GuardedBackend(policy))
    core_url = httpcore2.URL(scheme=b"http", host=b"127.0.0.1", port=port, target=target)
    core_headers = _core_headers(port)
    timeouts = {"connect": 1.0, "read": 3.0, "write": 3.0, "pool": 3.0}

    async def core_pool() -> None:
        with anyio.fail_after(TOTAL_MS / 1000):
            request = httpcore2.Request(b"GET", core_url, headers=core_headers,
                                        extensions={"timeout": timeouts})  # fmt: skip
            response = await pool.handle_async_request(request)
            try:
                _ = [chunk async for chunk in response.aiter_stream()]
            finally:
                await response.aclose()
        assert response.status == 200

    stream = await GuardedBackend(policy).connect_tcp("127.0.0.1", port, timeout=1.0)
    state = h11.Connection(h11.CLIENT)

    async def bare_h11() -> None:
        data = state.send(h11.Request(method="GET", target=target, headers=core_headers)) or b""
        await stream.write(data + (state.send(h11.EndOfMessage()) or b""))
        while True:
            event = state.next_event()
            if event is h11.NEED_DATA:
                state.receive_data(await stream.read(65536))
            elif isinstance(event, h11.EndOfMessage):
                break
        state.start_next_cycle()

    return [
        ("EngineEgress.engine_get", engine_egress, egress.aclose),
        ("EgressClient.engine_get", egress_client, lambda: None),
        ("httpx2 over httpcore2 (before)", httpx2_before, before.aclose),
        ("httpcore2 pool, no httpx2", core_pool, pool.aclose),
        ("h11 over a guarded stream", bare_h11, stream.aclose),
    ]


ENGINES = 5
RETURNED = 10


def _best_us(function: Callable[[], object], repeat: int) -> float:
    """CPU microseconds of one run of `function`: the best of five rounds of `repeat`."""
    function()
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(repeat):
            function()
        rounds.append((time.process_time() - started) / repeat * 1e6)
    return min(rounds)


def _pure_stages(repeat: int) -> list[tuple[str, float]]:
    """(stage, CPU us per call) of the steps that need no network, on one call's data."""
    drivers = [driver_class(i)() for i in range(ENGINES)]
    params = SearchParams(query="bench query")
    headers = {"content-type": "application/json"}
    responses = [EngineResponse(200, headers, bench_body(i)) for i in range(ENGINES)]
    answers = [(d.id, d.parse(r)) for d, r in zip(drivers, responses, strict=True)]
    hits: list[RawHit] = [hit for _, engine_hits in answers for hit in engine_hits]
    call_urls = getattr(aggregate, "_CallUrls", None)

    def urls() -> object:
        if call_urls is None:  # older tree: every hit read after the last answer
            return [normalize_result_url(hit.url) for hit in hits]
        read = call_urls()  # one call's memo: a URL several engines returned is read once
        return [read.of(hit.url) for hit in hits]

    candidates = []
    for engine, engine_hits in answers:
        for hit in engine_hits:
            url = normalize_result_url(hit.url)
            assert isinstance(url, ResultUrl)
            candidates.append(
                Candidate(engine, hit.rank, url.url, url.key, hit.title, hit.snippet, hit.date)
            )
    preference = [engine for engine, _ in answers]
    ranked = rank_results(candidates, preference, RETURNED)
    pairs = [(r.title, r.snippet) for r in ranked]
    all_cleaned = getattr(aggregate, "_all_cleaned", None)

    def boundary() -> object:
        if all_cleaned is None:  # older tree: one text at a time
            return [aggregate._cleaned(title, snippet) for title, snippet in pairs]
        return all_cleaned(pairs)

    def render() -> object:
        results = [
            contract.SearchResult(title=r.title, url=r.url, snippet=r.snippet, date=r.date)
            for r in ranked
        ]
        output = contract.WebSearchOutput(outcome=contract.Outcome.OK, notices=[], results=results)
        return json.dumps(output.wire(), ensure_ascii=False, separators=(",", ":"))

    log = logging.getLogger("rypsok.search")

    def log_engines() -> None:
        for driver in drivers:
            logs.event(log, "engine_request", engine=driver.id, host="127.0.0.1:1",
                       duration_ms=10.0, hits=15, outcome="answered")  # fmt: skip

    stages: list[tuple[str, Callable[[], object]]] = [
        ("request building (5 x build_request)",
         lambda: [d.build_request(params) for d in drivers]),
        ("response parsing (5 x parse, JSON + hits)",
         lambda: [d.parse(r) for d, r in zip(drivers, responses, strict=True)]),
        ("URL normalisation (76 hits)", urls),
        ("ranking (rank_results)", lambda: rank_results(candidates, preference, RETURNED)),
        ("content boundary (10 returned hits)", boundary),
        ("response model + wire() + json.dumps", render),
        ("engine_request log lines (5)", log_engines),
    ]  # fmt: skip
    return [(label, _best_us(function, repeat)) for label, function in stages]


async def _best_async_us(function: Send, repeat: int) -> float:
    """CPU microseconds of one await of `function`: the best of five rounds of `repeat`."""
    await function()
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(repeat):
            await function()
        rounds.append((time.process_time() - started) / repeat * 1e6)
    return min(rounds)


async def _spawn_us(repeat: int) -> float:
    """CPU us of a task group starting five tasks that return at once."""

    async def nothing() -> None:
        return None

    async def group() -> None:
        async with anyio.create_task_group() as tasks:
            for _ in range(ENGINES):
                tasks.start_soon(nothing)

    return await _best_async_us(group, repeat)


async def _call_budget(quick: bool) -> tuple[list[list[object]], dict[str, float]]:
    """The stages of one 5-engine call next to the whole call's CPU (best of five rounds)."""
    repeat = 20 if quick else 100
    rows: list[tuple[str, float]] = _pure_stages(repeat)
    rows.insert(1, ("task spawn (task group of 5)", await _spawn_us(repeat)))
    with FakeServer(bench_routes([0.0] * ENGINES)) as server:
        variants = await _variants(server.port, server.base_url)
        engine_us = await _best_async_us(variants[0][1], 40 if quick else 200)
        for _, _, cleanup in variants:
            closed = cleanup()
            if closed is not None:
                await closed
        rows.insert(1, ("engine requests (5 x EngineEgress.engine_get)", engine_us * ENGINES))
        pipeline, egress, _ = bench_pipeline(
            bench_drivers(server.base_url, ENGINES), bench_config()
        )
        try:

            async def call() -> None:
                request = SearchRequest(
                    query="budget", category=Category.GENERAL, max_results=RETURNED,
                    language=None, time_range=None,
                )  # fmt: skip
                await pipeline.search(request, [])

            whole_ms = await _best_async_us(call, 20 if quick else 80) / 1000
        finally:
            await egress.aclose()
    table_rows: list[list[object]] = [[label, us / 1000] for label, us in rows]
    table_rows.append(["sum of the stages above", sum(us for _, us in rows) / 1000])
    table_rows.append(["whole call (SearchPipeline.search, 0 ms engines)", whole_ms])
    figures = {label: us / 1000 for label, us in rows} | {"whole call": whole_ms}
    return table_rows, figures


async def run(quick: bool = False) -> dict[str, Any]:
    requests, warmup = (300, 30) if quick else (2_000, 100)
    rows: list[list[object]] = []
    figures: dict[str, Any] = {}
    for body_label, count in BODIES:
        with FakeServer(bench_routes([0.0], count=count)) as server:
            variants = await _variants(server.port, server.base_url)
            for label, send, _cleanup in variants:
                cpu_ms, wall_ms = await _measure(send, requests, warmup)
                rows.append([body_label, label, requests, cpu_ms, wall_ms])
                figures[f"{body_label}: {label}"] = {"cpu_ms": cpu_ms, "wall_p50_ms": wall_ms}
            for _, _, cleanup in variants:
                closed = cleanup()
                if closed is not None:
                    await closed
    emit(
        table(
            "One kept-alive engine request to a loopback fake answering at once "
            "(ms; cpu = this process, mean per request)",
            ["answer", "path", "n", "cpu", "wall p50"],
            rows,
        )
    )
    budget, budget_figures = await _call_budget(quick)
    emit()
    emit(
        table(
            f"Budget of one in-process call, {ENGINES} bench engines, 76 hits, {RETURNED} returned "
            "(CPU ms per call; stages timed alone, best of 5)",
            ["stage", "ms"],
            budget,
        )
    )
    return {"requests": requests, "variants": figures, "call_budget_ms": budget_figures}
