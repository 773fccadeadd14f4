"""Where a search call's CPU goes: cProfile of calls through the in-memory MCP client.

5 bench engines at 5 ms (the throughput setting), sequential calls through
`mcp.Client(build_server(services))`, so every layer runs: SDK, adapter,
Services, pipeline, egress, drivers, boundary, fusion, response model.
cProfile slows Python code down (roughly 1.5-2x), so read the shares, not
the absolute figures; the overhead benchmark has the unprofiled times.

Printed: the cumulative time of each stage per call and its share of the
profiled CPU, the top functions by own time, and, without the profiler, the
parse cost of each registered driver on its recorded answer.
"""

from __future__ import annotations

import cProfile
import functools
import json
import pstats
import re
import time
from collections.abc import Callable
from typing import Any

from mcp import Client

from bench.common import bench_config, emit, table
from bench.drivers import (
    BenchDriver,
    bench_drivers,
    bench_path,
    bench_routes,
    driver_class,
    egress_client,
    services_with,
)
from bench.fakeserver import REPO, FakeServer
from bench.payloads import bench_body
from rypsok.core import contract, limits
from rypsok.core.boundary.instructions import looks_like_instruction
from rypsok.core.boundary.text import clean_text
from rypsok.core.engines import registry
from rypsok.core.engines.base import EngineResponse, EngineSettings, RawHit, SearchParams
from rypsok.core.engines.transport import EngineEgress
from rypsok.core.search.rank import Candidate, rank_results
from rypsok.core.search.urls import ResultUrl, normalize_result_url
from rypsok.mcp.server import build_server

ENGINES = 5
# (label, file suffix, function name): summed cumulative time of the matches.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("Services.call (all but SDK and adapter)", "rypsok/core/services.py", "call"),
    ("  SearchPipeline.search", "rypsok/core/search/aggregate.py", "search"),
    ("    engine requests (egress engine_get)", "rypsok/core/egress/client.py", "engine_get"),
    ("    driver parse", "bench/drivers.py", "parse"),
    ("    SearchPipeline._results", "rypsok/core/search/aggregate.py", "_results"),
    ("      looks_like_instruction", "rypsok/core/boundary/instructions.py",
     "looks_like_instruction"),
    ("      clean_text", "rypsok/core/boundary/text.py", "clean_text"),
    ("      normalize_result_url", "rypsok/core/search/urls.py", "normalize_result_url"),
    ("      rank_results", "rypsok/core/search/rank.py", "rank_results"),
    ("  response model .wire() (pydantic dump)", "rypsok/core/contract.py", "wire"),
    ("  logs.event (JSON lines)", "rypsok/core/logs.py", "event"),
    ("adapter render (json.dumps)", "rypsok/mcp/server.py", "render"),
)  # fmt: skip


def _stage_rows(stats: pstats.Stats, calls: int, total_s: float) -> list[list[object]]:
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    rows: list[list[object]] = [
        ["profiled CPU per call (all layers)", total_s / calls * 1000, 100.0]
    ]
    for label, suffix, name in STAGES:
        cumulative = sum(
            value[3]
            for (filename, _, function), value in raw.items()
            if function == name and filename.endswith(suffix)
        )
        rows.append([label, cumulative / calls * 1000, cumulative / total_s * 100])
    return rows


def _top_rows(stats: pstats.Stats, calls: int, total_s: float, n: int) -> list[list[object]]:
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(raw.items(), key=lambda item: -item[1][2])
    rows: list[list[object]] = []
    for (filename, line, function), value in ranked:
        if function == "<method 'poll' of 'select.epoll' objects>":
            continue  # waiting, not working
        where = filename.split("site-packages/")[-1].split("/src/")[-1]
        where = where.replace("/root/.pyenv/versions/", "")
        label = f"{function} ({where}:{line})" if line else function
        rows.append([label[:88], value[1], value[2] / calls * 1000, value[2] / total_s * 100])
        if len(rows) == n:
            break
    return rows


def _per_call_us(function: Callable[[], object], repeat: int) -> float:
    """CPU microseconds per call (process time: robust to other load on the machine)."""
    function()
    started = time.process_time()
    for _ in range(repeat):
        function()
    return (time.process_time() - started) / repeat * 1e6


_CONTENT_TYPES = {
    ".json": "application/json; charset=utf-8",
    ".xml": "application/atom+xml; charset=utf-8",
}


def _parse_rows(repeat: int) -> list[list[object]]:
    """Each registered driver with a recorded `ok` answer, parsing it."""
    rows: list[list[object]] = []
    fixtures = REPO / "tests" / "fixtures" / "engines"
    for engine, cls in registry.driver_classes().items():
        recorded = sorted((fixtures / engine).glob("ok.*"))
        if not recorded or recorded[0].suffix not in _CONTENT_TYPES:
            continue
        body = recorded[0].read_bytes()
        headers = {"content-type": _CONTENT_TYPES[recorded[0].suffix]}
        response = EngineResponse(status=200, headers=headers, body=body)
        try:
            driver = cls()
            hits = len(driver.parse(response))
        except Exception as exc:  # a fixture this simple reading does not fit: say so
            rows.append([engine, len(body), f"({type(exc).__name__})", "-", "-"])
            continue
        us = _per_call_us(functools.partial(driver.parse, response), repeat)
        rows.append([engine, len(body), hits, us, us / max(1, hits)])
    bench: BenchDriver = driver_class(0)()
    body = bench_body(0)
    response = EngineResponse(status=200, headers={"content-type": "application/json"}, body=body)
    hits = len(bench.parse(response))
    us = _per_call_us(lambda: bench.parse(response), repeat)
    rows.append(["bench0 (bench format)", len(body), hits, us, us / hits])
    return rows


async def _egress_cost(base_url: str, requests: int) -> list[list[object]]:
    """One engine request through the real egress client to the fake server (0 ms delay)."""
    driver = driver_class(ENGINES)(EngineSettings(endpoint=f"{base_url}{bench_path(ENGINES)}"))
    egress = egress_client(bench_config())
    request = driver.build_request(SearchParams(query="egress cost"))

    async def get() -> None:
        await EngineEgress(egress).engine_get(
            request,
            explicit_endpoint=True,
            max_body_bytes=driver.admission.max_body_bytes,
            connect_timeout_ms=1_000,
            total_timeout_ms=5_000,
        )

    try:
        for _ in range(20):
            await get()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(requests):
            await get()
        cpu = (time.process_time() - cpu0) / requests * 1000
        wall = (time.perf_counter() - wall0) / requests * 1000
    finally:
        await egress.aclose()
    return [["egress engine_get, kept-alive connection (ms per request)", requests, cpu, wall]]


def _stage_costs(repeat: int) -> list[list[object]]:
    """Each pure stage on the hits of one 5-engine call, without the profiler."""
    drivers = [driver_class(i)() for i in range(ENGINES)]
    responses = [EngineResponse(status=200, headers={}, body=bench_body(i)) for i in range(ENGINES)]
    answers: list[tuple[str, list[RawHit]]] = [
        (d.id, d.parse(r)) for d, r in zip(drivers, responses, strict=True)
    ]
    hits = [hit for _, engine_hits in answers for hit in engine_hits]

    def parse_all() -> None:
        for driver, response in zip(drivers, responses, strict=True):
            driver.parse(response)

    def clean_all() -> None:
        for hit in hits:
            clean_text(hit.title, limits.TITLE_MAX_CHARS)
            clean_text(hit.snippet, limits.SNIPPET_MAX_CHARS)

    cleaned = [
        (clean_text(h.title, limits.TITLE_MAX_CHARS).text,
         clean_text(h.snippet, limits.SNIPPET_MAX_CHARS).text)
        for h in hits
    ]  # fmt: skip

    def instructions_all() -> None:
        for title, snippet in cleaned:
            looks_like_instruction(title)
            looks_like_instruction(snippet)

    # What if: the same pattern without re.IGNORECASE (the text is casefolded already).
    from rypsok.core.boundary import instructions  # noqa: PLC0415

    pattern = getattr(instructions, "_INSTRUCTION_PATTERN", None)
    normalized = getattr(instructions, "_normalized", None)
    plain = re.compile(pattern.pattern) if pattern is not None else None

    def instructions_plain() -> None:
        assert plain is not None and normalized is not None
        for title, snippet in cleaned:
            plain.search(normalized(title))
            plain.search(normalized(snippet))

    def urls_all() -> None:
        for hit in hits:
            normalize_result_url(hit.url)

    candidates = []
    texts = iter(cleaned)
    for engine, engine_hits in answers:
        for hit in engine_hits:
            title, snippet = next(texts)
            url = normalize_result_url(hit.url)
            assert isinstance(url, ResultUrl)
            candidates.append(
                Candidate(engine, hit.rank, url.url, url.key, title, snippet, hit.date)
            )
    preference = [engine for engine, _ in answers]

    def rank() -> None:
        rank_results(candidates, preference, 10)

    ranked = rank_results(candidates, preference, 10)

    def respond() -> None:
        results = [
            contract.SearchResult(title=r.title, url=r.url, snippet=r.snippet, date=r.date)
            for r in ranked
        ]
        output = contract.WebSearchOutput(outcome=contract.Outcome.OK, notices=[], results=results)
        json.dumps(output.wire(), ensure_ascii=False, separators=(",", ":"))

    stages: list[tuple[str, Callable[[], object], int]] = [
        ("driver parse (bench format)", parse_all, ENGINES),
        ("clean_text, title + snippet", clean_all, len(hits)),
        ("looks_like_instruction, title + snippet", instructions_all, len(hits)),
        *(
            [("  what if: same pattern without re.IGNORECASE", instructions_plain, len(hits))]
            if plain is not None and normalized is not None
            else []
        ),
        ("normalize_result_url", urls_all, len(hits)),
        ("rank_results", rank, 1),
        ("response model + wire() + json.dumps", respond, 1),
    ]
    rows: list[list[object]] = []
    for label, function, units in stages:
        us = _per_call_us(function, repeat)
        rows.append([label, units, us / units, us / 1000])
    return rows


async def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = (30, 5) if quick else (80, 10)
    config = bench_config()
    # Engines 0-4 answer after 5 ms; engine 5 at once, for the egress measurement.
    with FakeServer(bench_routes([5.0] * ENGINES + [0.0])) as server:
        egress = await _egress_cost(server.base_url, 100 if quick else 400)
        services = services_with(bench_drivers(server.base_url, ENGINES), config)
        try:
            async with Client(build_server(services)) as client:
                for i in range(warmup):
                    await client.call_tool("web_search", {"query": f"profile warm-up {i}"})
                profiler = cProfile.Profile()
                profiler.enable()
                for i in range(calls):
                    await client.call_tool("web_search", {"query": f"profile {i}"})
                profiler.disable()
        finally:
            await services.aclose()
    stats = pstats.Stats(profiler)
    raw: dict[tuple[str, int, str], tuple[Any, ...]] = stats.stats  # type: ignore[attr-defined]
    idle = sum(v[2] for (_, _, f), v in raw.items() if "select.epoll" in f)
    total = stats.total_tt - idle  # type: ignore[attr-defined]
    stages = _stage_rows(stats, calls, total)
    emit(
        table(
            f"CPU per stage, in-memory MCP web_search, {ENGINES} bench engines, {calls} calls "
            "under cProfile (cumulative ms per call, % of profiled CPU)",
            ["stage", "ms/call", "%"],
            stages,
        )
    )
    top = _top_rows(stats, calls, total, 15)
    emit()
    emit(
        table(
            "Top functions by own time (profiled)",
            ["function", "calls", "ms/call", "%"],
            top,
        )
    )
    parse = _parse_rows(20 if quick else 100)
    emit()
    emit(
        table(
            "Driver parse cost on recorded answers (no profiler, CPU time)",
            ["driver", "bytes", "hits", "us/parse", "us/hit"],
            parse,
        )
    )
    emit()
    emit(table("Egress alone (no profiler)", ["what", "requests", "cpu ms", "wall ms"], egress))
    costs = _stage_costs(5 if quick else 20)
    emit()
    emit(
        table(
            f"Pure stages on the hits of one {ENGINES}-engine call, no profiler, CPU time "
            "(unit = engine answer, hit or call)",
            ["stage", "units", "us/unit", "ms/call"],
            costs,
        )
    )
    return {"stages": stages, "top": top, "parse": parse, "egress": egress, "stage_costs": costs}
