"""Paired statistics: exact McNemar, Newcombe's paired-difference interval, paired bootstrap,
bounds while pairs are unresolved."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.paired import (
    PairedTable, difference_bounds, mcnemar_exact, mcnemar_range, newcombe_interval, paired_bootstrap,
    paired_difference, possible_cells,
)
from tests.support import require_module

tables = st.builds(PairedTable, *(st.integers(0, 30) for _ in range(4)))


def test_mcnemar_by_hand():
    """1 against 6 discordant pairs: m = 7, P[X <= 1] = (C(7,0) + C(7,1))/2^7 = 8/128, two-sided
    p = 16/128 = 0.125; 0 against 5: 2/32 = 0.0625; 3 against 3: the tail passes 1/2, p = 1."""
    assert mcnemar_exact(1, 6) == 0.125
    assert mcnemar_exact(6, 1) == 0.125
    assert mcnemar_exact(0, 5) == 0.0625
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


@settings(max_examples=200, deadline=None)
@given(tables)
def test_mcnemar_matches_statsmodels_and_scipy(table):
    contingency = require_module("statsmodels.stats.contingency_tables", "pip install 'labrecord[dev]'")
    from scipy.stats import binomtest

    ours = mcnemar_exact(table.a_only, table.b_only)
    # statsmodels' table: rows A (1, 0), columns B (1, 0)
    theirs = contingency.mcnemar([[table.both, table.a_only], [table.b_only, table.neither]], exact=True).pvalue
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    if table.discordant:
        assert ours == pytest.approx(binomtest(table.a_only, table.discordant, 0.5).pvalue, rel=1e-9, abs=1e-12)


def test_newcombe_by_hand():
    """both 2, a_only 6, b_only 1, neither 1 (n = 10): p_A = 0.8, p_B = 0.3, θ = −0.5;
    Wilson(8/10) = [0.49016, 0.94332], Wilson(3/10) = [0.10779, 0.60322];
    φ = (2·1 − 6·1)/√(8·2·3·7) = −0.21822;
    δ = √(0.19221² − 2φ·0.19221·0.14332 + 0.14332²) = 0.26364,
    ε = √(0.30322² − 2φ·0.30322·0.30984 + 0.30984²) = 0.47848 → [−0.76364, −0.02152]."""
    table = PairedTable(2, 6, 1, 1)
    assert paired_difference(table) == pytest.approx(-0.5)
    assert newcombe_interval(table) == pytest.approx([-0.76364, -0.02152], abs=1e-5)


def test_newcombe_against_its_definition_with_statsmodels_wilson():
    """The interval from statsmodels' Wilson limits and Newcombe's corrected phi, step by step
    (5, 0, 0, 5: AD − BC = 25 − 0 → 25 − 5 = 20, φ = 20/25 = 0.8 rather than 1)."""
    proportion = require_module("statsmodels.stats.proportion", "pip install 'labrecord[dev]'")
    for table in (PairedTable(10, 3, 7, 20), PairedTable(0, 0, 4, 6), PairedTable(5, 0, 0, 5), PairedTable(1, 9, 2, 0)):
        n = table.n
        p_a, p_b = (table.both + table.a_only) / n, (table.both + table.b_only) / n
        l_a, u_a = proportion.proportion_confint(table.both + table.a_only, n, method="wilson")
        l_b, u_b = proportion.proportion_confint(table.both + table.b_only, n, method="wilson")
        margins = ((table.both + table.a_only) * (table.b_only + table.neither) * (table.both + table.b_only)
                   * (table.a_only + table.neither))
        # Newcombe (1998) corrects a positive AD - BC down by n/2 (to no less than 0)
        cross = table.both * table.neither - table.a_only * table.b_only
        cross = max(cross - n / 2, 0) if cross >= 0 else cross
        phi = cross / math.sqrt(margins) if margins else 0.0
        delta = math.sqrt((p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2)
        epsilon = math.sqrt((u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2)
        assert newcombe_interval(table) == pytest.approx([p_b - p_a - delta, p_b - p_a + epsilon], abs=1e-9)


@settings(max_examples=300, deadline=None)
@given(tables)
def test_newcombe_contains_the_difference_inside_the_unit_range(table):
    interval = newcombe_interval(table)
    if table.n == 0:
        assert interval is None
        return
    lo, hi = interval
    assert -1.0 <= lo <= paired_difference(table) <= hi <= 1.0
    assert hi - lo > 0  # never collapses, not even with no discordant pair
    # swapping A and B mirrors the interval
    swapped = newcombe_interval(PairedTable(table.both, table.b_only, table.a_only, table.neither))
    assert swapped == pytest.approx([-hi, -lo], abs=1e-12)


def test_paired_bootstrap_same_seed_same_numbers_other_seed_other_numbers():
    diffs = [0.1, -0.2, 0.4, 0.0, 0.3, -0.1, 0.2]
    one = paired_bootstrap(diffs, np.random.default_rng(7), 500)
    assert one == paired_bootstrap(diffs, np.random.default_rng(7), 500)
    assert one != paired_bootstrap(diffs, np.random.default_rng(8), 500)
    assert one[0] <= np.mean(diffs) <= one[1]
    assert paired_bootstrap([], np.random.default_rng(0), 100) is None
    assert paired_bootstrap(diffs, np.random.default_rng(0), 0) is None


def test_paired_bootstrap_is_the_plain_index_bootstrap():
    """The interval is the percentile of the means of resampled pairs, drawn from the generator."""
    diffs = np.array([1.0, 2.0, 4.0, 8.0])
    rng = np.random.default_rng(3)
    index = rng.integers(0, 4, size=(200, 4))
    expected = np.quantile(diffs[index].mean(axis=1), [0.025, 0.975])
    assert paired_bootstrap(diffs, np.random.default_rng(3), 200) == pytest.approx(list(expected))


def test_bounds_by_hand():
    """Resolved both 1, a_only 1; unresolved (A=1, B ?) and (?, ?): N = 4, resolved sum −1,
    the first adds −1 or 0, the second −1, 0 or +1: [−3/4, 0]."""
    assert difference_bounds(PairedTable(1, 1, 0, 0), [(True, None), (None, None)]) == (-0.75, 0.0)
    assert difference_bounds(PairedTable(0, 0, 0, 0), []) is None


@settings(max_examples=150, deadline=None)
@given(tables, st.lists(st.tuples(st.sampled_from([True, False, None]), st.sampled_from([True, False, None])),
                        max_size=4))
def test_bounds_and_mcnemar_range_are_the_extremes_of_every_completion(table, unresolved):
    """Brute force: every way the unresolved pairs could still turn out."""
    if table.n + len(unresolved) == 0:
        return
    diffs, ps = [], []
    for cells in itertools.product(*(possible_cells(a, b) for a, b in unresolved)):
        counts = list(table)
        for ya, yb in cells:
            counts[{(1, 1): 0, (1, 0): 1, (0, 1): 2, (0, 0): 3}[(ya, yb)]] += 1
        full = PairedTable(*counts)
        diffs.append(paired_difference(full))
        ps.append(mcnemar_exact(full.a_only, full.b_only))
    assert difference_bounds(table, unresolved) == pytest.approx((min(diffs), max(diffs)))
    assert mcnemar_range(table, unresolved) == pytest.approx((min(ps), max(ps)))
