"""The admission queue's spacing on each event loop `rypsok serve` can run on.

uvloop's timers count whole milliseconds (a delay is rounded to the nearest
one and measured from a millisecond clock), so a sleep can end up to about
1.5 ms before the time asked for; the queue checks the time again after
sleeping, so a turn never starts before its reserved start on either loop.
"""

from __future__ import annotations

import time

import pytest

from .test_queue import queue

EVERY_LOOP = pytest.mark.asyncio(loop_factories=["asyncio", "uvloop"])


@EVERY_LOOP
@pytest.mark.req("REQ-CMP-002", "REQ-TEST-016", "REQ-RUST-002")
@pytest.mark.parametrize("interval_ms", [10, 37])
async def test_no_turn_starts_before_its_reserved_start_on_each_loop(interval_ms: int) -> None:
    """REQ-CMP-002: turns one after another each begin at or after the queue's next start.

    The reserved start is read from the queue before each turn; a loaded machine
    can only make a turn later, so the earliest margin seen must not be negative.
    """
    q = queue(interval_ms, 1)
    deadline = time.monotonic() + 30
    early_by: list[float] = []
    for _ in range(12):
        due = q._next_start
        async with q.turn(deadline):
            early_by.append(due - time.monotonic())
    assert max(early_by) <= 0, early_by
