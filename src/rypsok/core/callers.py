"""The caller a call is made for, and how shared slots are divided between callers (REQ-SEC-019).

`Services.call` sets the caller; the engine queues and the fetch slots read
it to serve waiting callers in turn and to hold each caller to its share. A
context variable, because the caller is a property of the call, and the tasks
a search spawns per engine inherit it without every layer between passing it on.
"""

from __future__ import annotations

from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

import anyio

# stdio has one caller, the process's operator.
LOCAL = "local"
current_caller: ContextVar[str] = ContextVar("rypsok_caller", default=LOCAL)


class FairSlots:
    """A counting semaphore shared by callers: the fewest-held caller is served next.

    Work-conserving: a slot is never left free while a caller below its cap
    waits, so a caller alone uses the whole pool by default. When callers
    compete, a freed slot goes to the waiting caller that holds the fewest slots
    (round-robin order among equals), so a burst delays another caller's
    request by at most one turn, and slots drift toward an equal division
    (max-min fairness) as the burst's requests end. `per_caller` is a hard cap
    an operator may set below the pool to keep slots for others even when they
    are idle (docs/http-mode.md, fair sharing). Within one caller waiters are
    served first come first served; with one caller it is a FIFO semaphore.
    """

    def __init__(self, slots: int, per_caller: int | None = None) -> None:
        self.slots = slots
        self.per_caller = slots if per_caller is None else min(slots, per_caller)
        self._free = slots
        self._held: Counter[str] = Counter()
        self._waiting: OrderedDict[str, deque[anyio.Event]] = OrderedDict()

    def held_by(self, caller: str) -> int:
        return self._held[caller]

    @property
    def idle(self) -> bool:
        """No slot held and nobody waiting: the owner may drop this instance."""
        return self._free == self.slots and not self._waiting

    def try_acquire(self, caller: str) -> bool:
        """Take a slot if one is free for this caller now, without waiting."""
        # Slots are handed out as they free, so a free slot means nobody below
        # their cap waits: taking it delays no one.
        if self._free > 0 and self._held[caller] < self.per_caller:
            self._take(caller)
            return True
        return False

    async def acquire(self, caller: str) -> None:
        if self.try_acquire(caller):
            return
        handed = anyio.Event()
        self._waiting.setdefault(caller, deque()).append(handed)
        try:
            await handed.wait()
        except BaseException:
            if handed.is_set():
                self.release(caller)  # handed over as we were cancelled: pass it on
            else:
                self._forget(caller, handed)
            raise

    def release(self, caller: str) -> None:
        self._held[caller] -= 1
        if self._held[caller] <= 0:
            del self._held[caller]
        self._free += 1
        self._hand_out()

    def _take(self, caller: str) -> None:
        self._free -= 1
        self._held[caller] += 1

    def _hand_out(self) -> None:
        """Free slots to waiting callers below their cap, fewest held first."""
        while self._free > 0:
            below = [c for c in self._waiting if self._held[c] < self.per_caller]
            if not below:
                return
            caller = min(below, key=self._held.__getitem__)  # min keeps the first of equals
            queue = self._waiting.pop(caller)
            handed = queue.popleft()
            if queue:
                self._waiting[caller] = queue  # to the back of the round
            self._take(caller)
            handed.set()

    def _forget(self, caller: str, handed: anyio.Event) -> None:
        queue = self._waiting.get(caller)
        if queue is None:
            return
        queue.remove(handed)
        if not queue:
            del self._waiting[caller]

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """A slot for the current caller for the duration of the block."""
        caller = current_caller.get()
        await self.acquire(caller)
        try:
            yield
        finally:
            self.release(caller)
