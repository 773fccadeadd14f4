"""Invocation limits per tool per minute (REQ-MCP-010, LIM-C6…C8).

A sliding window of the admitted calls of the last 60 s, kept per (caller,
tool): stdio has one caller, HTTP mode one per authenticated key
(REQ-SEC-019). Every admitted call counts, valid or not, so a caller cannot
probe the validator for free; a refused call does not extend the window, so a
caller that waits `retry_after_ms` is admitted again.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Mapping

WINDOW_S = 60.0


class InvocationLimiter:
    def __init__(
        self, per_minute: Mapping[str, int], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._per_minute = dict(per_minute)
        self._clock = clock
        self._admitted: dict[tuple[str, str], collections.deque[float]] = {}

    def admit(self, tool: str, caller: str) -> int | None:
        """None when the call may run, else the milliseconds until it may."""
        limit = self._per_minute.get(tool)
        if limit is None:
            return None
        now = self._clock()
        window = self._admitted.setdefault((caller, tool), collections.deque())
        while window and now - window[0] >= WINDOW_S:
            window.popleft()
        if len(window) >= limit:
            return max(1, int((window[0] + WINDOW_S - now) * 1000) + 1)
        window.append(now)
        return None
