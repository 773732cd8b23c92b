"""Matched Oracle studies: ``labrecord study oracle weighing`` (sim/study.py).

Hand count (seed 0, basic condition, first 4 instances): every 4 consecutive instances
of a block hold each answer standard once, so exactly one instance has goal {w50}.  At
the checkpoint ``d0`` the legal set is ``[add(goal)]``; fixed-preference commits to
``add(w50)``, wrong on the 3 others.  Under decision:replace the supported branch carries
out ``add(goal)``; the system's own proposal (the recorded original) is scored directly:
own_correct = 1/4, the substitution share is 3/4, and no gain.correct is reported (the
executed choice is the Oracle's, so it would only restate the substitution share).

decision:assist with ``random`` (seed 0, first 2 instances): the recommendations are
add(w100) and add(w10); the random policy takes the recommendation or its own draw
evenly and its first choices are add(w100) and add(w20): agreement 1/2, counted here from
each supported run's own ``intervention.supports`` record.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.cli import main
from labrecord.errors import LabrecordError
from labrecord.models import OraclePair
from labrecord.recorders.checkpoint import read_header
from labrecord.scorers.corpus import score_corpus
from labrecord.rundir import read_manifest
from labrecord.sim.study import IMPLEMENTED, MODES, SITES, parse_support, run_oracle_study
from labrecord.sim.weighing.task import instances
from labrecord.validation import validate_folder

N = 4


def _group(result: dict, mode: str) -> dict:
    (group,) = [g for g in result["groups"] if g["identity"]["intervention_mode"] == mode]
    return group


@pytest.fixture(scope="module")
def fixed_study(tmp_path_factory):
    out = tmp_path_factory.mktemp("oracle-fixed")
    summary = run_oracle_study(out, "fixed-preference", [("decision", "replace"), ("semantic", "assist")], N, 0)
    return out, summary


def test_fixed_preference_gain_equals_hand_count(fixed_study):
    out, summary = fixed_study
    wrong = sum(1 for inst in instances("basic", N, 0) if inst.goal != frozenset({"w50"}))
    assert wrong == 3  # one of each answer in 4 consecutive instances
    group = _group(score_corpus(out, resamples=0), "replace")
    # the system's own choice is scored, not the substituted one: fixed-preference picks w50,
    # correct only where w50 is the answer; the executed choice's "gain" is not reported
    assert "gain.correct" not in group["metrics"]
    assert group["metrics"]["own_correct"]["value"] == pytest.approx((N - wrong) / N)
    assert group["coverage"]["oracle_pairs"] == N
    entry = summary["supports"]["decision:replace"]
    assert entry["substitution_share"] == pytest.approx(wrong / N)
    assert entry["agreement"] is None  # replace: agreement is null (sec. 6.3)
    assert entry["started"] == entry["delivered"] == N
    # the scorer computes the same share from the stored runs, and agreement null
    assert group["metrics"]["substitution_share"]["value"] == pytest.approx(wrong / N)
    assert group["metrics"]["substitution_share"]["den"] == N
    assert group["metrics"]["agreement"]["value"] is None and group["metrics"]["agreement"]["den"] == 0
    assert group["metrics"]["delivery"]["value"] == 1
    for result in summary["results"]:  # the first native choice after delivery is the substituted operation
        (record,) = result["branches"]["decision:replace"]["supports"]
        assert record["first_choice"] == record["substituted"] and record["receipt"].startswith("obs")
        assert record["opp"] == "o0" and record["evidence_version"] == 0 and record["delivered"]
        manifest = read_manifest(out / result["branches"]["decision:replace"]["run"]).manifest
        assert [s.mode for s in manifest.intervention.supports] == ["replace"]
        assert manifest.intervention.supports[0].payload_id == record["payload_id"]


def test_unsupported_support_is_not_compatible_and_not_registered(fixed_study):
    out, summary = fixed_study
    assert summary["supports"]["semantic:assist"]["status"] == "not compatible"
    lines = (out / "populations" / f"{summary['population']}.jsonl").read_text().splitlines()
    pairs = [json.loads(line) for line in lines if json.loads(line)["type"] == "oracle_pair"]
    assert len(pairs) == N and {p["site"] for p in pairs} == {"decision"}
    assert not any("semantic" in line for line in lines)
    assert OraclePair  # the registry uses the existing record type


def test_study_folder_validates_and_checkpoints_are_verified(fixed_study):
    out, summary = fixed_study
    report = validate_folder(out)
    assert not report.errors, report.errors
    assert summary["checkpoints_verified"] == N
    for result in summary["results"]:
        header = read_header(result["checkpoint"])
        assert header.verified and header.decision == "d0" and header.verification.bitwise
        assert header.handoff["stable"] and header.handoff["valid"]


def test_reference_gains_are_zero(tmp_path):
    summary = run_oracle_study(tmp_path, "reference", [("decision", "replace")], 2, 0)
    group = _group(score_corpus(tmp_path, resamples=0), "replace")
    gains = {k: v["value"] for k, v in group["metrics"].items() if k.startswith("gain.")}
    assert gains and all(v == 0 for v in gains.values()), gains
    assert summary["supports"]["decision:replace"]["substitution_share"] == 0


def test_served_policy_without_an_endpoint_is_refused(tmp_path):
    with pytest.raises(LabrecordError, match="--policy openpi needs --policy-url"):
        run_oracle_study(tmp_path, "openpi", [("decision", "replace")], 1, 0)
    with pytest.raises(LabrecordError, match="expected a scripted system"):
        run_oracle_study(tmp_path, "no-such-policy", [("decision", "replace")], 1, 0)


@given(st.sampled_from(sorted(IMPLEMENTED)))
def test_parse_support_round_trip(support):
    site, mode = support
    assert parse_support(f"{site}:{mode}") == (site, mode)


@pytest.mark.parametrize("text", ["skill:assist", "semantic:replace"])
def test_unbuilt_supports_are_refused_in_one_line(text, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["study", "oracle", "weighing", "--support", text, "--out", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"Error: support {text}: not built on the weighing bench") and err.count("\n") == 1


def test_decision_assist_agreement_equals_hand_count(tmp_path):
    summary = run_oracle_study(tmp_path, "random", [("decision", "assist"), ("semantic", "assist")], 2, 0)
    assert summary["supports"]["semantic:assist"]["status"] == "not compatible"  # random reads no displayed reading
    records = []
    for result in summary["results"]:
        run = result["branches"]["decision:assist"]["run"]
        (record,) = read_manifest(tmp_path / run).manifest.intervention.supports
        records.append(record)
        assert record.delivered and record.receipt and record.payload is not None and record.original is None
    hand = sum(1 for r in records if r.first_choice == r.payload)
    assert hand == 1  # see the module docstring
    group = _group(score_corpus(tmp_path, resamples=0), "assist")
    assert group["metrics"]["agreement"]["value"] == hand / 2
    assert summary["supports"]["decision:assist"]["agreement"] == hand / 2
    assert "substitution_share" not in group["metrics"]
    assert not validate_folder(tmp_path).errors


def test_joint_support_interaction_over_complete_sets(tmp_path):
    """reference, one instance, semantic:assist + decision:replace: base, both singles and
    the joint branch from one checkpoint; reference is right everywhere, so the contrast
    Y(o1,o2) − Y(o1) − Y(o2) + Y(0) = 1 − 1 − 1 + 1 = 0 over the one complete set.  With
    a single branch's run gone the set is incomplete: no value, bounds only."""
    import shutil

    summary = run_oracle_study(tmp_path, "reference", [("semantic", "assist"), ("decision", "replace")], 1, 0)
    assert set(summary["supports"]) == {"semantic:assist", "decision:replace", "semantic:assist+decision:replace"}
    joint = summary["results"][0]["branches"]["semantic:assist+decision:replace"]
    assert [r["site"] for r in joint["supports"]] == ["semantic", "decision"]
    assert all(r["delivered"] for r in joint["supports"])
    assert set(joint["supports"][0]["payload"]) == {"reading_g", "stable"}
    group = _group(score_corpus(tmp_path, resamples=0), "assist+replace")
    assert group["identity"]["intervention_site"] == "semantic+decision"
    assert group["metrics"]["interaction.correct"]["value"] == 0
    assert group["coverage"]["interaction.correct"] == {"resolved": 1, "registered": 1}
    assert not validate_folder(tmp_path).errors
    shutil.rmtree(tmp_path / summary["results"][0]["branches"]["semantic:assist"]["run"])
    group = _group(score_corpus(tmp_path, resamples=0), "assist+replace")
    assert group["metrics"]["interaction.correct"]["value"] is None
    assert group["coverage"]["interaction.correct"] == {"resolved": 0, "registered": 1}


@given(st.text(max_size=12).filter(lambda s: s.count(":") != 1 or s.split(":")[0] not in SITES
                                   or s.split(":")[1] not in MODES))
def test_parse_support_refuses_anything_else(text):
    with pytest.raises(LabrecordError, match="SITE:MODE"):
        parse_support(text)


def test_study_help_has_example(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["study", "oracle", "weighing", "-h"])
    assert exit_info.value.code == 0
    assert "Example:" in capsys.readouterr().out


def test_bad_support_is_one_error_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["study", "oracle", "weighing", "--support", "decision:swap", "--out", str(tmp_path)])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err.startswith("Error: support 'decision:swap'")


def test_pairs_p_state_equals_hand_count(tmp_path):
    """Two pairs of seed 0: members need (goal, next standard).  fixed-preference commits
    to add(w50) in both members; a pair is correct only when add(w50) is legal in both,
    which never happens (the members' legal sets are disjoint): P_state = 0/2.  reference
    is right in both members of its pair: P_state = 1/1."""
    from labrecord.sim.study import partner_of, run_pairs_study

    drawn = instances("basic", 2, 0)
    hand = sum(1 for inst in drawn if {"w50"} == set(inst.goal) == set(partner_of(inst).goal))
    assert all(set(i.goal).isdisjoint(partner_of(i).goal) for i in drawn)
    run_pairs_study(tmp_path / "fixed", "fixed-preference", 2, 0)
    (group,) = score_corpus(tmp_path / "fixed", resamples=0)["groups"]
    assert group["metrics"]["P_state"]["value"] == hand / 2 == 0
    run_pairs_study(tmp_path / "ref", "reference", 1, 0)
    (group,) = score_corpus(tmp_path / "ref", resamples=0)["groups"]
    assert group["metrics"]["P_state"]["value"] == 1
    assert not validate_folder(tmp_path / "ref").errors


def test_fixed_starts_e_fixed(tmp_path):
    """Two fixed starts (seed 0): subgoals add:<goal>.  Every system shares one start
    population (fixed-weighing-basic-s0: the same start ids and seeds), each start is
    verified like a checkpoint, and the executor gets the reference frame of the standard.
    The reference system given its subgoal confirms it in both: E_fixed = 2/2.
    fixed-preference, handed the same subgoal, carries it out too (its executor is sound;
    its failure is the decision): 2/2.  noisy-localizer mislocalizes the standards, but a
    fixed start hands it the reference geometry with the subgoal: 2/2 as well."""
    from labrecord.rundir import read_manifest
    from labrecord.sim.study import run_fixed_starts_study

    systems = ("reference", "fixed-preference", "noisy-localizer")
    populations = {run_fixed_starts_study(tmp_path, policy, 2, 0)["population"] for policy in systems}
    assert populations == {"fixed-weighing-basic-s0"}
    runs = sorted(p for p in tmp_path.iterdir() if (p / "run.json").is_file())
    manifests = [read_manifest(run).manifest for run in runs]
    assert len({(m.evaluation.population.instance_id, m.seeds.task_state, m.seeds.layout, m.seeds.policy)
                 for m in manifests}) == 2  # two starts, identical across the three systems
    assert all(c.verified for m in manifests for c in m.evaluation.checkpoints)
    groups = {g["identity"]["system_name"]: g for g in score_corpus(tmp_path, resamples=0)["groups"]}
    assert set(groups) == set(systems)
    for policy, group in groups.items():
        assert group["metrics"]["E_fixed"]["value"] == 1, policy
        assert group["metrics"]["E_fixed"]["den"] == 2
    assert not validate_folder(tmp_path).errors


def test_skill_replace_executes_the_selected_operation_with_the_reference_executor(tmp_path):
    """clumsy drops the first standard it carries (a ``failure`` drop, then recovers).
    Under skill:replace the reference executor carries out the operation clumsy selected
    at d0 (the same operation: original = substituted), so the supported branch has no
    drop and completes cleanly, while the base branch does not."""
    summary = run_oracle_study(tmp_path, "clumsy", [("skill", "replace")], 1, 0)
    result = summary["results"][0]
    (record,) = result["branches"]["skill:replace"]["supports"]
    assert record["delivered"] and record["original"] == record["substituted"] == record["first_choice"]

    def failures(run):
        return [json.loads(line) for line in (tmp_path / run / "events.jsonl").read_text().splitlines()
                if json.loads(line)["type"] == "failure"]

    assert [f["reason"] for f in failures(result["base"])] == ["drop"]
    assert failures(result["branches"]["skill:replace"]["run"]) == []
    groups = {g["identity"]["intervention_site"]: g["metrics"] for g in score_corpus(tmp_path, resamples=0)["groups"]}
    assert (groups[None]["completion.clean"]["value"], groups["skill"]["completion.clean"]["value"]) == (0, 1)
    assert groups["skill"]["delivery"]["value"] == 1 and "substitution_share" not in groups["skill"]
    assert not validate_folder(tmp_path).errors


def test_branches_record_their_verified_handoff_and_deleting_it_unresolves(fixed_study, tmp_path):
    """Every base and started supported branch records the d0 handoff as verified, naming
    its checkpoint file.  On a copy with one checkpoint file deleted, the replay audit
    refuses the runs that name it, so that pair's gain and the base's checkpoint member are
    unresolved: gain.completion gets bounds instead of a value."""
    import shutil

    from labrecord.rundir import read_manifest

    out, _ = fixed_study
    for run_dir in sorted(p for p in out.iterdir() if (p / "run.json").is_file()):
        (check,) = read_manifest(run_dir).manifest.evaluation.checkpoints
        assert check.decision == "d0" and check.verified and (out / check.file).is_file()
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    victim = sorted((copy / "checkpoints").glob("*.ckpt"))[0]
    victim.unlink()
    group = _group(score_corpus(copy, resamples=0, audit=True), "replace")
    assert group["metrics"]["gain.completion"]["value"] is None
    assert "gain.completion.lower" in group["metrics"]


def test_a_centrifuge_oracle_study_replaces_the_slot_choice(tmp_path):
    """decision:replace on centrifuge loading, the two basic instances of seed 0 (an
    answer-changing pair: tube_a seated in local slot 9, then in slot 1) with the
    fixed-preference policy (always local slot 0).  The legal slot is the one opposite the
    seated tube, 3 and 7, never 0: the base branch is wrong at both d0 checkpoints and does
    not complete; the supported branch, handed the contract's legal slot, completes both —
    gain.completion = 2/2 − 0/2 = 1, substitution share 2/2."""
    summary = run_oracle_study(tmp_path, "fixed-preference", [("decision", "replace")], 2, 0, family="centrifuge")
    assert summary["population"] == "oracle-centrifuge-basic-fixed-preference-s0"
    assert summary["checkpoints_verified"] == 2
    entry = summary["supports"]["decision:replace"]
    assert entry["started"] == entry["delivered"] == 2 and entry["substitution_share"] == 1
    assert not validate_folder(tmp_path).errors
    group = _group(score_corpus(tmp_path, resamples=0), "replace")
    assert group["metrics"]["gain.completion"]["value"] == 1
    for result in summary["results"]:
        header = read_header(result["checkpoint"])
        assert header.decision == "d0" and header.handoff["ready"]


def test_a_family_refuses_a_support_its_bench_does_not_deliver(tmp_path):
    with pytest.raises(LabrecordError, match="support semantic:assist: not built on the rack bench"):
        run_oracle_study(tmp_path, "reference", [("semantic", "assist")], 1, 0, family="rack")
    with pytest.raises(LabrecordError, match="rack: no pairs study"):
        from labrecord.sim.study import run_pairs_study

        run_pairs_study(tmp_path, "reference", 1, 0, family="rack")
