"""The replay audit: constructed runs pass, a hand-edited event fails and is named."""
from __future__ import annotations

import functools
import json
import math
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.examples import example_manifest
from labrecord.models import Choice, InterventionEvent, Intervention, Operation
from labrecord.rundir import EVENTS_FILE, MEASUREMENTS_FILE
from labrecord.scorers.audit import audit_run, audit_runs
from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.centrifuge import CentrifugeInstance
from labrecord.scorers.contracts.rack import RackInstance
from labrecord.scorers.contracts.streams import CentrifugeStream, RackStream, WeighingStream, record_run
from labrecord.scorers.contracts.weighing import WeighingInstance


def weighing_run(root: Path, run_id: str = "w-1", intervention: Intervention | None = None, extra=()) -> Path:
    inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}), f_empty_n=1.2)
    s = WeighingStream(inst).hold(1.5)
    s.set(grasped={"w20"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan={"w20"}, speed=0.0).hold(2.5)
    s.set(grasped={"w20"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan=set(), speed=0.0).hold(2.0)
    s.set(grasped={"w50"}, speed=0.1).hold(0.4).set(grasped=set(), on_pan={"w50"}, speed=0.0).hold(4.0)
    manifest = example_manifest(run_id)
    manifest.task.variant = inst.variant()
    if intervention is not None:
        manifest.intervention = intervention
    return record_run(root, manifest, get_contract("weighing"), inst, s.rows, extra_events=extra)


def centrifuge_run(root: Path) -> Path:
    inst = CentrifugeInstance(condition="extended", rotor_yaw=0.4)
    s = CentrifugeStream(inst).hold(0.2)
    s.place("tube_a", 1, depth_frac=-0.3, grasped=True).hold(0.3).place("tube_a", 2).hold(1.0)
    s.place("tube_b", 8, depth_frac=0.3).hold(0.8).place("tube_b", 8).hold(3.5)
    manifest = example_manifest("c-1", family="centrifuge", task_id="centrifuge-extended", condition="extended")
    manifest.task.variant = inst.variant()
    return record_run(root, manifest, get_contract("centrifuge"), inst, s.rows)


def rack_run(root: Path) -> Path:
    inst = RackInstance(rack_pose=(0.5, 0.2, 0.05, 0.0))
    s = RackStream(inst).hold(0.3).approach("B3", carrying=True).hold(0.3).seat("B3").hold(0.8)
    s.set(occluded=True).still().hold(0.2).move_rack((0.5, 0.2, 0.05, math.pi)).hold(0.3).set(occluded=False).hold(0.3)
    s.approach("B3").hold(0.3).lift().hold(0.3).to_table().hold(3.5)
    manifest = example_manifest("r-1", family="rack", task_id="rack-extended", condition="extended")
    manifest.task.variant = inst.variant()
    return record_run(root, manifest, get_contract("rack"), inst, s.rows)


def edit_events(run_dir: Path, edit) -> None:
    """Rewrite events.jsonl through ``edit(list of dicts) -> list of dicts``."""
    path = run_dir / EVENTS_FILE
    events = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in edit(events)))


def first(events: list[dict], kind: str, index: int = 0) -> dict:
    return [e for e in events if e["type"] == kind][index]


@pytest.mark.parametrize("make", [weighing_run, centrifuge_run, rack_run])
def test_constructed_runs_pass(tmp_path: Path, make) -> None:
    run_dir = make(tmp_path)
    result = audit_run(run_dir)
    assert result.ok, [str(f) for f in result.findings]
    assert result.steps > 1000 and result.events_checked >= 6


def _set(kind: str, index: int, **fields):
    def edit(events: list[dict]) -> list[dict]:
        first(events, kind, index).update(fields)
        return events
    return edit


@pytest.mark.parametrize("kind, index, fields, check", [
    ("opportunity", 1, {"legal": [{"kind": "add", "object": "w50", "dest": "pan"}]}, "opportunity"),
    ("confirm", 0, {"op": {"kind": "add", "object": "w10", "dest": "pan"}}, "confirm"),
    ("choice", 1, {"op": {"kind": "add", "object": "w50", "dest": "pan"}}, "choice"),
    ("dwell", 1, {"t": 99.0}, "dwell"),
    ("episode_end", 0, {"physical_complete": False}, "episode_end"),
])
def test_one_edited_event_fails_naming_it(tmp_path: Path, kind: str, index: int, fields: dict, check: str) -> None:
    run_dir = weighing_run(tmp_path)
    seq = {}

    def edit(events: list[dict]) -> list[dict]:
        target = first(events, kind, index)
        target.update(fields)
        seq["value"] = target["seq"]
        return events

    edit_events(run_dir, edit)
    findings = audit_run(run_dir).findings
    assert [(f.seq, f.check) for f in findings if f.check == check] == [(seq["value"], check)]
    assert all(f.seq == seq["value"] for f in findings if f.check == check)


def test_deleted_confirmation_is_reported_missing(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)
    edit_events(run_dir, lambda events: [e for e in events if not (e["type"] == "confirm" and e["obligation"] == "remove:w20")])
    findings = audit_run(run_dir).findings
    assert len(findings) == 1 and findings[0].seq is None and "missing" in findings[0].message
    assert findings[0].expected["obligation"] == "remove:w20"


def test_duplicate_opportunity_is_reported(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)

    def edit(events: list[dict]) -> list[dict]:
        out = []
        for e in events:
            out.append(e)
            if e["type"] == "opportunity" and e["opp"] == "o0":
                out.append({**e, "opp": "o0b", "seq": e["seq"] + 1, "obs_id": "obs11", "evidence_version": 11})
        for position, event in enumerate(out):
            event["seq"] = position
        return out

    edit_events(run_dir, edit)
    findings = [f for f in audit_run(run_dir).findings if f.check == "opportunity"]
    assert len(findings) == 1 and findings[0].seq == 2 and "not produced by the replay" in findings[0].message


def test_stale_evidence_is_reported(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)
    edit_events(run_dir, _set("opportunity", 1, obs_id="obs20", evidence_version=20))
    findings = audit_run(run_dir).findings
    checks = {f.check for f in findings}
    assert "opportunity" in checks and "binding" in checks  # the choice now carries another version


def test_intervention_in_a_run_without_support_is_unsupported(tmp_path: Path) -> None:
    extra = [(1000, InterventionEvent, {"opp": "$opp", "evidence_version": "$ev", "mode": "assist", "site": "decision",
                                        "substituted": {"kind": "add", "object": "w50", "dest": "pan"}})]
    findings = audit_run(weighing_run(tmp_path, extra=extra)).findings
    assert [f.check for f in findings] == ["intervention"] and "unsupported" in findings[0].message
    supported = audit_run(weighing_run(tmp_path, "w-2", Intervention(mode="assist", site="decision"), extra))
    assert supported.ok, [str(f) for f in supported.findings]
    wrong_site = audit_run(weighing_run(tmp_path, "w-3", Intervention(mode="assist", site="geometry"), extra))
    assert [f.check for f in wrong_site.findings] == ["intervention"]


def test_intervention_bound_to_a_superseded_opportunity(tmp_path: Path) -> None:
    extra = [(2500, InterventionEvent, {"opp": "o0", "evidence_version": 10, "mode": "assist", "site": "decision"}),
             (2600, Choice, {"opp": "$opp", "op": Operation("add", "w50", "pan"), "track": "report", "evidence_version": 0})]
    findings = audit_run(weighing_run(tmp_path, intervention=Intervention(mode="assist", site="decision"), extra=extra)).findings
    messages = [f.message for f in findings if f.check == "binding"]
    assert any("superseded" in m for m in messages) and any("evidence version 0" in m for m in messages)


def test_missing_measurements_and_bad_schema_are_findings(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    run_dir = weighing_run(tmp_path)
    table = pq.read_table(run_dir / MEASUREMENTS_FILE)
    pq.write_table(table.drop_columns(["w50_on_pan"]), run_dir / MEASUREMENTS_FILE)
    findings = audit_run(run_dir).findings
    assert len(findings) == 1 and "w50_on_pan" in findings[0].message and findings[0].check == "read"
    (run_dir / MEASUREMENTS_FILE).unlink()
    assert "missing measurements" in audit_run(run_dir).findings[0].message


def test_contract_hash_mismatch_is_reported(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    doc["task"]["contract_hash"] = "sha256:0000"
    (run_dir / "run.json").write_text(json.dumps(doc))
    assert [f.check for f in audit_run(run_dir).findings] == ["contract_hash"]


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    weighing_run(tmp_path)
    centrifuge_run(tmp_path)
    runner = CliRunner()
    ok = runner.invoke(cli, ["audit", str(tmp_path), "--json"])
    assert ok.exit_code == 0, ok.output
    assert [r["ok"] for r in json.loads(ok.stdout)] == [True, True]
    edit_events(tmp_path / "w-1", _set("confirm", 0, predicate="stable"))
    bad = runner.invoke(cli, ["audit", str(tmp_path)])
    assert bad.exit_code == 1 and "confirm" in bad.output
    assert [(r.run_id, r.ok) for r in audit_runs(tmp_path)] == [("c-1", True), ("w-1", False)]


def test_cli_missing_directory_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from labrecord.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["audit", str(tmp_path / "nope")])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and "no such directory" in err and err.count("\n") == 1


def test_two_episodes_replay_separately(tmp_path: Path) -> None:
    import pyarrow as pa

    from labrecord.models import EpisodeEnd, EpisodeStart, ObservationReceipt
    from labrecord.rundir import RunWriter

    contract = get_contract("weighing")
    inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}))
    manifest = example_manifest("two-episodes")
    manifest.task.variant = inst.variant()
    rows_all: list[dict] = []
    opened = 0
    with RunWriter.create(tmp_path, manifest) as run:
        for episode, land in ((0, True), (1, False)):
            s = WeighingStream(inst).hold(1.5).set(grasped={"w50"}, speed=0.1).hold(0.4)
            s.set(grasped=set(), on_pan={"w50"} if land else set(), speed=0.0).hold(4.0)
            tracker = contract.tracker(inst, first_opp=opened)
            offset = len(rows_all)
            t_offset = rows_all[-1]["t"] + 0.002 if rows_all else 0.0
            run.emit(EpisodeStart, t=t_offset, episode=episode)
            for index, row in enumerate(s.rows):
                row = {**row, "step": row["step"] + offset, "t": row["t"] + t_offset, "episode": episode}
                rows_all.append(row)
                for event in tracker.step(row):
                    event.emit(run)
                if index % 50 == 0:
                    receipt = ObservationReceipt(obs_id=f"e{episode}-{index}", step=row["step"], t_acquired=row["t"],
                                                 t_delivered=row["t"], evidence_version=len(rows_all))
                    run.observation(receipt)
                    if (opp := tracker.observe(receipt)) is not None:
                        opp.emit(run)
            opened = tracker.opportunities_opened
            end = tracker.end()
            run.emit(EpisodeEnd, t=rows_all[-1]["t"], episode=episode, reason="done", valid_complete=end["physical_complete"],
                     physical_complete=end["physical_complete"])
        run.write_measurements(pa.Table.from_pylist(rows_all))
    result = audit_run(run.dir)
    assert result.ok, [str(f) for f in result.findings]
    edit_events(run.dir, _set("episode_end", 1, physical_complete=True))
    assert [f.check for f in audit_run(run.dir).findings] == ["episode_end"]


def test_truncated_event_log_is_a_read_finding(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)
    path = run_dir / EVENTS_FILE
    path.write_bytes(path.read_bytes()[:-20])
    findings = audit_run(run_dir).findings
    assert [f.check for f in findings] == ["read"] and "truncated" in findings[0].message


def test_observation_at_an_unknown_step_is_a_read_finding(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)
    with open(run_dir / "observations.jsonl", "a") as fh:
        fh.write(json.dumps({"obs_id": "late", "step": 10**9, "t_acquired": 99.0, "t_delivered": 99.0,
                             "evidence_version": 10**6}) + "\n")
    findings = audit_run(run_dir).findings
    assert [f.check for f in findings] == ["read"] and "step 1000000000" in findings[0].message


def test_empty_measurements_expect_an_incomplete_episode(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    run_dir = weighing_run(tmp_path)
    table = pq.read_table(run_dir / MEASUREMENTS_FILE)
    pq.write_table(table.slice(0, 0), run_dir / MEASUREMENTS_FILE)
    (run_dir / "observations.jsonl").write_text("")
    checks = {f.check for f in audit_run(run_dir).findings}
    assert {"opportunity", "episode_end", "dwell"} <= checks


def test_run_whose_over_pan_columns_appear_mid_episode_passes(tmp_path: Path) -> None:
    """A put-back recorded after the over-pan columns appear: no miss online, none on replay."""
    inst = WeighingInstance(target_g=220.0, sample_g=100.0, goal=frozenset({"w100", "w20"}), start=frozenset({"w50"}))
    s = WeighingStream(inst).hold(1.2).set(grasped={"w10"}, speed=0.1).hold(1.0).set(over_pan={"w20"}).hold(1.0)
    s.set(grasped=set(), speed=0.0).hold(2.0)
    manifest = example_manifest("w-late", task_id="weighing-extended", condition="extended")
    manifest.task.variant = inst.variant()
    run_dir = record_run(tmp_path, manifest, get_contract("weighing"), inst, s.rows)
    result = audit_run(run_dir)
    assert result.ok, [str(f) for f in result.findings]
    assert not [e for e in (run_dir / EVENTS_FILE).read_text().splitlines() if '"failure"' in e]


# -- saved checkpoints named by the manifest (sec. 6.1) ------------------------------------------

def _checkpointed_run(root: Path, verified_in_file: bool = True) -> Path:
    """An events-only run at checkpoint ``select_weight`` whose manifest names the saved
    checkpoint ``checkpoints/r0.ckpt`` as verified; the file's header records a passing (or
    failing) verification and the sha256 of its body."""
    import hashlib

    from labrecord.scorers.synthetic import RolloutSpec, write_rollout

    run_dir = write_rollout(root, RolloutSpec("r0", measurements="none", handoffs=[
        {"decision": "select_weight", "verified": True, "file": "checkpoints/r0.ckpt"}]))
    body = b"physics and state"
    header = {"decision": "select_weight", "body_sha256": hashlib.sha256(body).hexdigest(),
              "verification": {"periods": 10, "bitwise": True, "tracker_equal": True, "handoff_ready": verified_in_file}}
    (root / "checkpoints").mkdir(exist_ok=True)
    (root / "checkpoints" / "r0.ckpt").write_bytes(json.dumps(header).encode() + b"\n" + body)
    return run_dir


def test_a_verified_checkpoint_file_passes(tmp_path: Path) -> None:
    result = audit_run(_checkpointed_run(tmp_path))
    assert result.ok and not result.audited  # nothing replayed: the run declares no measurements


@pytest.mark.parametrize("damage, message", [
    ("delete", "is missing"), ("tamper", "does not match its digest"), ("unverified", "verification is False")])
def test_a_missing_or_altered_checkpoint_fails_the_audit(tmp_path: Path, damage: str, message: str) -> None:
    run_dir = _checkpointed_run(tmp_path, verified_in_file=damage != "unverified")
    path = tmp_path / "checkpoints" / "r0.ckpt"
    if damage == "delete":
        path.unlink()
    elif damage == "tamper":
        path.write_bytes(path.read_bytes() + b"!")
    result = audit_run(run_dir)
    assert not result.ok
    assert [f.check for f in result.findings] == ["checkpoint"] and message in result.findings[0].message


@functools.cache
def _rack_stream() -> tuple[Any, bool]:
    """The measurements of :func:`rack_run` and the completion its own replay finds."""
    from labrecord.models import EpisodeEnd
    from labrecord.rundir import read_events

    with tempfile.TemporaryDirectory() as folder:
        recorded = rack_run(Path(folder))
        complete = next(e.physical_complete for e in read_events(recorded) if isinstance(e, EpisodeEnd))
        import pyarrow.parquet as pq
        return pq.read_table(recorded / MEASUREMENTS_FILE), complete


def _rack_as_isaaclab(folder: Path, claims: Sequence[bool | None]) -> tuple[Path, bool]:
    """The rack stream of :func:`rack_run` written as Isaac Lab recorder demos (one per
    claim; ``None``: no success attribute), and the completion its own replay finds."""
    import h5py
    import numpy as np

    table, complete = _rack_stream()
    source = folder / "rack.hdf5"
    with h5py.File(source, "w") as f:
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({"env_name": "Rack-Recall-v0", "type": 2})
        for k, claim in enumerate(claims):
            demo = data.create_group(f"demo_{k}")
            demo.attrs["num_samples"] = table.num_rows
            if claim is not None:
                demo.attrs["success"] = claim
            demo["actions"] = np.zeros((table.num_rows, 7), dtype=np.float32)
            for name in table.column_names:
                if name not in ("step", "t"):
                    demo[f"obs/{name}"] = table.column(name).to_numpy(zero_copy_only=False)
    return source, complete


RACK_INSTANCE = {"rack_pose": [0.5, 0.2, 0.05, 0.0], "condition": "extended"}


def test_an_imported_run_is_audited_on_the_outcome_its_source_states(tmp_path: Path) -> None:
    """The source claims no contract events, so the rebuilt opportunities and confirmations
    are counted (``derived``), not findings; the stated outcome is compared with the
    replay's physical completion: the claim equal to it agrees, the opposite claim
    disagrees at the episode end, and a demo without a success attribute claims nothing."""
    from labrecord.imports import ImportOptions, import_source

    source, complete = _rack_as_isaaclab(tmp_path, [True, False, None])
    options = ImportOptions(family="rack", control_hz=500.0, instance=RACK_INSTANCE)
    summary = import_source("isaaclab", source, tmp_path / "runs", options=options)
    assert [row.measurements for row in summary.rows] == ["recorded"] * 3
    audits = {a.run_id: a for a in audit_runs(tmp_path / "runs")}
    agreeing, opposite = ("isaaclab-rack-demo_0", "isaaclab-rack-demo_1")[:: 1 if complete else -1]
    assert audits[agreeing].ok and audits[agreeing].scope == "outcome" and audits[agreeing].derived > 0
    assert [f.check for f in audits[opposite].findings] == ["episode_end"]
    assert "physical_complete" in audits[opposite].findings[0].message
    unknown = audits["isaaclab-rack-demo_2"]
    assert unknown.ok and unknown.audited and unknown.events_checked == 0
    # without the instance nothing is replayed: unaudited, and the import says why
    summary = import_source("isaaclab", source, tmp_path / "bare", options=ImportOptions(family="rack", control_hz=500.0))
    assert {row.measurements for row in summary.rows} == {"none"}
    assert "--instance" in (summary.rows[0].message or "")
    assert not any(a.audited for a in audit_runs(tmp_path / "bare"))


def test_import_instance_file_is_checked_by_the_contract(tmp_path: Path) -> None:
    """A bad --instance is one Error: line naming the file and the field; no run is written."""
    source, _ = _rack_as_isaaclab(tmp_path, [True])
    bad = tmp_path / "rack.json"
    bad.write_text(json.dumps({"distractors": {"red": "Z9"}}))
    result = CliRunner().invoke(cli, ["import", "isaaclab", str(source), "--out", str(tmp_path / "runs"),
                                      "--family", "rack", "--control-hz", "500", "--instance", str(bad)])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and str(bad) in lines[0] and "distractors" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "runs").exists()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(RACK_INSTANCE))
    result = CliRunner().invoke(cli, ["import", "isaaclab", str(source), "--out", str(tmp_path / "runs"),
                                      "--family", "rack", "--control-hz", "500", "--instance", str(good)])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(cli, ["audit", str(tmp_path / "runs")])
    assert "checked on the outcome their source states only" in result.output
    # the store keeps the verdict's scope
    db = tmp_path / "c.duckdb"
    assert CliRunner().invoke(cli, ["ingest", str(tmp_path / "runs"), "--db", str(db)]).exit_code == 0
    result = CliRunner().invoke(cli, ["sql", "SELECT scope, ok, audited FROM audits", "--db", str(db), "--json"])
    assert json.loads(result.output) == [{"scope": "outcome", "ok": True, "audited": True}]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(claims=st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=4))
def test_imported_outcome_findings_are_the_stated_outcomes_the_replay_contradicts(tmp_path: Path, claims) -> None:
    """Property: an imported run disagrees exactly when its source states an outcome other
    than the replay's completion; a run whose source states none never disagrees."""
    from labrecord.imports import ImportOptions, import_source

    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    source, complete = _rack_as_isaaclab(folder, claims)
    import_source("isaaclab", source, folder / "runs",
                  options=ImportOptions(family="rack", control_hz=500.0, instance=RACK_INSTANCE))
    audits = {a.run_id: a for a in audit_runs(folder / "runs")}
    for k, claim in enumerate(claims):
        audit = audits[f"isaaclab-rack-demo_{k}"]
        assert audit.ok == (claim is None or claim == complete)
        assert audit.events_checked == (0 if claim is None else 1)
