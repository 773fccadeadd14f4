"""An identical request's wait for its leader, with the event made only when one waits."""

from __future__ import annotations

import anyio
import pytest

from rypsok.core.search.aggregate import EngineAnswer, _Shared


@pytest.mark.req("REQ-ENG-002")
async def test_a_waiter_before_the_end_gets_the_leaders_answer() -> None:
    """REQ-ENG-002: requests waiting on the leader wake with its answer when it finishes."""
    shared = _Shared()
    woke: list[EngineAnswer | None] = []

    async def follow() -> None:
        await shared.wait()
        woke.append(shared.answer)

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        group.start_soon(follow)
        await anyio.sleep(0.01)
        assert woke == []  # still waiting for the leader
        shared.answer = EngineAnswer("e")
        shared.finish()
    assert woke == [EngineAnswer("e"), EngineAnswer("e")]


@pytest.mark.req("REQ-ENG-002")
async def test_a_wait_after_the_end_returns_at_once() -> None:
    """REQ-ENG-002: a finished leader (cancelled: no answer) never leaves a waiter hanging."""
    shared = _Shared()
    shared.finish()
    with anyio.fail_after(1):
        await shared.wait()
    assert shared.answer is None


@pytest.mark.req("REQ-ENG-002")
async def test_a_leader_that_never_ends_keeps_its_waiter_waiting() -> None:
    """REQ-ENG-002: without the end there is no wake-up (the call's deadline ends the wait)."""
    shared = _Shared()
    with anyio.move_on_after(0.05) as scope:
        await shared.wait()
    assert scope.cancelled_caught
