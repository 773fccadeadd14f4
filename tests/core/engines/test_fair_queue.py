"""Engine queues serve waiting callers in turn: round robin across callers, FIFO within one."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel
import pytest

from rypsok.core import limits
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
    slots.release("a")
    with anyio.fail_after(1):
        await slots.acquire("c")  # the slot b gave up is free


@pytest.mark.req("REQ-SEC-019", "REQ-AGG-005")
async def test_the_process_wide_slots_serve_callers_in_turn() -> None:
    """REQ-SEC-019: LIM-C1's slots, shared by all engines, are handed out in turn as well."""
    order = await _served_order([("a", 4), ("b", 2)], process_wide=True)
    assert order == ["a", "b", "a", "b", "a", "a"]


@pytest.mark.req("REQ-SEC-019")
async def test_a_caller_alone_takes_the_whole_pool_and_a_newcomer_is_served_fewest_held_first() -> (
    None
):
    """REQ-SEC-019: no cap by default (LIM-C10..C12); freed slots go to whoever holds fewest.

    a takes all four slots while nobody else waits, then queues two more; b
    queues one after a's. The first two freed slots go to b even though a
    queued first, because b holds fewer; once they hold equally, the round
    decides.
    """
    assert limits.FETCHES_PER_CALLER == limits.FETCHES_IN_FLIGHT
    assert limits.ENGINE_REQUESTS_PER_CALLER == limits.ENGINE_REQUESTS_IN_FLIGHT
    slots = FairSlots(4)
    with anyio.fail_after(1):
        for _ in range(4):
            await slots.acquire("a")
    got: list[str] = []

    async def take(caller: str) -> None:
        await slots.acquire(caller)
        got.append(caller)

    async with anyio.create_task_group() as group:
        for caller in ("a", "a", "b", "b"):
            group.start_soon(take, caller)
            await anyio.sleep(0.01)
        for _ in range(3):
            slots.release("a")
            await anyio.sleep(0.01)
        assert got == ["b", "b", "a"]
        slots.release("b")
        await anyio.sleep(0.01)
    assert got == ["b", "b", "a", "a"]
    assert slots.held_by("a") == 3 and slots.held_by("b") == 1


@pytest.mark.req("REQ-SEC-019")
async def test_a_caller_at_its_cap_waits_while_the_kept_slots_serve_another() -> None:
    """REQ-SEC-019: with 4 slots and an operator's cap of 3, a's fourth waits; b is served at once.

    When one of a's slots frees, a's waiter gets it (a is below its share
    again), and a release while a is at its share hands nothing to a.
    """
    slots = FairSlots(4, per_caller=3)
    for _ in range(3):
        await slots.acquire("a")
    got: list[str] = []

    async def take(caller: str) -> None:
        await slots.acquire(caller)
        got.append(caller)

    async with anyio.create_task_group() as group:
        group.start_soon(take, "a")
        await anyio.sleep(0.01)
        assert got == [] and slots.held_by("a") == 3  # a slot is free, but not for a
        with anyio.fail_after(1):
            await take("b")
        assert got == ["b"]
        slots.release("a")
        await anyio.sleep(0.01)
    assert got == ["b", "a"]
    assert slots.held_by("a") == 3 and slots.held_by("b") == 1


@pytest.mark.req("REQ-SEC-019")
async def test_without_a_share_one_caller_uses_every_slot() -> None:
    """REQ-SEC-019: stdio's one caller (no share set) takes the whole pool."""
    slots = FairSlots(4)
    with anyio.fail_after(1):
        for _ in range(4):
            await slots.acquire("local")
    assert slots.held_by("local") == 4


@pytest.mark.req("REQ-SEC-019")
async def test_a_waiter_cancelled_after_its_hand_over_passes_the_slot_on() -> None:
    """REQ-SEC-019: a slot handed to a waiter that is cancelled at once goes to the next one."""
    slots = FairSlots(1)
    await slots.acquire("a")
    got: list[str] = []

    doomed = anyio.CancelScope()
    served = anyio.Event()

    async def take(caller: str, scope: anyio.CancelScope) -> None:
        with scope:
            await slots.acquire(caller)
            got.append(caller)
            served.set()

    async with anyio.create_task_group() as group:
        group.start_soon(take, "b", doomed)
        await anyio.sleep(0.01)
        group.start_soon(take, "c", anyio.CancelScope())
        await anyio.sleep(0.01)
        doomed.cancel()  # b is cancelled, and before it runs again ...
        slots.release("a")  # ... a's slot is handed to it
        with anyio.fail_after(1):
            await served.wait()
    assert got == ["c"] and slots.held_by("c") == 1 and slots.held_by("b") == 0
