"""The per-engine admission queue: spacing, caps, 429 widening, deadlines."""

from __future__ import annotations

import itertools
import time

import anyio
import pytest

from rypsok.core.engines.base import EngineFailure
from rypsok.core.engines.queue import SPACING_MARGIN_MS, EngineQueue, NotSent, WhyNotSent


def queue(interval_ms: int, concurrency: int, process: int = 32) -> EngineQueue:
    return EngineQueue(
        min_interval_ms=interval_ms,
        max_concurrency=concurrency,
        process_slots=anyio.CapacityLimiter(process),
    )


async def run_requests(
    q: EngineQueue, count: int, hold_s: float, deadline_s: float = 10.0
) -> tuple[list[float], int, list[str]]:
    """Start `count` concurrent requests; their start times, peak concurrency, outcomes."""
    starts: list[float] = []
    outcomes: list[str] = []
    in_flight = peak = 0
    deadline = time.monotonic() + deadline_s

    async def one() -> None:
        nonlocal in_flight, peak
        try:
            async with q.turn(deadline):
                starts.append(time.monotonic())
                in_flight += 1
                peak = max(peak, in_flight)
                await anyio.sleep(hold_s)
                in_flight -= 1
            outcomes.append("sent")
        except EngineFailure as failure:
            outcomes.append(failure.failure_class.value)

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)
    return sorted(starts), peak, outcomes


@pytest.mark.req("REQ-CMP-002", "REQ-TEST-016")
async def test_concurrent_requests_are_spaced_by_the_engine_rate() -> None:
    """REQ-CMP-002: no two starts closer than the recorded spacing, none racing."""
    starts, _, outcomes = await run_requests(queue(100, 4), 6, hold_s=0.0)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert outcomes == ["sent"] * 6
    assert min(gaps) >= 0.1


@pytest.mark.req("REQ-AGG-005", "REQ-CMP-002")
async def test_engine_concurrency_cap_holds() -> None:
    """REQ-AGG-005: never more than the engine's cap in flight (LIM-C2)."""
    _, peak, outcomes = await run_requests(queue(0, 2), 8, hold_s=0.05)
    assert peak == 2 and outcomes == ["sent"] * 8


@pytest.mark.req("REQ-AGG-005", "REQ-AGG-001")
async def test_process_cap_holds_across_engines() -> None:
    """REQ-AGG-005: the process cap LIM-C1 bounds requests of all engines together."""
    process = anyio.CapacityLimiter(3)
    queues = [
        EngineQueue(min_interval_ms=0, max_concurrency=2, process_slots=process) for _ in range(4)
    ]
    in_flight = peak = 0
    deadline = time.monotonic() + 10

    async def one(q: EngineQueue) -> None:
        nonlocal in_flight, peak
        async with q.turn(deadline):
            in_flight += 1
            peak = max(peak, in_flight)
            await anyio.sleep(0.03)
            in_flight -= 1

    async with anyio.create_task_group() as group:
        for q in queues:
            for _ in range(3):
                group.start_soon(one, q)
    assert peak == 3


@pytest.mark.req("REQ-AGG-008", "REQ-TEST-004")
async def test_a_turn_after_the_deadline_is_not_sent() -> None:
    """Decision 1: a request whose turn comes after the deadline is reported timeout."""
    started = time.monotonic()
    _, _, outcomes = await run_requests(queue(400, 1), 3, hold_s=0.0, deadline_s=0.5)
    assert sorted(outcomes) == ["sent", "sent", "timeout"]
    assert time.monotonic() - started < 0.7  # nobody waited past the deadline


@pytest.mark.req("REQ-CMP-002", "REQ-RES-002")
async def test_429_widens_spacing_and_retry_after_blocks_until_it_passes() -> None:
    """REQ-CMP-002: a 429 doubles the spacing; Retry-After delays the next start."""
    q = queue(100, 1)
    base = q.spacing_s
    q.rate_limited(retry_after_ms=300)
    assert q.spacing_s == pytest.approx((200 + SPACING_MARGIN_MS) / 1000)
    assert q.spacing_s > base
    started = time.monotonic()
    starts, _, _ = await run_requests(q, 1, hold_s=0.0)
    assert starts[0] - started >= 0.29


@pytest.mark.req("REQ-CMP-002")
async def test_widened_spacing_decays_after_successes() -> None:
    """Decision 1: after a run of successes the spacing returns to the record's."""
    q = queue(100, 1)
    q.rate_limited(None)
    q.rate_limited(None)
    assert q.spacing_s == pytest.approx((400 + SPACING_MARGIN_MS) / 1000)
    for _ in range(10):
        q.succeeded()
    assert q.spacing_s == pytest.approx((100 + SPACING_MARGIN_MS) / 1000)


@pytest.mark.req("REQ-CMP-002")
async def test_a_pause_holds_the_next_start_without_widening() -> None:
    """REQ-CMP-002: a provider's pause after success delays the next start, spacing unchanged."""
    q = queue(50, 1)
    spacing = q.spacing_s
    q.pause(300)
    assert q.spacing_s == spacing
    started = time.monotonic()
    starts, _, _ = await run_requests(q, 1, hold_s=0.0)
    assert starts[0] - started >= 0.29


@pytest.mark.req("REQ-CMP-002", "REQ-AGG-008")
async def test_a_refused_turn_reserves_nothing() -> None:
    """Decision 1: a request refused for its deadline does not push later turns back."""
    q = queue(300, 1)
    began = time.monotonic()
    first, _, _ = await run_requests(q, 1, hold_s=0.0)
    _, _, refused = await run_requests(q, 1, hold_s=0.0, deadline_s=0.1)
    later, _, _ = await run_requests(q, 1, hold_s=0.0)
    assert refused == ["timeout"]
    assert first[0] - began < 0.05
    assert 0.3 <= later[0] - first[0] < 0.45  # one spacing, not two


@pytest.mark.req("REQ-AGG-008", "REQ-CMP-002")
async def test_a_refused_turn_says_whether_the_rate_or_the_provider_decided() -> None:
    """CLR-5, REQ-CMP-002: no turn for the spacing is `no_turn`; a Retry-After is `paused`."""
    spaced = queue(400, 1)
    async with spaced.turn(time.monotonic() + 1.0):
        pass
    with pytest.raises(NotSent) as by_rate:
        async with spaced.turn(time.monotonic() + 0.1):
            pass
    paused = queue(0, 1)
    paused.rate_limited(retry_after_ms=30_000)
    with pytest.raises(NotSent) as by_provider:
        async with paused.turn(time.monotonic() + 1.0):
            pass
    assert by_rate.value.why is WhyNotSent.NO_TURN
    assert by_provider.value.why is WhyNotSent.PAUSED
