"""Merging and ordering of cleaned hits from several engines (REQ-RANK-001, -004 to -007).

Contract of `rank_results(candidates, preference, max_results)`:

* Candidates with the same comparison key are one result (REQ-RANK-004). Each
  engine contributes at most one observation per key, at its best rank: an
  engine that lists a key twice is counted once.
* The result's url, title and snippet come from its best observation: lowest
  rank, then earliest engine in `preference`. Its date comes from the same
  observation, or, when that one has none, from the best observation that has
  one: the date belongs to the resource, not to the engine's listing.
* Score (REQ-RANK-005): reciprocal-rank fusion, `sum(1 / (RRF_K + rank))` over
  the result's observations. It is computed exactly, as integers over one
  common denominator, so the order in which engines answered cannot change a
  single comparison (REQ-ARCH-004).
* Order (REQ-RANK-006), a total order: score descending, best rank ascending,
  best engine preference among all observations ascending, comparison key
  ascending. Then cut to
  `max_results` (REQ-RANK-007).
* Engine preference is the position in `preference`; an engine not listed
  comes after every listed one, and such engines among themselves by id.

The output depends only on the set of candidates, the preference and the
limit: any permutation of the same candidates gives the same list. Each
(engine, key) slot keeps the candidate that is first in a total order on its
fields, so even contradictory duplicates resolve the same way every time.
See docs/ranking.md for the choice of RRF_K.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Final, NamedTuple

__all__ = ["RRF_K", "Candidate", "CanonicalResult", "Observation", "rank_results"]

# Cormack, Clarke and Büttcher (2009). With lists of at most 10 to 20 hits it
# orders by the number of agreeing engines first and by rank second; see
# docs/ranking.md for the bounds and why a smaller k was not chosen.
RRF_K: Final = 60


# Immutable as tuples: a frozen dataclass sets each field through `object.__setattr__`,
# about three times the cost of a tuple, and each hit of a call builds these (issue 14,
# performance §22.2).


class Observation(NamedTuple):
    engine: str
    rank: int  # 1-based position in that engine's list


class Candidate(NamedTuple):
    """One cleaned hit from one engine."""

    engine: str
    rank: int
    url: str
    key: str
    title: str
    snippet: str
    date: str | None


class CanonicalResult(NamedTuple):
    """One result after merging (REQ-RANK-001)."""

    url: str
    key: str
    title: str
    snippet: str
    date: str | None
    observations: tuple[Observation, ...]  # by (engine preference, rank)


_EnginePreference = tuple[int, str]
_OrderKey = tuple[int, int, _EnginePreference, str]  # -score, best rank, preference, key


def rank_results(
    candidates: Iterable[Candidate], preference: Sequence[str], max_results: int
) -> list[CanonicalResult]:
    """Merge candidates by key, fuse their ranks and return the best max_results."""
    if max_results < 0:
        raise ValueError("max_results must not be negative")
    engine_preference = _EnginePreferences(preference)
    slots = _best_candidate_per_engine_and_key(candidates)
    term = _exact_terms(slots)
    ordered = [
        _ordered_entry(key, by_engine, term, engine_preference) for key, by_engine in slots.items()
    ]
    ordered.sort(key=itemgetter(0))  # keys are unique: the lists are never compared
    return [_canonical(observed, engine_preference) for _, observed in ordered[:max_results]]


def _exact_terms(slots: dict[str, dict[str, Candidate]]) -> dict[int, int]:
    """Map each rank present to 1/(RRF_K + rank) as a numerator over one common denominator."""
    ranks = {candidate.rank for by_engine in slots.values() for candidate in by_engine.values()}
    common_denominator = math.lcm(*(RRF_K + rank for rank in ranks))
    return {rank: common_denominator // (RRF_K + rank) for rank in ranks}


def _ordered_entry(
    key: str,
    by_engine: dict[str, Candidate],
    term: dict[int, int],
    engine_preference: _EnginePreferences,
) -> tuple[_OrderKey, list[Candidate]]:
    """The REQ-RANK-006 sort key of one result, and its observations best first."""
    if len(by_engine) == 1:
        # Most results come from one engine: its one observation is all three keys.
        observed = list(by_engine.values())
        only = observed[0]
        return (-term[only.rank], only.rank, engine_preference.of(only.engine), key), observed
    observed = sorted(by_engine.values(), key=lambda c: (c.rank, engine_preference.of(c.engine)))
    best = observed[0]
    score = sum(term[candidate.rank] for candidate in observed)
    # The third key is the most preferred engine among *all* observations
    # (docs/ranking.md §4), not the engine of the best-ranked one.
    preferred = min(engine_preference.of(candidate.engine) for candidate in observed)
    return (-score, best.rank, preferred, key), observed


class _EnginePreferences:
    """Sort key of an engine: (position in preference, id); unlisted engines last."""

    __slots__ = ("_cache", "_index", "_unlisted")

    def __init__(self, preference: Sequence[str]) -> None:
        self._index: dict[str, int] = {}
        for position, engine in enumerate(preference):
            self._index.setdefault(engine, position)
        self._unlisted = len(preference)
        self._cache: dict[str, _EnginePreference] = {}

    def of(self, engine: str) -> _EnginePreference:
        cached = self._cache.get(engine)
        if cached is None:
            cached = (self._index.get(engine, self._unlisted), engine)
            self._cache[engine] = cached
        return cached


def _best_candidate_per_engine_and_key(
    candidates: Iterable[Candidate],
) -> dict[str, dict[str, Candidate]]:
    slots: dict[str, dict[str, Candidate]] = {}
    for candidate in candidates:
        if candidate.rank < 1:
            raise ValueError("a candidate's rank is 1-based")
        by_engine = slots.setdefault(candidate.key, {})
        held = by_engine.get(candidate.engine)
        if held is None or _slot_order(candidate) < _slot_order(held):
            by_engine[candidate.engine] = candidate
    return slots


def _slot_order(candidate: Candidate) -> tuple[int, str, str, str, bool, str]:
    # Total on everything that reaches the output, so a duplicate never
    # depends on which copy arrived first.
    date = candidate.date
    return (
        candidate.rank,
        candidate.url,
        candidate.title,
        candidate.snippet,
        date is None,
        date or "",
    )


def _canonical(observed: list[Candidate], engine_preference: _EnginePreferences) -> CanonicalResult:
    best = observed[0]
    date = best.date
    if date is None:
        date = next((c.date for c in observed if c.date is not None), None)
    observations = sorted(
        (Observation(engine=c.engine, rank=c.rank) for c in observed),
        key=lambda o: (engine_preference.of(o.engine), o.rank),
    )
    return CanonicalResult(
        url=best.url,
        key=best.key,
        title=best.title,
        snippet=best.snippet,
        date=date,
        observations=tuple(observations),
    )
