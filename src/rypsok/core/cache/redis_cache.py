"""The result cache in Redis, shared by every instance with the same URL and HMAC key.

An entry is a string key with a per-key expiry of ttl_s (REQ-CACHE-005), its
value the engine's hits sealed by `Sealer`. Each caller namespace keeps an
index of its entries (a sorted set by time of storage): the script that stores
an entry drops the oldest beyond `entries` (LIM-K3), so a caller holds at
most that many, and no caller can push out another's. The age of a hit is
read from Redis's own countdown (ttl_s minus the key's remaining PTTL), so
instances with differing clocks report the same age.

A Redis that is slow or gone makes `get` a miss and `put` a no-op within the
operation deadline (REQ-CACHE-006).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from rypsok.core.cache.entries import CachedHits, EntryScope, Namespaces, SharedStateUnavailable
from rypsok.core.cache.keys import KeyLayout, Sealer, hits_from_bytes, hits_to_bytes
from rypsok.core.engines.base import RawHit

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from rypsok.core.cache.link import RedisLink

# KEYS: entry, index. ARGV: sealed value, ttl ms, max entries.
_PUT: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
redis.call('ZADD', KEYS[2], now, KEYS[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ttl)
local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[3])
if excess > 0 then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, excess - 1)
  for _, key in ipairs(oldest) do redis.call('DEL', key) end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, excess - 1)
end
redis.call('PEXPIRE', KEYS[2], ttl)
return excess
"""


class RedisCache:
    def __init__(
        self, link: RedisLink, layout: KeyLayout, sealer: Sealer, *, ttl_s: int, entries: int
    ) -> None:
        self._link = link
        self._layout = layout
        self._sealer = sealer
        self._ttl_ms = ttl_s * 1000
        self._max_entries = entries
        self._namespaces = Namespaces()
        self._put = link.script(_PUT)

    def _key(self, scope: EntryScope) -> str:
        namespace = self._namespaces.of(scope.caller)
        return self._layout.entry(namespace, scope.engine, scope.endpoint, scope.params)

    async def get(self, scope: EntryScope, *, budget_s: float) -> CachedHits | None:
        key = self._key(scope)

        async def read(client: aioredis.Redis) -> list[object]:
            async with client.pipeline(transaction=False) as pipe:
                pipe.get(key)
                pipe.pttl(key)
                return list(await pipe.execute())

        try:
            sealed, remaining_ms = await self._link.run("cache_get", read, budget_s=budget_s)
        except SharedStateUnavailable:
            return None
        if not isinstance(sealed, bytes) or not isinstance(remaining_ms, int) or remaining_ms < 0:
            return None
        plain = self._sealer.open(key, sealed)
        hits = hits_from_bytes(plain) if plain is not None else None
        if hits is None:
            return None
        return CachedHits(hits, max(0.0, (self._ttl_ms - remaining_ms) / 1000.0))

    async def put(self, scope: EntryScope, hits: tuple[RawHit, ...], *, budget_s: float) -> None:
        key = self._key(scope)
        index = self._layout.entry_index(self._namespaces.of(scope.caller))
        sealed = self._sealer.seal(key, hits_to_bytes(hits))
        try:
            await self._link.run(
                "cache_put",
                lambda _: self._put([key, index], [sealed, self._ttl_ms, self._max_entries]),
                budget_s=budget_s,
            )
        except SharedStateUnavailable:
            return
