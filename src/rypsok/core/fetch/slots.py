"""The fetch slots: LIM-C3 per process and LIM-C4 per host, divided between callers.

Both are `FairSlots`: a freed slot goes to the waiting caller holding the
fewest, so one caller's slow fetches delay another caller's fetch, to any
host or to the same one, by at most one turn (REQ-SEC-019). In HTTP mode an
operator may also cap one caller's share (LIM-C10 of LIM-C3; LIM-C12 of each
host's LIM-C4 follows in proportion), which keeps slots free for others even
before they ask. stdio has one caller, and there the whole capacity is its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rypsok.core.callers import FairSlots


class FetchSlots:
    def __init__(self, in_flight: int, per_host: int) -> None:
        self.in_flight = FairSlots(in_flight)  # LIM-C3
        self._per_host = per_host  # LIM-C4
        self._host_share = per_host  # LIM-C12, once divided between callers
        self._hosts: dict[str, FairSlots] = {}  # only while in use

    def divide_between_callers(self, per_caller: int) -> None:
        """HTTP mode: each caller holds at most `per_caller` fetch slots and its host share."""
        self.in_flight.per_caller = min(self.in_flight.slots, per_caller)
        # A cap on the fetches applies in proportion to each host's slots, at least one.
        self._host_share = max(
            1, self._per_host * self.in_flight.per_caller // self.in_flight.slots
        )
        for slots in self._hosts.values():
            slots.per_caller = self._host_share

    def host_share(self) -> int:
        return self._host_share

    @asynccontextmanager
    async def host(self, host: str) -> AsyncIterator[None]:
        """A LIM-C4 slot of `host` for the current caller, for the duration of the block."""
        slots = self._hosts.get(host)
        if slots is None:
            slots = self._hosts[host] = FairSlots(self._per_host, self._host_share)
        try:
            async with slots.held():
                yield
        finally:
            if slots.idle and self._hosts.get(host) is slots:
                del self._hosts[host]
