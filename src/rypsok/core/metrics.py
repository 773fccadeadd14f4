"""In-process metrics (REQ-OBS-002, -003, -007).

Counters and latency windows live in memory and leave the process through log
lines, engine_status and, in HTTP mode, the metrics endpoint (REQ-OBS-008,
docs/rfc-011-metrics.md): `summary()` is the content of the `metrics` log line
written at shutdown and every `logging.metrics_interval_s`.
It holds tool names, engine ids, error kinds, failure classes, reasons, counts
and milliseconds, never a query, a URL or a key. A rising refused-call count is
a defect of the interface (CLR-12): it means callers misread a tool.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from rypsok.core import limits

if TYPE_CHECKING:
    from rypsok.core.cache.entries import AnswerCache, CachedHits, EntryScope
    from rypsok.core.engines.base import RawHit

# Distinct callers counted under their own name (only for the operator's switch
# `[http] metrics_caller_labels`); later ones share OTHER_CALLERS, so an issuer
# minting subjects cannot grow the series without bound.
CALLERS_COUNTED: Final = 256
OTHER_CALLERS: Final = "(other)"
# What the answer cache does per engine request (fixed vocabulary).
CACHE_EVENTS: Final = ("hit", "miss", "store")

# Bucket bounds of the latency histograms, in ms: from a cached answer to LIM-H5.
LATENCY_BUCKETS_MS: tuple[float, ...] = (
    25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 20_000, 60_000
)  # fmt: skip


@dataclass
class Histogram:
    """Counts of observations at or below each bucket bound, their sum and count."""

    # Observations in each bucket alone (above the previous bound, at or below its
    # own), the last for those above every bound: one increment per observation,
    # found by bisection. Three are made per engine request.
    _in_bucket: list[int] = field(default_factory=lambda: [0] * (len(LATENCY_BUCKETS_MS) + 1))
    total_ms: float = 0.0
    count: int = 0

    def observe(self, elapsed_ms: float) -> None:
        self.count += 1
        self.total_ms += elapsed_ms
        # The first bound at or above the observation; one above every bound (or NaN,
        # at or below none) counts only towards +Inf.
        if elapsed_ms <= LATENCY_BUCKETS_MS[-1]:
            self._in_bucket[bisect.bisect_left(LATENCY_BUCKETS_MS, elapsed_ms)] += 1
        else:
            self._in_bucket[-1] += 1

    @property
    def buckets(self) -> list[int]:
        """Per bound, the observations at or below it (the exposition's cumulative counts)."""
        return list(itertools.accumulate(self._in_bucket[: len(LATENCY_BUCKETS_MS)]))


# Looked up before they are made: `setdefault` built a deque and a histogram that
# were thrown away on every observation but the first (three per engine request).
def _window(
    windows: dict[str, collections.deque[float]], key: str, size: int
) -> collections.deque[float]:
    window = windows.get(key)
    if window is None:
        window = windows[key] = collections.deque(maxlen=size)
    return window


def _histogram(histograms: dict[str, Histogram], key: str) -> Histogram:
    histogram = histograms.get(key)
    if histogram is None:
        histogram = histograms[key] = Histogram()
    return histogram


@dataclass
class Metrics:
    refused_calls: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )  # (tool, reason)
    call_errors: collections.Counter[str] = field(default_factory=collections.Counter)  # kind
    engine_errors: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )  # (engine, failure class)
    calls: collections.Counter[str] = field(default_factory=collections.Counter)  # tool
    engine_requests: collections.Counter[str] = field(default_factory=collections.Counter)
    call_latency_ms: dict[str, collections.deque[float]] = field(default_factory=dict)
    # Redis operations that fell back to local state (issue 12), by what fell back:
    # cache_get, cache_put, spacing, limits, returned_urls.
    shared_state_fallbacks: collections.Counter[str] = field(default_factory=collections.Counter)
    engine_latency_ms: dict[str, collections.deque[float]] = field(default_factory=dict)
    # (tool, kind) of failed calls, for the metrics endpoint's errors by tool and kind.
    call_errors_by_tool: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )
    # Latency histograms since start (cumulative counts per LATENCY_BUCKETS_MS bound).
    call_histograms: dict[str, Histogram] = field(default_factory=dict)
    engine_histograms: dict[str, Histogram] = field(default_factory=dict)
    # (engine, state entered) of every circuit transition (REQ-OBS-004).
    circuit_transitions: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )
    # Time a request waited in its engine's queue for its turn (slots and spacing).
    queue_wait_histograms: dict[str, Histogram] = field(default_factory=dict)
    # (engine, hit | miss | store) of the answer cache (issue 12).
    cache_events: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    # (caller, tool) and (caller, tool, reason): kept always, exported only when the
    # operator turns caller labels on; at most CALLERS_COUNTED names.
    calls_by_caller: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )
    refused_by_caller: collections.Counter[tuple[str, str, str]] = field(
        default_factory=collections.Counter
    )
    _callers: set[str] = field(default_factory=set)

    def refused(self, tool: str, reason: str, caller: str | None = None) -> None:
        self.refused_calls[(tool, reason)] += 1
        if caller is not None:
            self.refused_by_caller[(self._caller_label(caller), tool, reason)] += 1

    def call_finished(
        self, tool: str, elapsed_ms: float, error_kind: str | None, caller: str | None = None
    ) -> None:
        self.calls[tool] += 1
        if caller is not None:
            self.calls_by_caller[(self._caller_label(caller), tool)] += 1
        _window(self.call_latency_ms, tool, 1000).append(elapsed_ms)
        _histogram(self.call_histograms, tool).observe(elapsed_ms)
        if error_kind is not None:
            self.call_errors[error_kind] += 1
            self.call_errors_by_tool[(tool, error_kind)] += 1

    def engine_finished(self, engine: str, elapsed_ms: float, failure_class: str | None) -> None:
        """A completed engine request: answered, or failed with its class."""
        self.engine_requests[engine] += 1
        _window(self.engine_latency_ms, engine, limits.LATENCY_WINDOW).append(elapsed_ms)
        _histogram(self.engine_histograms, engine).observe(elapsed_ms)
        if failure_class is not None:
            self.engine_errors[(engine, failure_class)] += 1

    def circuit_changed(self, engine: str, state: str) -> None:
        self.circuit_transitions[(engine, state)] += 1

    def queue_waited(self, engine: str, waited_ms: float) -> None:
        _histogram(self.queue_wait_histograms, engine).observe(waited_ms)

    def cache_event(self, engine: str, event: str) -> None:
        self.cache_events[(engine, event)] += 1

    def _caller_label(self, caller: str) -> str:
        if caller in self._callers:
            return caller
        if len(self._callers) >= CALLERS_COUNTED:
            return OTHER_CALLERS
        self._callers.add(caller)
        return caller

    def median_engine_latency_ms(self, engine: str) -> int | None:
        """Median of the last LIM-S11 completed requests, or None (REQ-STATUS-001)."""
        window = self.engine_latency_ms.get(engine)
        if not window:
            return None
        return round(statistics.median(window))

    def summary(self) -> dict[str, Any]:
        """Totals since start and recent medians: the fields of the `metrics` log line."""
        return {
            "calls": dict(sorted(self.calls.items())),
            "call_errors": dict(sorted(self.call_errors.items())),
            "refused_calls": _nested(self.refused_calls.items()),
            "call_median_ms": _medians(self.call_latency_ms),
            "engine_requests": dict(sorted(self.engine_requests.items())),
            "engine_errors": _nested(self.engine_errors.items()),
            "engine_median_ms": _medians(self.engine_latency_ms),
            "circuit_transitions": _nested(self.circuit_transitions.items()),
            "cache": _nested(self.cache_events.items()),
            "shared_state_fallbacks": dict(sorted(self.shared_state_fallbacks.items())),
        }


class CountedCache:
    """An answer cache whose hits, misses and stores are counted by engine."""

    def __init__(self, cache: AnswerCache, metrics: Metrics) -> None:
        self._cache = cache
        self._metrics = metrics

    async def get(self, scope: EntryScope, *, budget_s: float) -> CachedHits | None:
        found = await self._cache.get(scope, budget_s=budget_s)
        self._metrics.cache_event(scope.engine, "miss" if found is None else "hit")
        return found

    async def put(self, scope: EntryScope, hits: tuple[RawHit, ...], *, budget_s: float) -> None:
        await self._cache.put(scope, hits, budget_s=budget_s)
        self._metrics.cache_event(scope.engine, "store")


def _nested(counts: Iterable[tuple[tuple[str, str], int]]) -> dict[str, dict[str, int]]:
    """{(a, b): n} as {a: {b: n}}: JSON keys stay plain names."""
    out: dict[str, dict[str, int]] = {}
    for (outer, inner), count in sorted(counts):
        if count:
            out.setdefault(outer, {})[inner] = count
    return out


def _medians(windows: Mapping[str, collections.deque[float]]) -> dict[str, int]:
    return {name: round(statistics.median(w)) for name, w in sorted(windows.items()) if w}
