"""Calls per second over HTTP: rypsok's HTTP app in a process of its own, N clients for a while.

Three processes share the machine: the rypsok HTTP server (`python -m bench.http
serve ...`: `serve_http`, hence `build_http_app` and `make_server` under uvicorn,
exactly as `rypsok serve` over HTTP, with the search pipeline over 5 bench
engines and JSON-line logs at INFO into /dev/null), the fake server answering
every engine after 5 ms, and this process, the load generator.

The load generator runs N concurrent clients for a fixed window. Each client
loops: one `tools/call web_search` with a query of its own, then the next.
Clients use 4 keys (4 callers) round robin: LIM-C6 (6,000 calls per minute) is
per caller, so one caller alone is capped at 100 calls/s.

Two engine set-ups, each with its target (issue 14, item 2), 20 clients over 4 keys:

* 5 engines: the bench engines of `bench.drivers` (no spacing), ≥ 200 calls/s;
* 1 engine: the registered `searxng` driver (its admission record has no
  spacing), the fake answering its recorded `ok` answer after 5 ms, ≥ 300 calls/s.

* raw 2026-07-28: the handshake-free revision as raw JSON-RPC POSTs over one
  keep-alive connection per client (`httpx2.AsyncClient`), with
  `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `params._meta`; the
  answer is read as a JSON body or an SSE stream, whichever the server sends.
* SDK session: the SDK's `ClientSession` over `streamable_http_client`, one
  stateful session (handshake revision 2025-11-25) per client.

Counted: calls that ended in the window (answers ok, partial or empty; the rest
by kind), their latency, the CPU seconds of each process in the window (from
/proc/<pid>/stat for the server, `process_time` for the load generator). One
Python process runs on one core at a time, so a process at ~100% CPU is the
bottleneck; `cpu ms/call` of the server gives its ceiling, 1000 / that.

`RYPSOK_BENCH_HTTP_PROFILE=1` adds one run with cProfile inside the server
process (switched on by the `HTTPBENCH_PROFILE` variable of the child) and
prints its top costs; profiling slows the server, so that row is not a figure.
`BENCH_PYSPY=<py-spy>` records the server with py-spy instead (`BENCH_PYSPY_GIL=1`:
only samples holding the GIL), and `HTTPBENCH_GC_STATS=PREFIX` writes the server's
collections per generation, wall and CPU seconds, to `PREFIX.<setup>.json`.
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import json
import math
import os
import pathlib
import pstats
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

import rypsok
from bench.common import (
    CALLS_PER_MINUTE,
    bench_config,
    emit,
    percentile,
    production_logging,
    table,
)
from bench.drivers import bench_drivers, bench_routes, services_with
from bench.fakeserver import REPO, FakeServer
from rypsok.core.config import parse_config
from rypsok.core.engines import registry
from rypsok.core.event_loop import AUTO, backend_options, chosen_loop, running_loop
from rypsok.core.services import Services
from rypsok.mcp.http.plan import plan_http
from rypsok.mcp.http.serve import serve_http

LATENCY_MS = 5.0
ENGINES = 5
CALLERS = 4  # keys: LIM-C6 is per caller, 100 calls/s each at its ceiling
ANSWERED = ("ok", "partial", "empty")
MODERN = MODERN_PROTOCOL_VERSIONS[-1]
HANDSHAKE = HANDSHAKE_PROTOCOL_VERSIONS[-1]
PATH = "/mcp"
PROFILE_SWITCH = "RYPSOK_BENCH_HTTP_PROFILE"  # in the benchmark process: add a profiled run
CHILD_PROFILE = "HTTPBENCH_PROFILE"  # in the server process: where to write the profile
KEY_ENV = "HTTPBENCH_KEY_{}"
# Synthetic bench keys, made fresh per run; they never leave 127.0.0.1.
_KEYS = [f"httpbench_{i}_{os.urandom(12).hex()}" for i in range(CALLERS)]

Call = Callable[[str], Awaitable[str]]


# -- the server process ------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    """One engine set-up of the server, with the fake server's routes and the target."""

    name: str  # passed to the child on its command line
    label: str
    target_calls_per_s: float


BENCH5 = Setup("bench5", f"{ENGINES} bench engines", 200.0)
SEARXNG = Setup("searxng", "1 engine (searxng)", 300.0)
SETUPS = {s.name: s for s in (BENCH5, SEARXNG)}
SEARXNG_PATH = "/search"
CLIENTS = 20  # the figure: 20 concurrent clients over CALLERS keys


def setup_routes(setup: Setup) -> dict[str, dict[str, Any]]:
    if setup is SEARXNG:
        fixture = REPO / "tests" / "fixtures" / "engines" / "searxng" / "ok.json"
        route = {"delay_ms": LATENCY_MS, "file": str(fixture), "content_type": "application/json"}
        return {SEARXNG_PATH: route}
    return bench_routes([LATENCY_MS] * ENGINES)


def _searxng_only(base_url: str) -> dict[str, dict[str, Any]]:
    """The registered searxng driver at the fake server; every other engine disabled."""
    engines: dict[str, dict[str, Any]] = {
        e: {"enabled": False} for e in sorted(registry.known_ids())
    }
    engines["searxng"] = {"endpoint": f"{base_url}{SEARXNG_PATH}"}
    return engines


def _services(base_url: str, setup: Setup, http: dict[str, Any]) -> tuple[Services, Any]:
    if setup is SEARXNG:
        data = {
            "schema_version": 1,
            "egress": {"allow": ["127.0.0.1/32"]},
            "limits": {"web_search_per_minute": CALLS_PER_MINUTE},
            "engines": _searxng_only(base_url),
            "http": http,
        }
        config = parse_config(data, known_engines=registry.known_ids())
        return Services(config), config
    config = bench_config(http=http)
    return services_with(bench_drivers(base_url, ENGINES), config), config


# "asyncio" or "uvloop": the loop of the server child, for a measured pair (docs/performance.md
# §23.1); unset, the child runs the loop `rypsok serve` would by default (auto: uvloop where
# installed). Each row says which loop its server ran.
LOOP_SWITCH = "HTTPBENCH_LOOP"


def _server_loop() -> str:
    return chosen_loop(os.environ.get(LOOP_SWITCH) or AUTO)


# In the server process: write its collections' times to `<this>.<setup>.json`.
CHILD_GC_STATS = "HTTPBENCH_GC_STATS"


def _gc_clock(path: str | None) -> Callable[[], None]:
    """Time every collection of the server, per generation; the returned call writes them.

    A sampling profiler files a collection under whatever frame allocated when it
    started, so GC cost is only visible as a total measured here: wall time, and
    the process's CPU time (which preemption on a loaded machine does not inflate).
    """
    if not path:
        return lambda: None
    wall = [0.0, 0.0, 0.0]
    cpu = [0.0, 0.0, 0.0]
    runs = [0, 0, 0]
    started = [0.0, 0.0]

    def clock(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[:] = [time.perf_counter(), time.process_time()]
            return
        generation = info["generation"]
        wall[generation] += time.perf_counter() - started[0]
        cpu[generation] += time.process_time() - started[1]
        runs[generation] += 1

    gc.callbacks.append(clock)

    def write() -> None:
        gc.callbacks.remove(clock)
        record = {"collections": runs, "wall_s": wall, "cpu_s": cpu}
        pathlib.Path(path).write_text(json.dumps(record), encoding="utf-8")

    return write


def _serve(base_url: str, setup_name: str) -> int:
    """The child: rypsok over HTTP on an ephemeral loopback port; `PORT <n>` on stdout."""
    production_logging()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    keys = [{"caller": f"caller{i}", "key": {"env": KEY_ENV.format(i)}} for i in range(CALLERS)]
    services, config = _services(
        base_url, SETUPS[setup_name], {"port": port, "path": PATH, "keys": keys}
    )
    plan = plan_http(config)
    profile_path = os.environ.get(CHILD_PROFILE)
    profiler = cProfile.Profile() if profile_path else None

    async def serve() -> None:
        # From inside the loop: the parent reports the loop that ran, not the one asked for.
        print(f"PORT {port} {running_loop()}", flush=True)
        if profiler is not None:
            profiler.enable()
        await serve_http(services, plan, listener)

    gc_stats = os.environ.get(CHILD_GC_STATS)
    gc_clock = _gc_clock(f"{gc_stats}.{setup_name}.json" if gc_stats else None)
    try:
        anyio.run(serve, backend_options=backend_options(_server_loop()))
    finally:
        gc_clock()
        if profiler is not None and profile_path:
            profiler.disable()
            profiler.dump_stats(profile_path)
    return 0


class ServerProcess:
    """`python -m bench.http serve BASE_URL ENGINES`; SIGTERM on exit (a graceful stop)."""

    def __init__(self, base_url: str, setup: Setup, profile_path: str | None = None) -> None:
        env = dict(os.environ)
        env.update({KEY_ENV.format(i): key for i, key in enumerate(_KEYS)})
        env.pop(CHILD_PROFILE, None)
        if profile_path:
            env[CHILD_PROFILE] = profile_path
        self.stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (closed in stop)
            prefix="httpbench-server-", suffix=".err", delete=False
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.http", "serve", base_url, setup.name],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the HTTP server did not start; see {self.stderr.name}")
        _, port, self.event_loop = line.split()
        self.port = int(port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{PATH}"

    def cpu_seconds(self) -> float:
        return _proc_cpu(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.stderr.close()
        if os.path.getsize(self.stderr.name) == 0:
            os.unlink(self.stderr.name)


PYSPY_GIL_SWITCH = "BENCH_PYSPY_GIL"


def _start_pyspy(binary: str, pid: int, out: str) -> subprocess.Popen[bytes]:
    command = [binary, "record", "--pid", str(pid), "--rate", "500", "--format", "raw"]
    if os.environ.get(PYSPY_GIL_SWITCH):
        command.append("--gil")  # only samples holding the GIL: CPU, not waits or preemption
    return subprocess.Popen(
        [*command, "--nonblocking", "--output", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextlib.asynccontextmanager
async def _pyspy(pid: int, setup: Setup) -> AsyncIterator[None]:
    """py-spy attached to the server for the run, when BENCH_PYSPY names its binary.

    The raw (collapsed) stacks go to `<BENCH_PYSPY_OUT or rypsok-http>.<setup>.pyspy.txt`;
    `python -m bench.stacks FILE` sums them per frame. Profiled runs give shares, not figures.
    """
    binary = os.environ.get("BENCH_PYSPY")
    if not binary:
        yield
        return
    out = f"{os.environ.get('BENCH_PYSPY_OUT', 'rypsok-http')}.{setup.name}.pyspy.txt"
    profiler = _start_pyspy(binary, pid, out)
    await anyio.sleep(1.0)  # let it attach before the window
    try:
        yield
    finally:
        profiler.send_signal(signal.SIGINT)  # py-spy writes its output and exits
        profiler.wait(timeout=30)
        emit(f"(py-spy stacks of the server in {out})")


def _proc_cpu(pid: int) -> float:
    """User plus system CPU seconds of a process so far (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- one measured run --------------------------------------------------------------------------


@dataclass
class Run:
    label: str
    clients: int
    target: float | None = None
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    fake_cpu_s: float = 0.0
    event_loop: str = "-"  # the server's, as it reported it ("-": no server process)

    @property
    def answered(self) -> int:
        return sum(n for k, n in self.outcomes.items() if k in ANSWERED)

    @property
    def calls(self) -> int:
        return len(self.latencies_ms)

    def _rate(self, value: float) -> float:
        return value / self.seconds if self.seconds else 0.0

    def _per_call_ms(self, cpu_s: float) -> float:
        return cpu_s * 1000 / max(1, self.calls)

    def row(self) -> list[object]:
        errors = {k: v for k, v in self.outcomes.items() if k not in ANSWERED}
        return [
            self.label,
            self.event_loop,
            self.clients,
            self.answered,
            self._rate(self.answered),
            f"≥ {self.target:.0f}" if self.target else "-",
            _verdict(self._rate(self.answered), self.target),
            percentile(self.latencies_ms, 50),
            percentile(self.latencies_ms, 99),
            self._rate(self.server_cpu_s) * 100,
            self._per_call_ms(self.server_cpu_s),
            1000 / self._per_call_ms(self.server_cpu_s) if self.server_cpu_s else "-",
            _or_dash(self._rate(self.client_cpu_s) * 100),
            _or_dash(self._per_call_ms(self.client_cpu_s)),
            self._rate(self.fake_cpu_s) * 100,
            ",".join(f"{k}:{v}" for k, v in sorted(errors.items())) or "none",
        ]

    def as_dict(self) -> dict[str, Any]:
        server_ms = self._per_call_ms(self.server_cpu_s)
        return {
            "label": self.label,
            "event_loop": self.event_loop,
            "clients": self.clients,
            "seconds": self.seconds,
            "answered": self.answered,
            "calls_per_s": self._rate(self.answered),
            "target_calls_per_s": self.target,
            "latency_ms_p50": percentile(self.latencies_ms, 50),
            "latency_ms_p99": percentile(self.latencies_ms, 99),
            "server_cpu_percent": self._rate(self.server_cpu_s) * 100,
            "server_cpu_ms_per_call": server_ms,
            "server_ceiling_calls_per_s": 1000 / server_ms if server_ms else None,
            "client_cpu_percent": self._rate(self.client_cpu_s) * 100,
            "client_cpu_ms_per_call": self._per_call_ms(self.client_cpu_s),
            "fake_cpu_percent": self._rate(self.fake_cpu_s) * 100,
            "outcomes": self.outcomes,
        }


def _verdict(rate: float, target: float | None) -> str:
    if target is None:
        return "-"
    return "met" if rate >= target else "missed"


def _or_dash(value: float) -> float | str:
    return "-" if math.isnan(value) else value


HEADER = ["path", "loop", "N", "answered", "calls/s", "target", "verdict", "p50 ms", "p99 ms",
          "server cpu%", "server ms/call", "server ceiling/s", "loadgen cpu%", "loadgen ms/call",
          "fake cpu%", "errors"]  # fmt: skip


async def _drive(
    calls: list[Call],
    run: Run,
    server_cpu: Callable[[], float],
    fake: FakeServer,
    *,
    duration_s: float,
    warmup_s: float,
) -> Run:
    """One loop per call function through warm-up and the window; counts calls ending in it."""

    async def client(k: int, call: Call) -> None:
        i = 0
        while time.monotonic() < stop:
            tag = f"{run.label} {k} {i}"
            i += 1
            start = time.monotonic()
            try:
                outcome = await call(tag)
            except Exception as exc:  # counted by kind
                outcome = type(exc).__name__
            end = time.monotonic()
            if measured_from <= end <= stop:
                run.latencies_ms.append((end - start) * 1000)
                run.outcomes[outcome] = run.outcomes.get(outcome, 0) + 1

    fake.reset()
    fake_cpu0 = fake.stats().cpu_s
    begin = time.monotonic()
    measured_from = begin + warmup_s
    stop = measured_from + duration_s
    async with anyio.create_task_group() as group:
        for k, call in enumerate(calls):
            group.start_soon(client, k, call)
        await anyio.sleep(max(0.0, measured_from - time.monotonic()))
        server0, client0 = server_cpu(), time.process_time()
        await anyio.sleep(max(0.0, stop - time.monotonic()))
        run.server_cpu_s = server_cpu() - server0
        run.client_cpu_s = time.process_time() - client0
    # The fake server's CPU over the whole run, scaled to the window (as in `throughput`).
    run.fake_cpu_s = (fake.stats().cpu_s - fake_cpu0) * duration_s / (time.monotonic() - begin)
    run.seconds = duration_s
    return run


# -- the clients -------------------------------------------------------------------------------


def _outcome(payload: dict[str, Any]) -> str:
    outcome = str(payload.get("outcome", "unknown"))
    if outcome == "error":
        error = payload.get("error") or {}
        return str((error.get("detail") or {}).get("reason") or error.get("kind") or "error")
    return outcome


def _reply(text: str, request_id: int) -> dict[str, Any] | None:
    """The reply to `request_id` in a JSON body or an SSE stream (the server picks which)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        message = json.loads(stripped)
        return message if message.get("id") == request_id else None
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                return dict(message)
    return None


def _raw_call(http: httpx2.AsyncClient, url: str, key: str) -> Call:
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {key}",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "web_search",
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    ids = iter(range(1, 1 << 62))

    async def call(tag: str) -> str:
        request_id = next(ids)
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "web_search", "arguments": {"query": tag}, "_meta": meta},
        }
        response = await http.post(url, headers=headers, content=json.dumps(body).encode())
        if response.status_code != 200:
            return f"http_{response.status_code}"
        reply = _reply(response.text, request_id)
        if reply is None:
            return "no_reply"
        if "error" in reply:
            return f"jsonrpc_{reply['error'].get('code')}"
        return _outcome(reply["result"].get("structuredContent") or {})

    return call


@contextlib.asynccontextmanager
async def _raw_clients(url: str, n: int) -> AsyncIterator[list[Call]]:
    """N raw clients, each with its own keep-alive connection; keys round robin."""
    async with contextlib.AsyncExitStack() as stack:
        calls = []
        for k in range(n):
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
            calls.append(_raw_call(http, url, _KEYS[k % CALLERS]))
        yield calls


@contextlib.asynccontextmanager
async def _sdk_clients(url: str, n: int) -> AsyncIterator[list[Call]]:
    """N stateful SDK sessions (`ClientSession` over `streamable_http_client`), initialized."""
    async with contextlib.AsyncExitStack() as stack:
        calls: list[Call] = []
        for k in range(n):
            headers = {"authorization": f"Bearer {_KEYS[k % CALLERS]}"}
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=30))
            read, write = await stack.enter_async_context(
                streamable_http_client(url, http_client=http)
            )
            session = await stack.enter_async_context(ClientSession(read, write))
            init = await session.initialize()
            assert init.protocol_version == HANDSHAKE, init.protocol_version

            calls.append(_session_call(session))
        yield calls


def _session_call(session: ClientSession) -> Call:
    """One client's call function, bound to its own session."""

    async def call(tag: str) -> str:
        result = await session.call_tool("web_search", {"query": tag})
        if result.is_error and not result.structured_content:
            return "tool_error"
        return _outcome(result.structured_content or {})

    return call


# -- the benchmark -----------------------------------------------------------------------------


async def _measure(
    run: Run,
    setup: Setup,
    clients: Callable[[str, int], contextlib.AbstractAsyncContextManager[list[Call]]],
    fake: FakeServer,
    *,
    duration_s: float,
    warmup_s: float,
    profile_path: str | None = None,
) -> Run:
    server = ServerProcess(fake.base_url, setup, profile_path)
    try:
        run.event_loop = server.event_loop
        async with clients(server.url, run.clients) as calls, _pyspy(server.process.pid, setup):
            return await _drive(
                calls,
                run,
                server.cpu_seconds,
                fake,
                duration_s=duration_s,
                warmup_s=warmup_s,
            )
    finally:
        server.stop()


async def _in_process(fake: FakeServer, n: int, duration_s: float, warmup_s: float) -> Run:
    """The same search through `Services.call` in this process: the call without HTTP."""
    services = services_with(bench_drivers(fake.base_url, ENGINES), bench_config())
    try:

        def caller_call(k: int) -> Call:
            async def call(tag: str) -> str:
                answer = await services.call("web_search", {"query": tag}, f"caller{k % CALLERS}")
                return _outcome(answer.payload)

            return call

        calls = [caller_call(k) for k in range(n)]
        run = await _drive(
            calls,
            Run(f"in-process Services.call, {BENCH5.label}", n),
            time.process_time,
            fake,
            duration_s=duration_s,
            warmup_s=warmup_s,
        )
    finally:
        await services.aclose()
    run.client_cpu_s = float("nan")  # the same process: its CPU is the server column
    return run


def _top_costs(profile_path: str, limit: int = 18) -> tuple[list[list[object]], list[list[object]]]:
    """The profile's top functions by own time, and own time summed by package."""
    stats = pstats.Stats(profile_path)
    entries = stats.stats  # type: ignore[attr-defined]
    total = sum(e[2] for e in entries.values()) or 1.0
    by_own = sorted(entries.items(), key=lambda item: item[1][2], reverse=True)[:limit]
    rows: list[list[object]] = []
    for (filename, line, name), (_, calls, own, cumulative, _) in by_own:
        rows.append([_where(filename, line, name), calls, own, own / total * 100, cumulative])
    packages: dict[str, float] = {}
    for (filename, _, _), entry in entries.items():
        package = _package(filename)
        packages[package] = packages.get(package, 0.0) + entry[2]
    package_rows: list[list[object]] = [
        [name, own, own / total * 100]
        for name, own in sorted(packages.items(), key=lambda item: item[1], reverse=True)[:limit]
    ]
    return rows, package_rows


def _package(filename: str) -> str:
    path = pathlib.PurePath(filename)
    parts = path.parts
    for anchor in ("site-packages", "src"):
        if anchor in parts:
            rest = parts[parts.index(anchor) + 1 :]
            if rest:
                return rest[0] if rest[0] not in {"rypsok", "mcp"} else "/".join(rest[:2])
    if filename.startswith("~") or filename.startswith("<"):
        return "(builtins)"
    if "python3" in filename:
        return f"stdlib {path.parent.name if path.parent.name != 'python3.11' else path.stem}"
    return path.stem


def _where(filename: str, line: int, name: str) -> str:
    if filename == "~":
        return name
    parts = pathlib.PurePath(filename).parts
    short = "/".join(parts[-2:])
    return f"{short}:{line}({name})"


ROWS_SWITCH = "BENCH_HTTP_ROWS"  # e.g. "bench5,searxng": only these raw rows (for pairs)


def _wanted(name: str) -> bool:
    rows = os.environ.get(ROWS_SWITCH)
    return not rows or name in rows.split(",")


async def _setup_runs(setup: Setup, duration_s: float, warmup_s: float) -> list[Run]:
    """The rows of one engine set-up: raw at the target's N, and for 5 engines the rest."""
    runs: list[Run] = []
    with FakeServer(setup_routes(setup)) as fake:
        if setup is BENCH5 and _wanted("inprocess"):
            runs.append(await _in_process(fake, CLIENTS, duration_s, warmup_s))
        if _wanted(setup.name):
            raw = Run(f"raw {MODERN}, {setup.label}", CLIENTS, setup.target_calls_per_s)
            runs.append(
                await _measure(
                    raw, setup, _raw_clients, fake, duration_s=duration_s, warmup_s=warmup_s
                )
            )
        if setup is BENCH5 and _wanted("sdk"):
            session = Run(f"SDK session {HANDSHAKE}, {setup.label}", CLIENTS)
            runs.append(
                await _measure(
                    session, setup, _sdk_clients, fake, duration_s=duration_s, warmup_s=warmup_s
                )
            )
    return runs


async def _profiled(setup: Setup, duration_s: float, warmup_s: float) -> tuple[Any, Any]:
    handle, profile_path = tempfile.mkstemp(prefix=f"httpbench-{setup.name}-", suffix=".prof")
    os.close(handle)
    with FakeServer(setup_routes(setup)) as fake:
        await _measure(
            Run("profiled", CLIENTS),
            setup,
            _raw_clients,
            fake,
            duration_s=duration_s,
            warmup_s=warmup_s,
            profile_path=profile_path,
        )
    emit(f"(server profile kept in {profile_path})")
    return _top_costs(profile_path)


async def run(quick: bool = False) -> dict[str, Any]:
    duration_s, warmup_s = (2.0, 0.5) if quick else (5.0, 0.7)
    emit(f"rypsok imported from {pathlib.Path(rypsok.__file__).parent}")
    runs: list[Run] = []
    for setup in (BENCH5, SEARXNG):
        runs += await _setup_runs(setup, duration_s, warmup_s)
    emit(
        table(
            f"Calls per second over HTTP, engines answering after {LATENCY_MS:.0f} ms, "
            f"{CLIENTS} clients over {CALLERS} callers (keys), {duration_s:g} s per row; "
            "server = the rypsok process (uvicorn, make_server), loadgen = this process, "
            "ceiling = 1000 / server ms/call",
            HEADER,
            [r.row() for r in runs],
        )
    )
    result: dict[str, Any] = {"runs": [r.as_dict() for r in runs]}
    if os.environ.get(PROFILE_SWITCH):
        result["profile"] = {}
        for setup in (BENCH5, SEARXNG):
            if not _wanted(setup.name):
                continue
            functions, packages = await _profiled(setup, duration_s, warmup_s)
            emit()
            emit(
                table(
                    f"Server profile (cProfile, raw N={CLIENTS}, {setup.label}): top functions "
                    "by own time",
                    ["function", "calls", "own s", "own %", "cumulative s"],
                    functions,
                )
            )
            emit()
            emit(table("Own time by package", ["package", "own s", "own %"], packages))
            result["profile"][setup.name] = {"functions": functions, "packages": packages}
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        sys.exit(_serve(sys.argv[2], sys.argv[3]))
    sys.exit("usage: python -m bench.http serve BASE_URL SETUP (the benchmark starts it)")
