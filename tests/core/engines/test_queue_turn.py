"""A turn's early release: both slots back once, on every path, spacing untouched."""

from __future__ import annotations

import time

import anyio
import pytest

from rypsok.core.engines.base import EngineFailure, FailureClass
from rypsok.core.engines.queue import SPACING_MARGIN_MS, EngineQueue


def _queue(interval_ms: int, process: anyio.CapacityLimiter) -> EngineQueue:
    return EngineQueue(min_interval_ms=interval_ms, max_concurrency=1, process_slots=process)


async def _next_turn_taken_within(q: EngineQueue, timeout_s: float) -> bool:
    """Whether another request gets this engine's turn within `timeout_s`."""
    with anyio.move_on_after(timeout_s):
        async with q.turn(time.monotonic() + 5.0):
            return True
    return False


@pytest.mark.req("REQ-AGG-005")
async def test_a_released_turn_frees_both_slots_at_once_and_only_once() -> None:
    """REQ-AGG-005: release gives the LIM-C2 and LIM-C1 slots back; again, or at exit, nothing.

    A second release or the block's end must not free a slot another request
    now holds, or the caps would stretch past LIM-C1 and LIM-C2.
    """
    process = anyio.CapacityLimiter(1)
    q = _queue(0, process)
    async with q.turn(time.monotonic() + 5.0) as held:
        assert process.borrowed_tokens == 1
        assert not await _next_turn_taken_within(q, 0.05)  # held: the engine's one slot
        held.release()
        held.release()
        assert held.released
        assert process.borrowed_tokens == 0
        async with q.turn(time.monotonic() + 5.0):  # taken while the first block still runs
            assert process.borrowed_tokens == 1
    assert process.borrowed_tokens == 0
    assert await _next_turn_taken_within(q, 0.05)


@pytest.mark.req("REQ-AGG-005", "REQ-AGG-002")
async def test_a_turn_goes_back_on_a_failure_and_on_a_cancel_released_or_not() -> None:
    """REQ-AGG-005, REQ-AGG-002: an error or a cancel in the block frees the slots once."""
    process = anyio.CapacityLimiter(1)
    q = _queue(0, process)
    for release_first in (False, True):
        with pytest.raises(EngineFailure):
            async with q.turn(time.monotonic() + 5.0) as held:
                if release_first:
                    held.release()
                raise EngineFailure(FailureClass.TIMEOUT)
        assert process.borrowed_tokens == 0
        with anyio.move_on_after(0.01):
            async with q.turn(time.monotonic() + 5.0) as held:
                if release_first:
                    held.release()
                await anyio.sleep(1.0)
        assert process.borrowed_tokens == 0
    assert await _next_turn_taken_within(q, 0.05)


@pytest.mark.req("REQ-CMP-002")
async def test_an_early_release_does_not_shorten_the_spacing_between_starts() -> None:
    """REQ-CMP-002: the next start still waits one spacing after this one, released or not."""
    q = _queue(100, anyio.CapacityLimiter(4))
    async with q.turn(time.monotonic() + 5.0) as held:
        first = time.monotonic()
        held.release()
    async with q.turn(time.monotonic() + 5.0):
        second = time.monotonic()
    assert second - first >= (100 + SPACING_MARGIN_MS) / 1000.0 - 0.005
