"""A process-wide cache of a pure function of CSS text, bounded in texts and characters.

`functools.lru_cache` bounds the number of entries only, so the caches of
short texts keep no text longer than 1 KiB (8,192 such entries are a known
amount of memory). Longer texts are rare but each costs in proportion to its
length on every page that holds it: a site's long selector group (a list of
two hundred hidden classes) or a long declaration block is read again on its
second page unless it is kept. `TextCache` keeps them under a budget of
characters, least recently used out, so what a cache holds is bounded
whatever the sizes of the texts (REQ-PERF-003: a fixed base).
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

_Value = TypeVar("_Value")


class TextCache(Generic[_Value]):
    """`compute(text)` remembered for at most `max_texts` texts and `max_chars` characters.

    A text longer than `max_chars` is computed and not kept. Thread-safe:
    extractions run in worker threads; insertion and eviction hold a lock, and
    two threads that miss on the same text may both compute it (the function
    is pure, so either result serves).
    """

    __slots__ = ("_chars", "_compute", "_entries", "_lock", "max_chars", "max_texts")

    def __init__(self, compute: Callable[[str], _Value], *, max_texts: int, max_chars: int) -> None:
        self._compute = compute
        self.max_texts = max_texts
        self.max_chars = max_chars
        self._entries: OrderedDict[str, _Value] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> _Value:
        # A hit takes no lock: each OrderedDict operation on a str key is atomic under
        # the GIL, and an entry another thread evicts in between is simply not refreshed.
        entries = self._entries
        try:
            value = entries[text]
        except KeyError:
            return self._miss(text)
        with contextlib.suppress(KeyError):
            entries.move_to_end(text)
        return value

    def _miss(self, text: str) -> _Value:
        value = self._compute(text)  # outside the lock: a long computation blocks no one
        if len(text) <= self.max_chars:
            with self._lock:
                if text not in self._entries:
                    self._entries[text] = value
                    self._chars += len(text)
                while len(self._entries) > self.max_texts or self._chars > self.max_chars:
                    oldest, _ = self._entries.popitem(last=False)
                    self._chars -= len(oldest)
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._chars = 0
