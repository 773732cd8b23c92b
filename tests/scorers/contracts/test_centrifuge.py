"""Centrifuge loading contract: opposite slots, seating predicate, actual-slot destinations."""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.models import ObservationReceipt, Operation, Task
from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.centrifuge import (
    CentrifugeInstance, answer_changing_pairs, geometric_pairs, opposite, slot_name,
)
from labrecord.scorers.contracts.streams import CentrifugeStream

from tests.scorers.contracts.drive import of_type, run_tracker

CONTRACT = get_contract("centrifuge")


def run(instance: CentrifugeInstance, stream: CentrifugeStream, obs_every: int = 50) -> list:
    return run_tracker(CONTRACT, instance, stream.rows, obs_every)


def insert(stream: CentrifugeStream, tube: str, aim: int, lands: int | None = None, **pose: float) -> CentrifugeStream:
    """Carry ``tube`` toward slot ``aim`` (directed entry), release it into ``lands``."""
    stream.place(tube, aim, depth_frac=-0.3, grasped=True).hold(0.3)
    return stream.place(tube, aim if lands is None else lands, **pose).hold(1.0)


def test_opposite_by_hand() -> None:
    assert [opposite(j) for j in (0, 1, 2, 7, 11)] == [6, 7, 8, 1, 5]
    with pytest.raises(ValueError):
        opposite(1, 7)


@given(n=st.integers(1, 50).map(lambda k: 2 * k), j=st.integers(0, 10_000))
def test_opposite_is_an_involution_without_fixed_points(n: int, j: int) -> None:
    j %= n
    assert opposite(opposite(j, n), n) == j and opposite(j, n) != j


def test_basic_start_sets_the_destination() -> None:
    inst = CentrifugeInstance(start=(("tube_a", 3),), held="tube_b")
    events = run(inst, CentrifugeStream(inst).hold(0.2))
    assert of_type(events, "opportunity")[0].fields["legal"] == [Operation("insert", "tube_b", "slot9")]


def test_first_tube_settling_in_slot_2_moves_the_destination_to_slot_8() -> None:
    inst = CentrifugeInstance(condition="extended")
    s = insert(CentrifugeStream(inst).hold(0.2), "tube_a", aim=1, lands=2)
    events = run(inst, s)
    assert of_type(events, "choice")[0].fields["op"] == Operation("insert", "tube_a", "slot1")  # intended
    assert of_type(events, "confirm")[0].fields["op"] == Operation("insert", "tube_a", "slot2")  # actual
    assert of_type(events, "opportunity")[-1].fields["legal"] == [Operation("insert", "tube_b", "slot8")]


def test_complete_pair_holds_three_seconds() -> None:
    inst = CentrifugeInstance(condition="extended")
    s = insert(insert(CentrifugeStream(inst).hold(0.2), "tube_a", 1), "tube_b", 7).hold(3.0)
    events = run(inst, s)
    assert [d.fields["state"] for d in of_type(events, "dwell")] == ["start", "complete"]
    assert events[-1] == {"physical_complete": True}
    assert of_type(events, "opportunity")[-1].fields["legal"] == [Operation("stop"), Operation("wait")]


def test_incomplete_pair_is_not_complete() -> None:
    inst = CentrifugeInstance(condition="extended")
    events = run(inst, insert(CentrifugeStream(inst).hold(0.2), "tube_a", 4).hold(5.0))
    assert not of_type(events, "dwell") and events[-1] == {"physical_complete": False}
    assert of_type(events, "opportunity")[-1].fields["legal"] == [Operation("insert", "tube_b", "slot10")]


@pytest.mark.parametrize("pose, reason", [
    ({"depth_frac": 0.4}, "shallow"),
    ({"axial_deg": 15.0}, "misaligned"),
    ({"radial_m": 0.006}, "misaligned"),
])
def test_unseated_placements_fail_and_leave_the_obligation(pose: dict, reason: str) -> None:
    inst = CentrifugeInstance(condition="extended")
    events = run(inst, insert(CentrifugeStream(inst).hold(0.2), "tube_a", 5, **pose))
    assert not of_type(events, "confirm")
    failure = of_type(events, "failure")[0]
    assert (failure.fields["reason"], failure.fields["op"]) == (reason, Operation("insert", "tube_a", "slot5"))
    assert of_type(events, "opportunity")[-1].fields["trigger"] == "failed_attempt"


def test_seating_at_threshold_edges_confirms() -> None:
    inst = CentrifugeInstance(condition="extended")
    events = run(inst, insert(CentrifugeStream(inst).hold(0.2), "tube_a", 5, depth_frac=0.61, axial_deg=9.5, radial_m=0.0025))
    assert of_type(events, "confirm")[0].fields["measured"]["slot"] == 5


def test_unreleased_placement_never_confirms() -> None:
    inst = CentrifugeInstance(condition="extended")
    s = CentrifugeStream(inst).hold(0.2).place("tube_a", 5, grasped=True, supported=True).hold(2.0)
    events = run(inst, s)
    assert not of_type(events, "confirm") and not of_type(events, "failure")


def test_seating_needs_half_a_second() -> None:
    inst = CentrifugeInstance(condition="extended")
    s = CentrifugeStream(inst).hold(0.2).place("tube_a", 5).hold(0.4).place("tube_a", 5, speed=0.05).hold(0.1)
    s.place("tube_a", 5).hold(0.6)
    confirm = of_type(run(inst, s), "confirm")[0]
    assert confirm.t == pytest.approx(0.7 + 0.5)


@settings(max_examples=20, deadline=None)
@given(yaw=st.floats(-math.pi, math.pi), first=st.integers(0, 11), dx=st.floats(-1, 1), dy=st.floats(-1, 1))
def test_rotated_rotor_keeps_local_slots(yaw: float, first: int, dx: float, dy: float) -> None:
    """Geometric control: rotor moved and rotated, the same local slots confirm."""
    inst = CentrifugeInstance(condition="extended", rotor_yaw=yaw)
    s = CentrifugeStream(inst, rotor=(dx, dy, 0.1, yaw))
    s = insert(insert(s.hold(0.1), "tube_a", first), "tube_b", opposite(first)).hold(3.0)
    events = run(inst, s)
    assert [c.fields["op"].dest for c in of_type(events, "confirm")] == [slot_name(first), slot_name(opposite(first))]
    assert events[-1] == {"physical_complete": True}


@settings(max_examples=10, deadline=None)
@given(script=st.lists(st.tuples(st.sampled_from(["tube_a", "tube_b"]), st.integers(-1, 11), st.floats(0.0, 1.0),
                                 st.booleans(), st.floats(0.002, 1.0)), max_size=8))
def test_online_tracker_and_bulk_replay_agree(script: list) -> None:
    inst = CentrifugeInstance(condition="extended", rotor_yaw=0.3)
    s = CentrifugeStream(inst).hold(0.1)
    for tube, slot, depth, grasped, seconds in script:
        s.place(tube, None if slot < 0 else slot, depth_frac=depth, grasped=grasped).hold(seconds)
    online = run(inst, s)
    receipts = [ObservationReceipt(obs_id=f"obs{i}", step=r["step"], t_acquired=r["t"], t_delivered=r["t"],
                                   evidence_version=i) for i, r in enumerate(s.rows) if i % 50 == 0]
    bulk, end = CONTRACT.replay(pa.Table.from_pylist(s.rows), receipts, inst)
    assert [(e.type, e.t, e.fields) for e in online[:-1]] == [(e.type, e.t, e.fields) for e in bulk]
    assert online[-1] == end


def test_answer_changing_pairs_have_disjoint_legal_sets() -> None:
    pairs = answer_changing_pairs(24, np.random.default_rng(0), np.random.default_rng(1))
    firsts = [dict(a.start)["tube_a"] for _, a, _ in pairs]
    assert sorted(firsts) == sorted(list(range(12)) * 2)  # balanced over slots
    for pair, a, b in pairs:
        legal_a = CONTRACT.legal_set(CONTRACT.initial_state(a), a)
        legal_b = CONTRACT.legal_set(CONTRACT.initial_state(b), b)
        assert not set(legal_a) & set(legal_b) and pair.kind == "answer_changing"
        assert (a.rotor_yaw, a.layout_seed, a.held) == (b.rotor_yaw, b.layout_seed, "tube_b")


def test_geometric_pairs_keep_the_local_target_and_move_the_world_pose() -> None:
    for pair, a, b in geometric_pairs(10, np.random.default_rng(3), np.random.default_rng(4)):
        assert CONTRACT.legal_set(CONTRACT.initial_state(a), a) == CONTRACT.legal_set(CONTRACT.initial_state(b), b)
        assert abs(math.remainder(a.rotor_yaw - b.rotor_yaw, 2 * math.pi)) >= math.pi / 6 - 1e-9
        assert pair.kind == "geometric"


def test_instance_from_task_refuses_bad_slot() -> None:
    task = Task(family="centrifuge", task_id="c", version="1", variant={"start": {"tube_a": 12}})
    with pytest.raises(LabrecordError, match=r"task.variant.start: .*12"):
        CONTRACT.instance_from_task(task)
    good = CentrifugeInstance(start=(("tube_a", 4),), held="tube_b", rotor_yaw=0.5)
    assert CONTRACT.instance_from_task(Task(family="centrifuge", task_id="c", version="1", variant=good.variant())) == good
