"""Per-engine circuit breaker (REQ-RES-004, REQ-RES-005, REQ-OBS-001, REQ-OBS-004).

One `CircuitBreaker` per engine decides whether a real request may be sent.
The aggregator asks `admit()` before queueing a request, reports an engine it
refused as skipped, and tells the breaker how each admitted request ended.

States (reported by engine_status, REQ-STATUS-001):

    closed     requests flow; failures in a row are counted
    open       every request is refused until the cooldown has passed
    half_open  the cooldown has passed: LIM-B5 real requests probe the engine,
               every other request is refused until a probe gives a verdict

Rules:

1. Counting failures are `timeout`, `rate_limited`, `blocked` and
   `parse_failure`, the four classes REQ-RES-004 names. LIM-B1 of them in a
   row, while closed, open the circuit for the first cooldown (LIM-B2).
2. `auth_failure` and `request_failure` neither count nor reset the count.
   They say nothing about the engine's health in the breaker's sense (our
   credentials; a connection refused, a 5xx or our own policy refusal), yet
   taking them as a success would let them hide a run of counting failures
   interleaved with them. Their Retry-After is ignored too, and a probe that
   ends with one of them gave no verdict: it is handled like `released()`.
3. A success while closed resets the count.
4. There is no timer: the first read of `state` (or call of `admit()`) after
   the cooldown turns open into half_open and emits that transition. Reading
   the state may therefore transition.
5. The probe is a caller's real request; rypsok never sends a synthetic one
   (REQ-RES-005). A probe's success closes the circuit and resets the
   cooldown to the first one. A probe's counting failure reopens the circuit
   with the cooldown multiplied by LIM-B3 growth, capped at `max_cooldown_ms`.
   The cap bounds the first cooldown too, should an operator set it lower.
6. Retry-After is capped at LIM-B4. When the circuit opens or reopens, the
   cooldown lasts until the later of the computed cooldown's end and the
   instant the Retry-After asked for. The Retry-After of any counting failure
   of the same closed run is remembered, so a run that opens on its third
   failure still honours a Retry-After carried by its first. Retry-After
   lengthens the current cooldown only: growth continues from the computed
   cooldown, so one long Retry-After does not inflate every later one.
7. A verdict that arrives while open, or while half_open with no probe out,
   comes from a request admitted before the circuit opened: it is ignored,
   only a probe decides. While half_open with a probe out, any verdict is
   taken as the probe's: `admit()` returns a bool, not a ticket, so the
   breaker cannot tell a straggler from the probe. A straggler needs a
   request to outlive the whole cooldown (at least LIM-B2's 1 s floor), so
   this matters only with very short operator cooldowns.
8. Every transition emits exactly one frozen `CircuitEvent` to `on_event`,
   after the state has changed, so a hook that reads the breaker sees the
   new state. The aggregator logs it (REQ-OBS-004).

Contract with the caller: every `admit()` that returned True is followed by
exactly one of `succeeded()`, `failed()` or `released()`. No method awaits,
so on one event loop each call is atomic; the class is not thread-safe.

State lives in memory only. It is lost at restart, and a restarted process
starts every engine closed with its first cooldown (REQ-RES-009).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from rypsok.core import limits
from rypsok.core.config import BreakerConfig
from rypsok.core.engines.base import FailureClass

# REQ-RES-004 names exactly these; see rule 2 of the module docstring.
COUNTING_FAILURES: Final = frozenset(
    {
        FailureClass.TIMEOUT,
        FailureClass.RATE_LIMITED,
        FailureClass.BLOCKED,
        FailureClass.PARSE_FAILURE,
    }
)

_MS_PER_S: Final = 1000


class CircuitState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class CircuitEvent:
    """One transition of one engine's circuit, for the logs (REQ-OBS-004).

    `cooldown_ms` is the length of the cooldown that starts, and
    `failure_class` the class of the failure that opened the circuit; both
    are None unless the new state is open.
    """

    engine: str
    previous: CircuitState
    state: CircuitState
    cooldown_ms: int | None
    failure_class: str | None


class CircuitBreaker:
    """The circuit of one engine. See the module docstring for the rules."""

    def __init__(
        self,
        engine: str,
        *,
        failures: int,
        cooldown_ms: int,
        growth: int,
        max_cooldown_ms: int,
        clock: Callable[[], float] = time.monotonic,
        on_event: Callable[[CircuitEvent], None] | None = None,
    ) -> None:
        _require_at_least_one(
            failures=failures,
            cooldown_ms=cooldown_ms,
            growth=growth,
            max_cooldown_ms=max_cooldown_ms,
        )
        self._engine = engine
        self._failures = failures
        self._first_cooldown_ms = min(cooldown_ms, max_cooldown_ms)
        self._growth = growth
        self._max_cooldown_ms = max_cooldown_ms
        self._clock = clock
        self._on_event = on_event
        self._state = CircuitState.CLOSED
        self._consecutive = 0
        # The computed cooldown, Retry-After aside: the first, grown per reopening.
        self._cooldown_ms = self._first_cooldown_ms
        # Clock instant before which a Retry-After of the current run forbids a probe.
        self._retry_not_before: float | None = None
        self._open_until = 0.0
        self._probes = 0

    @classmethod
    def from_config(
        cls,
        engine: str,
        config: BreakerConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_event: Callable[[CircuitEvent], None] | None = None,
    ) -> CircuitBreaker:
        """A breaker with the operator's values (LIM-B1 to LIM-B3)."""
        return cls(
            engine,
            failures=config.failures,
            cooldown_ms=config.cooldown_ms,
            growth=config.growth,
            max_cooldown_ms=config.max_cooldown_ms,
            clock=clock,
            on_event=on_event,
        )

    @property
    def engine(self) -> str:
        return self._engine

    @property
    def state(self) -> CircuitState:
        """The current state. Turns open into half_open once the cooldown has passed."""
        self._end_cooldown_if_due()
        return self._state

    def admit(self) -> bool:
        """True: send a real request. False: skip the engine for this call."""
        state = self.state
        if state is CircuitState.CLOSED:
            return True
        if state is CircuitState.OPEN or self._probes >= limits.PROBE_REQUESTS:
            return False
        self._probes += 1
        return True

    def succeeded(self) -> None:
        """An admitted request was answered."""
        state = self.state
        if state is CircuitState.CLOSED:
            self._consecutive = 0
            self._retry_not_before = None
        elif state is CircuitState.HALF_OPEN and self._probes > 0:
            self._cooldown_ms = self._first_cooldown_ms
            self._transition(CircuitState.CLOSED)

    def failed(self, failure_class: FailureClass, retry_after_ms: int | None = None) -> None:
        """An admitted request failed with its class and, if the provider sent one, Retry-After."""
        if failure_class not in COUNTING_FAILURES:
            # Rule 2: no verdict on health; a probe's slot is freed all the same.
            self.released()
            return
        state = self.state
        if state is CircuitState.CLOSED:
            self._count_failure(failure_class, retry_after_ms)
        elif state is CircuitState.HALF_OPEN and self._probes > 0:
            self._cooldown_ms = min(self._cooldown_ms * self._growth, self._max_cooldown_ms)
            self._remember_retry_after(retry_after_ms)
            self._open(failure_class)

    def released(self) -> None:
        """An admitted request ended without a verdict (cancelled): frees a probe's slot."""
        if self.state is CircuitState.HALF_OPEN and self._probes > 0:
            self._probes -= 1

    def _count_failure(self, failure_class: FailureClass, retry_after_ms: int | None) -> None:
        self._remember_retry_after(retry_after_ms)
        self._consecutive += 1
        if self._consecutive >= self._failures:
            self._open(failure_class)

    def _remember_retry_after(self, retry_after_ms: int | None) -> None:
        if retry_after_ms is None or retry_after_ms <= 0:
            return
        capped_ms = min(retry_after_ms, limits.RETRY_AFTER_MAX_MS)  # LIM-B4
        instant = self._clock() + capped_ms / _MS_PER_S
        if self._retry_not_before is None or instant > self._retry_not_before:
            self._retry_not_before = instant

    def _open(self, failure_class: FailureClass) -> None:
        now = self._clock()
        cooldown_ms = max(self._cooldown_ms, self._retry_remaining_ms(now))
        self._open_until = now + cooldown_ms / _MS_PER_S
        self._consecutive = 0
        self._retry_not_before = None
        self._transition(
            CircuitState.OPEN, cooldown_ms=cooldown_ms, failure_class=failure_class.value
        )

    def _retry_remaining_ms(self, now: float) -> int:
        if self._retry_not_before is None:
            return 0
        # Whole ms, like every cooldown. Negative once the instant has passed,
        # which the computed cooldown (at least 1 ms) then outweighs.
        return round((self._retry_not_before - now) * _MS_PER_S)

    def _end_cooldown_if_due(self) -> None:
        if self._state is CircuitState.OPEN and self._clock() >= self._open_until:
            self._transition(CircuitState.HALF_OPEN)

    def _transition(
        self,
        state: CircuitState,
        *,
        cooldown_ms: int | None = None,
        failure_class: str | None = None,
    ) -> None:
        previous = self._state
        self._state = state
        # Every state starts with no probe out: a new half-open period gets
        # fresh LIM-B5 slots, and closed or open have none to give.
        self._probes = 0
        if self._on_event is not None:
            self._on_event(
                CircuitEvent(
                    engine=self._engine,
                    previous=previous,
                    state=state,
                    cooldown_ms=cooldown_ms,
                    failure_class=failure_class,
                )
            )


def _require_at_least_one(**values: int) -> None:
    """Programmer errors: the configuration bounds these far above zero."""
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
