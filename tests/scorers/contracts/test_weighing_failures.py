"""Physical failure events of the weighing contract: drop, recovery, violations.

Every event is recognized from measurement rows (never from a policy's report), online
row by row, online in blocks and in the bulk replay alike.
"""
from __future__ import annotations


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.examples import example_manifest
from labrecord.rundir import read_events
from labrecord.scorers.audit import audit_run
from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.streams import WeighingStream, record_run, rows_table
from labrecord.scorers.contracts.weighing import STANDARDS, WeighingInstance

from tests.scorers.contracts.drive import of_type, run_tracker

CONTRACT = get_contract("weighing")
HZ = 500.0


def instance() -> WeighingInstance:
    return WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=2.0)


def with_heights(rows: list[dict], z_of: dict[str, callable]) -> list[dict]:
    """Add ``{w}_z`` and ``{w}_on_table`` columns: standards rest on the table (z 0.016)
    unless on the pan or ``z_of[w](t)`` gives a height (then off the table above 0.017)."""
    for row in rows:
        for w in STANDARDS:
            z = z_of[w](row["t"]) if w in z_of else 0.016
            row[f"{w}_z"] = z
            row[f"{w}_on_table"] = z <= 0.017 and not row[f"{w}_on_pan"]
    return rows


def drop_and_recover() -> tuple[WeighingInstance, list[dict]]:
    """w50 grasped at 1.5 s and lifted to 0.2 m; released in free air at 2.0 s.  It falls
    z = 0.2 − g0/2·(t − 2)²: 3 cm below the release height after √(0.06/9.80665) =
    0.0782 s, i.e. at the row t = 2.080 (500 Hz).  It lands on the table at 2.19 s, is
    grasped again at 3.0 s and placed on the pan at 4.0 s; 1 s later the set is settled:
    confirm add:w50 and the recovery of the drop."""
    inst = instance()
    s = WeighingStream(inst, hz=HZ).hold(1.5)
    s.set(grasped={"w50"}, speed=0.1).hold(0.5).set(grasped=set(), speed=0.5).hold(0.19)
    s.set(speed=0.0).hold(0.81).set(grasped={"w50"}, speed=0.1).hold(1.0)
    s.set(grasped=set(), on_pan={"w50"}, speed=0.0).hold(4.5)

    def z(t: float) -> float:
        if t < 1.5:
            return 0.016
        if t < 2.0:
            return 0.016 + (t - 1.5) / 0.5 * 0.184
        if t < 2.19:
            return max(0.016, 0.2 - 9.80665 / 2 * (t - 2.0) ** 2)
        if t < 3.0:
            return 0.016
        if t < 4.0:
            return 0.1
        return 0.086  # resting on the pan

    return inst, with_heights(s.rows, {"w50": z})


def test_drop_then_recovery_by_hand() -> None:
    inst, rows = drop_and_recover()
    events = run_online(inst, rows)
    (failure,) = of_type(events, "failure")
    assert failure.t == pytest.approx(2.080)
    assert failure.fields["reason"] == "drop" and str(failure.fields["op"]) == "add(w50, pan)"
    assert failure.fields["recoverable"] and failure.fields["attempt"] == 1
    (confirm,) = of_type(events, "confirm")
    (recovery,) = of_type(events, "recovery")
    assert recovery.t == confirm.t and recovery.fields == {"of_failure": 0, "resolved": True}
    assert not of_type(events, "violation") and not of_type(events, "validity")
    assert events[-1]["physical_complete"]


def test_no_drop_without_positions_or_when_released_onto_a_support() -> None:
    inst, rows = drop_and_recover()
    bare = [{k: v for k, v in row.items() if not k.endswith(("_z", "_on_table"))} for row in rows]
    assert not drops(run_online(inst, bare))
    # the same release with the standard on the table: a put-back, not a drop
    for row in rows:
        if 2.0 <= row["t"] < 2.19:
            row["w50_on_table"] = True
    assert not drops(run_online(inst, rows))


def drops(events: list) -> list:
    return [e for e in of_type(events, "failure") if e.fields["reason"] == "drop"]


def test_drop_and_recovery_survive_the_audit(tmp_path) -> None:
    inst, rows = drop_and_recover()
    manifest = example_manifest("drop-0001")
    manifest.task.variant = inst.variant()
    run = record_run(tmp_path, manifest, CONTRACT, inst, rows)
    events = read_events(run)
    failure = next(e for e in events if e.__struct_config__.tag == "failure")
    recovery = next(e for e in events if e.__struct_config__.tag == "recovery")
    assert recovery.of_seq == failure.seq and recovery.resolved
    audit = audit_run(run)
    assert audit.ok, [str(f) for f in audit.findings]


def test_premature_repetition_and_safety_violations_by_hand() -> None:
    """Grasp w50 at 0.5 s, before the first 1 s stability window: premature.  Place it,
    then grasp it off the pan again after its confirmation: repetition (reverses add:w50).
    From 6.3 s press the pan with 600 g: after k filter steps (the first at 6.3 s) the
    excess is 600·(1 − e^(−0.008·k)); it passes the 5 N limit (509.86 g) at k = 237
    (0.008·237 = 1.896 > ln(600/90.14) = 1.8957), t = 6.3 + 0.472 = 6.772 s — one safety
    violation, irreversible.  The cell then overloads (sensor_ok false, finite force) while pressed:
    no sensor-validity event, the policy caused it."""
    inst = instance()
    s = WeighingStream(inst, hz=HZ).hold(0.5)
    s.set(grasped={"w50"}, speed=0.1).hold(0.5).set(grasped=set(), on_pan={"w50"}, speed=0.0).hold(2.5)
    s.set(grasped={"w50"}, speed=0.1).hold(0.3).set(grasped=set(), speed=0.0).hold(2.5)
    s.set(press_g=600.0).hold(1.0).set(press_g=0.0).hold(1.0)
    for row in s.rows:
        if 7.1 <= row["t"] < 7.3:
            row["sensor_ok"] = False
    events = run_online(inst, s.rows)
    kinds = [(e.fields["kind"], round(e.t, 3)) for e in of_type(events, "violation")]
    assert kinds == [("premature", 0.5), ("repetition", 3.5), ("safety", 6.772)]
    safety = of_type(events, "violation")[-1]
    assert safety.fields["irreversible"] and not of_type(events, "validity")


def test_a_sensor_fault_without_robot_contact_stays_a_validity_event() -> None:
    inst = instance()
    s = WeighingStream(inst, hz=HZ).hold(1.5).set(sensor_ok=False).hold(0.2).set(sensor_ok=True).hold(0.5)
    events = run_online(inst, s.rows)
    assert len(of_type(events, "validity")) == 1 and not of_type(events, "violation")


def run_online(inst: WeighingInstance, rows: list[dict]) -> list:
    events = run_tracker(CONTRACT, inst, rows, obs_every=50)
    # the bulk replay (the audit's kernel over the whole table) produces the same events
    from labrecord.models import ObservationReceipt

    receipts = [ObservationReceipt(obs_id=f"obs{i}", step=rows[i]["step"], t_acquired=rows[i]["t"],
                                   t_delivered=rows[i]["t"], evidence_version=i) for i in range(0, len(rows), 50)]
    replayed, end = CONTRACT.replay(rows_table(rows), receipts, inst)
    assert [(e.type, e.t, e.fields) for e in events[:-1]] == [(e.type, e.t, e.fields) for e in replayed]
    assert end == events[-1]
    return events


@settings(max_examples=25, deadline=None)
@given(st.floats(0.05, 0.3), st.floats(0.0, 0.06), st.lists(st.integers(1, 400), max_size=6))
def test_drop_iff_the_free_fall_exceeds_the_drop_height(release_z, fall, cuts) -> None:
    """Released in free air at ``release_z`` and falling ``fall`` metres: a drop failure
    exactly when the fall exceeds 3 cm; block cuts do not change the features."""
    inst = instance()
    s = WeighingStream(inst, hz=HZ).hold(1.5).set(grasped={"w20"}, speed=0.1).hold(0.3)
    s.set(grasped=set(), speed=0.2).hold(0.5).set(speed=0.0).hold(0.4)

    def z(t: float) -> float:
        if t < 1.8:
            return release_z
        return release_z - min(fall, fall * (t - 1.8) / 0.3)

    rows = with_heights(s.rows, {"w20": z})
    for row in rows:
        row["w20_on_table"] = False
    drops = [e for e in of_type(run_online(inst, rows), "failure") if e.fields["reason"] == "drop"]
    assert len(drops) == (1 if fall > 0.03 + 1e-9 else 0)
    stepper = CONTRACT.stepper(inst)
    table = rows_table(rows)
    arrays = {n: table.column(n).to_numpy(zero_copy_only=False) for n in table.column_names}
    edges = [0, *sorted({c for c in cuts if c < len(rows)}), len(rows)]
    pieces = [stepper.push_block({n: v[a:b] for n, v in arrays.items()}) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    whole = CONTRACT.features_bulk(table, inst)
    assert np.array_equal(np.concatenate([p["dropped"] for p in pieces]), whole["dropped"])


def idle_stream(end_s: float, moves: tuple[tuple[float, float], ...] = ((0.0, 2.0),),
                complete: bool = False) -> tuple[WeighingInstance, list[dict]]:
    """The arm moves (``arm_speed`` 0.5 rad/s) during each (start, end) of ``moves`` and is
    still (0.0) otherwise; nothing is grasped or touched; the reading (130 g, or 180 g on
    target with w50 on the pan when ``complete``) is stable from 1.0 s on."""
    inst = instance()
    if complete:
        inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), start=frozenset({"w50"}),
                                f_empty_n=2.0)
    s = WeighingStream(inst, hz=HZ).hold(end_s)
    for row in s.rows:
        row["arm_speed"] = 0.5 if any(a <= row["t"] < b for a, b in moves) else 0.0
    return inst, s.rows


def early_stops(events: list) -> list:
    return [e for e in of_type(events, "violation") if e.fields["kind"] == "early_stop"]


def test_early_stop_by_hand() -> None:
    """Still from t = 2.0 s with a stable reading, released, nothing grasped: the idle run
    starts at 2.0 s and has lasted 5 s at t = 7.0 s.  An episode ending at its last row
    t = 7.498 s (7.5 s at 500 Hz) incomplete gives one early stop there; ending at
    6.898 s (idle 4.898 s) gives none; a move during [4.0, 4.2) restarts the idle run at
    4.2 s (3.298 s by 7.498 s): none; a completed episode: none."""
    inst, rows = idle_stream(7.5)
    (stop,) = early_stops(run_online(inst, rows))
    assert stop.t == pytest.approx(7.498) and stop.step == len(rows) - 1
    assert stop.fields == {"kind": "early_stop", "irreversible": False, "op": None}
    inst, rows = idle_stream(6.9)
    assert not early_stops(run_online(inst, rows))
    inst, rows = idle_stream(7.5, moves=((0.0, 2.0), (4.0, 4.2)))
    assert not early_stops(run_online(inst, rows))
    inst, rows = idle_stream(7.5, complete=True)
    events = run_online(inst, rows)
    assert events[-1]["physical_complete"] and not early_stops(events)


def test_no_early_stop_without_arm_speed_or_after_an_evaluator_fault() -> None:
    inst, rows = idle_stream(7.5)
    bare = [{k: v for k, v in row.items() if k != "arm_speed"} for row in rows]
    assert not early_stops(run_online(inst, bare))
    events, _ = CONTRACT.replay(rows_table(rows), [], inst, judge_end=False)
    assert not early_stops(events)


def test_early_stop_survives_the_audit_and_its_removal_is_found(tmp_path) -> None:
    inst, rows = idle_stream(7.5)
    manifest = example_manifest("stop-0001")
    manifest.task.variant = inst.variant()
    run = record_run(tmp_path, manifest, CONTRACT, inst, rows)
    assert [e.kind for e in read_events(run) if e.__struct_config__.tag == "violation"] == ["early_stop"]
    assert audit_run(run).ok
    lines = (run / "events.jsonl").read_text().splitlines()
    (run / "events.jsonl").write_text("".join(line + "\n" for line in lines if '"early_stop"' not in line))
    findings = audit_run(run).findings
    assert any(f.check == "violation" for f in findings), [str(f) for f in findings]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 9.0), st.floats(0.002, 1.5)), max_size=4), st.floats(3.0, 10.0),
       st.lists(st.integers(1, 4000), max_size=6))
def test_early_stop_iff_the_last_idle_run_lasts_the_window(moves, end_s, cuts) -> None:
    """Whatever the arm's moves: an early stop exactly when the last row is idle (still
    and stable) and the idle run it ends began at least 5 s before it; block cuts of the
    online kernel give the same ``stopped`` feature as the bulk replay."""
    inst, rows = idle_stream(end_s, tuple((a, a + d) for a, d in moves))
    table = rows_table(rows)
    whole = CONTRACT.features_bulk(table, inst)
    idle = (table.column("arm_speed").to_numpy() <= 0.05) & whole["stable"]
    t = whole["t"]
    start = len(rows) - 1
    while start > 0 and idle[start - 1]:
        start -= 1
    expected = bool(idle[-1]) and t[-1] - t[start] >= 5.0
    assert len(early_stops(run_online(inst, rows))) == int(expected)
    stepper = CONTRACT.stepper(inst)
    arrays = {n: table.column(n).to_numpy(zero_copy_only=False) for n in table.column_names}
    edges = [0, *sorted({c for c in cuts if c < len(rows)}), len(rows)]
    pieces = [stepper.push_block({n: v[a:b] for n, v in arrays.items()}) for a, b in zip(edges[:-1], edges[1:]) if b > a]
    assert np.array_equal(np.concatenate([p["stopped"] for p in pieces]), whole["stopped"])


def test_an_arm_link_pushing_the_balance_is_a_safety_violation_by_hand() -> None:
    """``robot_balance_force_n`` (any arm link on the balance's base or pan) rises to 6 N
    at t = 2.0 s and falls at 2.5 s: one irreversible safety violation at 2.0 s, though no
    robot link touches the load and the reading never moves; 4.9 N gives none."""
    for peak, expected in ((6.0, [("safety", 2.0)]), (4.9, [])):
        inst = instance()
        s = WeighingStream(inst, hz=HZ).hold(3.0)
        for row in s.rows:
            row["robot_balance_force_n"] = peak if 2.0 <= row["t"] < 2.5 else 0.0
        events = run_online(inst, s.rows)
        assert [(e.fields["kind"], round(e.t, 3)) for e in of_type(events, "violation")] == expected
        assert all(e.fields["irreversible"] for e in of_type(events, "violation"))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 12.0), min_size=1, max_size=8))
def test_one_safety_violation_per_push_above_the_limit(pushes) -> None:
    """Consecutive 0.2 s segments of arm-on-balance force: a safety violation at the start
    of every run of segments above 5 N, and only there."""
    inst = instance()
    s = WeighingStream(inst, hz=HZ).hold(0.2 * len(pushes))
    for row in s.rows:
        row["robot_balance_force_n"] = pushes[min(int(round(row["t"] * HZ)) // 100, len(pushes) - 1)]
    above = [p > 5.0 for p in pushes]
    starts = [round(0.2 * k, 3) for k, a in enumerate(above) if a and (k == 0 or not above[k - 1])]
    events = run_online(inst, s.rows)
    assert [round(e.t, 3) for e in of_type(events, "violation") if e.fields["kind"] == "safety"] == starts
