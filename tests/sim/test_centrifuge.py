"""End to end: simulated centrifuge-loading runs validate, the replay audit agrees with every
online event, and the scripted policies choose and fail as designed."""
from __future__ import annotations

import json

import pytest

from labrecord.errors import LabrecordError
from labrecord.rundir import read_manifest
from labrecord.scorers.contracts.centrifuge import opposite
from labrecord.sim import run_centrifuge
from labrecord.sim.centrifuge import instances, population_records
from labrecord.validation import validate_folder
from tests.sim.runs import (
    check_bench_identity,
    check_failed_and_recovered, check_run, episode_end, first_native_choices, group_metrics, ratio, reference_metrics,
    reference_runs_fixture,
)


reference_runs = reference_runs_fixture(run_centrifuge)


def test_reference_runs_validate_audit_and_complete(reference_runs):
    for run in reference_runs:
        check_run(run)
        assert episode_end(run).physical_complete
        (choice, opportunity), = first_native_choices(run)
        start = read_manifest(run).manifest.task.variant["start"]
        assert choice.op.dest == f"slot{opposite(start['tube_a'])}" and choice.op in opportunity.legal
        assert (run / "videos" / "front.mp4").is_file() and (run / "demo.hdf5").is_file()


def test_reference_runs_score_in_their_own_family(reference_runs):
    root = reference_runs[0].parent
    assert validate_folder(root).ok
    m = group_metrics(root)
    assert ratio(m["B_next"]) == (2, 2)
    assert ratio(m["completion.clean"]) == (2, 2)
    # episodes 0 and 1 are the two members of one answer-changing pair
    assert ratio(m["P_state"]) == (1, 1)


def test_instances_come_in_pairs_and_do_not_depend_on_the_episode_count():
    drawn, pairs = instances("basic", 8, seed=0)
    assert instances("basic", 5, seed=0)[0] == drawn[:5]
    assert pairs == [("answer_changing", [0, 1]), ("geometric", [2, 3]), ("answer_changing", [4, 5]), ("geometric", [6, 7])]
    a, b = drawn[0], drawn[1]
    assert a.held == b.held == "tube_b" and dict(a.start)["tube_a"] != dict(b.start)["tube_a"]  # legal slots differ
    g, h = drawn[2], drawn[3]
    assert g.start == h.start and g.rotor_yaw != h.rotor_yaw  # same local target, rotor turned
    records = population_records("basic", drawn, pairs)
    kinds = [type(r).__name__ for r in records]
    assert kinds.count("Instance") == 8 and kinds.count("Checkpoint") == 8 and kinds.count("Pair") == 4
    # an incomplete pair is not registered
    assert instances("basic", 3, seed=0)[1] == [("answer_changing", [0, 1])]
    extended, none = instances("extended", 3, seed=0)
    assert none == [] and all(inst.start == () and inst.held is None for inst in extended)


def test_fixed_preference_b_next_is_the_hand_count(tmp_path):
    """Preferred slot p = opposite of episode 0's loaded slot: legal exactly in the
    instances whose tube_a sits at opposite(p) (hand count over the drawn starts)."""
    drawn, _ = instances("basic", 3, seed=1)
    slot = opposite(dict(drawn[0].start)["tube_a"])
    expected = sum(dict(inst.start)["tube_a"] == opposite(slot) for inst in drawn)
    runs = run_centrifuge(tmp_path, "basic", "fixed-preference", episodes=3, seed=1, cameras=False, max_time_s=25.0,
                          slot=slot)
    for run in runs:
        check_run(run)
        (choice, _), = first_native_choices(run)
        loaded = dict(read_manifest(run).manifest.task.variant["start"])["tube_a"]
        assert choice.op.dest == f"slot{slot if loaded != slot else (slot + 1) % 12}"
    assert ratio(group_metrics(tmp_path)["B_next"]) == (expected, 3)
    assert 0 < expected < 3


def test_clumsy_fails_shallow_and_recovers(tmp_path):
    run, = run_centrifuge(tmp_path, "basic", "clumsy", episodes=1, seed=0, cameras=False)
    check_failed_and_recovered(run, "shallow")
    m = group_metrics(tmp_path)
    assert m["completion.recovered"]["num"] == 1 and m["completion.clean"]["num"] == 0
    # the recorder's block path equals the replay's bulk features at every row, for any block size
    import numpy as np
    import pyarrow.parquet as pq

    from labrecord.scorers.contracts import get_contract

    contract = get_contract("centrifuge")
    manifest = read_manifest(run).manifest
    instance = contract.instance_from_task(manifest.task)
    table = pq.read_table(run / "measurements.parquet")
    bulk = contract.features_bulk(table, instance)
    columns = {name: table.column(name).to_numpy() for name in table.column_names}
    for size in (1, 37, 50, 2000):
        stepper = contract.stepper(instance)
        blocks = [stepper.push_block({k: v[i:i + size] for k, v in columns.items()}) for i in range(0, table.num_rows, size)]
        for name in bulk:
            joined = np.concatenate([b[name] for b in blocks])
            assert np.array_equal(joined, bulk[name], equal_nan=joined.dtype.kind == "f"), (size, name)


def test_extended_reference_loads_both_tubes_opposite(tmp_path):
    run, = run_centrifuge(tmp_path, "extended", "reference", episodes=1, seed=0, cameras=False)
    check_run(run)
    assert episode_end(run).physical_complete
    choices = first_native_choices(run)
    assert len(choices) == 2 and all(c.op in o.legal for c, o in choices)
    first, second = (int(c.op.dest[4:]) for c, _ in choices)
    assert second == opposite(first)


def test_random_runs_validate_and_audit(tmp_path):
    for run in run_centrifuge(tmp_path, "basic", "random", episodes=1, seed=5, cameras=False, max_time_s=20.0):
        check_run(run)


def test_bad_inputs(tmp_path):
    with pytest.raises(LabrecordError, match="condition"):
        run_centrifuge(tmp_path, "hard", episodes=1)
    with pytest.raises(LabrecordError, match="policy"):
        run_centrifuge(tmp_path, "basic", "nope", episodes=1)
    with pytest.raises(LabrecordError, match="slot 12"):
        run_centrifuge(tmp_path, "basic", "fixed-preference", episodes=1, slot=12)


@pytest.mark.slow
def test_reference_acceptance_eight_episodes_each_condition(tmp_path):
    """Reference: 100 % clean completion on 8 episodes of each condition, audit clean."""
    for condition in ("basic", "extended"):
        clean = reference_metrics(run_centrifuge, tmp_path / condition, condition)["completion.clean"]
        assert clean["num"] == 8, json.dumps(clean)


def test_runs_name_the_bench_revisions_and_the_default_deadline(reference_runs):
    check_bench_identity(reference_runs, 20.0)
