"""The optional result cache and the state several instances share (issue 12, SRS §16).

`SharedState.build(config, metrics)` reads `[cache]` and `[cluster]` once at
start and hands the services what they plug in:

- `cache`: None (off, the default: LIM-K1, REQ-CACHE-001), a `MemoryCache`,
  or a `RedisCache`;
- `queue_factory`: engine queues spaced locally (times `[cluster] instances`)
  or reserved in Redis;
- `call_limits(limiter)`: the invocation limits, per process or over Redis;
- `returned_urls`: None, or the strict-mode store shared through Redis.

`backend = "redis"` shares spacing, limits and returned URLs whether or not
`enabled` also caches results; see docs/rfc-014-cache.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rypsok.core.cache.entries import AnswerCache
from rypsok.core.cache.keys import KeyLayout, Sealer
from rypsok.core.cache.memory import MemoryCache
from rypsok.core.cache.shared import (
    CallLimits,
    LocalCallLimits,
    SharedCallLimits,
    SharedReturnedUrls,
    SpacingFactory,
)
from rypsok.core.config import Config, ConfigError
from rypsok.core.fetch.returned import RETURNED_URLS_KEPT
from rypsok.core.invocation import InvocationLimiter
from rypsok.core.metrics import Metrics

if TYPE_CHECKING:
    from rypsok.core.cache.link import RedisLink

__all__ = ["AnswerCache", "SharedState"]


@dataclass
class SharedState:
    cache: AnswerCache | None
    queue_factory: SpacingFactory
    returned_urls: SharedReturnedUrls | None
    link: RedisLink | None
    layout: KeyLayout | None

    @classmethod
    def build(cls, config: Config, metrics: Metrics) -> SharedState:
        settings = config.cache
        instances = config.cluster.instances
        if settings.backend != "redis":
            cache = (
                MemoryCache(ttl_s=settings.ttl_s, entries=settings.entries)
                if settings.enabled
                else None
            )
            return cls(cache, SpacingFactory(None, None, instances), None, None, None)
        url = settings.redis_url.resolve() if settings.redis_url else None
        secret = settings.hmac_key.resolve() if settings.hmac_key else None
        if url is None or secret is None:  # checked at load; a secret may vanish since
            raise ConfigError('cache.redis_url and cache.hmac_key must be set for "redis"')
        # The Redis client is imported only when used: it costs start-up time.
        from rypsok.core.cache.link import RedisLink  # noqa: PLC0415
        from rypsok.core.cache.redis_cache import RedisCache  # noqa: PLC0415

        key = secret.reveal().encode("utf-8")
        layout = KeyLayout(settings.key_prefix, key)
        try:
            link = RedisLink(url.reveal(), operation_ms=settings.operation_ms, metrics=metrics)
        except ValueError:  # the client's parse of the URL: never a traceback, never the URL
            raise ConfigError(
                "key 'cache.redis_url': not a Redis URL the client can read "
                "(redis://host:port/db, rediss://… or unix:///path)"
            ) from None
        redis_cache = (
            RedisCache(link, layout, Sealer(key), ttl_s=settings.ttl_s, entries=settings.entries)
            if settings.enabled
            else None
        )
        return cls(
            redis_cache,
            SpacingFactory(link, layout, instances),
            # Returned URLs are kept in Redis only where strict mode reads them.
            SharedReturnedUrls(link, layout, capacity=RETURNED_URLS_KEPT * instances)
            if config.fetch.strict
            else None,
            link,
            layout,
        )

    def call_limits(self, limiter: InvocationLimiter, per_minute: dict[str, int]) -> CallLimits:
        if self.link is None or self.layout is None:
            return LocalCallLimits(limiter)
        return SharedCallLimits(self.link, self.layout, limiter, per_minute)

    async def aclose(self) -> None:
        if self.link is not None:
            # Adjustments still in flight go out first, each within its own deadline.
            await self.queue_factory.drain(2 * self.link.deadline_s)
            await self.link.aclose()
