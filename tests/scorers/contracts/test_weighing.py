"""Feedback weighing contract: display chain, predicates, protocol cases, generators."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.models import ObservationReceipt, Operation, Task
from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.streams import WeighingStream, jitter, rows_table
from labrecord.scorers.contracts.weighing import (
    MASS_G, STANDARDS, WeighingInstance, WeighingThresholds, generate_basic, generate_extended,
    mask_of, quantize,
)

from tests.scorers.contracts.drive import display_chain, of_type, run_tracker

CONTRACT = get_contract("weighing")
G0 = 9.80665


def basic(target: float = 180.0, sample: float = 130.0, goal: str = "w50") -> WeighingInstance:
    return WeighingInstance(target_g=target, sample_g=sample, goal=frozenset([goal]), f_empty_n=2.0)


def run_online(instance: WeighingInstance, rows: list[dict], obs_every: int = 50) -> list:
    return run_tracker(CONTRACT, instance, rows, obs_every)


# -- display chain (eq. 8, 9) ------------------------------------------------------------

def test_eq8_empty_pan_calibration_by_hand() -> None:
    t = np.array([0.0, 0.002])
    force = np.array([2.0 + 0.13 * G0, 2.0 + 0.13 * G0])
    m_bar, _ = display_chain(t, force, np.array([True, True]), 2.0, G0, WeighingThresholds())
    assert m_bar[0] == pytest.approx(130.0, abs=1e-9)  # 1000/g0 · (F − F_empty)


def test_eq9_first_order_filter_by_hand() -> None:
    th = WeighingThresholds()
    t = np.array([0.0, 0.1, 0.2])
    force = np.array([0.1, 0.2, 0.2]) * G0  # 100 g then 200 g
    m_bar, _ = display_chain(t, force, np.ones(3, dtype=bool), 0.0, G0, th)
    alpha = 1 - math.exp(-0.1 / 0.25)  # 0.3297
    assert m_bar[0] == pytest.approx(100.0)
    assert m_bar[1] == pytest.approx(100.0 + alpha * 100.0)
    assert m_bar[2] == pytest.approx(m_bar[1] + alpha * (200.0 - m_bar[1]))


def test_quantum_rounds_to_tenths() -> None:
    assert quantize(130.04, 0.1) == pytest.approx(130.0)
    assert quantize(130.06, 0.1) == pytest.approx(130.1)


def test_stable_after_one_second_and_sensor_error_invalidates_window() -> None:
    s = WeighingStream(basic()).hold(1.5).set(sensor_ok=False).hold(0.1).set(sensor_ok=True).hold(1.5)
    f = CONTRACT.features_bulk(s.table(), basic())
    t, stable = f["t"], f["stable"]
    assert not stable[t < 0.999].any() and stable[(t >= 1.0) & (t < 1.5)].all()
    assert not stable[(t >= 1.5) & (t < 2.6 - 1e-9)].any()  # error at 1.5–1.6, new window until 2.6
    assert stable[t >= 2.602].all()
    events = run_online(basic(), s.rows)
    assert [(e.fields["kind"], e.t) for e in of_type(events, "validity")] == [("sensor_error", 1.5)]


@settings(max_examples=25, deadline=None)
@given(subset=st.integers(0, 15), sample=st.floats(5.0, 300.0), start=st.floats(0.0, 400.0))
def test_display_converges_to_supported_mass(subset: int, sample: float, start: float) -> None:
    """For any supported set the reading settles within 0.1 g of sample + standards."""
    inst = WeighingInstance(target_g=0.0, sample_g=sample, goal=frozenset(), f_empty_n=1.5)
    s = WeighingStream(inst)
    s.set(press_g=start - sample).hold(0.2)  # start from an arbitrary earlier load
    s.set(press_g=0.0, on_pan={w for w in STANDARDS if mask_of([w]) & subset}).hold(4.0)
    f = CONTRACT.features_bulk(s.table(), inst)
    expected = sample + sum(MASS_G[w] for w in STANDARDS if mask_of([w]) & subset)
    assert abs(quantize(f["m_bar"][-1], 0.1) - expected) <= 0.1 + 1e-9
    assert f["stable"][-1]


# -- confirmations, legal sets, opportunities -------------------------------------------

def add_weight(s: WeighingStream, w: str, land: bool = True) -> WeighingStream:
    s.set(grasped={w}, speed=0.1).hold(0.5)
    if land:
        s.set(on_pan=s.on_pan | {w}).hold(0.1)
    return s.set(grasped=set(), speed=0.0).hold(2.5)


def test_basic_add_confirms_supported_and_completes() -> None:
    inst = basic()
    events = run_online(inst, add_weight(WeighingStream(inst).hold(1.5), "w50").hold(3.5).rows)
    opps = of_type(events, "opportunity")
    assert [o.fields["legal"] for o in opps] == [[Operation("add", "w50", "pan")], [Operation("stop"), Operation("wait")]]
    assert [o.fields["trigger"] for o in opps] == ["initial", "state_change"]
    confirm = of_type(events, "confirm")[0]
    assert confirm.fields["obligation"] == "add:w50" and confirm.fields["measured"]["reading_g"] == 180.0
    choice = of_type(events, "choice")[0]
    assert choice.fields["op"] == Operation("add", "w50", "pan") and choice.fields["first"]
    assert [d.fields["state"] for d in of_type(events, "dwell")] == ["start", "complete"]
    assert events[-1] == {"physical_complete": True}


def test_duplicate_observations_keep_one_opportunity() -> None:
    inst = basic()
    events = run_online(inst, WeighingStream(inst).hold(5.0).rows, obs_every=10)
    assert len(of_type(events, "opportunity")) == 1  # 250 deliveries of unchanged evidence


def test_weight_missing_the_pan_leaves_obligation_open() -> None:
    inst = basic()
    s = add_weight(WeighingStream(inst).hold(1.5), "w50", land=False)
    events = run_online(inst, s.rows)
    failure = of_type(events, "failure")[0]
    assert failure.fields["reason"] == "miss" and failure.fields["op"] == Operation("add", "w50", "pan")
    opps = of_type(events, "opportunity")
    assert opps[1].fields["trigger"] == "failed_attempt"
    assert opps[1].fields["legal"] == [Operation("add", "w50", "pan")]
    assert not of_type(events, "confirm") and events[-1] == {"physical_complete": False}


@pytest.mark.parametrize("over, failures", [({"w50"}, ["miss"]), (set(), [])])
def test_release_over_the_pan_is_a_miss_and_elsewhere_a_put_back(over: set, failures: list) -> None:
    inst = basic()
    s = WeighingStream(inst).set(over_pan=set()).hold(1.5)
    s.set(grasped={"w50"}, speed=0.1).hold(0.4).set(over_pan=over).hold(0.1)
    s.set(grasped=set(), speed=0.0).hold(0.01).set(over_pan=set()).hold(2.5)
    events = run_online(inst, s.rows)
    assert [f.fields["reason"] for f in of_type(events, "failure")] == failures
    assert [o.fields["trigger"] for o in of_type(events, "opportunity")] == ["initial"] + ["failed_attempt"] * len(failures)


def test_hand_pressure_with_correct_reading_is_not_success() -> None:
    inst = basic()
    s = WeighingStream(inst).hold(1.5).set(press_g=50.0).hold(6.0)  # display shows 180.0
    f = CONTRACT.features_bulk(s.table(), inst)
    assert quantize(f["m_bar"][-1], 0.1) == pytest.approx(180.0)
    events = run_online(inst, s.rows)
    assert not of_type(events, "dwell") and not of_type(events, "confirm")


def test_gripper_support_is_not_supported_load() -> None:
    inst = basic()
    s = WeighingStream(inst).hold(1.5).set(on_pan={"w50"}, grasped={"w50"}).hold(5.0)
    f = CONTRACT.features_bulk(s.table(), inst)
    assert (f["supported"][-1], f["released"][-1]) == (0, False)
    assert not of_type(run_online(inst, s.rows), "dwell")


def test_interrupted_stability_restarts_the_timer() -> None:
    inst = basic()
    s = add_weight(WeighingStream(inst).hold(1.5), "w50").hold(1.0)
    s.set(speed=0.05).hold(0.2).set(speed=0.0).hold(3.5)  # a bump during the terminal window
    dwell = of_type(run_online(inst, s.rows), "dwell")
    assert [d.fields["state"] for d in dwell] == ["start", "reset", "start", "complete"]
    assert dwell[3].t - dwell[2].t == pytest.approx(3.0, abs=0.003)
    assert dwell[2].t > dwell[1].t


def test_extended_legal_corrections_and_orders() -> None:
    inst = WeighingInstance(target_g=220.0, sample_g=100.0, goal=frozenset({"w100", "w20"}), start=frozenset({"w50"}))
    state = CONTRACT.initial_state(inst)
    assert CONTRACT.legal_set(state, inst) == [Operation("add", "w20", "pan"), Operation("add", "w100", "pan"),
                                               Operation("remove", "w50", "pan")]
    s = WeighingStream(inst).hold(1.5)
    s.set(grasped={"w50"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan=set(), speed=0.0).hold(2.5)
    events = run_online(inst, add_weight(add_weight(s, "w100"), "w20").hold(3.5).rows)
    confirms = [c.fields["obligation"] for c in of_type(events, "confirm")]
    assert confirms == ["remove:w50", "add:w100", "add:w20"]
    assert events[-1] == {"physical_complete": True}


def test_instance_from_task_reads_variant_and_refuses_bad_values() -> None:
    inst = basic()
    task = Task(family="weighing", task_id="w", version="1", variant=inst.variant())
    assert CONTRACT.instance_from_task(task) == inst
    bad = Task(family="weighing", task_id="w", version="1", variant={**inst.variant(), "goal": ["w30"]})
    with pytest.raises(LabrecordError, match=r"task.variant.goal: .*'w30'"):
        CONTRACT.instance_from_task(bad)


# -- online and bulk agree --------------------------------------------------------------

@settings(max_examples=15, deadline=None)
@given(script=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(STANDARDS), st.floats(0.002, 2.0)), max_size=10),
       seed=st.integers(0, 2**16))
# {w}_over_pan switched on mid-stream, then w10 released off the pan: a put-back, not a miss
@example(script=[(0, "w10", 1.0), (6, "w20", 1.0), (2, "w10", 1.0)], seed=0)
def test_online_tracker_and_bulk_replay_agree(script: list, seed: int) -> None:
    inst, rows = script_stream(script, seed)
    online = run_online(inst, rows)
    receipts = [ObservationReceipt(obs_id=f"obs{i}", step=r["step"], t_acquired=r["t"], t_delivered=r["t"],
                                   evidence_version=i) for i, r in enumerate(rows) if i % 50 == 0]
    bulk, end = CONTRACT.replay(rows_table(rows), receipts, inst)
    assert [(e.type, e.t, e.fields) for e in online[:-1]] == [(e.type, e.t, e.fields) for e in bulk]
    assert online[-1] == end


def script_stream(script: list, seed: int) -> tuple[WeighingInstance, list[dict]]:
    """An extended-condition stream from (action, standard, seconds) steps, force jittered."""
    inst = WeighingInstance(target_g=220.0, sample_g=100.0, goal=frozenset({"w100", "w20"}), start=frozenset({"w50"}))
    s = WeighingStream(inst).hold(1.2)
    for action, w, seconds in script:
        changes = [dict(grasped={w}, speed=0.1), dict(grasped=set(), on_pan=s.on_pan | {w}, speed=0.0),
                   dict(grasped=set(), on_pan=s.on_pan - {w}, speed=0.0), dict(sensor_ok=not s.sensor_ok),
                   dict(press_g=10.0), dict(press_g=0.0), dict(over_pan={w})]
        s.set(**changes[action]).hold(seconds)
    return inst, jitter(s.rows, np.random.default_rng(seed), ["pan_force_n"], 1e-4)


def push_in_blocks(inst: WeighingInstance, table: pa.Table, cuts: list[int]) -> dict[str, np.ndarray]:
    """Features from ``push_block`` over the table cut at ``cuts`` (row indices)."""
    stepper = CONTRACT.stepper(inst)
    edges = [0, *sorted({c for c in cuts if 0 < c < table.num_rows}), table.num_rows]
    parts = []
    for a, b in zip(edges[:-1], edges[1:]):
        block = {name: table.column(name).to_numpy(zero_copy_only=False)[a:b] for name in table.column_names}
        parts.append(stepper.push_block(block))
    return {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}


def test_block_features_continue_across_blocks_by_hand() -> None:
    """Stability, settling and the terminal hold carry over block edges: pushing in blocks
    of 50 rows gives the whole-episode values.  After the 50 g step at 1.5 s the 1 s range
    is 50·e^(−(Δ−1)/τ)·(1 − e^(−1/τ)) g, ≤ 0.5 g from Δ = 1 + τ·ln(98) ≈ 2.15 s: settled
    from about 3.65 s; the terminal hold follows the first success by 3 s."""
    inst = basic()
    s = WeighingStream(inst).hold(1.5).set(on_pan={"w50"}).hold(4.0)
    whole = CONTRACT.features_bulk(s.table(), inst)
    blocks = push_in_blocks(inst, s.table(), list(range(50, len(s.rows), 50)))
    for name in whole:
        np.testing.assert_array_equal(blocks[name], whole[name], err_msg=name)
    t = blocks["t"]
    settled_from = t[blocks["settled"] & (t > 1.5)][0]
    assert 3.6 < settled_from < 3.7 and blocks["settled"][t >= settled_from].all()
    first_success, first_held = t[blocks["success"]][0], t[blocks["held"]][0]
    assert first_held == pytest.approx(first_success + 3.0) and blocks["held"][t >= first_held].all()


@settings(max_examples=15, deadline=None)
@given(script=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(STANDARDS), st.floats(0.002, 2.0)), max_size=8),
       seed=st.integers(0, 2**16), cuts=st.lists(st.integers(0, 3000), max_size=12))
@example(script=[(0, "w10", 1.0), (6, "w20", 1.0), (2, "w10", 1.0)], seed=0, cuts=[1, 600, 601, 1100])
def test_block_stepper_equals_bulk_for_any_block_edges(script: list, seed: int, cuts: list[int]) -> None:
    inst, rows = script_stream(script, seed)
    table = rows_table(rows)
    whole = CONTRACT.features_bulk(table, inst)
    blocks = push_in_blocks(inst, table, cuts)
    for name in whole:
        np.testing.assert_array_equal(blocks[name], whole[name], err_msg=name)


# -- generators --------------------------------------------------------------------------

def test_basic_generator_balances_target_and_answer() -> None:
    instances = generate_basic(24, np.random.default_rng(0), np.random.default_rng(1))
    strata = [(i.target_g, next(iter(i.goal))) for i in instances]
    assert all(strata.count(s) == 2 for s in set(strata)) and len(set(strata)) == 12
    for i in instances:
        assert i.target_g - i.sample_g == MASS_G[next(iter(i.goal))] and not i.start


def test_generator_seeds_are_separate() -> None:
    a = generate_basic(12, np.random.default_rng(5), np.random.default_rng(1))
    b = generate_basic(12, np.random.default_rng(5), np.random.default_rng(2))
    c = generate_basic(12, np.random.default_rng(6), np.random.default_rng(1))
    assert [(i.target_g, i.goal) for i in a] == [(i.target_g, i.goal) for i in b]
    assert [i.layout_seed for i in a] != [i.layout_seed for i in b]
    assert [i.layout_seed for i in a] == [i.layout_seed for i in c]
    assert [(i.target_g, i.goal) for i in a] != [(i.target_g, i.goal) for i in c]


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 60), seed=st.integers(0, 2**16))
def test_extended_generator_constraints(n: int, seed: int) -> None:
    instances = generate_extended(n, np.random.default_rng(seed), np.random.default_rng(seed + 1))
    counts = [[i.target_g for i in instances].count(t) for t in (200.0, 220.0, 240.0)]
    assert max(counts) - min(counts) <= 1
    for target in (200.0, 220.0, 240.0):
        goals = [i.goal for i in instances if i.target_g == target]
        per_goal = [goals.count(g) for g in set(goals)]
        assert max(per_goal, default=0) - (min(per_goal) if len(set(goals)) == 10 else 0) <= 1
    for i in instances:
        assert i.target_g in (200.0, 220.0, 240.0) and len(i.goal) in (2, 3)
        assert len(i.goal ^ i.start) >= 2 and i.sample_g == i.target_g - sum(MASS_G[w] for w in i.goal) > 0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 36), seed=st.integers(0, 2**16))
def test_basic_answers_are_balanced_at_every_prefix(n: int, seed: int) -> None:
    """Each of the four answers within one of the others at every prefix (the first 4 of
    a block hold each answer once, so a fixed-preference policy is right in 1 of 4), each
    target within one, and every full block of 12 holds each (target, answer) once."""
    instances = generate_basic(n, np.random.default_rng(seed), np.random.default_rng(seed + 1))
    answers = [next(iter(i.goal)) for i in instances]
    targets = [i.target_g for i in instances]
    for k in range(1, n + 1):
        counts = [answers[:k].count(w) for w in STANDARDS]
        assert max(counts) - min(counts) <= 1
        per_target = [targets[:k].count(t) for t in (160.0, 180.0, 200.0)]
        assert max(per_target) - min(per_target) <= 1
    for start in range(0, n - 11, 12):
        block = set(zip(targets[start:start + 12], answers[start:start + 12]))
        assert len(block) == 12


def test_first_block_by_hand() -> None:
    # seed 0 of the simulator's first block: the first four instances hold all four answers
    from labrecord.sim.weighing.task import instances

    first = [next(iter(i.goal)) for i in instances("basic", 4, 0)]
    assert sorted(first) == sorted(STANDARDS)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(256, 3000), cuts=st.lists(st.integers(1, 2999), max_size=5),
       jittered=st.booleans(), errors=st.integers(0, 6))
def test_display_filter_blocks_equal_the_row_rule(seed: int, n: int, cuts: list[int], jittered: bool,
                                                  errors: int) -> None:
    """The display filter over long blocks (the window's range at once) and over short ones
    (the deque loop), cut anywhere, gives the row rule's m̄ and stability bit for bit: a
    load stepping between levels, noise near the 0.5 g stability limit, sensor errors."""
    from labrecord.scorers.contracts.weighing import DisplayFilter

    rng = np.random.default_rng(seed)
    th = WeighingThresholds()
    dt = np.full(n, 0.002) if not jittered else rng.choice([0.002, 0.0021, 0.004], size=n)
    t = np.cumsum(dt)
    raw = np.repeat(rng.uniform(100, 200, size=5), 700)[:n] + rng.normal(0, 0.15, size=n)  # 1.4 s levels
    valid = np.ones(n, dtype=bool)
    for start in rng.integers(0, n, size=errors):
        valid[start:start + int(rng.integers(1, 40))] = False
    want_m, want_stable = DisplayFilter(th)._rows(t.tolist(), raw.tolist(), valid.tolist())
    assert want_stable.any() or errors or n < 1400  # the case exercises the window
    whole = DisplayFilter(th)
    m_bar, stable = whole.block(t, raw, valid)
    assert m_bar.tobytes() == want_m.tobytes() and stable.tolist() == want_stable.tolist()
    edges = [0, *sorted({c for c in cuts if 0 < c < n}), n]
    pieces = DisplayFilter(th)
    parts = [pieces.block(t[a:b], raw[a:b], valid[a:b]) for a, b in zip(edges[:-1], edges[1:])]
    assert np.concatenate([p[0] for p in parts]).tobytes() == want_m.tobytes()
    assert np.concatenate([p[1] for p in parts]).tolist() == want_stable.tolist()
