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

from rypsok.core import limits

# stdio has one caller, the process's operator.
LOCAL = "local"
current_caller: ContextVar[str] = ContextVar("rypsok_caller", default=LOCAL)


def caller_share(pool: int) -> int:
    """The default share of one caller in a pool of `pool` slots (LIM-C10..C12).

    All but a quarter of the pool, and at least one slot is kept back for the
    other callers whenever the pool has two: a caller alone keeps most of the
    capacity, and a second caller always finds a slot that the first cannot
    take, however slow the first caller's requests are.
    """
    if pool < 2:
        return pool
    return pool - max(1, pool // limits.CALLER_RESERVE_DIVISOR)


class FairSlots:
    """A counting semaphore shared by callers: each holds at most its share, and turns rotate.

    Within one caller waiters are served first come first served; across
    callers a freed slot goes to the next waiting caller in round-robin order
    that is below its share (`per_caller`), so a caller's burst delays another
    caller's request by at most one turn per waiting caller, and a caller at its
    share waits even while slots are free: those are kept for the others
    (docs/http-mode.md, fair sharing). With one caller and no share it is a
    plain FIFO semaphore.
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
        # A waiter below its share exists only while no slot is free, so a free slot
        # and an own count below the share mean nobody eligible is ahead.
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
        """Free slots to waiting callers below their share, in round-robin order."""
        while self._free > 0:
            caller = next((c for c in self._waiting if self._held[c] < self.per_caller), None)
            if caller is None:
                return
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
