"""What the search pipeline asks of a result cache, and the notice a cached answer brings.

An entry is one engine's parsed answer (its `RawHit`s, before the content
boundary) for one request of one caller (REQ-CACHE-003). The pipeline puts
only answers that succeeded, of engines whose admission record allows storage
(REQ-CMP-007), and only for web_search (REQ-CACHE-002): a cached answer goes
through the same cleaning, merging and ranking as a live one, so a search
answered partly from the cache returns the bytes an all-live search would
(REQ-ARCH-004), apart from the age notice (CLR-11).

Isolation (REQ-CACHE-004): in HTTP mode the namespace is the authenticated
caller's name; on stdio, where the one caller is "local", it is a random id
drawn at process start, so two stdio processes sharing one Redis never see
each other's entries.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from typing import Protocol

from rypsok.core.contract import Notice, NoticeCode
from rypsok.core.engines.base import RawHit, SearchParams

STDIO_CALLER = "local"  # the caller name rypsok.mcp.server gives calls without a key


class SharedStateUnavailable(Exception):
    """Redis did not answer within its deadline, or is marked lost: use local state."""


@dataclass(frozen=True, slots=True)
class EntryScope:
    """What an entry is valid for: a caller, an engine (and its endpoint), the parameters."""

    caller: str
    engine: str
    endpoint: str
    params: SearchParams


@dataclass(frozen=True, slots=True)
class CachedHits:
    hits: tuple[RawHit, ...]
    age_s: float  # since the provider answered


class AnswerCache(Protocol):
    """A result cache. Both methods end within their deadline and never raise.

    `budget_s` is what the call can spare for the step (REQ-CACHE-006): a
    shared cache ends within the smaller of it and LIM-K4, as a miss or a
    store not made; the in-process cache never waits.
    """

    async def get(self, scope: EntryScope, *, budget_s: float) -> CachedHits | None: ...

    async def put(
        self, scope: EntryScope, hits: tuple[RawHit, ...], *, budget_s: float
    ) -> None: ...


class Namespaces:
    """The isolation unit of a caller: its name over HTTP, this process on stdio."""

    def __init__(self) -> None:
        self._process = f"process:{uuid.uuid4().hex}"

    def of(self, caller: str) -> str:
        return self._process if caller == STDIO_CALLER else f"caller:{caller}"


def cached_notice(ages: list[tuple[str, float]]) -> list[Notice]:
    """CLR-11: which engines answered from the cache, and the age of the oldest entry."""
    if not ages:
        return []
    engines = ", ".join(engine for engine, _ in ages)
    oldest_s = math.floor(max(age for _, age in ages))
    return [
        Notice(
            code=NoticeCode.ANSWERED_FROM_CACHE,
            message=f"Answered from the cache for engines {engines}; the oldest cached answer "
            f"is {oldest_s} s old.",
        )
    ]
