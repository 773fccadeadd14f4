"""The caller a call is made for, as the tasks of that call see it (REQ-SEC-019).

`Services.call` sets it; the engine queues read it to serve waiting callers
in turn. A context variable, because the caller is a property of the call,
and the tasks a search spawns per engine inherit it without every layer
between passing it on.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

import anyio

# stdio has one caller, the process's operator.
LOCAL = "local"
current_caller: ContextVar[str] = ContextVar("rypsok_caller", default=LOCAL)


class FairSlots:
    """A counting semaphore that hands freed slots to waiting callers in turn.

    Within one caller waiters are served first come first served; across
    callers a freed slot goes to the next caller in round-robin order, so a
    caller's burst delays another caller's request by at most one turn per
    waiting caller (docs/http-mode.md, fair sharing). With one
    caller it is a plain FIFO semaphore.
    """

    def __init__(self, slots: int) -> None:
        self._free = slots
        self._waiting: OrderedDict[str, deque[anyio.Event]] = OrderedDict()

    async def acquire(self, caller: str) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            return
        handed = anyio.Event()
        self._waiting.setdefault(caller, deque()).append(handed)
        try:
            await handed.wait()
        except BaseException:
            if handed.is_set():
                self.release()  # handed over as we were cancelled: pass it on
            else:
                self._forget(caller, handed)
            raise

    def release(self) -> None:
        if not self._waiting:
            self._free += 1
            return
        caller, queue = next(iter(self._waiting.items()))
        handed = queue.popleft()
        del self._waiting[caller]
        if queue:
            self._waiting[caller] = queue  # to the back of the round
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
        await self.acquire(current_caller.get())
        try:
            yield
        finally:
            self.release()
