"""In-process metrics (REQ-OBS-002, -003, -007).

Counters and latency windows live in memory and leave the process only through
log lines and engine_status (REQ-OBS-008). A rising refused-call count is a
defect of the interface (CLR-12): it means callers misread a tool.
"""

from __future__ import annotations

import collections
import statistics
from dataclasses import dataclass, field

from rypsok.core import limits


@dataclass
class Metrics:
    refused_calls: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )  # (tool, reason)
    call_errors: collections.Counter[str] = field(default_factory=collections.Counter)  # kind
    engine_errors: collections.Counter[tuple[str, str]] = field(
        default_factory=collections.Counter
    )  # (engine, failure class)
    call_latency_ms: dict[str, collections.deque[float]] = field(default_factory=dict)
    # Redis operations that fell back to local state (issue 12), by what fell back:
    # cache_get, cache_put, spacing, limits, returned_urls.
    shared_state_fallbacks: collections.Counter[str] = field(default_factory=collections.Counter)
    engine_latency_ms: dict[str, collections.deque[float]] = field(default_factory=dict)

    def refused(self, tool: str, reason: str) -> None:
        self.refused_calls[(tool, reason)] += 1

    def call_finished(self, tool: str, elapsed_ms: float, error_kind: str | None) -> None:
        window = self.call_latency_ms.setdefault(tool, collections.deque(maxlen=1000))
        window.append(elapsed_ms)
        if error_kind is not None:
            self.call_errors[error_kind] += 1

    def engine_finished(self, engine: str, elapsed_ms: float, failure_class: str | None) -> None:
        """A completed engine request: answered, or failed with its class."""
        window = self.engine_latency_ms.setdefault(
            engine, collections.deque(maxlen=limits.LATENCY_WINDOW)
        )
        window.append(elapsed_ms)
        if failure_class is not None:
            self.engine_errors[(engine, failure_class)] += 1

    def median_engine_latency_ms(self, engine: str) -> int | None:
        """Median of the last LIM-S11 completed requests, or None (REQ-STATUS-001)."""
        window = self.engine_latency_ms.get(engine)
        if not window:
            return None
        return round(statistics.median(window))
