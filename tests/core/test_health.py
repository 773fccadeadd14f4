"""The circuit breaker: opening, skipping, probing, closing, growth, Retry-After and events.

Time is a fake clock in whole milliseconds: no test sleeps.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.config import BreakerConfig
from rypsok.core.engines.base import FailureClass
from rypsok.core.health import (
    COUNTING_FAILURES,
    CircuitBreaker,
    CircuitEvent,
    CircuitState,
)

ENGINE = "example"
CLOSED, OPEN, HALF_OPEN = CircuitState.CLOSED, CircuitState.OPEN, CircuitState.HALF_OPEN
COUNTING = sorted(COUNTING_FAILURES)
NON_COUNTING = sorted(set(FailureClass) - COUNTING_FAILURES)
FIRST = limits.BREAKER_COOLDOWN_MS


class FakeClock:
    """A monotonic clock that moves only when told; starts far from zero."""

    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> float:
        return self.ms / 1000

    def advance(self, ms: int) -> None:
        self.ms += ms


class Harness:
    """A breaker with the default limits, its fake clock and the events it emitted."""

    def __init__(self, config: BreakerConfig | None = None) -> None:
        config = config or BreakerConfig()
        self.failures = config.failures
        self.clock = FakeClock()
        self.events: list[CircuitEvent] = []
        self.breaker = CircuitBreaker.from_config(
            ENGINE, config, clock=self.clock, on_event=self.events.append
        )

    def fail(self, times: int, failure_class: FailureClass = FailureClass.TIMEOUT) -> None:
        for _ in range(times):
            assert self.breaker.admit()
            self.breaker.failed(failure_class)

    def open(self, retry_after_ms: int | None = None) -> None:
        """Closed to open with counting failures; the last one carries the Retry-After."""
        self.fail(self.failures - 1)
        assert self.breaker.admit()
        self.breaker.failed(FailureClass.TIMEOUT, retry_after_ms)
        assert self.breaker.state is OPEN

    def to_half_open(self) -> None:
        assert self.events[-1].state is OPEN
        cooldown = self.events[-1].cooldown_ms
        assert cooldown is not None
        self.clock.advance(cooldown)
        assert self.breaker.state is HALF_OPEN

    def reopen(self, retry_after_ms: int | None = None) -> int:
        """Half-open, then a failed probe; returns the new cooldown."""
        self.to_half_open()
        assert self.breaker.admit()
        self.breaker.failed(FailureClass.RATE_LIMITED, retry_after_ms)
        assert self.breaker.state is OPEN
        cooldown = self.events[-1].cooldown_ms
        assert cooldown is not None
        return cooldown


def opened(cooldown_ms: int, failure_class: FailureClass, previous: CircuitState) -> CircuitEvent:
    return CircuitEvent(ENGINE, previous, OPEN, cooldown_ms, failure_class.value)


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
@pytest.mark.parametrize("failure_class", COUNTING)
def test_circuit_opens_after_exactly_lim_b1_counting_failures(failure_class: FailureClass) -> None:
    """REQ-RES-004, REQ-TEST-017: LIM-B1 counting failures in a row open; one fewer does not."""
    h = Harness()
    h.fail(limits.BREAKER_FAILURES - 1, failure_class)
    assert h.breaker.state is CLOSED
    assert h.events == []
    h.fail(1, failure_class)
    assert h.breaker.state is OPEN
    assert h.events == [opened(FIRST, failure_class, CLOSED)]


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
@pytest.mark.parametrize("failure_class", NON_COUNTING)
def test_non_counting_failures_neither_open_nor_reset(failure_class: FailureClass) -> None:
    """REQ-RES-004, REQ-TEST-017: auth and request failures neither count nor reset the count."""
    h = Harness()
    h.fail(limits.BREAKER_FAILURES * 5, failure_class)
    assert h.breaker.state is CLOSED
    h.fail(limits.BREAKER_FAILURES - 1)
    h.fail(3, failure_class)
    assert h.breaker.state is CLOSED
    h.fail(1)
    assert h.breaker.state is OPEN


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_success_while_closed_resets_the_count() -> None:
    """REQ-RES-004, REQ-TEST-017: the failures must be consecutive; a success starts again."""
    h = Harness()
    h.fail(limits.BREAKER_FAILURES - 1)
    assert h.breaker.admit()
    h.breaker.succeeded()
    h.fail(limits.BREAKER_FAILURES - 1)
    assert h.breaker.state is CLOSED
    h.fail(1)
    assert h.breaker.state is OPEN


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_open_circuit_skips_every_request_until_the_cooldown_has_passed() -> None:
    """REQ-RES-004, REQ-TEST-017: while open, admit() refuses, up to the last millisecond."""
    h = Harness()
    h.open()
    assert not h.breaker.admit()
    h.clock.advance(FIRST - 1)
    assert not h.breaker.admit()
    assert not h.breaker.admit()
    assert h.breaker.state is OPEN


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_circuit_turns_half_open_when_the_cooldown_has_passed() -> None:
    """REQ-RES-005, REQ-TEST-017: reading the state after the cooldown turns open into half_open."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    assert h.breaker.state is HALF_OPEN
    assert h.breaker.state is HALF_OPEN
    assert h.events[1:] == [CircuitEvent(ENGINE, OPEN, HALF_OPEN, None, None)]


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_half_open_circuit_admits_exactly_lim_b5_probes() -> None:
    """REQ-RES-005, REQ-TEST-017: one real request probes; concurrent ones are refused."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    admitted = [h.breaker.admit() for _ in range(limits.PROBE_REQUESTS + 3)]
    assert admitted == [True] * limits.PROBE_REQUESTS + [False] * 3
    assert h.breaker.state is HALF_OPEN


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_admit_itself_ends_the_cooldown() -> None:
    """REQ-RES-005, REQ-TEST-017: admit() after the cooldown is the probe, no state read needed."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    assert h.breaker.admit()
    assert not h.breaker.admit()
    assert [e.state for e in h.events] == [OPEN, HALF_OPEN]


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_successful_probe_closes_the_circuit() -> None:
    """REQ-RES-005, REQ-TEST-017: the probe's success closes; every request flows again."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    assert h.breaker.admit()
    h.breaker.succeeded()
    assert h.breaker.state is CLOSED
    assert all(h.breaker.admit() for _ in range(5))
    assert h.events[-1] == CircuitEvent(ENGINE, HALF_OPEN, CLOSED, None, None)


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_failed_probe_reopens_with_the_cooldown_times_growth() -> None:
    """REQ-RES-005, REQ-TEST-017: a failed probe reopens for cooldown × LIM-B3 growth."""
    h = Harness()
    h.open()
    grown = FIRST * limits.BREAKER_GROWTH
    assert h.reopen() == grown
    assert h.events[-1] == opened(grown, FailureClass.RATE_LIMITED, HALF_OPEN)
    h.clock.advance(grown - 1)
    assert not h.breaker.admit()
    h.clock.advance(1)
    assert h.breaker.admit()


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_cooldown_growth_is_capped() -> None:
    """REQ-RES-004, REQ-TEST-017: each reopening grows the cooldown until the LIM-B3 cap."""
    h = Harness()
    h.open()
    cooldowns = [h.reopen() for _ in range(7)]
    assert cooldowns == [60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]
    assert max(cooldowns) == limits.BREAKER_MAX_COOLDOWN_MS


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_cooldown_is_reset_after_the_circuit_closes() -> None:
    """REQ-RES-005, REQ-TEST-017: after closing, the next opening uses the first cooldown."""
    h = Harness()
    h.open()
    h.reopen()
    h.reopen()
    h.to_half_open()
    assert h.breaker.admit()
    h.breaker.succeeded()
    h.open()
    assert h.events[-1] == opened(FIRST, FailureClass.TIMEOUT, CLOSED)


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
@pytest.mark.parametrize(
    ("retry_after_ms", "cooldown_ms"),
    [
        (None, FIRST),
        (0, FIRST),
        (FIRST - 1, FIRST),
        (FIRST + 1, FIRST + 1),
        (limits.RETRY_AFTER_MAX_MS, limits.RETRY_AFTER_MAX_MS),
        (limits.RETRY_AFTER_MAX_MS * 10, limits.RETRY_AFTER_MAX_MS),
    ],
)
def test_retry_after_longer_than_the_cooldown_wins_up_to_lim_b4(
    retry_after_ms: int | None, cooldown_ms: int
) -> None:
    """REQ-RES-004, REQ-TEST-017: a longer Retry-After wins, capped at LIM-B4."""
    h = Harness()
    h.open(retry_after_ms)
    assert h.events[-1].cooldown_ms == cooldown_ms
    h.clock.advance(cooldown_ms - 1)
    assert h.breaker.state is OPEN
    h.clock.advance(1)
    assert h.breaker.state is HALF_OPEN


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_retry_after_of_an_earlier_failure_in_the_run_is_honoured() -> None:
    """REQ-RES-004, REQ-TEST-017: the cooldown lasts until an earlier Retry-After ends."""
    h = Harness()
    assert h.breaker.admit()
    h.breaker.failed(FailureClass.RATE_LIMITED, retry_after_ms=120_000)
    h.clock.advance(10_000)
    h.fail(limits.BREAKER_FAILURES - 1)
    assert h.events[-1].cooldown_ms == 110_000


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_the_latest_instant_any_retry_after_of_the_run_asked_for_wins() -> None:
    """REQ-RES-004, REQ-TEST-017: a later, shorter Retry-After does not cut an earlier one."""
    h = Harness()
    assert h.breaker.admit()
    h.breaker.failed(FailureClass.RATE_LIMITED, retry_after_ms=120_000)
    h.clock.advance(1_000)
    assert h.breaker.admit()
    h.breaker.failed(FailureClass.RATE_LIMITED, retry_after_ms=40_000)
    h.fail(limits.BREAKER_FAILURES - 2)
    assert h.events[-1].cooldown_ms == 119_000


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_an_earlier_retry_after_is_capped_from_when_it_was_given() -> None:
    """REQ-RES-004, REQ-TEST-017: LIM-B4 counts from the failure that carried the Retry-After."""
    h = Harness()
    assert h.breaker.admit()
    h.breaker.failed(FailureClass.RATE_LIMITED, retry_after_ms=10 * limits.RETRY_AFTER_MAX_MS)
    h.clock.advance(10_000)
    h.fail(limits.BREAKER_FAILURES - 1)
    assert h.events[-1].cooldown_ms == limits.RETRY_AFTER_MAX_MS - 10_000


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_success_forgets_the_retry_after_of_the_run() -> None:
    """REQ-RES-004, REQ-TEST-017: an answered request ends the run and its Retry-After."""
    h = Harness()
    assert h.breaker.admit()
    h.breaker.failed(FailureClass.RATE_LIMITED, retry_after_ms=120_000)
    assert h.breaker.admit()
    h.breaker.succeeded()
    h.open()
    assert h.events[-1].cooldown_ms == FIRST


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_retry_after_on_a_failed_probe_lengthens_that_cooldown_only() -> None:
    """REQ-RES-005, REQ-TEST-017: a probe's Retry-After wins once; growth ignores it."""
    h = Harness()
    h.open()
    assert h.reopen(retry_after_ms=600_000) == 600_000
    assert h.reopen() == FIRST * limits.BREAKER_GROWTH**2


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
@pytest.mark.parametrize("failure_class", NON_COUNTING)
def test_retry_after_of_a_non_counting_failure_is_ignored(failure_class: FailureClass) -> None:
    """REQ-RES-004, REQ-TEST-017: a failure that does not count does not set the cooldown either."""
    h = Harness()
    assert h.breaker.admit()
    h.breaker.failed(failure_class, retry_after_ms=600_000)
    h.open()
    assert h.events[-1].cooldown_ms == FIRST


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_released_probe_frees_its_slot_and_stays_half_open() -> None:
    """REQ-RES-005, REQ-TEST-017: a cancelled probe lets the next request probe."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    assert h.breaker.admit()
    assert not h.breaker.admit()
    h.breaker.released()
    assert h.breaker.state is HALF_OPEN
    assert h.breaker.admit()
    assert not h.breaker.admit()
    assert [e.state for e in h.events] == [OPEN, HALF_OPEN]


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_release_without_a_probe_out_gives_no_extra_slot() -> None:
    """REQ-RES-005, REQ-TEST-017: releasing more than was admitted never admits a second probe."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    h.breaker.released()
    h.breaker.released()
    assert h.breaker.admit()
    assert not h.breaker.admit()


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
@pytest.mark.parametrize("failure_class", NON_COUNTING)
def test_non_counting_probe_failure_is_no_verdict(failure_class: FailureClass) -> None:
    """REQ-RES-005, REQ-TEST-017: auth or request failure of a probe is no verdict."""
    h = Harness()
    h.open()
    h.clock.advance(FIRST)
    assert h.breaker.admit()
    h.breaker.failed(failure_class)
    assert h.breaker.state is HALF_OPEN
    assert h.breaker.admit()


@pytest.mark.req("REQ-RES-005", "REQ-TEST-017")
def test_stragglers_while_open_are_ignored() -> None:
    """REQ-RES-005, REQ-TEST-017: verdicts of requests admitted before opening change nothing."""
    h = Harness()
    h.open()
    h.breaker.succeeded()
    h.breaker.failed(FailureClass.TIMEOUT, retry_after_ms=limits.RETRY_AFTER_MAX_MS)
    h.breaker.released()
    assert h.breaker.state is OPEN
    h.clock.advance(FIRST)
    h.breaker.succeeded()  # half-open with no probe out: not the probe's verdict
    h.breaker.failed(FailureClass.TIMEOUT)
    assert h.breaker.state is HALF_OPEN
    assert len(h.events) == 2


@pytest.mark.req("REQ-OBS-004", "REQ-TEST-017")
def test_every_transition_emits_exactly_one_event_with_its_fields() -> None:
    """REQ-OBS-004, REQ-TEST-017: a full cycle emits one event per transition, in order."""
    h = Harness()
    h.open()
    h.reopen(retry_after_ms=100_000)
    h.to_half_open()
    assert h.breaker.admit()
    h.breaker.succeeded()
    assert h.events == [
        opened(FIRST, FailureClass.TIMEOUT, CLOSED),
        CircuitEvent(ENGINE, OPEN, HALF_OPEN, None, None),
        opened(100_000, FailureClass.RATE_LIMITED, HALF_OPEN),
        CircuitEvent(ENGINE, OPEN, HALF_OPEN, None, None),
        CircuitEvent(ENGINE, HALF_OPEN, CLOSED, None, None),
    ]
    assert all(type(e.failure_class) is str for e in h.events if e.failure_class)


@pytest.mark.req("REQ-OBS-004")
def test_events_are_frozen() -> None:
    """REQ-OBS-004: a hook cannot alter the event other hooks or the log see."""
    event = CircuitEvent(ENGINE, CLOSED, OPEN, FIRST, "timeout")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.state = CLOSED  # type: ignore[misc]


@pytest.mark.req("REQ-OBS-001", "REQ-RES-004")
def test_a_hook_sees_the_new_state() -> None:
    """REQ-OBS-001, REQ-RES-004: events follow the transition; a hook reads the new state."""
    seen: list[CircuitState] = []
    clock = FakeClock()
    breaker = CircuitBreaker(
        ENGINE,
        failures=1,
        cooldown_ms=FIRST,
        growth=2,
        max_cooldown_ms=FIRST * 4,
        clock=clock,
        on_event=lambda _: seen.append(breaker.state),
    )
    breaker.failed(FailureClass.BLOCKED)
    assert seen == [OPEN]


@pytest.mark.req("REQ-RES-004", "REQ-TEST-017")
def test_operator_values_from_breaker_config_are_honoured() -> None:
    """REQ-RES-004, REQ-TEST-017: BreakerConfig sets failures, cooldown, growth and cap."""
    config = BreakerConfig(failures=1, cooldown_ms=5_000, growth=3, max_cooldown_ms=20_000)
    h = Harness(config)
    h.fail(1, FailureClass.PARSE_FAILURE)
    assert h.breaker.state is OPEN
    assert h.events[-1].cooldown_ms == 5_000
    assert [h.reopen() for _ in range(3)] == [15_000, 20_000, 20_000]


@pytest.mark.req("REQ-RES-004")
def test_default_breaker_config_is_the_limits_table() -> None:
    """REQ-RES-004: without operator values the breaker uses LIM-B1 to LIM-B3."""
    config = BreakerConfig()
    assert (config.failures, config.cooldown_ms, config.growth, config.max_cooldown_ms) == (
        limits.BREAKER_FAILURES,
        limits.BREAKER_COOLDOWN_MS,
        limits.BREAKER_GROWTH,
        limits.BREAKER_MAX_COOLDOWN_MS,
    )


@pytest.mark.req("REQ-RES-004")
def test_cap_below_the_first_cooldown_bounds_it() -> None:
    """REQ-RES-004: an operator cap lower than the first cooldown bounds every cooldown."""
    config = BreakerConfig(failures=1, cooldown_ms=60_000, max_cooldown_ms=10_000)
    h = Harness(config)
    h.open()
    assert h.events[-1].cooldown_ms == 10_000
    assert h.reopen() == 10_000


@pytest.mark.req("REQ-RES-004")
@pytest.mark.parametrize("field", ["failures", "cooldown_ms", "growth", "max_cooldown_ms"])
def test_values_below_one_are_refused(field: str) -> None:
    """REQ-RES-004: a breaker that could never open or never cool down is a programmer error."""
    values = {"failures": 3, "cooldown_ms": 1_000, "growth": 2, "max_cooldown_ms": 2_000}
    values[field] = 0
    with pytest.raises(ValueError, match=field):
        CircuitBreaker(
            ENGINE,
            failures=values["failures"],
            cooldown_ms=values["cooldown_ms"],
            growth=values["growth"],
            max_cooldown_ms=values["max_cooldown_ms"],
        )


@pytest.mark.req("REQ-RES-009")
def test_a_new_breaker_starts_closed() -> None:
    """REQ-RES-009: state is in memory only; a new process's breaker starts closed and admits."""
    breaker = CircuitBreaker.from_config(ENGINE, BreakerConfig())
    assert breaker.engine == ENGINE
    assert breaker.state is CLOSED
    assert breaker.admit()


# The property test: any sequence of calls, checked step by step against a
# model that knows only the rules, not the breaker's fields.

_RETRY_AFTER = (
    st.none()
    | st.sampled_from([0, 1_000, limits.RETRY_AFTER_MAX_MS, 2 * limits.RETRY_AFTER_MAX_MS])
    | st.integers(-1_000, 2 * limits.RETRY_AFTER_MAX_MS)
)
_ADVANCE = st.sampled_from([1, 1_000, limits.BREAKER_MAX_COOLDOWN_MS]) | st.integers(
    0, 2 * limits.BREAKER_MAX_COOLDOWN_MS
)
_OPERATIONS = st.one_of(
    st.tuples(st.just("admit")),
    st.tuples(st.just("succeeded")),
    st.tuples(st.just("released")),
    st.tuples(st.just("state")),
    st.tuples(st.just("failed"), st.sampled_from(sorted(FailureClass)), _RETRY_AFTER),
    # Twice more, so that circuits open, probe and reopen within one sequence.
    st.tuples(st.just("failed"), st.sampled_from(COUNTING), st.none()),
    st.tuples(st.just("admit")),
    st.tuples(st.just("advance"), _ADVANCE),
)
_CONFIGS = st.builds(
    BreakerConfig,
    failures=st.integers(1, 4),  # within LIM-B1's range, small enough to open often
    cooldown_ms=st.integers(*limits.BREAKER_COOLDOWN_RANGE),
    growth=st.integers(*limits.BREAKER_GROWTH_RANGE),
    max_cooldown_ms=st.integers(*limits.BREAKER_COOLDOWN_RANGE),
)
_COOLDOWN_BOUND = max(limits.BREAKER_MAX_COOLDOWN_MS, limits.RETRY_AFTER_MAX_MS)


class Model:
    """The rules seen from outside: probes out, the computed cooldown, Retry-After in the run."""

    def __init__(self, clock: FakeClock, config: BreakerConfig) -> None:
        self.clock = clock
        self.config = config
        self.state = CLOSED
        self.probes_out = 0
        self.computed_ms = 0
        self.retry_after_in_run = False
        self.opened_at_ms = 0
        self.open_for_ms = 0
        self.events = 0

    def on_event(self, event: CircuitEvent) -> None:
        assert event.engine == ENGINE
        assert event.previous is self.state is not event.state
        if event.state is OPEN:
            self._opened(event)
        else:
            assert event.cooldown_ms is None
            assert event.failure_class is None
        if event.state is HALF_OPEN:
            assert self.clock.ms >= self.opened_at_ms + self.open_for_ms
        self.state = event.state
        self.probes_out = 0
        self.events += 1

    def _opened(self, event: CircuitEvent) -> None:
        first = min(self.config.cooldown_ms, self.config.max_cooldown_ms)
        grown = min(self.computed_ms * self.config.growth, self.config.max_cooldown_ms)
        self.computed_ms = first if event.previous is CLOSED else grown
        assert event.failure_class in {c.value for c in COUNTING_FAILURES}
        assert event.cooldown_ms is not None
        assert self.computed_ms <= event.cooldown_ms <= _COOLDOWN_BOUND
        if not self.retry_after_in_run:
            assert event.cooldown_ms == self.computed_ms
        self.retry_after_in_run = False
        self.opened_at_ms, self.open_for_ms = self.clock.ms, event.cooldown_ms

    def failing(self, failure_class: FailureClass, retry_after_ms: int | None) -> None:
        """Called before breaker.failed(), once the state has been read."""
        decides = self.state is CLOSED or (self.state is HALF_OPEN and self.probes_out > 0)
        if failure_class not in COUNTING_FAILURES:
            self.releasing()
        elif decides and retry_after_ms is not None and retry_after_ms > 0:
            self.retry_after_in_run = True

    def releasing(self) -> None:
        if self.state is HALF_OPEN:
            self.probes_out = max(0, self.probes_out - 1)


def _step(breaker: CircuitBreaker, model: Model, operation: tuple[object, ...]) -> None:
    name = operation[0]
    # Reading the state first lets a due half-open transition reach the model.
    before = breaker.state
    if name == "admit":
        admitted = breaker.admit()
        assert admitted or before is not CLOSED
        assert not (admitted and before is OPEN)
        if admitted and before is HALF_OPEN:
            model.probes_out += 1
    elif name == "succeeded":
        if before is CLOSED:
            model.retry_after_in_run = False
        breaker.succeeded()
    elif name == "released":
        model.releasing()
        breaker.released()
    elif name == "failed":
        failure_class, retry_after_ms = operation[1], operation[2]
        assert isinstance(failure_class, FailureClass)
        assert retry_after_ms is None or isinstance(retry_after_ms, int)
        model.failing(failure_class, retry_after_ms)
        breaker.failed(failure_class, retry_after_ms)
    elif name == "advance":
        assert isinstance(operation[1], int)
        model.clock.advance(operation[1])


@pytest.mark.req("REQ-RES-004", "REQ-RES-005", "REQ-TEST-017")
@settings(max_examples=150, deadline=None, database=None)
@given(config=_CONFIGS, operations=st.lists(_OPERATIONS, min_size=20, max_size=80))
def test_any_sequence_keeps_the_breaker_within_its_rules(
    config: BreakerConfig, operations: list[tuple[object, ...]]
) -> None:
    """REQ-RES-004, REQ-RES-005, REQ-TEST-017: three states, ≤ LIM-B5 probes, bounded cooldowns."""
    clock = FakeClock()
    model = Model(clock, config)
    breaker = CircuitBreaker.from_config(ENGINE, config, clock=clock, on_event=model.on_event)
    for operation in operations:
        _step(breaker, model, operation)
        assert breaker.state in set(CircuitState)
        assert breaker.state is model.state
        assert model.probes_out <= limits.PROBE_REQUESTS
