"""rypsok.core.metrics.Histogram: cumulative bucket counts as the exposition publishes them."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rypsok.core.metrics import LATENCY_BUCKETS_MS, Histogram

# Each bound, just above and just below it, and values far outside every bucket.
_EDGES = [
    value
    for bound in LATENCY_BUCKETS_MS
    for value in (bound, math.nextafter(bound, math.inf), math.nextafter(bound, -math.inf))
]


def _at_or_below(values: list[float]) -> list[int]:
    """The definition: per bound, how many observations are at or below it."""
    return [sum(1 for value in values if value <= bound) for bound in LATENCY_BUCKETS_MS]


@pytest.mark.req("REQ-OBS-002")
@given(
    st.lists(
        st.one_of(
            st.sampled_from([*_EDGES, 0.0, -1.0, 1e9, math.inf, math.nan]),
            st.floats(min_value=-10.0, max_value=100_000.0),
        ),
        max_size=60,
    )
)
def test_buckets_count_the_observations_at_or_below_each_bound(values: list[float]) -> None:
    """Bounds are inclusive; above the last bound (or NaN) counts only in the total."""
    histogram = Histogram()
    for value in values:
        histogram.observe(value)
    assert histogram.buckets == _at_or_below(values)
    assert histogram.count == len(values)


@pytest.mark.req("REQ-OBS-002")
def test_an_observation_on_a_bound_counts_in_that_bucket_and_every_later_one() -> None:
    histogram = Histogram()
    histogram.observe(100.0)
    histogram.observe(100.5)
    histogram.observe(60_001.0)
    assert histogram.buckets == [0, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2]
    assert (histogram.count, histogram.total_ms) == (3, 60_201.5)
