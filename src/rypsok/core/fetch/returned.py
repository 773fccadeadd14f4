"""The URLs web_search returned, remembered for strict fetch mode only (REQ-SEC-021).

This is the one store of result URLs that outlives a call, and it exists only
while the operator runs strict mode: `FetchPipeline` makes one then, and none
otherwise, so with strict mode off no result URL is kept beyond its call
(REQ-PRIV-003). Its retention class is the process lifetime, bounded by
count: the oldest URL is forgotten first (REQ-LIFE-003, docs/architecture.md).

`ReturnedUrls` is the shape a store must have; `BoundedReturnedUrls` keeps
them in memory. A shared store (several processes behind one listener) can
be another implementation of the same two methods.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Final, Protocol

__all__ = ["RETURNED_URLS_KEPT", "BoundedReturnedUrls", "ReturnedUrls"]

# At LIM-S7's ceiling of results per call this is the last few hundred searches;
# at LIM-F9 per URL it is at most ~20 MB, in practice ~1 MB.
RETURNED_URLS_KEPT: Final = 10_000


class ReturnedUrls(Protocol):
    """Where strict mode looks up whether rypsok returned a URL."""

    def remember(self, urls: Iterable[str]) -> None:
        """Add the URLs one web_search call returned."""

    def contains(self, url: str) -> bool:
        """Whether web_search returned this exact URL (and it is still remembered)."""


class BoundedReturnedUrls:
    """In memory, at most `capacity` URLs; remembering a URL again makes it the newest."""

    def __init__(self, capacity: int = RETURNED_URLS_KEPT) -> None:
        if capacity < 1:
            raise ValueError("the store must hold at least one URL")
        self._capacity = capacity
        self._urls: collections.OrderedDict[str, None] = collections.OrderedDict()

    def remember(self, urls: Iterable[str]) -> None:
        for url in urls:
            self._urls[url] = None
            self._urls.move_to_end(url)
        while len(self._urls) > self._capacity:
            self._urls.popitem(last=False)

    def contains(self, url: str) -> bool:
        return url in self._urls

    def __len__(self) -> int:
        return len(self._urls)
