"""Intervals: the Wilson score interval and the group-shared cluster bootstrap."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.metric import SharedBootstrap, rng_for, wilson
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout


def test_wilson_by_hand_never_collapses_at_the_ends():
    """z = 1.96: 0/6 gives [0, z²/(6 + z²)] = [0, 0.3903]; 6/6 mirrors it; 3/6 gives
    centre 0.5 ± z·sqrt(0.25/6 + z²/144)/(1 + z²/6) = [0.1876, 0.8124]."""
    assert wilson(0, 6) == pytest.approx([0.0, 0.39033], abs=1e-4)
    assert wilson(6, 6) == pytest.approx([0.60967, 1.0], abs=1e-4)
    assert wilson(3, 6) == pytest.approx([0.18761, 0.81239], abs=1e-4)
    assert wilson(0, 0) is None


@given(st.integers(0, 200), st.integers(1, 200))
def test_wilson_contains_the_rate_and_has_width(x, extra):
    n = x + extra
    lo, hi = wilson(x, n)
    assert 0.0 <= lo <= x / n <= hi <= 1.0 and hi - lo > 0


def test_rates_at_zero_and_all_get_a_real_interval(tmp_path):
    """6 runs all failing and 6 all succeeding: the percentile bootstrap printed [0 %, 0 %]
    and [100 %, 100 %]; the runs are the counting unit, so Wilson over 6 runs."""
    for k in range(6):
        write_rollout(tmp_path, RolloutSpec(f"a{k}", system="a", physical=False))
        write_rollout(tmp_path, RolloutSpec(f"b{k}", system="b", physical=True))
    groups = {g["identity"]["system_name"]: g["metrics"] for g in score_corpus(tmp_path, resamples=200)["groups"]}
    assert groups["a"]["completion.valid"]["ci"] == pytest.approx([0.0, 0.39033], abs=1e-4)
    assert groups["b"]["completion.valid"]["ci"] == pytest.approx([0.60967, 1.0], abs=1e-4)


def _pair(pair_id: str, base: str, supported: str) -> dict:
    return {"type": "oracle_pair", "pair_id": pair_id, "base": base, "supported": supported, "mode": "assist",
            "oracle": "o1", "site": "decision"}


def test_identical_counts_in_one_group_give_identical_intervals(tmp_path):
    """Six Oracle pairs whose completion and correctness gains agree pair by pair
    (+1, +1, +1, 0, 0, −1): both gains are 2/6 and must share one bootstrap interval."""
    records = [{"type": "instance", "instance_id": f"{side}{k}"} for k in range(6) for side in "bs"]
    write_population(tmp_path, "O", records + [_pair(f"p{k}", f"b{k}", f"s{k}") for k in range(6)])
    base = [False, False, False, True, False, True]
    supported = [True, True, True, True, False, False]
    support = {"mode": "assist", "site": "decision", "oracle": "o1", "branch": "supported"}
    for k in range(6):
        write_rollout(tmp_path, RolloutSpec(f"base{k}", population=("O", f"b{k}"), physical=base[k],
                                            decisions=[DecisionSpec(outcome="correct" if base[k] else "wrong")]))
        write_rollout(tmp_path, RolloutSpec(f"sup{k}", population=("O", f"s{k}"), physical=supported[k], intervention=support,
                                            decisions=[DecisionSpec(outcome="correct" if supported[k] else "wrong")]))
    group = next(g for g in score_corpus(tmp_path, resamples=500)["groups"] if g["identity"]["oracle"] == "o1")
    completion, correct = group["metrics"]["gain.completion"], group["metrics"]["gain.correct"]
    assert completion["value"] == correct["value"] == pytest.approx(2 / 6)
    assert completion["ci"] == correct["ci"] and completion["ci"][0] < completion["ci"][1]


def test_shared_bootstrap_matches_a_plain_index_bootstrap():
    """Random cluster data: the shared resampler over the whole universe and an independent
    index bootstrap (numpy ``integers`` draws of cluster indices) agree on the percentile
    interval of the ratio of sums up to Monte-Carlo error, and so does scipy for a mean."""
    from scipy import stats

    data = np.random.default_rng(11)
    k = 40
    num, den = data.uniform(0, 3, k), data.integers(1, 4, k).astype(float)
    clusters = [f"c{i}" for i in range(k)]
    shared = SharedBootstrap(clusters, rng_for(3, "g", "run"), 8000).interval(clusters, num, den)
    draws = np.random.default_rng(5).integers(0, k, size=(8000, k))
    plain = np.quantile(num[draws].sum(axis=1) / den[draws].sum(axis=1), [0.025, 0.975])
    assert shared == pytest.approx(plain, abs=0.03)
    x = data.normal(0.2, 1.0, k)
    mean_ci = SharedBootstrap(clusters, rng_for(4, "g", "run"), 8000).interval(clusters, x, np.ones(k))
    reference = stats.bootstrap((x,), np.mean, n_resamples=8000, method="percentile", random_state=9).confidence_interval
    assert mean_ci == pytest.approx([reference.low, reference.high], abs=0.04)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.floats(0, 1)), min_size=1, max_size=30), st.integers(0, 2**32 - 1))
def test_interval_stays_in_range_and_ignores_member_order(rows, seed):
    clusters, values = [f"c{c}" for c, _ in rows], [v for _, v in rows]
    boot = SharedBootstrap(clusters, rng_for(seed, "x"), 50)
    lo, hi = boot.interval(clusters, values, [1.0] * len(rows))
    assert -1e-12 <= lo <= hi <= 1 + 1e-12
    assert boot.interval(clusters[::-1], values[::-1], [1.0] * len(rows)) == pytest.approx([lo, hi])


def test_same_seed_same_interval_other_seed_other_interval():
    clusters, num = [f"c{i}" for i in range(40)], [float(i % 3 == 0) + 0.1 * (i % 7) for i in range(40)]
    first = SharedBootstrap(clusters, rng_for(1, "g"), 300).interval(clusters, num, [1.0] * 40)
    assert SharedBootstrap(clusters, rng_for(1, "g"), 300).interval(clusters, num, [1.0] * 40) == first
    assert SharedBootstrap(clusters, rng_for(2, "g"), 300).interval(clusters, num, [1.0] * 40) != first
