"""REQ-PERF-005: the latency of a process's first call, over stdio.

`.venv/bin/rypsok serve` is spawned with a configuration whose engines point
at the fake server (recorded answers, 5 ms). Timed from just before the spawn:

* initialize  - the initialize request is written at once (a host does the
  same); the time until its answer is interpreter start, imports,
  configuration, Services and the SDK's session set-up;
* tools/list  - after notifications/initialized, the first tools/list;
* web_search  - the first web_search (general: wikipedia and wikidata, each a
  new connection), answered;
* then a second web_search 200 ms later (after the engines' spacing) is
  timed on its own, as a warm comparison.

With `BENCH_REFERENCE_FETCH=/path/to/mcp-server-fetch` (the reference fetch
server from PyPI, installed in a scratch venv), each rypsok start alternates
with a start of that server in the same run (A B A B ...), timed the same
way until its first `fetch` of a page on the fake server is answered, so the
two figures share the machine's load. `BENCH_BASELINE_SRC=<tree>/src` adds
a third start in each round, of that tree's rypsok (a before/after pair).

Both trees are byte-compiled first, as an installed copy is (`byte_compile`).
`BENCH_RYPSOK_BIN=<venv>/bin/rypsok` starts that installed copy instead of this
checkout's development venv: the reference runs from a venv holding its own
run-time dependencies only, and the development venv's 110 distributions cost
rypsok's start a scan that an installed copy does not pay (pydantic's plugin
lookup reads every distribution's entry points).

Wall clock on a shared machine mixes the work with the wait for a CPU, so
each start also reads the server's own counters from /proc at its first
answer (Linux; `process_counters`): CPU time of all its threads, the time its
main thread waited to run and the rest of the wall time, when it was blocked
(on a pipe, a socket, a lock or a timer), its minor page faults and context
switches. They are printed for rypsok and the reference side by side.
Medians over the runs. Then where the time goes: the phases of start-up in
one child (`bench.startup_phases`), `rypsok --version` and a bare
interpreter for reference, and `python -X importtime` of a real `rypsok serve`
up to its first answered web_search (`serve_imports`; the baseline's too when
given), summed per group: top-level packages, rypsok's by `rypsok.core.<name>`
with the driver modules as one group.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from bench.common import config_toml, emit, fixture_routes, median, table
from bench.fakeserver import REPO, FakeServer
from bench.stdio_client import PROTOCOL
from rypsok.entry import ALLOCATOR

BIN = Path(sys.executable).parent
# Issue 14's target: the first tool call answered within this, and no later than
# the reference fetch server's first answer in the same run (printed, never asserted).
TARGET_FIRST_CALL_MS = 500.0
SERVE_IMPORTS = "import rypsok.cli, rypsok.core.services, rypsok.mcp.stdio, mcp.server.stdio"
# The per-process counters of `process_counters`, in the order they are printed.
COUNTERS = (
    "cpu ms",
    "run-queue wait ms",
    "blocked ms",
    "minor faults",
    "voluntary switches",
    "involuntary switches",
    "threads",
)


def rypsok_binary() -> Path:
    """The `rypsok` console script to start: an installed copy's if BENCH_RYPSOK_BIN names one."""
    return Path(os.environ.get("BENCH_RYPSOK_BIN") or BIN / "rypsok")


def _task_counters(task: Path) -> tuple[float, float, int, int]:
    """One thread's (ms on a CPU, ms waiting for one, voluntary, involuntary switches)."""
    ran_ns, waited_ns = (int(f) for f in (task / "schedstat").read_text().split()[:2])
    switches = {"voluntary_ctxt_switches": 0, "nonvoluntary_ctxt_switches": 0}
    for line in (task / "status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in switches:
            switches[name] = int(value)
    return (ran_ns / 1e6, waited_ns / 1e6, switches["voluntary_ctxt_switches"],
            switches["nonvoluntary_ctxt_switches"])  # fmt: skip


def process_counters(pid: int, wall_ms: float) -> dict[str, float]:
    """What a live process spent, from /proc, after `wall_ms` since its spawn; {} off Linux.

    CPU time is every thread's; the run-queue wait is the main thread's, and
    what is left of its wall time once its CPU and its wait are taken off is
    the time it was blocked. /proc keeps these across an exec, so a start
    that executes itself again (the allocator, `rypsok.entry`) counts both.
    """
    proc = Path(f"/proc/{pid}")
    try:
        fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        main_ran, main_waited, _, _ = _task_counters(proc)
        threads = [_task_counters(task) for task in (proc / "task").iterdir()]
    except (OSError, ValueError, IndexError):
        return {}
    return {
        "cpu ms": sum(t[0] for t in threads),
        "run-queue wait ms": main_waited,
        "blocked ms": max(0.0, wall_ms - main_ran - main_waited),
        "minor faults": float(fields[7]),  # minflt, the 10th field of stat
        "voluntary switches": float(sum(t[2] for t in threads)),
        "involuntary switches": float(sum(t[3] for t in threads)),
        "threads": float(len(threads)),
    }


def _env(config: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RYPSOK_")}
    if config is not None:
        env["RYPSOK_CONFIG"] = str(config)
    return env


class _Pipe:
    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("rypsok closed stdout")
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id:
                return message


def _search(request_id: int, query: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "web_search", "arguments": {"query": query}}}  # fmt: skip


def _one_start(
    config: Path,
    source: str | None = None,
    *,
    stderr: IO[bytes] | None = None,
    warm: bool = True,
    environ: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """One `rypsok serve`: spawn, initialize, tools/list, the first web_search (ms from spawn).

    `source`: another tree's src/ first on the path (a baseline). `stderr`: where
    the server's standard error goes, with `-X importtime` on. `environ`: added
    to the server's environment.
    """
    env = {**_env(config), **(environ or {})}
    if source is not None:
        env["PYTHONPATH"] = source
    if stderr is not None:
        env["PYTHONPROFILEIMPORTTIME"] = "1"
    started = time.monotonic()
    process = subprocess.Popen(
        [str(rypsok_binary()), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if stderr is None else stderr,
        env=env,
    )
    try:
        marks = _first_answers(_Pipe(process), started)
        marks.update(process_counters(process.pid, marks["first web_search"]))
        if warm:
            marks["warm call alone"] = _warm_call(_Pipe(process))
    finally:
        _close(process)
    return marks


def _first_answers(pipe: _Pipe, started: float) -> dict[str, float]:
    pipe.send(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                    "clientInfo": {"name": "rypsok-bench", "version": "0"}}}
    )  # fmt: skip
    pipe.answer(1)
    initialized = time.monotonic()
    pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    pipe.answer(2)
    listed = time.monotonic()
    pipe.send(_search(3, "cold start"))
    first = pipe.answer(3)
    searched = time.monotonic()
    if first["result"]["structuredContent"]["outcome"] != "ok":
        raise RuntimeError(f"the first search did not answer ok: {first}")
    return {
        "initialize": (initialized - started) * 1000,
        "tools/list": (listed - started) * 1000,
        "first web_search": (searched - started) * 1000,
        "first call alone": (searched - listed) * 1000,
    }


def _warm_call(pipe: _Pipe) -> float:
    """A second web_search on its own (ms), past the engines' spacing so it does not queue."""
    time.sleep(0.2)
    started = time.monotonic()
    pipe.send(_search(4, "warm call"))
    pipe.answer(4)
    return (time.monotonic() - started) * 1000


def _close(process: subprocess.Popen[bytes]) -> None:
    """End a stdio server the way a host does: close its input, wait, kill if it hangs."""
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _reference_start(binary: str, url: str) -> dict[str, float]:
    """The reference fetch server: spawn, initialize, its first `fetch` answered (ms)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [binary, "--ignore-robots-txt", "--allow-private-ips"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    pipe = _Pipe(process)
    try:
        pipe.send(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "rypsok-bench", "version": "0"}}}
        )  # fmt: skip
        pipe.answer(1)
        initialized = time.monotonic()
        pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "fetch", "arguments": {"url": url}}})  # fmt: skip
        answer = pipe.answer(2)
        fetched = time.monotonic()
        if "result" not in answer or answer["result"].get("isError"):
            raise RuntimeError(f"the reference server's first fetch failed: {answer}")
        counters = process_counters(process.pid, (fetched - started) * 1000)
    finally:
        _close(process)
    return {
        "reference initialize": (initialized - started) * 1000,
        "reference first fetch": (fetched - started) * 1000,
        **{f"reference {name}": value for name, value in counters.items()},
    }


def _wall_ms(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(command, check=True, capture_output=True, env=_env())
        times.append((time.monotonic() - started) * 1000)
    return median(times)


def _phases(config: Path, runs: int) -> list[tuple[str, float]]:
    collected: dict[str, list[float]] = {}
    for _ in range(runs):
        spawned = time.monotonic()
        out = subprocess.run(
            [sys.executable, "-m", "bench.startup_phases", str(config)],
            check=True,
            capture_output=True,
            cwd=REPO,
            env=_env(),
        ).stdout
        marks: dict[str, float] = json.loads(out)
        previous = spawned
        for name, at in marks.items():
            label = "interpreter start" if name == "main" else name
            collected.setdefault(label, []).append((at - previous) * 1000)
            previous = at
    return [(name, statistics.median(values)) for name, values in collected.items()]


def _parse_importtime(err: str) -> dict[str, float]:
    """Each module's self import time (ms) from what `-X importtime` wrote."""
    modules: dict[str, float] = {}
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
        modules[name] = modules.get(name, 0.0) + int(self_us) / 1000
    return modules


def serve_imports(config: Path, source: str | None = None) -> dict[str, float]:
    """Self import time (ms) per module of one `rypsok serve`, up to its first answered call.

    The server runs under the allocator settings the entry point would exec it
    with, so it does not exec and one process's imports are counted once.
    """
    with tempfile.TemporaryFile() as err:
        _one_start(config, source, stderr=err, warm=False, environ=ALLOCATOR)
        err.seek(0)
        return _parse_importtime(err.read().decode("utf-8", "replace"))


def group_of(module: str) -> str:
    """The group a module's time is summed in: its top-level package, rypsok's by layer."""
    parts = module.split(".")
    if parts[0] != "rypsok" or len(parts) < 3:  # rypsok.core.<name>
        return parts[0]
    if parts[2] == "engines" and len(parts) > 3:
        return "rypsok.core.engines.*"
    return ".".join(parts[:3])


def import_costs(config: Path, runs: int, source: str | None = None) -> dict[str, Any]:
    """Median total, per group and per module of `serve_imports` over `runs` starts."""
    samples = [serve_imports(config, source) for _ in range(runs)]
    totals = [sum(sample.values()) for sample in samples]
    per_group: dict[str, list[float]] = {}
    per_module: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for sample in samples:
        sums: dict[str, float] = {}
        for module, ms in sample.items():
            sums[group_of(module)] = sums.get(group_of(module), 0.0) + ms
            per_module.setdefault(module, []).append(ms)
        for group, ms in sums.items():
            per_group.setdefault(group, []).append(ms)
    for module in samples[-1]:
        counts[group_of(module)] = counts.get(group_of(module), 0) + 1
    rank = sorted(((g, statistics.median(v), counts.get(g, 0)) for g, v in per_group.items()),
                  key=lambda row: -row[1])  # fmt: skip
    modules = sorted(((m, statistics.median(v)) for m, v in per_module.items()),
                     key=lambda row: -row[1])  # fmt: skip
    return {
        "total_ms": statistics.median(totals),
        "modules": len(samples[-1]),
        "groups": rank,
        "top_modules": modules,
    }


async def run(quick: bool = False) -> dict[str, Any]:
    runs = 4 if quick else 10
    import_runs = 1 if quick else 3
    baseline = os.environ.get("BENCH_BASELINE_SRC")
    with FakeServer(fixture_routes(REPO, 5.0)) as server, tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "rypsok.toml"
        config.write_text(config_toml(server.base_url), encoding="utf-8")
        starts = _starts(config, f"{server.base_url}/w/api.php", runs)
        phases = _phases(config, 3)
        imports = import_costs(config, import_runs)
        before = import_costs(config, import_runs, baseline) if baseline else None
    medians = _report_starts(starts, runs)
    bare = _wall_ms([sys.executable, "-c", "pass"], 5)
    version = _wall_ms([str(rypsok_binary()), "--version"], 5)
    emit()
    emit(
        table(
            "Start-up phases in one process (median ms)",
            ["phase", "ms"],
            [*phases, ("(reference) python -c pass, wall", bare),
             ("(reference) rypsok --version, wall", version)],
        )
    )  # fmt: skip
    _report_imports("this tree", imports)
    if before is not None:
        _report_imports("the baseline", before)
    return {
        "runs": runs,
        "medians_ms": medians,
        "phases_ms": dict(phases),
        "python_bare_ms": bare,
        "rypsok_version_ms": version,
        "imports": _imports_json(imports),
        "baseline_imports": _imports_json(before) if before is not None else None,
    }


def byte_compile(source: Path) -> None:
    """Write the .pyc files of a source tree, as installing a wheel does.

    Without them (a checkout run with PYTHONDONTWRITEBYTECODE set) every start
    compiles rypsok's hundred modules again, 100-300 ms that no installed copy
    pays; the reference server's venv was byte-compiled by pip.
    """
    compileall.compile_dir(source, quiet=1, workers=1)


def _starts(config: Path, page: str, runs: int) -> list[dict[str, float]]:
    """`runs` rounds of starts: this tree's, the reference's and the baseline's in turn."""
    reference = os.environ.get("BENCH_REFERENCE_FETCH")
    baseline = os.environ.get("BENCH_BASELINE_SRC")
    byte_compile(REPO / "src")
    if baseline:
        byte_compile(Path(baseline))
    _one_start(config)  # a first run warms the page cache and the .pyc files
    if reference:
        _reference_start(reference, page)
    if baseline:
        _one_start(config, baseline)
    starts = []
    for _ in range(runs):
        start = _one_start(config)
        if reference:
            start.update(_reference_start(reference, page))
        if baseline:
            before = _one_start(config, baseline, warm=False)
            start.update({f"baseline {k}": v for k, v in before.items() if "alone" not in k})
        starts.append(start)
    return starts


def _is_counter(key: str) -> bool:
    return key.removeprefix("reference ").removeprefix("baseline ") in COUNTERS


def _report_starts(starts: list[dict[str, float]], runs: int) -> dict[str, float]:
    rows: list[tuple[str, float, float, float]] = []
    for key in starts[0]:
        values = [s[key] for s in starts]
        rows.append((key, statistics.median(values), min(values), max(values)))
    emit(
        table(
            f"Cold start of `rypsok serve` over stdio, from spawn (ms, {runs} runs)",
            ["until answered", "median", "min", "max"],
            [row for row in rows if not _is_counter(row[0])],
        )
    )
    medians = {row[0]: row[1] for row in rows}
    _report_counters(medians, runs)
    reference_words = (
        f", reference fetch server {medians['reference first fetch']:.0f}"
        if "reference first fetch" in medians
        else " (set BENCH_REFERENCE_FETCH to compare with the reference fetch server)"
    )
    emit(
        f"target: first web_search answered <= {TARGET_FIRST_CALL_MS:.0f} ms and <= the "
        f"reference's first answer (now {medians['first web_search']:.0f}{reference_words})"
    )
    return medians


def _report_counters(medians: Mapping[str, float], runs: int) -> None:
    """Each process's own counters at its first answer, side by side (medians)."""
    if COUNTERS[0] not in medians:
        return  # not Linux: no /proc
    columns = [("rypsok", "")] + [
        (name, f"{name} ") for name in ("reference", "baseline") if f"{name} cpu ms" in medians
    ]
    emit()
    emit(
        table(
            f"At the first answer, the server process's own counters (median of {runs}; "
            "wall = cpu + run-queue wait + blocked)",
            ["counter", *(name for name, _ in columns)],
            [(c, *(medians[prefix + c] for _, prefix in columns)) for c in COUNTERS],
        )
    )


def _report_imports(tree: str, imports: Mapping[str, Any]) -> None:
    emit()
    emit(
        table(
            f"python -X importtime of `rypsok serve` ({tree}) up to its first answered "
            f"web_search: self time per group (median; total {imports['total_ms']:.0f} ms, "
            f"{imports['modules']} modules)",
            ["group", "ms", "modules"],
            imports["groups"][:16],
        )
    )
    own = [row for row in imports["top_modules"] if row[0].startswith("rypsok")][:12]
    emit()
    emit(table(f"rypsok's costliest modules ({tree}, self ms)", ["module", "ms"], own))


def _imports_json(imports: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "total_ms": imports["total_ms"],
        "modules": imports["modules"],
        "groups": [{"group": g, "ms": ms, "modules": n} for g, ms, n in imports["groups"]],
        "top_modules": [{"module": m, "ms": ms} for m, ms in imports["top_modules"][:40]],
    }
