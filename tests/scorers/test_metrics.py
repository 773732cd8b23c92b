"""The one rule for incomplete evidence (Labference sec. 7.4) and the metric registry."""
from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.metrics import (
    CONDITIONAL_OPTIONS, METRICS, RATE_OPTIONS, UNIT_KINDS, Unit, conditional_unit, family_of, interval_unit, measure,
    rate_unit,
)
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout


def test_eight_checkpoints_one_missing_one_service_fault(tmp_path):
    """8 registered checkpoints: 5 correct, 1 wrong, 1 run missing, 1 run ended by a service
    fault.  Counting both as failures printed B_next 5/8 as final; the rule gives value
    null, lower 5/8 (both would fail), upper 7/8 (both would succeed), 6 of 8 resolved."""
    write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": f"i{k}", "decision": "select_weight"}
                                     for k in range(8)])
    for k in range(7):
        outcome = "correct" if k < 5 else "wrong"
        write_rollout(tmp_path, RolloutSpec(f"r{k}", population=("J", f"i{k}"), validity_fault=k == 6,
                                            decisions=[DecisionSpec(outcome="correct" if k == 6 else outcome)]))
    (group,) = score_corpus(tmp_path, resamples=200)["groups"]
    m = group["metrics"]
    assert m["B_next"]["value"] is None and m["B_next"]["ci"] is None
    assert (m["B_next.lower"]["num"], m["B_next.lower"]["den"]) == (5, 8)
    assert (m["B_next.upper"]["num"], m["B_next.upper"]["den"]) == (7, 8)
    assert group["coverage"]["B_next"] == {"resolved": 6, "registered": 8}
    assert [r["run_id"] for r in group["coverage"]["unresolved_runs"]] == ["r6"]


def test_rate_bounds_by_hand():
    """s = 2 successes, 1 failure, u = 2 unresolved, N = 5: [2/5, 4/5]."""
    units = [rate_unit("a", True), rate_unit("b", True), rate_unit("c", False), rate_unit("d", None), rate_unit("e", None)]
    e = measure(units)
    assert (e.value, e.lower, e.upper, e.lower_counts, e.upper_counts) == (None, 0.4, 0.8, (2.0, 5.0), (4.0, 5.0))
    assert (e.resolved, e.registered) == (3, 5)


def test_conditional_bounds_by_hand():
    """accuracy|identified with 1 correct of 2 identified and 1 unresolved checkpoint: it
    may be unidentified (1/2), identified and wrong (1/3) or identified and right (2/3)."""
    units = [conditional_unit("a", True, True), conditional_unit("b", False, True), conditional_unit("c", False, False),
             conditional_unit("d", None, None)]
    e = measure(units)
    assert (e.lower, e.upper) == (1 / 3, 2 / 3)


def test_gain_bounds_by_hand():
    """Two pairs with gains +1 and (base 1, supported unresolved) ∈ [−1, 0]: Δ ∈ [0, 1/2]."""
    e = measure([Unit("p0", 1.0, 1.0), interval_unit("p1", None, -1.0, 0.0)])
    assert (e.value, e.lower, e.upper) == (None, 0.0, 0.5)


def test_unbounded_metric_has_no_bounds():
    e = measure([Unit("r0", 0.01, 1.0), interval_unit("r1", None, None, None)])
    assert (e.value, e.lower, e.upper) == (None, None, None)


def test_every_metric_name_has_a_registry_entry():
    for name in ("B_next", "reach.select_weight", "completion.valid", "gain.correct", "interaction.e_p", "P_state", "e_v"):
        assert family_of(name) in METRICS
    assert set(UNIT_KINDS) == {"checkpoint", "reach", "episode", "fixed", "member", "geometry", "outcome", "support"}
    for name in ("delivery", "agreement", "substitution_share"):
        assert family_of(name) in METRICS


option_sets = st.sampled_from([RATE_OPTIONS, CONDITIONAL_OPTIONS, ((-1.0, 1.0), (0.0, 1.0)), ((0.0, 1.0), (0.5, 1.0))])
resolved_unit = st.builds(lambda n, d: Unit("x", float(min(n, d)), float(d)), st.integers(0, 3), st.integers(0, 3))


@settings(max_examples=200, deadline=None)
@given(st.lists(resolved_unit, max_size=6), st.lists(option_sets, max_size=4))
def test_bounds_are_the_extremes_over_every_completion(resolved, open_options):
    """Brute force: enumerate every outcome of the unresolved members."""
    units = resolved + [Unit.unresolved(f"u{k}", opts) for k, opts in enumerate(open_options)]
    e = measure(units)
    num, den = sum(u.num for u in resolved), sum(u.den for u in resolved)
    ratios = []
    for pick in itertools.product(*open_options):
        n, d = num + sum(a for a, _ in pick), den + sum(b for _, b in pick)
        if d:
            ratios.append(n / d)
    if not ratios:
        assert e.lower is None and e.upper is None
        return
    assert abs(e.lower - min(ratios)) < 1e-12 and abs(e.upper - max(ratios)) < 1e-12
    if not open_options:
        assert e.value == e.lower == e.upper


rate_options = st.sampled_from([RATE_OPTIONS, CONDITIONAL_OPTIONS])
GAIN_OPTIONS = ((-1.0, 1.0), (1.0, 1.0))


@settings(max_examples=200, deadline=None)
@given(st.lists(resolved_unit, max_size=6), st.lists(rate_options, max_size=3), rate_options)
def test_adding_an_unresolved_member_never_narrows_rate_bounds(resolved, open_options, extra):
    units = resolved + [Unit.unresolved(f"u{k}", opts) for k, opts in enumerate(open_options)]
    before, after = measure(units), measure(units + [Unit.unresolved("new", extra)])
    if before.lower is None:
        return
    assert after.lower <= before.lower + 1e-12 and after.upper >= before.upper - 1e-12


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1), max_size=6), st.integers(0, 3))
def test_adding_an_unresolved_pair_never_narrows_gain_bounds(gains, unresolved):
    """A pair with both branches unresolved may gain anything in [−1, 1]."""
    units = [Unit(f"p{k}", g, 1.0) for k, g in enumerate(gains)]
    units += [Unit.unresolved(f"u{k}", GAIN_OPTIONS) for k in range(unresolved)]
    if not units:
        return
    before, after = measure(units), measure(units + [Unit.unresolved("new", GAIN_OPTIONS)])
    assert after.lower <= before.lower + 1e-12 and after.upper >= before.upper - 1e-12


@given(st.integers(0, 12), st.integers(0, 12), st.integers(0, 6))
def test_rate_bounds_widen_with_each_unresolved_member_and_meet_when_resolved(s, f, u):
    units = [rate_unit(f"s{k}", True) for k in range(s)] + [rate_unit(f"f{k}", False) for k in range(f)]
    open_ = [rate_unit(f"u{k}", None) for k in range(u)]
    if s + f + u == 0:
        return
    e = measure(units + open_)
    more = measure(units + open_ + [rate_unit("extra", None)])
    assert more.lower <= e.lower and more.upper >= e.upper  # never narrows
    assert (e.lower, e.upper) == (s / (s + f + u), (s + u) / (s + f + u))
    for successes in range(u + 1):  # resolving every member: value = lower = upper, inside the old range
        done = measure(units + [rate_unit(f"u{k}", k < successes) for k in range(u)])
        assert done.value == done.lower == done.upper
        assert e.lower <= done.value <= e.upper
