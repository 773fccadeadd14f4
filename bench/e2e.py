"""Issue 14 item 1: the overhead of a search measured from outside, over stdio.

`rypsok serve` runs as a subprocess, driven by the MCP SDK's own client
(`stdio_client` + `ClientSession`), exactly as a host drives it. Its engines
are five real general drivers (wikipedia, wikidata, brave, mojeek,
marginalia) pointed at the fake provider server, which runs in a process of
its own and answers every engine after 200 ms with 10 results (the recorded
`ok` answers, cut or repeated to 10 hits with distinct URLs). The keyed
engines get a made-up key through `{ env = ... }`: the fake never checks it.

Calls run one after another, each started at least `PACE_S` after the
previous one, past the largest provider spacing (1 s), so no call waits for
an admission slot. For each call the fake server records when each engine's
request arrived and when its answer was written; the overhead is

    wall time of the call (client side) - the slowest engine's latency,

i.e. everything rypsok and the SDK add on both sides of the engines: the
client's and the server's JSON-RPC work, validation, the pipeline, egress,
logging and the pipes. CPU per call is the server process's user + system
CPU (/proc/<pid>/stat) across the call, so the client's own work is not in it.

With `BENCH_PYSPY=/path/to/py-spy` in the environment, the sampling profiler
attaches to the server process for the measured calls and writes its raw
(collapsed) stacks to `BENCH_PYSPY_OUT` (default rypsok-e2e.pyspy.txt in the working directory);
`python -m bench.stacks FILE` sums them per frame. `BENCH_PYSPY_GIL=1` adds py-spy's
`--gil`: only samples holding the GIL, so a loaded machine's preemption (a thread
runnable inside a system call while another process runs) is not counted as busy.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.common import CALLS_PER_MINUTE, emit, summary, table
from bench.fakeserver import REPO, FakeServer
from rypsok.core.engines.registry import known_ids

DELAY_MS = 200.0
HITS = 10
# Past the largest spacing of the five engines (brave, mojeek, marginalia: 1 s).
PACE_S = 1.05

# engine -> (path on the fake server, the fixture, the list of hits inside it)
ENGINES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "wikipedia": ("/w/api.php", "ok.json", ("query", "search")),
    "wikidata": ("/wikidata/w/api.php", "ok.json", ("search",)),
    "brave": ("/brave/res/v1", "ok.json", ("web", "results")),
    "mojeek": ("/mojeek/search", "ok.json", ("response", "results")),
    "marginalia": ("/marginalia/search", "ok.json", ("results",)),
}
# Issue 14's targets over stdio at 5 engines (shown next to the figures).
TARGET_P50_MS = 5.0
TARGET_P99_MS = 15.0
# Brave's driver appends its own path to the endpoint.
_ROUTE_SUFFIX = {"brave": "/web/search"}
_KEYED = ("brave", "mojeek", "marginalia")


def _hits_at(data: Any, where: tuple[str, ...]) -> list[Any]:
    for key in where:
        data = data[key]
    assert isinstance(data, list)
    return data


def _with_hits(engine: str, count: int) -> bytes:
    """The engine's recorded answer with exactly `count` hits, each with its own URL or id."""
    _, fixture, where = ENGINES[engine]
    path = REPO / "tests" / "fixtures" / "engines" / engine / fixture
    data = json.loads(path.read_text(encoding="utf-8"))
    hits = _hits_at(data, where)
    recorded = list(hits)
    hits.clear()
    for i in range(count):
        hit = copy.deepcopy(recorded[i % len(recorded)])
        if i >= len(recorded):
            _make_distinct(hit, i)
        hits.append(hit)
    if engine == "brave":
        # Brave orders its answer by `mixed.main`; keep it pointing at every web hit.
        data["mixed"]["main"] = [{"type": "web", "index": i, "all": False} for i in range(count)]
    return json.dumps(data).encode()


def _make_distinct(hit: dict[str, Any], i: int) -> None:
    for key in ("url", "title", "id"):
        if isinstance(hit.get(key), str):
            hit[key] = (
                f"{hit[key]}{'&' if '?' in hit[key] else '?'}r={i}"
                if key == "url"
                else (f"{hit[key]} {i}")
            )
    if "pageid" in hit:
        hit["pageid"] = int(hit["pageid"]) + 1000 * i


def _routes(directory: Path) -> dict[str, dict[str, Any]]:
    routes = {}
    for engine, (path, _, _) in ENGINES.items():
        body = directory / f"{engine}.json"
        body.write_bytes(_with_hits(engine, HITS))
        routes[path + _ROUTE_SUFFIX.get(engine, "")] = {
            "delay_ms": DELAY_MS,
            "file": str(body),
            "content_type": "application/json; charset=utf-8",
        }
    return routes


# "asyncio" or "uvloop": the server's `[runtime] event_loop`, for a measured pair
# (docs/performance.md §23.1); unset, the server runs its default (auto: uvloop where installed).
LOOP_SWITCH = "E2EBENCH_LOOP"


def _config_toml(base_url: str) -> str:
    lines = [
        "schema_version = 1",
        *(
            [f'[runtime]\nevent_loop = "{os.environ[LOOP_SWITCH]}"']
            if os.environ.get(LOOP_SWITCH)
            else []
        ),
        "[egress]",
        'allow = ["127.0.0.1/32"]',
        "[limits]",
        f"web_search_per_minute = {CALLS_PER_MINUTE}",
    ]
    for engine, (path, _, _) in ENGINES.items():
        lines += [f"[engines.{engine}]", f'endpoint = "{base_url}{path}"', "enabled = true"]
        if engine in _KEYED:
            lines.append(f'api_key = {{ env = "BENCH_KEY_{engine.upper()}" }}')
    for engine in sorted(known_ids() - ENGINES.keys()):
        lines += [f"[engines.{engine}]", "enabled = false"]
    return "\n".join(lines) + "\n"


def _child_env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RYPSOK_")}
    env["RYPSOK_CONFIG"] = str(config)
    env.update({f"BENCH_KEY_{e.upper()}": "bench-not-a-key" for e in _KEYED})
    return env


def _children() -> list[int]:
    """Our direct child processes (Linux /proc): the rypsok server the SDK client spawned."""
    me = str(os.getpid())
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue
        if fields[1] == me and b"rypsok" in command and b"serve" in command:
            found.append(int(entry))
    return found


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="rypsok-e2e-") as tmp:
        yield Path(tmp)


async def _calls(session: ClientSession, pid: int, calls: int, warmup: int) -> list[Any]:
    timings = []
    next_start = time.monotonic()
    for i in range(warmup + calls):
        await anyio.sleep(max(0.0, next_start - time.monotonic()))
        tag = f"e2e call {i}"
        cpu0 = _cpu_seconds(pid)
        start = time.monotonic()
        result = await session.call_tool("web_search", {"query": tag})
        end = time.monotonic()
        cpu = _cpu_seconds(pid) - cpu0
        next_start = start + PACE_S
        content = result.structured_content or {}
        if i >= warmup:
            timings.append((tag, start, end, cpu, content.get("outcome"), content))
    return timings


async def _session_run(config: Path, calls: int, warmup: int) -> tuple[list[Any], float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "rypsok", "serve"], env=_child_env(config)
    )
    with open(os.devnull, "w", encoding="utf-8") as errlog:  # noqa: ASYNC230 (before the calls)
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            pids = _children()
            if len(pids) != 1:
                raise RuntimeError(f"expected one rypsok child process, found {pids}")
            with _profiler(pids[0]):
                cpu_start = _cpu_seconds(pids[0])
                timings = await _calls(session, pids[0], calls, warmup)
                return timings, _cpu_seconds(pids[0]) - cpu_start


@contextmanager
def _profiler(pid: int) -> Iterator[None]:
    """py-spy attached to the server while the calls run, when BENCH_PYSPY names it."""
    binary = os.environ.get("BENCH_PYSPY")
    if not binary:
        yield
        return
    out = os.environ.get("BENCH_PYSPY_OUT", "rypsok-e2e.pyspy.txt")
    command = [binary, "record", "--pid", str(pid), "--rate", "1000", "--format", "raw"]
    if os.environ.get("BENCH_PYSPY_GIL"):
        command.append("--gil")  # only samples holding the GIL: CPU, not waits or preemption
    profiler = subprocess.Popen(
        [*command, "--nonblocking", "--output", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # let it attach before the first measured call
    try:
        yield
    finally:
        profiler.send_signal(2)  # SIGINT: py-spy writes its output and exits
        profiler.wait(timeout=30)


def _results_of(content: dict[str, Any]) -> int:
    results = content.get("results")
    return len(results) if isinstance(results, list) else 0


async def run(quick: bool = False) -> dict[str, Any]:
    calls, warmup = (3, 1) if quick else (30, 3)
    with _workspace() as directory, FakeServer(_routes(directory)) as server:
        config = directory / "rypsok.toml"
        config.write_text(_config_toml(server.base_url), encoding="utf-8")
        timings, total_cpu_s = await _session_run(config, calls, warmup)
        by_tag = server.stats().by_tag()
    overhead: list[float] = []
    slowest: list[float] = []
    cpu: list[float] = []
    returned: list[int] = []
    outcomes: dict[str, int] = {}
    for tag, start, end, cpu_s, outcome, content in timings:
        outcomes[str(outcome)] = outcomes.get(str(outcome), 0) + 1
        records = by_tag.get(tag, [])
        if len(records) != len(ENGINES):
            continue  # an engine was not asked: the call is not attributable
        latest = max(done - arrived for _, _, arrived, done in records)
        slowest.append(latest * 1000)
        overhead.append((end - start - latest) * 1000)
        cpu.append(cpu_s * 1000)
        returned.append(_results_of(content))
    figures: dict[str, Any] = {
        "calls": calls,
        "attributed": len(overhead),
        "outcomes": outcomes,
        "overhead_ms": summary(overhead),
        "slowest_engine_ms": summary(slowest),
        "server_cpu_ms": summary(cpu),
        # /proc counts CPU in clock ticks (10 ms): the mean over the run is the finer figure.
        "server_cpu_mean_ms": total_cpu_s * 1000 / (calls + warmup),
        "results_returned_min": min(returned, default=0),
    }
    o, s, c = figures["overhead_ms"], figures["slowest_engine_ms"], figures["server_cpu_ms"]
    emit(
        table(
            f"web_search over stdio through the SDK client, {len(ENGINES)} real general engines "
            f"x {HITS} hits at {DELAY_MS:.0f} ms, calls paced {PACE_S:.2f} s apart (ms)",
            ["n", "slowest", "ovh p50", "p99", "max", "cpu/call", "cpu p99", "hits", "outcomes"],
            [[len(overhead), s["p50"], o["p50"], o["p99"], o["max"],
              figures["server_cpu_mean_ms"], c["p99"], figures["results_returned_min"],
              " ".join(f"{k}={v}" for k, v in sorted(outcomes.items()))]],
        )
    )  # fmt: skip
    # Issue 14 item 6: each figure next to its target (printed, never asserted).
    emit(
        f"targets: overhead p50 <= {TARGET_P50_MS:.0f} ms (now {o['p50']:.1f}), "
        f"p99 <= {TARGET_P99_MS:.0f} ms (now {o['p99']:.1f})"
    )
    return figures
