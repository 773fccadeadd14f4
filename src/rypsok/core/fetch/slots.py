"""The fetch slots: LIM-C3 per process and LIM-C4 per host, divided between callers.

A hop of a fetch (one request, with its robots.txt check) proceeds only
when it can take both at once: a LIM-C3 slot and a slot of its host. While
it waits it holds neither, so fetches queued for a busy host never keep a
fetch to another host waiting: holding a LIM-C3 slot while waiting for a
host's slot let eight fetches to one slow site stop every other fetch of
the process (REQ-SEC-012).

One queue serves both pools. Whenever a slot of either frees, the waiting
hops that can now proceed are admitted: the caller holding the fewest LIM-C3
slots first, then the one holding the fewest slots of that host, round-robin
order among equals; within one caller the first hop whose host has room
(first come first served among hops to the same host). So one caller's slow
fetches delay another caller's fetch, to any host or to the same one, by at
most one turn (REQ-SEC-019), and the rule is work-conserving: no LIM-C3 slot
stays free while a hop that could use it waits. In HTTP mode an operator may
also cap one caller's share (LIM-C10 of LIM-C3; LIM-C12 of each host's LIM-C4
follows in proportion), which keeps slots free for others even before they
ask. stdio has one caller, and there the whole capacity is its own.

The LIM-C3 slot outlives its hop: a call keeps it until its extraction ends,
so a body waiting for a parse still counts (docs/performance.md §0, F2); only
the host slot goes back when the response is in. A redirect's next hop keeps
the call's LIM-C3 slot when the new hop's host has room at once, and
otherwise gives it back while it waits.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from rypsok.core.callers import current_caller


class SlotPool:
    """One pool's counts: the slots free, and how many each caller holds under its cap."""

    def __init__(self, slots: int, per_caller: int) -> None:
        self.slots = slots
        self.per_caller = min(slots, per_caller)
        self.free = slots
        self._held: Counter[str] = Counter()

    def held_by(self, caller: str) -> int:
        return self._held[caller]

    def has_room_for(self, caller: str) -> bool:
        return self.free > 0 and self._held[caller] < self.per_caller

    def take(self, caller: str) -> None:
        self.free -= 1
        self._held[caller] += 1

    def give(self, caller: str) -> None:
        self._held[caller] -= 1
        if self._held[caller] <= 0:
            del self._held[caller]
        self.free += 1


@dataclass(eq=False)
class _Waiter:
    """A hop waiting for a LIM-C3 slot and a slot of `host`, both handed over together."""

    host: str
    admitted: anyio.Event = field(default_factory=anyio.Event)


class FetchSlots:
    def __init__(self, in_flight: int, per_host: int) -> None:
        self.in_flight = SlotPool(in_flight, in_flight)  # LIM-C3 (LIM-C10 once divided)
        self._per_host = per_host  # LIM-C4
        self._host_share = per_host  # LIM-C12, once divided between callers
        self._hosts: dict[str, SlotPool] = {}  # only while held or waited for
        self._waiting: OrderedDict[str, deque[_Waiter]] = OrderedDict()  # per caller
        self._waiters_per_host: Counter[str] = Counter()

    def divide_between_callers(self, per_caller: int) -> None:
        """HTTP mode: each caller holds at most `per_caller` fetch slots and its host share."""
        self.in_flight.per_caller = min(self.in_flight.slots, per_caller)
        # A cap on the fetches applies in proportion to each host's slots, at least one.
        self._host_share = max(
            1, self._per_host * self.in_flight.per_caller // self.in_flight.slots
        )
        for pool in self._hosts.values():
            pool.per_caller = self._host_share
        self._hand_out()

    def host_share(self) -> int:
        return self._host_share

    def waiting_hops(self) -> int:
        """Hops waiting for their slots now, of all callers."""
        return sum(len(queue) for queue in self._waiting.values())

    def held_of_host(self, host: str) -> int:
        """The slots of `host` held now, by all callers."""
        pool = self._hosts.get(host)
        return 0 if pool is None else pool.slots - pool.free

    @asynccontextmanager
    async def for_call(self) -> AsyncIterator[CallSlots]:
        """The slots of one call for the current caller; its LIM-C3 slot goes back at the end."""
        held = CallSlots(self, current_caller.get())
        try:
            yield held
        finally:
            held.close()

    # -- the one queue of both pools ------------------------------------------------------

    async def _admit(self, caller: str, host: str) -> None:
        """Wait for a LIM-C3 slot and a slot of `host`, holding neither meanwhile."""
        pool = self._host(host)
        # Slots are handed out as they free, so room now means no waiting hop
        # could use it: taking it delays no one.
        if self.in_flight.has_room_for(caller) and pool.has_room_for(caller):
            self._take(caller, host)
            return
        waiter = _Waiter(host)
        self._waiting.setdefault(caller, deque()).append(waiter)
        self._waiters_per_host[host] += 1
        try:
            await waiter.admitted.wait()
        except BaseException:
            if waiter.admitted.is_set():
                self._give(caller, host, in_flight=True)  # admitted as we were cancelled
            else:
                self._forget(caller, waiter)
            raise

    def _try_host(self, caller: str, host: str) -> bool:
        """A slot of `host` for a call already holding its LIM-C3 slot, if one is free now."""
        pool = self._host(host)
        if pool.has_room_for(caller):
            pool.take(caller)
            return True
        self._drop_if_unused(host)
        return False

    def _host(self, host: str) -> SlotPool:
        pool = self._hosts.get(host)
        if pool is None:
            pool = self._hosts[host] = SlotPool(self._per_host, self._host_share)
        return pool

    def _take(self, caller: str, host: str) -> None:
        self.in_flight.take(caller)
        self._hosts[host].take(caller)

    def _give(self, caller: str, host: str | None, *, in_flight: bool) -> None:
        """Give back a slot of `host` (if named) and the LIM-C3 slot (if `in_flight`)."""
        if host is not None:
            self._hosts[host].give(caller)
        if in_flight:
            self.in_flight.give(caller)
        self._hand_out()
        if host is not None:
            self._drop_if_unused(host)

    def _hand_out(self) -> None:
        """Admit waiting hops while a LIM-C3 slot is free and one of them can use it."""
        while self.in_flight.free > 0:
            chosen = self._next_admitted()
            if chosen is None:
                return
            caller, waiter = chosen
            queue = self._waiting.pop(caller)
            queue.remove(waiter)
            if queue:
                self._waiting[caller] = queue  # to the back of the round
            self._count_waiter_gone(waiter.host)
            self._take(caller, waiter.host)
            waiter.admitted.set()

    def _next_admitted(self) -> tuple[str, _Waiter] | None:
        """The hop admitted next: fewest LIM-C3 slots held, then fewest of its host's slots."""
        best: tuple[str, _Waiter] | None = None
        best_rank: tuple[int, int] | None = None
        for caller, queue in self._waiting.items():
            if not self.in_flight.has_room_for(caller):
                continue
            # A hop to a busy host does not hold up the caller's hops to other hosts.
            waiter = next((w for w in queue if self._hosts[w.host].has_room_for(caller)), None)
            if waiter is None:
                continue
            rank = (self.in_flight.held_by(caller), self._hosts[waiter.host].held_by(caller))
            if best_rank is None or rank < best_rank:  # `<` keeps the first of equals
                best, best_rank = (caller, waiter), rank
        return best

    def _forget(self, caller: str, waiter: _Waiter) -> None:
        queue = self._waiting.get(caller)
        if queue is None or waiter not in queue:
            return
        queue.remove(waiter)
        if not queue:
            del self._waiting[caller]
        self._count_waiter_gone(waiter.host)
        self._drop_if_unused(waiter.host)

    def _count_waiter_gone(self, host: str) -> None:
        self._waiters_per_host[host] -= 1
        if self._waiters_per_host[host] <= 0:
            del self._waiters_per_host[host]

    def _drop_if_unused(self, host: str) -> None:
        pool = self._hosts.get(host)
        if pool is not None and pool.free == pool.slots and host not in self._waiters_per_host:
            del self._hosts[host]


class CallSlots:
    """What one web_fetch call holds: at most one LIM-C3 slot, and its host's slot in a hop."""

    def __init__(self, slots: FetchSlots, caller: str) -> None:
        self._slots = slots
        self._caller = caller
        self._in_flight = False  # whether the call holds its LIM-C3 slot

    @asynccontextmanager
    async def hop(self, host: str) -> AsyncIterator[None]:
        """A slot of `host` for the block, and the call's LIM-C3 slot from now on."""
        if self._in_flight and not self._slots._try_host(self._caller, host):
            # Waiting for the host while holding LIM-C3 is what this module avoids.
            self._slots._give(self._caller, None, in_flight=True)
            self._in_flight = False
        if not self._in_flight:
            await self._slots._admit(self._caller, host)
            self._in_flight = True
        try:
            yield
        finally:
            self._slots._give(self._caller, host, in_flight=False)

    def close(self) -> None:
        if self._in_flight:
            self._in_flight = False
            self._slots._give(self._caller, None, in_flight=True)
