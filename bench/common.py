"""What every benchmark shares: statistics, tables, configuration, logging, the machine."""

from __future__ import annotations

import logging
import math
import os
import platform
import statistics
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rypsok.core import logs
from rypsok.core.config import Config, parse_config
from rypsok.core.engines import registry

# The real engines' paths on the fake server, and their recorded answers
# (tests/fixtures/engines/<id>/ok.*, read as data).
ENGINE_PATHS = {
    "wikipedia": "/w/api.php",
    "wikidata": "/wikidata/w/api.php",
    "arxiv": "/api/query",
    "github": "/search/repositories",
    "hackernews": "/api/v1/search",
}
OK_FIXTURES = {
    "wikipedia": ("ok.json", "application/json; charset=utf-8"),
    "wikidata": ("ok.json", "application/json; charset=utf-8"),
    "arxiv": ("ok.xml", "application/atom+xml; charset=utf-8"),
    "github": ("ok.json", "application/json; charset=utf-8"),
    "hackernews": ("ok.json", "application/json; charset=utf-8"),
}
# LIM-C6 at its operator ceiling: the default 60 per minute would refuse most
# benchmark calls. 6,000 per minute is also the most any configuration allows.
CALLS_PER_MINUTE = 6_000


def fixture_routes(repo: Any, delay_ms: float) -> dict[str, dict[str, Any]]:
    """Fake-server routes answering each real engine with its recorded `ok` answer."""
    fixtures = repo / "tests" / "fixtures" / "engines"
    return {
        path: {
            "delay_ms": delay_ms,
            "file": str(fixtures / engine / OK_FIXTURES[engine][0]),
            "content_type": OK_FIXTURES[engine][1],
        }
        for engine, path in ENGINE_PATHS.items()
    }


# Where engines point when a benchmark does not query them: the discard port on
# loopback, which nothing listens on. No benchmark ever reaches another host.
UNUSED_BASE_URL = "http://127.0.0.1:9"


def _engines(base_url: str | None) -> dict[str, dict[str, Any]]:
    """The recorded engines at the fake server; every other registered engine disabled."""
    known = registry.known_ids()
    base = base_url or UNUSED_BASE_URL
    engines: dict[str, dict[str, Any]] = {
        e: {"endpoint": f"{base}{p}"} for e, p in ENGINE_PATHS.items() if e in known
    }
    engines.update({e: {"enabled": False} for e in sorted(known - ENGINE_PATHS.keys())})
    return engines


def bench_config(base_url: str | None = None, **sections: Mapping[str, Any]) -> Config:
    """A checked configuration: loopback allowed, LIM-C6 at 6,000/min, engines local only."""
    data: dict[str, Any] = {
        "schema_version": 1,
        "egress": {"allow": ["127.0.0.1/32"]},
        "limits": {"web_search_per_minute": CALLS_PER_MINUTE},
        "engines": _engines(base_url),
    }
    for name, section in sections.items():
        data[name] = {**data.get(name, {}), **section}
    return parse_config(data, known_engines=registry.known_ids())


def config_toml(base_url: str) -> str:
    lines = [
        "schema_version = 1",
        "[egress]",
        'allow = ["127.0.0.1/32"]',
        "[limits]",
        f"web_search_per_minute = {CALLS_PER_MINUTE}",
    ]
    for engine, settings in _engines(base_url).items():
        lines.append(f"[engines.{engine}]")
        lines += [
            f"{key} = " + (f'"{value}"' if isinstance(value, str) else str(value).lower())
            for key, value in settings.items()
        ]
    return "\n".join(lines) + "\n"


def production_logging() -> None:
    """Log as `rypsok serve` does (JSON lines at INFO), into /dev/null: the cost counts."""
    logs.configure()
    sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (process lifetime)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(sink)


# -- statistics ------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), nearest-rank on the sorted values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": percentile(values, 50),
        "p95": percentile(values, 95),
        "p99": percentile(values, 99),
        "max": max(values) if values else float("nan"),
        "mean": statistics.fmean(values) if values else float("nan"),
    }


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# -- output ----------------------------------------------------------------------------------


def table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A compact fixed-width table; floats with 2 decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.2f}"
        return str(value)

    cells = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(header)]
    lines = [title]
    lines.append("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def emit(text: str = "") -> None:
    print(text, flush=True)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages: other work on the machine skews wall times."""
    try:
        with open("/proc/loadavg", encoding="ascii") as load:
            return " ".join(load.read().split()[:3])
    except OSError:
        return "unknown"


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cpus": str(os.cpu_count()),
        "cpu_model": model,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(terse=True),
        "executable": sys.executable,
    }
