"""The rack bench: the occluded relocation (eq. 10) and placement-recall runs end to end."""
from __future__ import annotations

import math

import numpy as np
import pytest

from labrecord.demos import DemoReader
from labrecord.errors import LabrecordError
from labrecord.models import Choice, Confirm, Opportunity, StateReport
from labrecord.rundir import read_events, read_manifest
from labrecord.scorers.contracts.rack import SLOTS, RackInstance, local_slot, pose_matrix
from labrecord.sim import run_episodes
from labrecord.sim.rack.task import instances
from tests.sim.runs import check_failed_and_recovered, check_run, episode_end, group_metrics, ratio, reference_metrics


def retrieval_choice(run) -> tuple[Choice, Opportunity]:
    events = read_events(run)
    opened = {e.opp: e for e in events if isinstance(e, Opportunity)}
    return next((e, opened[e.opp]) for e in events if isinstance(e, Choice) and e.first and e.track == "native"
                and e.op.kind == "pick")


def test_relocation_keeps_each_tube_in_its_local_slot():
    """Eq. 10 by hand: the rack turned by 2 rad and shifted; a tube in B3 before is in B3
    after (its tip 30 mm below the rack top at B3's local centre (0.0125, 0))."""
    from labrecord.sim.rack.env import RackEnv

    env = RackEnv(3, cameras=("front",), size=32)
    instance = RackInstance(distractors=(("d1", "B3"), ("d2", "A1"), ("d3", "C4")), rack_pose=(0.22, 0.2, 0.05, 0.2))
    env.reset(instance)
    for _ in range(3):
        env.apply(env.hold_action(None))
        env.advance(50)
        env.end_block()
    moved = (0.25, 0.18, 0.05, 2.0)
    env.scene.relocate(moved, ["d1", "d2", "d3"])
    for name, label in instance.distractors:
        tip, axis = env.scene.tube_pose(name)
        assert local_slot(pose_matrix(*moved), tip) == label
        local = np.linalg.solve(pose_matrix(*moved), np.append(tip, 1.0))[:3]
        assert local[2] == pytest.approx(-0.03, abs=0.002) and axis[2] < -0.99
    assert env.scene.rack_pose() == pytest.approx(moved)
    assert env.render("front").any()
    env.phase = "occluded"  # the cameras are dark while the environment is in control
    assert env.environment_in_control() and not env.render("front").any()
    env.close()


def test_reference_extended_retrieves_the_same_tube_after_the_move(tmp_path):
    run, = run_episodes("rack", tmp_path, "extended", "reference", episodes=1, seed=0, cameras=False)
    check_run(run)
    assert episode_end(run).physical_complete
    events = read_events(run)
    placed = next(e for e in events if isinstance(e, Confirm) and e.obligation == "place:tube").op.dest
    choice, opportunity = retrieval_choice(run)
    assert opportunity.decision == "d2" and opportunity.legal == [choice.op] and choice.op.dest == placed
    # recall report, retrieval choice and retrieval execution are separate records
    report = next(e for e in events if isinstance(e, StateReport))
    assert report.fields == {"sample_slot": placed} and report.reference == {"sample_slot": placed}
    assert any(isinstance(e, Confirm) and e.obligation == "pick:tube" for e in events)
    variant = read_manifest(run).manifest.task.variant
    assert variant["moved_pose"] and variant["moved_pose"] != variant["rack_pose"]
    with DemoReader(run / "demo.hdf5") as reader:
        mask = reader.demo(reader.demo_names[0]).control_mask
    assert (~mask).sum() >= 20  # the occluded transition (>= 2 s at 10 Hz) is environment-controlled
    import pyarrow.parquet as pq

    occluded = pq.read_table(run / "measurements.parquet", columns=["occluded"]).column("occluded").to_numpy()
    assert occluded.sum() >= 1000  # >= 2 s of 500 Hz rows
    from labrecord.exporters.parquet import export_parquet

    export_parquet(run.parent, tmp_path / "flat")
    steps = pq.read_table(tmp_path / "flat" / "steps.parquet", columns=["policy_in_control"])
    assert (~steps.column("policy_in_control").to_numpy()).sum() == (~mask).sum()  # the export keeps the mask


def test_clumsy_misses_the_region_and_recovers(tmp_path):
    run, = run_episodes("rack", tmp_path, "basic", "clumsy", episodes=1, seed=0, cameras=False)
    check_failed_and_recovered(run, "missed_region")


def test_fixed_preference_b_next_is_the_hand_count(tmp_path):
    """Preference A1: its retrieval is legal exactly where A1 was free for the placement
    (no distractor there), counted by hand over the drawn instances."""
    drawn = instances("extended", 3, seed=4)
    expected = sum("A1" not in dict(inst.distractors).values() for inst in drawn)
    runs = run_episodes("rack", tmp_path, "extended", "fixed-preference", episodes=3, seed=4, cameras=False, max_time_s=35.0)
    for run in runs:
        check_run(run)
        choice, _ = retrieval_choice(run)
        assert choice.op.dest == "A1"
    assert ratio(group_metrics(tmp_path)["B_next"]) == (expected, 3)


def test_instances_and_bad_inputs(tmp_path):
    extended = instances("extended", 4, seed=0)
    assert instances("extended", 2, seed=0) == extended[:2]
    for inst in extended:
        assert len(inst.distractors) == 3 and set(dict(inst.distractors).values()) <= set(SLOTS)
        assert inst.moved_pose is not None and -math.pi <= inst.moved_pose[3] <= math.pi
    assert all(inst.distractors == () and inst.moved_pose is None for inst in instances("basic", 2, seed=0))
    with pytest.raises(LabrecordError, match="condition"):
        run_episodes("rack", tmp_path, "hard", episodes=1)
    with pytest.raises(LabrecordError, match="slot 'Z9'"):
        run_episodes("rack", tmp_path, "basic", "fixed-preference", episodes=1, slot="Z9")


@pytest.mark.slow
def test_reference_acceptance_eight_episodes_each_condition(tmp_path):
    """Reference: 100 % clean completion on 8 episodes of each condition, audit clean."""
    for condition in ("basic", "extended"):
        m = reference_metrics("rack", tmp_path / condition, condition)
        assert m["completion.clean"]["num"] == 8 and ratio(m["B_next"]) == (8, 8)
