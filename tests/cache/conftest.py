"""The real redis-server fixture for the cache tests."""

from tests.cache.redis_support import redis_server

__all__ = ["redis_server"]
