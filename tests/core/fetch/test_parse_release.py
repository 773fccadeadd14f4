"""A parsed tree is freed with its last reference, not at the next full collection."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from rypsok.core.fetch.parse import parse_bounded


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """The collector off, and what a collection finds kept for inspection, then restored."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _lxml_garbage(garbage: list[object]) -> list[str]:
    return [type(o).__name__ for o in garbage if type(o).__module__.startswith("lxml")]


# The pipeline feeds documents whose `</body></html>` it strips, so close() emits end events.
UNCLOSED = "<html><body><main>" + "<p>text <b>bold</b></p>" * 2_000


@pytest.mark.req("REQ-PERF-003")
@pytest.mark.parametrize(
    ("max_nodes", "partial"), [(100_000, False), (50, True)], ids=["whole", "cut at LIM-F10"]
)
def test_a_dropped_tree_leaves_no_cycle_for_the_collector(
    saved_garbage: list[object], max_nodes: int, partial: bool
) -> None:
    """REQ-PERF-003: dropping a tree frees it at once; no lxml object waits in a cycle.

    A tree kept alive by a reference cycle stays resident until a full
    collection, which a busy process runs rarely: the derived memory ceiling
    counts each document's working set once, while its call runs.
    """
    tree = parse_bounded(UNCLOSED, max_nodes=max_nodes, max_depth=64)
    assert tree.partial is partial and len(tree.root) > 0
    del tree
    gc.collect()
    assert _lxml_garbage(saved_garbage) == []
