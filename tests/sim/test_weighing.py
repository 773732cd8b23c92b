"""End to end: simulated weighing runs validate, the replay audit agrees with every online
event, and the policies choose as designed.  Episodes are short (basic condition, small
cameras or none) so the module stays quick on a small machine."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.demos import DemoReader
from labrecord.errors import LabrecordError
from labrecord.models import Opportunity
from labrecord.rundir import read_events, read_manifest
from labrecord.scorers.audit import audit_run
from labrecord.scorers.corpus import score_corpus
from labrecord.sim import run_weighing
from labrecord.sim.weighing import instances, population_records, register_population
from labrecord.validation import validate_folder
from labrecord.validation.files import validate_population_file
from labrecord.validation.findings import Report
from tests.sim.runs import (
    check_bench_identity,
    check_failed_and_recovered, check_run, episode_end, first_native_choices, group_metrics, ratio, reference_runs_fixture,
)


reference_runs = reference_runs_fixture(run_weighing)


def test_reference_runs_validate_and_audit(reference_runs):
    for run in reference_runs:
        check_run(run)
        manifest = read_manifest(run).manifest
        assert manifest.status == "complete" and manifest.task.family == "weighing"
        for camera in ("front", "wrist", "display"):
            assert (run / "videos" / f"{camera}.mp4").stat().st_size > 0
        scores = json.loads((run / "scores.json").read_text())
        assert scores["run_id"] == manifest.run_id
        policy_cost = scores["episodes"][0]["policy"]
        assert policy_cost["queries"] > 0 and policy_cost["inference_s"] >= 0 and policy_cost["rejected_chunks"] == 0


@pytest.mark.parametrize("edit", ["confirm_time", "opportunity_legal"])
def test_audit_names_the_event_edited_by_hand(reference_runs, tmp_path, edit):
    run = Path(shutil.copytree(reference_runs[0], tmp_path / reference_runs[0].name))
    lines = (run / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    if edit == "confirm_time":
        index = next(i for i, e in enumerate(events) if e["type"] == "confirm")
        events[index]["t"] = round(events[index]["t"] + 0.25, 6)
    else:
        index = next(i for i, e in enumerate(events) if e["type"] == "opportunity")
        other = "w10" if events[index]["legal"][0]["object"] != "w10" else "w20"
        events[index]["legal"] = [{"kind": "add", "object": other, "dest": "pan"}]
    lines[index] = json.dumps(events[index])
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    audit = audit_run(run)
    assert not audit.ok
    assert any(f.seq == events[index]["seq"] for f in audit.findings), [str(f) for f in audit.findings]


def test_reference_chooses_the_required_standard_and_completes(reference_runs):
    for run in reference_runs:
        goal = read_manifest(run).manifest.task.variant["goal"]
        choices = first_native_choices(run)
        assert choices, run
        choice, opportunity = choices[0]
        assert choice.op in opportunity.legal and choice.op.object == goal[0]
        end = episode_end(run)
        assert end.physical_complete and end.reason == "success"


def test_demo_pairs_obs_action_next_obs(reference_runs):
    with DemoReader(reference_runs[0] / "demo.hdf5") as reader:
        name = reader.demo_names[0]
        demo = reader.demo(name)
        n = demo.num_samples
        assert demo.actions.shape == (n, 7)
        assert np.allclose(demo.obs["robot0_eef_pos"][1:], demo.next_obs["robot0_eef_pos"][:-1])
        assert not demo.control_mask[0] and demo.control_mask[1:].all()
        assert reader.manifest()[0].run_id == read_manifest(reference_runs[0]).manifest.run_id
    import h5py

    with h5py.File(reference_runs[0] / "demo.hdf5") as f:
        group = f["data/demo_0"]
        # proprioception under robomimic names; evaluator state under other keys, listed
        assert {"robot0_joint_pos", "robot0_joint_vel", "robot0_gripper_qpos", "robot0_eef_pos",
                "robot0_eef_quat"} <= set(group["obs"])
        assert json.loads(group.attrs["privileged_obs"]) == ["display_reading_g", "display_stable", "object"]


def test_receipts_follow_deliveries(reference_runs):
    run = reference_runs[0]
    receipts = [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]
    ids = {r["obs_id"] for r in receipts}
    for event in read_events(run):
        if isinstance(event, Opportunity):
            assert event.obs_id in ids
    assert all(r["inference_s"] >= 0 and r["rejected"] is None for r in receipts)


def test_fixed_preference_correct_only_when_its_denomination_is_the_answer(tmp_path):
    runs = run_weighing(tmp_path, "basic", "fixed-preference", episodes=4, seed=3, cameras=False, denomination="w20")
    outcomes = []
    for run in runs:
        check_run(run)
        goal = read_manifest(run).manifest.task.variant["goal"]
        choice, opportunity = first_native_choices(run)[0]
        assert choice.op.object == "w20"
        correct = choice.op in opportunity.legal
        assert correct == (goal == ["w20"])
        assert episode_end(run).physical_complete == correct
        outcomes.append(correct)
    assert not all(outcomes)


def test_extended_reference_completes(tmp_path):
    run = run_weighing(tmp_path, "extended", "reference", episodes=1, seed=1, cameras=False)[0]
    check_run(run)
    assert episode_end(run).physical_complete
    assert all(choice.op in opp.legal for choice, opp in first_native_choices(run))


def test_random_runs_validate_and_audit(tmp_path):
    for run in run_weighing(tmp_path, "basic", "random", episodes=2, seed=5, cameras=False, max_time_s=12.0):
        check_run(run)


def test_existing_run_directory_is_refused(tmp_path):
    run_weighing(tmp_path, "basic", "reference", episodes=1, seed=0, cameras=False)
    with pytest.raises(LabrecordError, match="already exists"):
        run_weighing(tmp_path, "basic", "reference", episodes=1, seed=0, cameras=False)


def test_bad_condition(tmp_path):
    with pytest.raises(LabrecordError, match="condition 'hard'"):
        run_weighing(tmp_path, "hard", "reference", episodes=1)


@pytest.mark.slow
def test_reference_acceptance_twenty_episodes(tmp_path):
    """>= 20 episodes on a fixed seed: the required standard every time, >= 90 % complete."""
    runs = run_weighing(tmp_path, "basic", "reference", episodes=20, seed=0, cameras=False, workers=2)
    complete = 0
    for run in runs:
        check_run(run)
        choice, opportunity = first_native_choices(run)[0]
        assert choice.op in opportunity.legal, run
        complete += episode_end(run).physical_complete
    assert complete >= 18


# -- population registry ------------------------------------------------------------------

def registry_lines(root: Path, name: str = "weighing-basic-s0") -> list[dict]:
    path = root / "populations" / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_instances_do_not_depend_on_the_episode_count():
    assert instances("basic", 3, 0) == instances("basic", 20, 0)[:3]
    assert instances("extended", 2, 4) == instances("extended", 31, 4)[:2]
    # one block of 12 basic instances holds each (target, answer) stratum exactly once
    block = instances("basic", 12, 7)
    assert sorted((i.target_g, *i.goal) for i in block) == sorted(
        (float(t), w) for t in (160, 180, 200) for w in ("w10", "w20", "w50", "w100"))


def test_registry_holds_an_instance_and_a_d0_checkpoint_per_episode(tmp_path):
    path = register_population(tmp_path, "weighing-basic-s0", population_records("basic", 0, instances("basic", 2, 0)))
    lines = registry_lines(tmp_path)
    assert [(r["type"], r["instance_id"], r.get("decision")) for r in lines] == [
        ("instance", "i000", None), ("checkpoint", "i000", "d0"), ("instance", "i001", None), ("checkpoint", "i001", "d0")]
    assert lines[0]["condition"] == "basic" and "goal" in lines[0]["fields"] and "f_empty_n" not in lines[0]["fields"]
    report = Report()
    assert validate_population_file(path, report)["instances"] == {"i000", "i001"} and report.ok


def test_registering_again_merges_without_duplicates(tmp_path):
    records = population_records("basic", 0, instances("basic", 3, 0))
    path = register_population(tmp_path, "weighing-basic-s0", records[:2])
    path.write_bytes(path.read_bytes().replace(b'"type":"instance"', b'"note":"kept","type":"instance"'))
    register_population(tmp_path, "weighing-basic-s0", records)
    register_population(tmp_path, "weighing-basic-s0", records[:4])
    lines = registry_lines(tmp_path)
    assert len(lines) == 6 and lines[0]["note"] == "kept"
    assert [r["instance_id"] for r in lines if r["type"] == "instance"] == ["i000", "i001", "i002"]


def test_an_instance_drawn_differently_is_refused(tmp_path):
    register_population(tmp_path, "weighing-basic-s0", population_records("basic", 0, instances("basic", 1, 0)))
    other = population_records("basic", 1, instances("basic", 1, 1))
    with pytest.raises(LabrecordError, match=r"weighing-basic-s0.jsonl:1: instance 'i000' is registered as"):
        register_population(tmp_path, "weighing-basic-s0", other)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=3), st.integers(0, 3))
def test_merged_registry_equals_one_registration_of_the_longest_run(tmp_path_factory, counts, seed):
    root = tmp_path_factory.mktemp("reg")
    for n in counts:
        register_population(root, "p", population_records("basic", seed, instances("basic", n, seed)))
    one = tmp_path_factory.mktemp("one")
    register_population(one, "p", population_records("basic", seed, instances("basic", max(counts), seed)))
    assert (root / "populations" / "p.jsonl").read_bytes() == (one / "populations" / "p.jsonl").read_bytes()


def test_runs_point_at_their_registered_instances(reference_runs):
    root = reference_runs[0].parent
    for index, run in enumerate(reference_runs):
        population = read_manifest(run).manifest.evaluation.population
        assert (population.name, population.instance_id) == ("weighing-basic-s0", f"i{index:03d}")
    assert validate_folder(root).ok
    (group,) = score_corpus(root, resamples=0)["groups"]
    m = group["metrics"]
    # d1 (legal set {stop, wait}) is no native-track choice: B_next, C_id over d0 only
    assert ratio(m["B_next"]) == (2, 2) and ratio(m["C_id"]) == (2, 2)
    assert ratio(m["completion.clean"]) == (2, 2)
    assert group["coverage"]["missing"] == []


def test_two_policies_on_one_seed_share_the_instances(tmp_path):
    run_weighing(tmp_path, "basic", "reference", episodes=1, seed=0, cameras=False)
    run_weighing(tmp_path, "basic", "fixed-preference", episodes=2, seed=0, cameras=False, denomination="w10")
    assert [r["instance_id"] for r in registry_lines(tmp_path) if r["type"] == "instance"] == ["i000", "i001"]
    assert validate_folder(tmp_path).ok
    groups = {g["identity"]["system_name"]: g for g in score_corpus(tmp_path, resamples=0)["groups"]}
    reference = groups["reference"]
    # the reference ran one of the two registered instances: the other is missing, not dropped
    assert reference["coverage"]["missing"] == [{"population": "weighing-basic-s0", "instance_id": "i001"}]
    # one of two registered checkpoints is unresolved: no value, bounds over both outcomes
    assert reference["coverage"]["B_next"] == {"resolved": 1, "registered": 2}
    b_next = reference["metrics"]["B_next"]
    assert b_next["value"] is None and b_next["ci"] is None
    assert reference["metrics"]["B_next.upper"]["value"] - reference["metrics"]["B_next.lower"]["value"] == 0.5


def test_clumsy_drops_its_first_standard_and_recovers(tmp_path):
    """The drop is recognized from the measurements (grasp lost in free air, then a fall
    of more than 3 cm), and placing the same standard later resolves it."""
    run = run_weighing(tmp_path, "basic", "clumsy", episodes=1, seed=0, cameras=False)[0]
    check_failed_and_recovered(run, "drop")
    assert next(e for e in read_events(run) if e.__struct_config__.tag == "failure").recoverable
    m = group_metrics(tmp_path)
    assert m["completion.recovered"]["value"] == 1.0
    assert m["completion.clean"]["value"] == 0.0


class _Pusher:
    """A scripted system that drives the tool centre down into the balance's base, beside
    the pan (x = y = 0.11 m: inside the base's 0.12 m half-width, outside the pan's 0.1 m
    radius), 6 cm below the base top; the position servos then push the gripper into it."""

    def __init__(self) -> None:
        from labrecord.recorders.policy import Capabilities
        from labrecord.sim.policies import ACTION_SPEC

        self.capabilities = Capabilities(name="pusher", kind="scripted", action_spec=ACTION_SPEC, channels=("robot",))

    def reset(self, episode: int) -> None:
        pass

    def act(self, observation):
        from labrecord.recorders.policy import ActionChunk
        from labrecord.sim.policies import delta_toward

        return ActionChunk(delta_toward(observation.state["robot"], np.array([0.11, 0.11, 0.0, 0.0, 1.0])))


def test_an_arm_link_pushed_into_the_balance_is_a_safety_violation(tmp_path):
    """The gripper pressed onto the balance base (not the pan: the load cell reads nothing
    of it) is measured by the arm-on-balance contact force; above 5 N it is an
    irreversible ``violation safety``, and the audit recomputes it from that column."""
    from labrecord.sim.weighing import EpisodeSpec, open_episode

    (inst,) = instances("basic", 1, 0)
    episode = open_episode(EpisodeSpec(str(tmp_path), "basic", "pusher", 0, 0, inst, cameras=False, max_time_s=4.0),
                           _Pusher())
    episode.owner.run_episode(0)
    run = episode.close()
    check_run(run)
    import pyarrow.parquet as pq

    table = pq.read_table(run / "measurements.parquet")
    force = np.asarray(table.column("robot_balance_force_n"))
    assert force.max() > 5.0
    assert not np.asarray(table.column("hand_pan_contact")).any()  # the pan itself is never touched
    violations = [e for e in read_events(run) if e.__struct_config__.tag == "violation"]
    assert [(v.kind, v.irreversible) for v in violations][:1] == [("safety", True)]
    first = float(np.asarray(table.column("t"))[np.argmax(force > 5.0)])
    assert violations[0].t == pytest.approx(first)


def test_runs_name_the_bench_revisions_and_the_default_deadline(reference_runs):
    check_bench_identity(reference_runs, 10.0)


def test_episode_end_carries_runtime_on_its_clock(reference_runs):
    """Runtime (sec. 9.5): simulated seconds from episode_start to episode_end, the clock
    named; the policy's wall time per query beside it."""
    from labrecord.models import EpisodeStart
    from labrecord.rundir import read_events

    for run in reference_runs:
        events = read_events(run)
        start = next(e for e in events if isinstance(e, EpisodeStart))
        end = episode_end(run)
        assert end.runtime_clock == "sim"
        assert end.runtime_s == pytest.approx(end.t - start.t, abs=1e-6)
        assert end.policy_s_per_query is not None and end.policy_s_per_query >= 0
