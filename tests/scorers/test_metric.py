"""The ratio-of-sums estimator and its cluster bootstrap."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.metric import bootstrap_ratio, cluster_sums, estimate, ratio, rng_for


def test_zero_denominator_is_null_not_zero():
    value = ratio(0, 0, n=0)
    assert value.value is None and value.num == 0 and value.den == 0


def test_hand_checked_rate_and_cluster_sums():
    num, den = cluster_sums(["a", "a", "b"], [1, 0, 1], [1, 1, 1])
    assert num.tolist() == [1, 1] and den.tolist() == [2, 1]
    value = estimate(["a", "a", "b"], [1, 0, 1], [1, 1, 1], rng=None, resamples=0)
    assert (value.value, value.num, value.den, value.n, value.ci) == (2 / 3, 2, 3, 2, None)


def test_constant_clusters_give_degenerate_interval():
    assert bootstrap_ratio(np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.random.default_rng(0), 100) == [1.0, 1.0]


def test_same_seed_same_interval_other_seed_other_interval():
    clusters, num = list(range(40)), [i % 3 == 0 for i in range(40)]
    first = estimate(clusters, num, [1] * 40, rng=rng_for(1, "g", "m"), resamples=300).ci
    assert estimate(clusters, num, [1] * 40, rng=rng_for(1, "g", "m"), resamples=300).ci == first
    assert estimate(clusters, num, [1] * 40, rng=rng_for(2, "g", "m"), resamples=300).ci != first


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1, max_size=30), st.integers(0, 2**32 - 1))
def test_rate_and_interval_stay_in_unit_range_and_ignore_row_order(rows, seed):
    clusters, hits = [c for c, _ in rows], [float(h) for _, h in rows]
    value = estimate(clusters, hits, [1.0] * len(rows), rng=rng_for(seed, "x"), resamples=50)
    assert value.value == sum(hits) / len(rows)
    assert 0.0 <= value.ci[0] <= value.ci[1] <= 1.0
    shuffled = estimate(clusters[::-1], hits[::-1], [1.0] * len(rows), rng=rng_for(seed, "x"), resamples=50)
    assert shuffled.ci == value.ci
