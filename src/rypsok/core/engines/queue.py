"""Per-engine admission: one queue per engine, spaced by its rate, capped by its concurrency.

Decision 1 of the specification, REQ-CMP-002, REQ-AGG-005, REQ-AGG-008. A
request takes, in this order, first come first served within one caller and
in turn across callers (`FairSlots`, REQ-SEC-019):

1. a slot of the engine's concurrency cap (LIM-C2, or lower per record);
2. a slot of the process-wide cap (LIM-C1, at most the caller's LIM-C11
   share in HTTP mode); when none is at hand the engine slot goes back
   while the request waits for it, so a waiting request never keeps
   another caller off the engine;
3. a start time: the later of now and the engine's next free start, which it
   then pushes one spacing further. Reading and pushing happen with no await
   in between, so concurrent searches queue up instead of racing a shared
   "has enough time passed?" check.

Both slots count requests in flight: `Turn.release` gives them back as soon
as the last answer of the exchange is read, so the parse that follows is our
CPU, not the provider's load (`Driver.releases_turn_on_answer`). Leaving the
turn releases them too; releasing twice is a no-op.

A request whose start time would come after its deadline is not sent
(decision 1). It is reported as not asked, never as a provider timeout, and
with why (CLR-5): its engine's rate leaves no turn before the deadline, or the
provider's Retry-After pauses the engine past it. A 429, or a Retry-After on
any answer, doubles the spacing and pushes the next start past the
Retry-After (capped at LIM-B4); a run of successes halves the spacing back
towards the record's. Nothing is retried here: retrying is the circuit
breaker's task (REQ-AGG-008).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Awaitable, Callable

import anyio

from rypsok.core import limits
from rypsok.core.callers import FairSlots, current_caller
from rypsok.core.engines.base import EngineFailure, FailureClass

# Connection set-up makes a request reach the provider a little after its start;
# this margin keeps two arrivals at least one spacing apart even so.
SPACING_MARGIN_MS = 50
# Widening stops here: beyond it the circuit breaker takes over.
MAX_SPACING_FACTOR = 64
# Successes in a row that halve a widened spacing.
SUCCESSES_TO_DECAY = 5


class WhyNotSent(enum.StrEnum):
    """Why a request's turn would come after its deadline."""

    NO_TURN = "no_turn"  # the engine's spacing or concurrency leaves no turn in time
    PAUSED = "paused"  # the provider's Retry-After holds the engine past the deadline


class NotSent(EngineFailure):
    """The request's turn would come after its deadline: it was never sent.

    Its class stays `timeout` for the metrics, but the call reports it as
    not asked (with `why`), and it says nothing about the provider's health,
    so the circuit breaker does not count it.
    """

    def __init__(self, why: WhyNotSent = WhyNotSent.NO_TURN) -> None:
        super().__init__(FailureClass.TIMEOUT)
        self.why = why


class Turn:
    """A request's hold on its engine slot and LIM-C1 slot; `release` is idempotent."""

    __slots__ = ("_caller", "_queue", "released")

    def __init__(self, queue: EngineQueue, caller: str) -> None:
        self._queue = queue
        self._caller = caller
        self.released = False

    def release(self) -> None:
        """Give both slots back now (the answer is read); later calls do nothing."""
        if self.released:
            return
        self.released = True
        self._queue._give_slots(self._caller)


class _TurnBlock:
    """`EngineQueue.turn`: an object, not a generator, since every engine request enters one."""

    __slots__ = ("_deadline", "_held", "_queue")

    def __init__(self, queue: EngineQueue, deadline: float) -> None:
        self._queue = queue
        self._deadline = deadline
        self._held: Turn | None = None

    async def __aenter__(self) -> Turn:
        queue, deadline = self._queue, self._deadline
        caller = current_caller.get()
        await queue._take_slots(caller, deadline)
        held = Turn(queue, caller)
        try:
            start = await queue._reserve(deadline)
            wait_s = start - queue._clock()
            while wait_s > 0:  # a turn due now is sent at once, without a pass of the loop
                await anyio.sleep(wait_s)
                # uvloop's timers count whole milliseconds: its sleep can end up to
                # about 1.5 ms early, and no turn may start before its reserved start.
                wait_s = start - queue._clock()
        except BaseException:
            held.release()
            raise
        self._held = held
        return held

    async def __aexit__(self, *exc_info: object) -> None:
        if self._held is not None:
            self._held.release()


class EngineQueue:
    """The admission queue of one engine. Instances are shared by all searches."""

    def __init__(
        self,
        *,
        min_interval_ms: int,
        max_concurrency: int,
        process_slots: anyio.CapacityLimiter | FairSlots,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.min_interval_ms = min_interval_ms
        self._engine_slots = FairSlots(max_concurrency)  # callers served in turn
        self._process_slots = process_slots
        self._clock = clock
        self._next_start = 0.0
        self._factor = 1
        self._successes = 0
        self._blocked_until = 0.0

    @property
    def spacing_s(self) -> float:
        if self.min_interval_ms == 0 and self._factor == 1:
            return 0.0
        base_ms = max(self.min_interval_ms, 100) if self._factor > 1 else self.min_interval_ms
        return (base_ms * self._factor + SPACING_MARGIN_MS) / 1000.0

    async def _take_process_slot(self, caller: str) -> None:
        """LIM-C1; shared fairly (callers in turn) when the pipeline made it a FairSlots."""
        if isinstance(self._process_slots, FairSlots):
            await self._process_slots.acquire(caller)
        else:
            await self._process_slots.acquire()

    def _try_process_slot(self, caller: str) -> bool:
        if isinstance(self._process_slots, FairSlots):
            return self._process_slots.try_acquire(caller)
        try:
            self._process_slots.acquire_nowait()
        except anyio.WouldBlock:
            return False
        return True

    def _give_slots(self, caller: str) -> None:
        """Both slots of a turn back, the LIM-C1 slot first."""
        self._give_process_slot(caller)
        self._engine_slots.release(caller)

    def _give_process_slot(self, caller: str) -> None:
        if isinstance(self._process_slots, FairSlots):
            self._process_slots.release(caller)
        else:
            self._process_slots.release()

    async def _within(self, deadline: float, wait: Callable[[], Awaitable[None]]) -> None:
        """`wait()`, or NotSent when the deadline comes first."""
        with anyio.move_on_after(max(0.0, deadline - self._clock())) as waiting:
            await wait()
        if waiting.cancelled_caught:
            raise self._not_sent(deadline)

    async def _take_slots(self, caller: str, deadline: float) -> None:
        """The engine's slot and a LIM-C1 slot, never the first held while waiting for the second.

        A caller at its LIM-C1 share (HTTP mode) would otherwise sit on this
        engine's slots while it waits, and keep other callers off the engine.
        So when no LIM-C1 slot is at hand, the engine slot goes back, the
        request waits for a LIM-C1 slot, and then for the engine's again.
        """
        # Both slots free, the usual case: taken without a cancel scope per wait.
        if not self._engine_slots.try_acquire(caller):
            await self._within(deadline, lambda: self._engine_slots.acquire(caller))
        if self._try_process_slot(caller):
            return
        self._engine_slots.release(caller)
        await self._within(deadline, lambda: self._take_process_slot(caller))
        try:
            await self._within(deadline, lambda: self._engine_slots.acquire(caller))
        except BaseException:
            self._give_process_slot(caller)
            raise

    def _reserve_start(self, deadline: float) -> float:
        """The start of this request's turn, or NotSent; a refused turn reserves nothing."""
        start = max(self._clock(), self._next_start, self._blocked_until)
        if start >= deadline:
            raise self._not_sent(deadline)
        self._next_start = start + self.spacing_s
        return start

    def _not_sent(self, deadline: float) -> NotSent:
        """The refusal of a turn that would come too late, with the reason that decided it."""
        paused = self._blocked_until >= deadline
        return NotSent(WhyNotSent.PAUSED if paused else WhyNotSent.NO_TURN)

    async def _reserve(self, deadline: float) -> float:
        """Hook (issue 12): a queue shared between instances reserves its start in Redis."""
        return self._reserve_start(deadline)

    def turn(self, deadline: float) -> _TurnBlock:
        """`async with` it: wait for this request's turn; NotSent (a timeout) if too late.

        The slots go back when the block ends, on every path, unless
        `Turn.release` gave them back earlier.
        """
        return _TurnBlock(self, deadline)

    def rate_limited(self, retry_after_ms: int | None) -> None:
        """A 429, throttle signal or Retry-After: widen the spacing, honour Retry-After."""
        self._factor = min(self._factor * 2, MAX_SPACING_FACTOR)
        self._successes = 0
        if retry_after_ms is not None:
            wait_ms = min(retry_after_ms, limits.RETRY_AFTER_MAX_MS)
            self._blocked_until = max(self._blocked_until, self._clock() + wait_ms / 1000.0)

    def pause(self, pause_ms: int) -> None:
        """The provider asked for a pause after a successful answer: no widening."""
        wait_ms = min(pause_ms, limits.RETRY_AFTER_MAX_MS)
        self._blocked_until = max(self._blocked_until, self._clock() + wait_ms / 1000.0)

    def succeeded(self) -> None:
        if self._factor == 1:
            return
        self._successes += 1
        if self._successes >= SUCCESSES_TO_DECAY:
            self._factor //= 2
            self._successes = 0
