"""The one connection to Redis: a deadline on every operation and a circuit of its own.

REQ-CACHE-006: Redis may only make rypsok slower by at most one operation
deadline (LIM-K4), never make a call fail. Every operation runs under that
deadline; a timeout, a refused connection or any Redis error raises
`SharedStateUnavailable`, and the caller goes on with local state.

The circuit: the first failure marks Redis lost (one warning line,
`redis_lost`); for the next `RETRY_S` every operation falls back at once
without touching the network. After that, the next operation is let through:
success marks Redis back (one line, `redis_back`), failure keeps it lost for
another `RETRY_S`, silently. Every fallback is counted in
`Metrics.shared_state_fallbacks` by what fell back. The circuit is this
process's own and lives in memory, like the engines' circuits (REQ-RES-009).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import anyio
import redis.asyncio as aioredis
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from rypsok.core import limits, logs
from rypsok.core.cache.entries import SharedStateUnavailable
from rypsok.core.metrics import Metrics

log = logging.getLogger("rypsok.cache")

# How long a lost Redis is left alone before one operation tries it again.
RETRY_S: Final = 2.0
# A Redis that has not answered in this long is slow, whatever deadline the call gave
# it: the shortest LIM-K4 an operator may set (a healthy one answers in under 1 ms).
_SLOW_S: Final = limits.REDIS_OPERATION_RANGE[0] / 1000.0

T = TypeVar("T")


class RedisLink:
    def __init__(
        self,
        url: str,
        *,
        operation_ms: int,
        metrics: Metrics,
        clock: Callable[[], float] = time.monotonic,
        retry_s: float = RETRY_S,
    ) -> None:
        deadline_s = operation_ms / 1000.0
        # No retries inside the client: the deadline is the whole budget, and a
        # retry is the circuit's decision, made per process, not per command.
        self.client: aioredis.Redis = aioredis.Redis.from_url(
            url,
            socket_timeout=deadline_s,
            socket_connect_timeout=deadline_s,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
        self.deadline_s = deadline_s
        self._metrics = metrics
        self._clock = clock
        self._retry_s = retry_s
        self.lost = False
        self._retry_at = 0.0
        self._scripts: list[str] = []
        self._loaded = False  # this Redis knows every script (see `_first_contact`)
        self._contacting = anyio.Lock()  # one first contact, however many calls wait

    async def run(
        self,
        what: str,
        operation: Callable[[aioredis.Redis], Awaitable[T]],
        *,
        budget_s: float | None = None,
    ) -> T:
        """The operation's result, or SharedStateUnavailable within the deadline.

        `budget_s`: what the call can spare for this operation, when that is
        less than LIM-K4 (a lookup before an engine request may only spend the
        slack the engine's own timeout leaves before the search deadline). An
        operation cut by a budget shorter than the shortest LIM-K4 falls back
        and is counted but leaves the circuit as it was: so little time says
        nothing about Redis's health.
        """
        if self.lost and self._clock() < self._retry_at:
            self._fell_back(what)
            raise SharedStateUnavailable(what)
        timeout_s = self.deadline_s if budget_s is None else min(self.deadline_s, budget_s)
        if timeout_s <= 0:
            self._fell_back(what)
            raise SharedStateUnavailable(what)
        try:
            if not self._loaded:
                timeout_s = await self._first_contact(timeout_s, budget_s)
            with anyio.fail_after(timeout_s):
                result = await operation(self.client)
        except TimeoutError as exc:
            if timeout_s < _SLOW_S:  # too short a budget to tell a slow Redis: no verdict
                self._fell_back(what)
            else:
                self._failed(what, exc)
            raise SharedStateUnavailable(what) from None
        except (RedisError, OSError) as exc:
            self._failed(what, exc)
            raise SharedStateUnavailable(what) from None
        if self.lost:
            self.lost = False
            logs.event(log, "redis_back", logging.INFO, operation=what)
        return result

    async def _first_contact(self, timeout_s: float, budget_s: float | None) -> float:
        """Connect and load every script, under a LIM-K4 of its own, before the operation.

        Otherwise the first operation of each script pays connecting, a refused
        EVALSHA and SCRIPT LOAD within one deadline: on a busy host that passes
        LIM-K4, and N instances starting together would each fall back to local
        spacing at the very moment they compete. Done again after a failure: a
        restarted Redis has forgotten the scripts. Within a call's budget the
        two share it; the timeout left for the operation is returned.
        """
        started = self._clock()
        with anyio.fail_after(timeout_s):
            async with self._contacting:
                if not self._loaded:  # else made by another call while this one waited
                    async with self.client.pipeline(transaction=False) as pipe:
                        for source in self._scripts:
                            pipe.script_load(source)
                        await pipe.execute()
                    self._loaded = True
        if budget_s is None:
            return self.deadline_s
        # Not below the circuit's threshold: a slow Redis still gets its verdict.
        return max(min(self.deadline_s, budget_s - (self._clock() - started)), _SLOW_S)

    def _failed(self, what: str, exc: BaseException) -> None:
        self._loaded = False
        self._fell_back(what)
        self._retry_at = self._clock() + self._retry_s
        if not self.lost:
            self.lost = True
            logs.event(log, "redis_lost", logging.WARNING, operation=what,
                       error=type(exc).__name__, retry_s=self._retry_s)  # fmt: skip

    def _fell_back(self, what: str) -> None:
        self._metrics.shared_state_fallbacks[what] += 1

    def script(self, source: str) -> Callable[[list[str], list[Any]], Awaitable[Any]]:
        """A server-side script, sent by digest after its first use (one round trip each)."""
        registered = self.client.register_script(source)
        self._scripts.append(source)

        def call(keys: list[str], args: list[Any]) -> Awaitable[Any]:
            return registered(keys=keys, args=args)

        return call

    async def aclose(self) -> None:
        await self.client.aclose()
