"""The in-process result cache: least recently used first out, every entry for ttl_s.

At most `entries` (LIM-K3) entries in the process, each valid for `ttl_s`
(LIM-K2) from the provider's answer (REQ-CACHE-005). An expired entry is
never returned; it is dropped when met or pushed out by newer ones. Nothing
leaves the process and nothing survives it.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

from rypsok.core.cache.entries import CachedHits, EntryScope, Namespaces
from rypsok.core.cache.keys import params_material
from rypsok.core.engines.base import RawHit

_Key = tuple[object, ...]


class MemoryCache:
    def __init__(
        self,
        *,
        ttl_s: int,
        entries: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl_s = ttl_s
        self._max_entries = entries
        self._clock = clock
        self._namespaces = Namespaces()
        self._entries: collections.OrderedDict[_Key, tuple[float, tuple[RawHit, ...]]] = (
            collections.OrderedDict()
        )

    def __len__(self) -> int:
        return len(self._entries)

    def _key(self, scope: EntryScope) -> _Key:
        material = params_material(scope.engine, scope.endpoint, scope.params)
        return (self._namespaces.of(scope.caller), *material)

    async def get(self, scope: EntryScope, *, budget_s: float = 0.0) -> CachedHits | None:
        key = self._key(scope)
        found = self._entries.get(key)
        if found is None:
            return None
        stored, hits = found
        age_s = self._clock() - stored
        if age_s >= self._ttl_s:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return CachedHits(hits, age_s)

    async def put(
        self, scope: EntryScope, hits: tuple[RawHit, ...], *, budget_s: float = 0.0
    ) -> None:
        key = self._key(scope)
        self._entries[key] = (self._clock(), hits)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
