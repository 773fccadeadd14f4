"""The collector's settings while serving (rypsok.mcp.heap; docs/performance.md §17)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import pytest

from rypsok.mcp.heap import YOUNG_THRESHOLD, serving_heap


class _Node:
    """An object that refers to itself: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


# The count is exact only where nothing else frees tracked objects meanwhile: each
# free lowers the young generation's count. In the test process other threads
# (worker threads of earlier tests ending) do free some, so it runs in a child.
_CYCLES_CHILD = """
import gc, sys, weakref
from rypsok.mcp.heap import YOUNG_THRESHOLD, serving_heap

class Node:
    def __init__(self):
        self.me = self

def cycle():
    return weakref.ref(Node())

assert gc.isenabled()
with serving_heap():
    first = cycle()
    made = 1
    while first() is not None and made <= 3 * YOUNG_THRESHOLD:
        cycle()
        made += 1
sys.stdout.write(f"{first() is None} {made} {YOUNG_THRESHOLD}")
"""


@pytest.mark.req("REQ-PERF-003")
def test_garbage_cycles_made_while_serving_are_freed_within_the_young_threshold() -> None:
    """The memory derivation counts on garbage being freed: a cycle dropped while serving
    is collected by the collector on its own, no later than YOUNG_THRESHOLD more objects."""
    done = subprocess.run(
        [sys.executable, "-c", _CYCLES_CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    collected, made, threshold = done.stdout.split()
    assert collected == "True", "a dropped cycle was never collected while serving"
    assert int(threshold) == YOUNG_THRESHOLD
    # Each cycle is one tracked allocation that stays allocated until collected.
    assert int(made) <= YOUNG_THRESHOLD + 1


@pytest.mark.req("REQ-PERF-003")
def test_the_start_up_heap_is_frozen_only_while_serving() -> None:
    """Serving freezes what start-up built and raises the young threshold; an in-process
    caller (a test, a host embedding the server) gets CPython's settings back after."""
    before = gc.get_threshold()
    survivor = _Node()  # alive when serving starts: frozen with the rest of start-up
    with serving_heap():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
        assert gc.get_freeze_count() > 0
        assert not any(obj is survivor for obj in gc.get_objects())
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    ref = weakref.ref(survivor)
    del survivor
    gc.collect()
    assert ref() is None, "what was frozen while serving must be collectable again afterwards"
