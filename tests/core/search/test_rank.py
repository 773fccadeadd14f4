"""Merging, fusion and ordering of results (REQ-RANK-001, -004 to -007, REQ-ARCH-004)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core.search.rank import (
    RRF_K,
    Candidate,
    CanonicalResult,
    Observation,
    rank_results,
)

K = 60  # the documented constant; expected orders below are computed from it


def hit(
    engine: str,
    rank: int,
    key: str,
    *,
    title: str | None = None,
    snippet: str | None = None,
    url: str | None = None,
    date: str | None = None,
) -> Candidate:
    return Candidate(
        engine=engine,
        rank=rank,
        url=url if url is not None else key,
        key=key,
        title=title if title is not None else f"{engine} title",
        snippet=snippet if snippet is not None else f"{engine} snippet",
        date=date,
    )


def rrf(*ranks: int) -> Fraction:
    return sum((Fraction(1, K + rank) for rank in ranks), Fraction(0))


def keys(results: list[CanonicalResult]) -> list[str]:
    return [result.key for result in results]


ENGINES = ["a", "b", "c", "d", "e", "f"]


@pytest.mark.req("REQ-RANK-005")
def test_the_fusion_constant_is_the_documented_one() -> None:
    """REQ-RANK-005: k is 60, as docs/ranking.md states and the expectations here assume."""
    assert RRF_K == K


# --- merging ------------------------------------------------------------------


@pytest.mark.req("REQ-RANK-001", "REQ-RANK-004")
def test_results_with_one_key_are_merged_and_observations_are_the_union() -> None:
    """REQ-RANK-001, REQ-RANK-004: one result per key, holding every engine's observation."""
    results = rank_results(
        [hit("c", 4, "k1"), hit("a", 2, "k1"), hit("b", 1, "k2"), hit("b", 7, "k1")],
        preference=["a", "b", "c"],
        max_results=10,
    )
    assert keys(results) == ["k1", "k2"]
    assert results[0].observations == (
        Observation("a", 2),
        Observation("b", 7),
        Observation("c", 4),
    )
    assert results[1].observations == (Observation("b", 1),)


@pytest.mark.req("REQ-RANK-004", "REQ-RANK-005")
def test_an_engine_listing_a_key_twice_counts_once_at_its_best_rank() -> None:
    """REQ-RANK-004, REQ-RANK-005: one term per (engine, key), at that engine's best rank."""
    candidates = [
        hit("a", 3, "dup", title="a at 3"),
        hit("a", 2, "dup", title="a at 2"),
        hit("b", 1, "single"),
    ]
    # Counted once, dup scores 1/62 < 1/61; counted twice it would lead with 1/62 + 1/63.
    assert rrf(2) < rrf(1) < rrf(2, 3)
    results = rank_results(candidates, preference=["a", "b"], max_results=10)
    assert keys(results) == ["single", "dup"]
    assert results[1].observations == (Observation("a", 2),)
    assert results[1].title == "a at 2"


@pytest.mark.req("REQ-RANK-004")
def test_fields_come_from_the_best_ranked_observation() -> None:
    """REQ-RANK-004: url, title and snippet come from the observation with the best rank."""
    results = rank_results(
        [
            hit("a", 3, "k", title="A", snippet="sa", url="https://x.example/#a"),
            hit("b", 1, "k", title="B", snippet="sb", url="https://X.example/"),
            hit("c", 2, "k", title="C", snippet="sc", url="https://x.example/#c"),
        ],
        preference=["a", "b", "c"],
        max_results=10,
    )
    [result] = results
    assert (result.title, result.snippet, result.url) == ("B", "sb", "https://X.example/")


@pytest.mark.req("REQ-RANK-004")
@pytest.mark.parametrize(
    ("preference", "expected_title"),
    [(["a", "b"], "A"), (["b", "a"], "B"), (["b"], "B"), ([], "A"), (["z"], "A")],
)
def test_equal_ranks_break_by_engine_preference(preference: list[str], expected_title: str) -> None:
    """REQ-RANK-004: on equal ranks the preferred engine's title wins; unlisted engines by id."""
    candidates = [hit("b", 2, "k", title="B"), hit("a", 2, "k", title="A")]
    [result] = rank_results(candidates, preference=preference, max_results=10)
    assert result.title == expected_title


@pytest.mark.req("REQ-RANK-001", "REQ-RANK-004")
def test_observations_are_ordered_by_preference_with_unlisted_engines_last_by_id() -> None:
    """REQ-RANK-001, REQ-RANK-004: observations by preference; unlisted engines after, by id."""
    candidates = [hit(engine, rank, "k") for engine, rank in [("z", 1), ("y", 2), ("m", 3)]]
    candidates.append(hit("q", 4, "k"))
    [result] = rank_results(candidates, preference=["q", "m"], max_results=10)
    assert [o.engine for o in result.observations] == ["q", "m", "y", "z"]


@pytest.mark.req("REQ-RANK-001", "REQ-RANK-004")
@pytest.mark.parametrize(
    ("candidates", "expected_date"),
    [
        ([hit("a", 1, "k", date="2025-01-01"), hit("b", 2, "k", date="2024-01-01")], "2025-01-01"),
        ([hit("a", 1, "k"), hit("b", 3, "k", date="2023"), hit("c", 2, "k", date="2024")], "2024"),
        ([hit("a", 1, "k"), hit("c", 2, "k", date="c"), hit("b", 2, "k", date="b")], "b"),
        ([hit("a", 1, "k"), hit("b", 2, "k")], None),
    ],
)
def test_date_comes_from_the_best_observation_that_has_one(
    candidates: list[Candidate], expected_date: str | None
) -> None:
    """REQ-RANK-001, REQ-RANK-004: the best observation's date, else the best-ranked dated one."""
    [result] = rank_results(candidates, preference=["a", "b", "c"], max_results=10)
    assert result.date == expected_date


# --- fusion and order ---------------------------------------------------------


@pytest.mark.req("REQ-RANK-005")
def test_agreement_at_rank_five_outranks_a_single_first_place() -> None:
    """REQ-RANK-005: three engines at rank 5 beat one engine at rank 1, since 3/65 > 1/61."""
    assert rrf(5, 5, 5) > rrf(1)
    candidates = [
        hit("a", 1, "alone"),
        hit("b", 5, "agreed"),
        hit("c", 5, "agreed"),
        hit("d", 5, "agreed"),
    ]
    assert keys(rank_results(candidates, ENGINES, 10)) == ["agreed", "alone"]


@pytest.mark.req("REQ-RANK-005")
def test_ranks_decide_between_results_with_as_many_engines() -> None:
    """REQ-RANK-005: with two engines each, ranks (1, 20) beat (10, 10): 1/61 + 1/80 > 2/70."""
    assert rrf(1, 20) > rrf(10, 10) > rrf(2, 30)
    candidates = [
        hit("a", 10, "tens"),
        hit("b", 10, "tens"),
        hit("c", 2, "two-thirty"),
        hit("d", 30, "two-thirty"),
        hit("e", 1, "one-twenty"),
        hit("f", 20, "one-twenty"),
    ]
    assert keys(rank_results(candidates, ENGINES, 10)) == ["one-twenty", "tens", "two-thirty"]


@pytest.mark.req("REQ-RANK-005", "REQ-RANK-006")
def test_order_matches_exact_fusion_computed_independently() -> None:
    """REQ-RANK-005, REQ-RANK-006: the order is the exact RRF order, with the tie-breakers."""
    observed = {
        "p": [("a", 1)],
        "q": [("b", 1), ("c", 9)],
        "r": [("c", 2), ("d", 2), ("e", 2)],
        "s": [("d", 1)],
        "t": [("e", 10), ("f", 10)],
        "u": [("f", 3), ("a", 4)],
    }
    candidates = [hit(e, r, k) for k, pairs in observed.items() for e, r in pairs]
    preference = ENGINES

    def expected_order(k: str) -> tuple[Fraction, int, int, str]:
        pairs = observed[k]
        return (
            -rrf(*(rank for _, rank in pairs)),
            min(rank for _, rank in pairs),
            min(preference.index(engine) for engine, _ in pairs),
            k,
        )

    expected = sorted(observed, key=expected_order)
    assert expected == ["r", "u", "q", "t", "p", "s"]
    assert keys(rank_results(candidates, preference, 10)) == expected


@pytest.mark.req("REQ-RANK-006")
def test_equal_scores_break_by_best_rank() -> None:
    """REQ-RANK-006: ranks (3, 24) and (12, 12) tie exactly at 1/36; best rank 3 goes first."""
    assert rrf(3, 24) == rrf(12, 12) == Fraction(1, 36)
    candidates = [
        hit("e", 3, "z-late-key"),
        hit("f", 24, "z-late-key"),
        hit("a", 12, "a-early-key"),
        hit("b", 12, "a-early-key"),
    ]
    assert keys(rank_results(candidates, ENGINES, 10)) == ["z-late-key", "a-early-key"]


@pytest.mark.req("REQ-RANK-005", "REQ-RANK-006", "REQ-ARCH-004")
def test_scores_are_exact_where_floating_point_would_break_a_tie() -> None:
    """REQ-RANK-005, REQ-RANK-006, REQ-ARCH-004: (3, 12, 24) ties (6, 6, 28) exactly; 3 wins."""
    assert rrf(3, 12, 24) == rrf(6, 6, 28)
    # In floating point the second sum comes out larger, which would reverse the order.
    assert 1 / (K + 3) + 1 / (K + 12) + 1 / (K + 24) < 1 / (K + 6) + 1 / (K + 6) + 1 / (K + 28)
    candidates = [
        hit("a", 3, "z-exact"),
        hit("b", 12, "z-exact"),
        hit("c", 24, "z-exact"),
        hit("d", 6, "a-float"),
        hit("e", 6, "a-float"),
        hit("f", 28, "a-float"),
    ]
    assert keys(rank_results(candidates, ENGINES[::-1], 10)) == ["z-exact", "a-float"]


@pytest.mark.req("REQ-RANK-006", "REQ-ARCH-004")
def test_equal_scores_and_ranks_break_by_engine_preference() -> None:
    """REQ-RANK-006, REQ-ARCH-004: exact ties go to preference even where float sums differ."""
    # Summed in floating point in arrival order these two differ in the last bit.
    assert 1 / (K + 1) + 1 / (K + 2) + 1 / (K + 8) != 1 / (K + 8) + 1 / (K + 2) + 1 / (K + 1)
    candidates = [
        hit("a", 8, "k1"),
        hit("b", 2, "k1"),
        hit("f", 1, "k1"),
        hit("c", 1, "k2"),
        hit("d", 2, "k2"),
        hit("e", 8, "k2"),
    ]
    assert keys(rank_results(candidates, ["c", "f", "a", "b", "d", "e"], 10)) == ["k2", "k1"]
    assert keys(rank_results(candidates, ["f", "c", "a", "b", "d", "e"], 10)) == ["k1", "k2"]
    assert keys(rank_results(candidates[::-1], ["f", "c", "a", "b", "d", "e"], 10)) == [
        "k1",
        "k2",
    ]


@pytest.mark.req("REQ-RANK-006")
def test_the_third_key_is_the_best_preference_among_all_observations() -> None:
    """REQ-RANK-006: docs/ranking.md §4 key 3 reads every observation, not the best-ranked.

    Both results score 1/61 + 1/63 with best rank 1. "x" was found at rank 1
    by b and at rank 3 by a; "y" at rank 1 by a and at rank 3 by c. Among all
    observations both have a (preference 0), so the key decides: "x" first.
    Reading only the best-ranked observation would give x b (1) and y a (0)
    and put "y" first.
    """
    candidates = [hit("b", 1, "x"), hit("a", 3, "x"), hit("a", 1, "y"), hit("c", 3, "y")]
    assert keys(rank_results(candidates, ["a", "b", "c"], 10)) == ["x", "y"]
    assert keys(rank_results(candidates[::-1], ["a", "b", "c"], 10)) == ["x", "y"]
    # With c preferred over a, "y" holds the best preference (c) and goes first.
    assert keys(rank_results(candidates, ["c", "a", "b"], 10)) == ["y", "x"]


@pytest.mark.req("REQ-RANK-006")
def test_unlisted_engines_rank_after_listed_ones_in_ties() -> None:
    """REQ-RANK-006: an engine missing from preference sorts after every listed engine."""
    candidates = [hit("aaa", 1, "k1"), hit("zzz", 1, "k2")]
    assert keys(rank_results(candidates, ["zzz"], 10)) == ["k2", "k1"]
    assert keys(rank_results(candidates, [], 10)) == ["k1", "k2"]


@pytest.mark.req("REQ-RANK-006")
def test_full_ties_break_by_key() -> None:
    """REQ-RANK-006: same score, rank and engine leave the comparison key to decide."""
    candidates = [hit("a", 1, "https://b.example/"), hit("a", 1, "https://a.example/")]
    assert keys(rank_results(candidates, ["a"], 10)) == ["https://a.example/", "https://b.example/"]


@pytest.mark.req("REQ-RANK-007")
@pytest.mark.parametrize(("max_results", "expected"), [(0, 0), (1, 1), (3, 3), (5, 5), (20, 5)])
def test_the_list_is_cut_to_max_results_after_ranking(max_results: int, expected: int) -> None:
    """REQ-RANK-007: the best max_results of the full order are returned."""
    candidates = [hit("a", rank, f"k{rank}") for rank in range(5, 0, -1)]
    results = rank_results(candidates, ["a"], max_results)
    assert keys(results) == [f"k{rank}" for rank in range(1, expected + 1)]


@pytest.mark.req("REQ-RANK-005")
def test_invalid_arguments_are_refused() -> None:
    """REQ-RANK-005: a rank below 1 and a negative max_results are programming errors."""
    with pytest.raises(ValueError, match="1-based"):
        rank_results([hit("a", 0, "k")], ["a"], 10)
    with pytest.raises(ValueError, match="negative"):
        rank_results([hit("a", 1, "k")], ["a"], -1)
    assert rank_results([], ["a"], 10) == []


# --- determinism (REQ-ARCH-004, REQ-TEST-011) -----------------------------------


def crowded_candidates() -> list[Candidate]:
    """8 engines x 20 hits over 40 URLs: overlaps, repeats within an engine, clashing copies."""
    rng = random.Random(20261130)  # noqa: S311 - seeded test data, not security
    engines = [f"engine{i}" for i in range(8)]
    pool = [f"https://site{i % 13}.example/page/{i}" for i in range(40)]
    candidates: list[Candidate] = []
    for engine in engines:
        for rank in range(1, 21):
            key = rng.choice(pool)
            date = rng.choice([None, "2024-05-01", "2025-02-03"])
            candidates.append(
                hit(engine, rank, key, title=f"{engine}:{rank}", url=key + "#x", date=date)
            )
    # Contradictory copies of one slot: same engine, key and rank, other fields differ.
    candidates.append(hit("engine0", 1, pool[0], title="copy one", date=None))
    candidates.append(hit("engine0", 1, pool[0], title="copy two", date="2020"))
    candidates.append(hit("engine0", 1, pool[0], title="copy two", date=None))
    return candidates


PREFERENCE = ["engine3", "engine0", "engine7", "engine1"]  # the rest are unlisted


@pytest.mark.req("REQ-ARCH-004", "REQ-TEST-011", "REQ-RANK-006")
def test_shuffled_arrival_orders_give_identical_output() -> None:
    """REQ-ARCH-004, REQ-TEST-011, REQ-RANK-006: 300 seeded shuffles give one output."""
    candidates = crowded_candidates()
    reference = rank_results(candidates, PREFERENCE, 20)
    assert len(reference) == 20
    assert len({result.key for result in reference}) == 20
    rng = random.Random(4)  # noqa: S311 - seeded shuffles, not security
    for _ in range(300):
        shuffled = candidates[:]
        rng.shuffle(shuffled)
        assert rank_results(iter(shuffled), PREFERENCE, 20) == reference
    assert repr(rank_results(reversed(candidates), PREFERENCE, 20)) == repr(reference)


@pytest.mark.req("REQ-ARCH-004", "REQ-TEST-011")
@settings(max_examples=200, deadline=None)
@given(st.permutations(crowded_candidates()))
def test_any_permutation_gives_identical_output(shuffled: list[Candidate]) -> None:
    """REQ-ARCH-004, REQ-TEST-011: Hypothesis permutations of the same hits give one output."""
    assert rank_results(shuffled, PREFERENCE, 20) == rank_results(
        crowded_candidates(), PREFERENCE, 20
    )


_GENERATED_CANDIDATES = st.lists(
    st.builds(
        Candidate,
        engine=st.sampled_from(["a", "b", "c", "x", "y"]),
        rank=st.integers(1, 25),
        url=st.sampled_from(["u1", "u2", "u3"]),
        key=st.sampled_from(["k1", "k2", "k3", "k4", "k5", "k6"]),
        title=st.sampled_from(["t1", "t2"]),
        snippet=st.sampled_from(["s1", "s2"]),
        date=st.sampled_from([None, "d1", "d2"]),
    ),
    max_size=40,
)


@pytest.mark.req("REQ-ARCH-004", "REQ-TEST-011", "REQ-RANK-004", "REQ-RANK-006")
@settings(max_examples=200, deadline=None)
@given(_GENERATED_CANDIDATES, st.randoms(use_true_random=False), st.integers(0, 8))
def test_generated_candidates_are_order_independent(
    candidates: list[Candidate], rng: random.Random, max_results: int
) -> None:
    """REQ-ARCH-004, REQ-TEST-011, REQ-RANK-004, REQ-RANK-006: any set, shuffled, ranks alike."""
    preference = ["b", "a", "c"]
    reference = rank_results(candidates, preference, max_results)
    shuffled = candidates[:]
    rng.shuffle(shuffled)
    assert rank_results(shuffled, preference, max_results) == reference
    assert len({result.key for result in reference}) == len(reference)
    assert len(reference) == min(max_results, len({c.key for c in candidates}))
    for result in reference:
        engines = [observation.engine for observation in result.observations]
        assert len(engines) == len(set(engines))
