"""The cyclic collector while serving (issue 14; docs/performance.md §17).

Two settings, for the time a transport serves, and given back afterwards:

* What start-up built (modules, pydantic models, the contract's tables, the
  engine registry: about 100,000 objects) lives as long as the process.
  `gc.freeze()` moves it out of the collector's generations, so no full
  collection walks it again (§17: an HTTP server that did not freeze spent
  64–116 ms of CPU in each full pass, a stall for every call in flight).
* The youngest generation is collected after `YOUNG_THRESHOLD` net
  allocations of tracked objects instead of CPython's 700. A call's own
  objects are nearly all freed by reference counting before it answers, yet
  at 700 almost every call paid a young collection and every tenth a middle
  one (§17: 22 young and 1 middle in 22 stdio calls; 0.5–0.7 ms of CPU per
  call at 5 engines over HTTP, where the calls overlap). Cycles are still
  collected: the count is of objects that stay allocated, so cyclic garbage
  itself brings on the next young collection, at most `YOUNG_THRESHOLD`
  tracked objects later (tests/mcp/test_heap.py).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Final

# Net allocations of tracked objects between two young collections while serving.
YOUNG_THRESHOLD: Final = 10_000


@contextlib.contextmanager
def serving_heap() -> Iterator[None]:
    """Freeze what start-up built and collect the young generation less often, until exit."""
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()  # an in-process caller (tests, an embedding host) gets its heap back
