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

Medians over the runs. Then where the time goes: the phases of start-up in
one child (`bench.startup_phases`), `rypsok --version` and a bare
interpreter for reference, and `python -X importtime` of the modules `serve`
imports, summed per top-level package.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import config_toml, emit, fixture_routes, median, table
from bench.fakeserver import REPO, FakeServer
from bench.stdio_client import PROTOCOL

BIN = Path(sys.executable).parent
# Issue 14's target: the first tool call answered within this, and no later than
# the reference fetch server's first answer in the same run (printed, never asserted).
TARGET_FIRST_CALL_MS = 500.0
SERVE_IMPORTS = "import rypsok.cli, rypsok.core.services, rypsok.mcp.stdio, mcp.server.stdio"


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


def _one_start(config: Path, source: str | None = None) -> dict[str, float]:
    env = _env(config)
    if source is not None:  # another tree's src/ first on the path: a baseline
        env["PYTHONPATH"] = source
    started = time.monotonic()
    process = subprocess.Popen(
        [str(BIN / "rypsok"), "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    pipe = _Pipe(process)
    try:
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
        time.sleep(0.2)  # past the engines' spacing: the next call does not queue
        warm_start = time.monotonic()
        pipe.send(_search(4, "warm call"))
        pipe.answer(4)
        warm = time.monotonic() - warm_start
    finally:
        _close(process)
    return {
        "initialize": (initialized - started) * 1000,
        "tools/list": (listed - started) * 1000,
        "first web_search": (searched - started) * 1000,
        "first call alone": (searched - listed) * 1000,
        "warm call alone": warm * 1000,
    }


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
    finally:
        _close(process)
    return {
        "reference initialize": (initialized - started) * 1000,
        "reference first fetch": (fetched - started) * 1000,
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


def _import_costs(runs: int) -> tuple[float, list[tuple[str, float, int]]]:
    """Median total import time and the top packages by summed self time (ms, modules)."""
    totals: list[float] = []
    per_package: dict[str, list[float]] = {}
    modules: dict[str, int] = {}
    for _ in range(runs):
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", SERVE_IMPORTS],
            check=True,
            capture_output=True,
            text=True,
            env=_env(),
        ).stderr
        sums: dict[str, float] = {}
        counts: dict[str, int] = {}
        for line in err.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            self_us, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
            package = name.split(".")[0]
            sums[package] = sums.get(package, 0.0) + int(self_us) / 1000
            counts[package] = counts.get(package, 0) + 1
        totals.append(sum(sums.values()))
        for package, ms in sums.items():
            per_package.setdefault(package, []).append(ms)
        modules = counts
    ranked = sorted(
        ((p, statistics.median(v), modules.get(p, 0)) for p, v in per_package.items()),
        key=lambda row: -row[1],
    )
    return statistics.median(totals), ranked


async def run(quick: bool = False) -> dict[str, Any]:
    runs = 4 if quick else 10
    with FakeServer(fixture_routes(REPO, 5.0)) as server, tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "rypsok.toml"
        config.write_text(config_toml(server.base_url), encoding="utf-8")
        reference = os.environ.get("BENCH_REFERENCE_FETCH")
        baseline = os.environ.get("BENCH_BASELINE_SRC")
        page = f"{server.base_url}/w/api.php"
        _one_start(config)  # a first run warms the page cache and the .pyc files
        if reference:
            _reference_start(reference, page)
        starts = []
        for _ in range(runs):
            start = _one_start(config)
            if reference:
                start.update(_reference_start(reference, page))
            if baseline:
                before = _one_start(config, baseline)
                start.update({f"baseline {k}": v for k, v in before.items() if "alone" not in k})
            starts.append(start)
        phases = _phases(config, 3)
    keys = list(starts[0])
    rows = []
    for key in keys:
        values = [s[key] for s in starts]
        rows.append([key, statistics.median(values), min(values), max(values)])
    emit(
        table(
            f"Cold start of `rypsok serve` over stdio, from spawn (ms, {runs} runs)",
            ["until answered", "median", "min", "max"],
            rows,
        )
    )
    medians = {row[0]: row[1] for row in rows}
    reference_words = (
        f", reference fetch server {medians['reference first fetch']:.0f}"
        if "reference first fetch" in medians
        else " (set BENCH_REFERENCE_FETCH to compare with the reference fetch server)"
    )
    emit(
        f"target: first web_search answered <= {TARGET_FIRST_CALL_MS:.0f} ms and <= the "
        f"reference's first answer (now {medians['first web_search']:.0f}{reference_words})"
    )
    bare = _wall_ms([sys.executable, "-c", "pass"], 5)
    version = _wall_ms([str(BIN / "rypsok"), "--version"], 5)
    total_imports, packages = _import_costs(1 if quick else 3)
    emit()
    emit(
        table(
            "Start-up phases in one process (median ms)",
            ["phase", "ms"],
            [*phases, ("(reference) python -c pass, wall", bare),
             ("(reference) rypsok --version, wall", version)],
        )
    )  # fmt: skip
    emit()
    top = packages[:12]
    emit(
        table(
            f"python -X importtime of the serve imports: self time per top-level package "
            f"(median of runs; total {total_imports:.0f} ms)",
            ["package", "ms", "modules"],
            top,
        )
    )
    return {
        "runs": runs,
        "medians_ms": {row[0]: row[1] for row in rows},
        "phases_ms": dict(phases),
        "python_bare_ms": bare,
        "rypsok_version_ms": version,
        "imports_total_ms": total_imports,
        "imports_by_package_ms": [{"package": p, "ms": ms, "modules": n} for p, ms, n in packages],
    }
