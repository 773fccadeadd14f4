"""`python -m bench [NAME ...] [--quick] [--json PATH]`: run benchmarks, print tables.

NAME is one of: overhead, throughput, coldstart, profile, fetch, http, cache, extraction, e2e,
enginepath.
Without a name all of them run in that order (`make bench`, about three to four minutes).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

import anyio

from bench.common import emit, load_average, machine, production_logging

BENCHMARKS = (
    "overhead",
    "throughput",
    "coldstart",
    "profile",
    "fetch",
    "http",
    "cache",
    "extraction",
    "e2e",
    "enginepath",
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(BENCHMARKS))
    parser.add_argument("--quick", action="store_true", help="fewer calls: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON")
    args = parser.parse_args(argv)
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r}; choose from {', '.join(BENCHMARKS)}")
    info = machine()
    emit(
        f"rypsok benchmarks on {info['cpus']} CPU(s), {info['cpu_model']}, "
        f"{info['implementation']} {info['python']}, {info['platform']}"
    )
    # Log exactly as `rypsok serve` does (JSON lines at INFO), into /dev/null.
    production_logging()
    results: dict[str, Any] = {"machine": info}
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        emit()
        load_before = load_average()
        emit(f"== {name} == (load average before: {load_before})")
        started = time.monotonic()
        results[name] = anyio.run(module.run, args.quick)
        results[name]["load_average_before"] = load_before
        emit(f"({name}: {time.monotonic() - started:.1f} s; load average after: {load_average()})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
