"""Engine queues serve waiting callers in turn: round robin across callers, FIFO within one."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel
import pytest

from rypsok.core.callers import FairSlots, current_caller
from rypsok.core.engines.queue import EngineQueue


async def _served_order(bursts: list[tuple[str, int]], process_wide: bool = False) -> list[str]:
    """Callers' requests through one engine with one slot, in the order they got it.

    With `process_wide` the one slot is LIM-C1's (shared by all engines), not
    the engine's own.
    """
    if process_wide:
        queue = EngineQueue(min_interval_ms=0, max_concurrency=50, process_slots=FairSlots(1))
    else:
        queue = EngineQueue(
            min_interval_ms=0, max_concurrency=1, process_slots=anyio.CapacityLimiter(10)
        )
    served: list[str] = []
    release = anyio.Event()

    async def request(caller: str, first: bool) -> None:
        current_caller.set(caller)
        async with queue.turn(time.monotonic() + 30):
            served.append(caller)
            if first:
                await release.wait()  # holds the only slot until everyone queued
            else:
                await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(request, "holder", True)
        await anyio.sleep(0.01)
        for caller, count in bursts:
            for _ in range(count):
                group.start_soon(request, caller, False)
                await anyio.sleep(0.001)  # queued in this order
        await anyio.sleep(0.05)
        release.set()
    return served[1:]


@pytest.mark.req("REQ-SEC-019", "REQ-AGG-005")
async def test_one_callers_burst_delays_another_by_one_turn_per_waiting_caller() -> None:
    """REQ-SEC-019: a's 6 waiting requests and b's one: b goes second, not seventh."""
    order = await _served_order([("a", 6), ("b", 1)])
    assert order == ["a", "b", "a", "a", "a", "a", "a"]


@pytest.mark.req("REQ-SEC-019", "REQ-AGG-005")
async def test_three_callers_alternate_and_one_caller_stays_fifo() -> None:
    """REQ-SEC-019: with three waiting callers each gets every third turn; alone it is FIFO."""
    order = await _served_order([("a", 3), ("b", 3), ("c", 3)])
    assert order == ["a", "b", "c"] * 3
    assert await _served_order([("a", 4)]) == ["a"] * 4


@pytest.mark.req("REQ-SEC-019")
async def test_a_cancelled_waiter_hands_its_slot_on() -> None:
    """REQ-SEC-019: a waiter cancelled while waiting leaves no slot lost."""
    slots = FairSlots(1)
    await slots.acquire("a")
    with anyio.move_on_after(0.01):
        await slots.acquire("b")
    slots.release()
    with anyio.fail_after(1):
        await slots.acquire("c")  # the slot b gave up is free


@pytest.mark.req("REQ-SEC-019", "REQ-AGG-005")
async def test_the_process_wide_slots_serve_callers_in_turn() -> None:
    """REQ-SEC-019: LIM-C1's slots, shared by all engines, are handed out in turn as well."""
    order = await _served_order([("a", 4), ("b", 2)], process_wide=True)
    assert order == ["a", "b", "a", "b", "a", "a"]
