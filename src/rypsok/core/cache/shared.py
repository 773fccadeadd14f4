"""State N instances share through Redis: engine spacing, per-caller limits, returned URLs.

Spacing (decision 1 across instances). Each engine's next start time, its
widening factor and its pauses live in one Redis hash. A request's start is
reserved by one server-side script that reads and pushes the next start with
no other client in between, using Redis's clock, so N instances together
never start two requests to an engine closer than its spacing. A 429 or a
provider's pause widens or blocks the spacing for every instance; a run of
successes narrows it again, as the local queue does. The wait itself is a
local sleep. Without Redis (lost, or slower than LIM-K4) the local queue
spaces by the record's spacing times `[cluster] instances`.

Invocation limits (REQ-MCP-010, REQ-SEC-019). A sliding window of the last
minute per (caller, tool) as a sorted set, checked and extended by one
script, so LIM-C6…C8 count an HTTP caller's calls over all instances (on
stdio they stay per process, as REQ-MCP-010 says). Without Redis
the process's own window counts (it records every admitted call, so it is
warm when Redis goes).

Returned URLs (REQ-SEC-021). In strict mode a URL web_search returned on one
instance may be fetched through another: each returned URL is kept, by its
HMAC name only, for `RETURNED_URL_TTL_S`, in one sorted set per deployment
bounded like the process's own store: at most `RETURNED_URLS_KEPT` times
`[cluster] instances` names, the oldest dropped first, so the URLs of many
searches never grow Redis by one key each.

Circuit state stays per process (REQ-RES-009).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from rypsok.core import limits
from rypsok.core.cache.entries import STDIO_CALLER, SharedStateUnavailable
from rypsok.core.cache.keys import KeyLayout
from rypsok.core.callers import FairSlots
from rypsok.core.engines.base import Driver
from rypsok.core.engines.queue import (
    MAX_SPACING_FACTOR,
    SPACING_MARGIN_MS,
    SUCCESSES_TO_DECAY,
    EngineQueue,
)
from rypsok.core.invocation import WINDOW_S, InvocationLimiter

if TYPE_CHECKING:
    from rypsok.core.cache.link import RedisLink

# How long a returned URL stays fetchable through another instance in strict mode.
RETURNED_URL_TTL_S: Final = 3_600
# The spacing state of an engine no instance asks any more is dropped after this.
SPACING_STATE_TTL_MS: Final = 2 * limits.RETRY_AFTER_MAX_MS

_NOW: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: spacing hash. ARGV: record spacing ms, margin ms, ms left before the deadline,
# state ttl ms, ms before which this instance must not start (its own last start plus
# spacing: a Redis restarted empty does not know it). Returns {ms to wait, factor}, or
# {-1, factor}: the turn comes too late.
_RESERVE: Final = (
    _NOW
    + """
local h = redis.call('HMGET', KEYS[1], 'next', 'factor', 'blocked')
local nxt = tonumber(h[1]) or 0
local factor = tonumber(h[2]) or 1
local blocked = tonumber(h[3]) or 0
local start = math.max(now, nxt, blocked, now + tonumber(ARGV[5]))
if start - now >= tonumber(ARGV[3]) then return {-1, factor} end
local base = tonumber(ARGV[1])
local spacing = 0
if base > 0 or factor > 1 then
  if factor > 1 then base = math.max(base, 100) end
  spacing = base * factor + tonumber(ARGV[2])
end
redis.call('HSET', KEYS[1], 'next', start + spacing)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {start - now, factor}
"""
)

# KEYS: spacing hash. ARGV: mode (widen, pause, success), ms to block, max factor,
# successes to decay, state ttl ms.
_ADJUST: Final = (
    _NOW
    + """
local mode = ARGV[1]
if mode == 'widen' then
  local factor = tonumber(redis.call('HGET', KEYS[1], 'factor') or '1')
  redis.call('HSET', KEYS[1], 'factor', math.min(factor * 2, tonumber(ARGV[3])), 'successes', 0)
elseif mode == 'success' then
  local factor = tonumber(redis.call('HGET', KEYS[1], 'factor') or '1')
  if factor > 1 then
    local successes = redis.call('HINCRBY', KEYS[1], 'successes', 1)
    if successes >= tonumber(ARGV[4]) then
      redis.call('HSET', KEYS[1], 'factor', math.floor(factor / 2), 'successes', 0)
    end
  end
end
local block = tonumber(ARGV[2])
if block > 0 then
  local blocked = tonumber(redis.call('HGET', KEYS[1], 'blocked') or '0')
  redis.call('HSET', KEYS[1], 'blocked', math.max(blocked, now + block))
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
"""
)

# KEYS: calls sorted set. ARGV: limit, window ms, a unique member.
# Returns 0 when admitted, else the ms until a call may be admitted.
_ADMIT: Final = (
    _NOW
    + """
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(first[2]) + window - now + 1)
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return 0
"""
)


# Microseconds of Redis's clock: the names of one write get successive scores, so the
# set's order is the order of storing and a trim drops exactly the oldest.
_NOW_US: Final = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
"""

# KEYS: the returned-URL set. ARGV: ttl ms, most names kept, then the names to add.
_REMEMBER: Final = (
    _NOW_US
    + """
local ttl = tonumber(ARGV[1]) * 1000
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], now + i - 3, ARGV[i]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if excess > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, excess - 1) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return excess
"""
)

# KEYS: the returned-URL set. ARGV: ttl ms, a name. 1 when kept and younger than ttl.
_KNOWN: Final = (
    _NOW_US
    + """
local stored = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '-1')
if stored >= 0 and stored > now - tonumber(ARGV[1]) * 1000 then return 1 end
return 0
"""
)


class _Background:
    """Adjustments sent without awaiting them: a 429 is reported from sync code."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, work: Coroutine[Any, Any, None]) -> None:
        try:
            task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:  # no loop: nothing to share with
            work.close()
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self, timeout_s: float) -> None:
        """Let pending adjustments reach Redis before the connection closes.

        A 429 seen just before shutdown would otherwise never widen the other
        instances' spacing. Each adjustment is already bounded by LIM-K4; the
        timeout only guards against a task that never ends.
        """
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)


class SharedEngineQueue(EngineQueue):
    """An engine's queue whose start times are reserved in Redis (decision 1, N instances)."""

    def __init__(
        self,
        *,
        link: RedisLink,
        key: str,
        instances: int,
        background: _Background,
        min_interval_ms: int,
        max_concurrency: int,
        process_slots: anyio.CapacityLimiter | FairSlots,
        clock: Callable[[], float],
    ) -> None:
        super().__init__(min_interval_ms=min_interval_ms, max_concurrency=max_concurrency,
                         process_slots=process_slots, clock=clock)  # fmt: skip
        self._link = link
        self._key = key
        self._instances = instances
        self._background = background
        self._reserve_script = link.script(_RESERVE)
        self._adjust_script = link.script(_ADJUST)
        self._own_floor = 0.0  # this instance's last start plus its spacing, local clock

    async def _reserve(self, deadline: float) -> float:
        now = self._clock()
        left_ms = int((deadline - now) * 1000)
        # Also this instance's own pause: its adjustment may not have reached Redis yet.
        floor = max(self._own_floor, self._blocked_until)
        floor_ms = max(0, int((floor - now) * 1000) + 1)
        args = [self.min_interval_ms, SPACING_MARGIN_MS, max(0, left_ms), SPACING_STATE_TTL_MS,
                floor_ms]  # fmt: skip
        try:
            # The full LIM-K4, not the call's slack: a request queued behind others has
            # spent its slack, and falling back then would drop the shared spacing just
            # when instances compete (REQ-CMP-002 before the call's time). Once Redis
            # is lost the circuit answers at once, so a hung Redis costs this at most
            # once per retry.
            wait_ms, factor = await self._link.run(
                "spacing", lambda _: self._reserve_script([self._key], args)
            )
        except SharedStateUnavailable:
            return self._reserve_alone(deadline)
        self._factor = max(1, int(factor))  # mirror the shared widening locally
        if int(wait_ms) < 0:
            raise self._not_sent(deadline)
        start = self._clock() + int(wait_ms) / 1000.0
        # Kept locally too, so the spacing holds on if Redis goes the next moment.
        self._next_start = max(self._next_start, start + self.spacing_s * self._instances)
        self._own_floor = start + self.spacing_s
        return start

    def _reserve_alone(self, deadline: float) -> float:
        """Without Redis: the record's spacing times the instances that share the address."""
        start = max(self._clock(), self._next_start, self._blocked_until)
        if start >= deadline:
            raise self._not_sent(deadline)
        self._next_start = start + self.spacing_s * self._instances
        self._own_floor = start + self.spacing_s
        return start

    def _adjust(self, mode: str, block_ms: int) -> None:
        args = [mode, block_ms, MAX_SPACING_FACTOR, SUCCESSES_TO_DECAY, SPACING_STATE_TTL_MS]

        async def send() -> None:
            try:
                await self._link.run("spacing", lambda _: self._adjust_script([self._key], args))
            except SharedStateUnavailable:
                return

        self._background.start(send())

    def rate_limited(self, retry_after_ms: int | None) -> None:
        super().rate_limited(retry_after_ms)
        wait_ms = min(retry_after_ms, limits.RETRY_AFTER_MAX_MS) if retry_after_ms else 0
        self._adjust("widen", wait_ms)

    def pause(self, pause_ms: int) -> None:
        super().pause(pause_ms)
        self._adjust("pause", min(pause_ms, limits.RETRY_AFTER_MAX_MS))

    def succeeded(self) -> None:
        widened = self._factor > 1
        super().succeeded()
        if widened:  # the shared factor is mirrored at each reservation
            self._adjust("success", 0)


class SpacingFactory:
    """The `QueueFactory` of the search pipeline for a deployment of `instances` processes."""

    def __init__(self, link: RedisLink | None, layout: KeyLayout | None, instances: int) -> None:
        self._link = link
        self._layout = layout
        self._instances = instances
        self._background = _Background()

    async def drain(self, timeout_s: float) -> None:
        await self._background.drain(timeout_s)

    def __call__(
        self,
        driver: Driver,
        *,
        min_interval_ms: int,
        max_concurrency: int,
        process_slots: anyio.CapacityLimiter | FairSlots,
        clock: Callable[[], float],
    ) -> EngineQueue:
        if self._link is None or self._layout is None:
            # No Redis at all: the safe local spacing for N processes is N times the record's.
            return EngineQueue(min_interval_ms=min_interval_ms * self._instances,
                               max_concurrency=max_concurrency, process_slots=process_slots,
                               clock=clock)  # fmt: skip
        return SharedEngineQueue(
            link=self._link,
            key=self._layout.spacing(driver.id, driver.endpoint),
            instances=self._instances,
            background=self._background,
            min_interval_ms=min_interval_ms,
            max_concurrency=max_concurrency,
            process_slots=process_slots,
            clock=clock,
        )


class CallLimits(Protocol):
    """REQ-MCP-010: None when a call may run, else the ms until one may.

    `budget_s`: what the call can spend on a shared check before its own work
    needs the rest of its deadline (None: no deadline, LIM-K4 alone).
    """

    async def admit(
        self, tool: str, caller: str, *, budget_s: float | None = None
    ) -> int | None: ...


class LocalCallLimits:
    """The process's own window (stdio, one instance, or no Redis)."""

    def __init__(self, limiter: InvocationLimiter) -> None:
        self.limiter = limiter

    async def admit(self, tool: str, caller: str, *, budget_s: float | None = None) -> int | None:
        return self.limiter.admit(tool, caller)


class SharedCallLimits:
    """REQ-SEC-019 over all instances: one script checks and extends the caller's window."""

    def __init__(
        self,
        link: RedisLink,
        layout: KeyLayout,
        limiter: InvocationLimiter,
        per_minute: dict[str, int],
    ) -> None:
        self._link = link
        self._layout = layout
        self._local = limiter
        self._per_minute = per_minute
        self._admit = link.script(_ADMIT)

    async def admit(self, tool: str, caller: str, *, budget_s: float | None = None) -> int | None:
        limit = self._per_minute.get(tool)
        if limit is None:
            return None
        if caller == STDIO_CALLER:  # on stdio the limits are per process (REQ-MCP-010)
            return self._local.admit(tool, caller)
        args = [limit, int(WINDOW_S * 1000), uuid.uuid4().hex]
        key = self._layout.calls(caller, tool)
        try:
            # Within the call's budget: a hung Redis may cost the check its shared count
            # (the local window answers), never the call its deadline (REQ-CACHE-006).
            retry_ms = await self._link.run(
                "limits", lambda _: self._admit([key], args), budget_s=budget_s
            )
        except SharedStateUnavailable:
            return self._local.admit(tool, caller)
        if int(retry_ms) > 0:
            return int(retry_ms)
        self._local.admit(tool, caller)  # counted locally too, for when Redis goes
        return None


class SharedReturnedUrls:
    """REQ-SEC-021 across instances: URLs web_search returned, by HMAC name only.

    One sorted set (name -> time stored) for the deployment, trimmed at each
    write to `capacity` names and to `RETURNED_URL_TTL_S`: Redis holds one key
    for the store however many searches run (the bound issue 12 asks of every
    kind of key).
    """

    def __init__(self, link: RedisLink, layout: KeyLayout, *, capacity: int) -> None:
        self._link = link
        self._layout = layout
        self._key = layout.returned_urls()
        self._capacity = capacity
        self._remember = link.script(_REMEMBER)
        self._known = link.script(_KNOWN)

    async def remember(self, urls: list[str], *, budget_s: float | None = None) -> None:
        """Share `urls`, within `budget_s`; without Redis they stay in the process's store."""
        if not urls:
            return
        names = [self._layout.returned_url(url) for url in urls]
        args = [RETURNED_URL_TTL_S * 1000, self._capacity, *names]
        try:
            await self._link.run(
                "returned_urls", lambda _: self._remember([self._key], args), budget_s=budget_s
            )
        except SharedStateUnavailable:
            return

    async def contains(self, url: str, *, budget_s: float | None = None) -> bool:
        """Whether another instance returned `url`; False when Redis does not answer.

        False is the safe side of a control (REQ-SEC-021): a URL only another
        instance returned is then refused as strict mode refuses any unknown
        URL, never fetched unchecked because Redis is slow.
        """
        args = [RETURNED_URL_TTL_S * 1000, self._layout.returned_url(url)]
        try:
            found = await self._link.run(
                "returned_urls", lambda _: self._known([self._key], args), budget_s=budget_s
            )
        except SharedStateUnavailable:
            return False
        return int(found) == 1
