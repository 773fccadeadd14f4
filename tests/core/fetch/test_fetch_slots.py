"""The fetch slots' one queue for LIM-C3 and LIM-C4: who is admitted, and what a waiter holds.

Each test drives `FetchSlots` directly with hops that stay inside their slot
until the test lets them go, and looks at the state once every task is
blocked (`wait_all_tasks_blocked`), so the order is decided by the slots
alone, not by timing. The session-level behaviour is in
test_fetch_concurrency.py.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel
import pytest

from rypsok.core.callers import current_caller
from rypsok.core.fetch.slots import FetchSlots


@dataclass
class Hop:
    """One fetch of `caller` to `host` (then a second hop to `then`, if named)."""

    caller: str
    host: str
    then: str | None = None
    state: str = "waiting"  # waiting, in hop, extracting, done, cancelled
    at: str = ""  # the host of the hop it waits for or is in
    go: anyio.Event = field(default_factory=anyio.Event)  # ends the current stage
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def advance(self) -> None:
        self.go.set()
        self.go = anyio.Event()


async def run_hop(slots: FetchSlots, hop: Hop, admitted: list[Hop]) -> None:
    current_caller.set(hop.caller)
    with hop.scope:
        async with slots.for_call() as held:
            for host in (hop.host, hop.then):
                if host is None:
                    continue
                hop.state, hop.at = "waiting", host
                async with held.hop(host):
                    hop.state = "in hop"
                    admitted.append(hop)
                    await hop.go.wait()
            hop.state = "extracting"  # the LIM-C3 slot is still held
            await hop.go.wait()
        hop.state = "done"
        return
    hop.state = "cancelled"


async def settled() -> None:
    await anyio.wait_all_tasks_blocked()


async def finish(hop: Hop) -> None:
    """Let a hop in its hop go through its extraction to its end."""
    for _ in range(2):
        hop.advance()
        await settled()


@pytest.mark.req("REQ-SEC-012")
async def test_hops_to_a_busy_host_wait_holding_no_fetch_slot() -> None:
    """REQ-SEC-012: eight hops to one host (LIM-C4 = 2) take two LIM-C3 slots, not eight."""
    slots = FetchSlots(8, 2)
    admitted: list[Hop] = []
    busy = [Hop("local", "slow.example") for _ in range(8)]
    other = Hop("local", "other.example")
    async with anyio.create_task_group() as group:
        for hop in busy:
            group.start_soon(run_hop, slots, hop, admitted)
        await settled()
        group.start_soon(run_hop, slots, other, admitted)
        await settled()
        assert other.state == "in hop"  # admitted at once, behind six waiting hops
        assert slots.in_flight.held_by("local") == 3
        assert slots.held_of_host("slow.example") == 2
        assert slots.waiting_hops() == 6
        group.cancel_scope.cancel()


@pytest.mark.req("REQ-SEC-019")
async def test_a_freed_slot_goes_to_the_caller_holding_fewest() -> None:
    """REQ-SEC-019: a holds both LIM-C3 slots and queues three more; b's one hop goes next."""
    slots = FetchSlots(2, 2)
    admitted: list[Hop] = []
    first = [Hop("a", "x.example"), Hop("a", "y.example")]
    queued = [Hop("a", "x.example") for _ in range(3)] + [Hop("b", "x.example")]
    async with anyio.create_task_group() as group:
        for hop in first:
            group.start_soon(run_hop, slots, hop, admitted)
        await settled()
        for hop in queued:
            group.start_soon(run_hop, slots, hop, admitted)
            await settled()
        for hop in first:
            hop.advance()  # out of the hop, extracting: LIM-C3 still held
        await settled()
        assert admitted == first
        first[1].advance()  # y's call ends: one LIM-C3 slot frees
        await settled()
        assert admitted[2:] == [queued[3]]  # b, not a's first queued hop
        first[0].advance()
        await settled()
        assert admitted[3:] == [queued[0]]  # then a, first come first served
        group.cancel_scope.cancel()


@pytest.mark.req("REQ-SEC-019")
async def test_an_operators_caps_keep_slots_for_others() -> None:
    """REQ-SEC-019: LIM-C10 = 4 of 8 and LIM-C12 = 1 of 2: a waits at its caps, b does not."""
    slots = FetchSlots(8, 2)
    slots.divide_between_callers(4)
    admitted: list[Hop] = []
    a_hops = [Hop("a", "x.example"), Hop("a", "x.example")]
    a_hops += [Hop("a", f"h{n}.example") for n in range(4)]
    b_hop = Hop("b", "x.example")
    async with anyio.create_task_group() as group:
        for hop in a_hops:
            group.start_soon(run_hop, slots, hop, admitted)
        await settled()
        assert slots.host_share() == 1
        assert [h.state for h in a_hops] == ["in hop", "waiting", "in hop", "in hop", "in hop",
                                             "waiting"]  # fmt: skip
        assert slots.in_flight.held_by("a") == 4 and slots.in_flight.free == 4
        group.start_soon(run_hop, slots, b_hop, admitted)
        await settled()
        assert b_hop.state == "in hop"
        group.cancel_scope.cancel()


@pytest.mark.req("REQ-SEC-012")
async def test_a_hop_cancelled_as_it_is_admitted_passes_its_slots_on() -> None:
    """REQ-SEC-012: slots handed to a hop whose call was just cancelled go to the next one."""
    slots = FetchSlots(1, 1)
    admitted: list[Hop] = []
    holder, cancelled, next_hop = (Hop("local", "x.example") for _ in range(3))
    async with anyio.create_task_group() as group:
        for hop in (holder, cancelled, next_hop):
            group.start_soon(run_hop, slots, hop, admitted)
            await settled()
        holder.advance()
        await settled()
        holder.advance()  # the holder's call ends: its slots go to the next hop...
        await anyio.lowlevel.checkpoint()  # the holder has run; the hop it admitted has not
        assert holder.state == "done" and slots.waiting_hops() == 1  # only next_hop waits
        cancelled.scope.cancel()  # ... whose call is cancelled before it resumes
        await settled()
        assert (cancelled.state, next_hop.state) == ("cancelled", "in hop")
        await finish(next_hop)
    assert slots.in_flight.free == 1 and slots.held_of_host("x.example") == 0
    assert slots.waiting_hops() == 0


@pytest.mark.req("REQ-SEC-012", "REQ-FETCH-006")
async def test_a_redirect_keeps_its_fetch_slot_only_when_its_next_host_has_room() -> None:
    """REQ-SEC-012, REQ-FETCH-006: the second hop of a call waits holding nothing if it must."""
    slots = FetchSlots(2, 1)
    admitted: list[Hop] = []
    redirected = Hop("local", "x.example", then="x.example")
    rival = Hop("local", "x.example")
    third = Hop("local", "z.example")
    async with anyio.create_task_group() as group:
        group.start_soon(run_hop, slots, redirected, admitted)
        await settled()
        group.start_soon(run_hop, slots, rival, admitted)
        await settled()
        redirected.advance()  # first hop done: x's only slot goes to the rival waiting for it
        await settled()
        assert (redirected.state, rival.state) == ("waiting", "in hop")
        assert slots.in_flight.held_by("local") == 1  # the redirected call gave LIM-C3 back
        group.start_soon(run_hop, slots, third, admitted)
        await settled()
        assert third.state == "in hop"  # ... so another host's fetch is not held up
        rival.advance()
        await settled()
        assert redirected.state == "waiting"  # x has room, LIM-C3 not yet: still holding nothing
        await finish(third)
        assert redirected.state == "in hop"
        rival.advance()
        redirected.advance()
        await settled()
        assert redirected.state == "extracting"
        group.cancel_scope.cancel()


@pytest.mark.req("REQ-SEC-012", "REQ-SEC-019")
@pytest.mark.parametrize("seed", range(4))
async def test_random_traffic_never_exceeds_a_limit_nor_leaves_a_usable_slot_idle(
    seed: int,
) -> None:
    """REQ-SEC-012, REQ-SEC-019: 40 calls of three callers to four hosts, advanced at random.

    After every step: LIM-C3, LIM-C4 and the callers' caps hold (counted from
    the hops' own states, not the slots' counters), and no hop waits that could
    proceed (work-conserving). Every call ends.
    """
    rng = random.Random(seed)  # noqa: S311 (a reproducible workload, not a secret)
    in_flight, per_host, per_caller = 5, 2, 4 if seed % 2 else 5
    slots = FetchSlots(in_flight, per_host)
    slots.divide_between_callers(per_caller)
    host_cap = slots.host_share()
    admitted: list[Hop] = []
    hosts = [f"h{n}.example" for n in range(4)]
    calls = [
        Hop(rng.choice("abc"), rng.choice(hosts), rng.choice([None, None, *hosts]))
        for _ in range(40)
    ]

    def check() -> None:
        held = [h for h in calls if h.state in {"in hop", "extracting"}]
        assert len(held) <= in_flight
        for caller in "abc":
            assert sum(h.caller == caller for h in held) <= per_caller
        for host in hosts:
            in_host = [h for h in calls if h.state == "in hop" and h.at == host]
            assert len(in_host) <= per_host
            assert all(sum(h.caller == c for h in in_host) <= host_cap for c in "abc")
        for hop in (h for h in calls if h.state == "waiting"):
            in_host = [h for h in calls if h.state == "in hop" and h.at == hop.at]
            assert (
                len(held) == in_flight
                or sum(h.caller == hop.caller for h in held) == per_caller
                or len(in_host) == per_host
                or sum(h.caller == hop.caller for h in in_host) == host_cap
            ), "a hop waits that could proceed"

    async with anyio.create_task_group() as group:
        for hop in calls:
            group.start_soon(run_hop, slots, hop, admitted)
        with anyio.fail_after(30):
            while True:
                await settled()
                check()
                if all(h.state == "done" for h in calls):
                    break
                active = [h for h in calls if h.state in {"in hop", "extracting"}]
                rng.choice(active).advance()
    assert slots.in_flight.free == in_flight and slots.waiting_hops() == 0
