"""The audit counts in ingest and score; a run's folder name is its id (Labference sec. 7.4, 8.4)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.rundir import MEASUREMENTS_FILE
from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.synthetic import RolloutSpec, write_rollout
from labrecord.store import connect, ingest_runs
from tests.scorers.test_audit import _set, edit_events, weighing_run


def _group(output: str) -> dict:
    (group,) = json.loads(output)["groups"]
    return group


def test_a_run_edited_by_hand_passes_validate_fails_audit_and_is_unresolved(tmp_path):
    """w-1 and w-2 are constructed weighing runs; w-2's first confirm was edited by hand.
    validate accepts both; the audit rejects w-2, so both ``score runs/`` and the corpus
    written by ``ingest`` count it unresolved (completion.valid 1 of 2 resolved), with the
    first disagreeing seq as the reason."""
    runs = tmp_path / "runs"
    weighing_run(runs, "w-1")
    weighing_run(runs, "w-2")
    edit_events(runs / "w-2", _set("confirm", 0, predicate="stable"))
    runner = CliRunner()
    assert runner.invoke(cli, ["validate", str(runs), "-q"]).exit_code == 0
    scored = runner.invoke(cli, ["score", str(runs), "--json", "--resamples", "0"])
    assert scored.exit_code == 0, scored.output
    group = _group(scored.stdout)
    (entry,) = group["coverage"]["unresolved_runs"]
    assert entry["run_id"] == "w-2" and entry["reason"].startswith("replay audit: seq ") and "confirm" in entry["reason"]
    assert group["coverage"]["completion.valid"] == {"resolved": 1, "registered": 2}
    db = tmp_path / "c.duckdb"
    ingested = runner.invoke(cli, ["ingest", str(runs), "--db", str(db), "--json"])
    assert json.loads(ingested.stdout)["audit_disagreements"][0]["run_id"] == "w-2"
    from_db = runner.invoke(cli, ["score", str(db), "--json", "--resamples", "0"])
    assert _group(from_db.stdout)["coverage"]["unresolved_runs"] == group["coverage"]["unresolved_runs"]


def test_deleting_measurements_does_not_dodge_the_audit(tmp_path):
    runs = tmp_path / "runs"
    weighing_run(runs, "w-1")
    (runs / "w-1" / MEASUREMENTS_FILE).unlink()
    group = score_corpus(runs, resamples=0, audit=True)["groups"][0]
    (entry,) = group["coverage"]["unresolved_runs"]
    assert "missing measurements" in entry["reason"]
    assert group["metrics"]["completion.valid"]["value"] is None


def test_an_impostor_folder_is_refused_and_the_claimed_id_is_ambiguous(tmp_path):
    """r2's run.json was rewritten to r1's id.  Ingest kept the impostor under r1 and dropped
    the genuine run; now both folders are refused (each message names both paths) and
    nothing is stored under an id its folder does not carry."""
    runs = tmp_path / "runs"
    write_rollout(runs, RolloutSpec("r1", physical=True))
    write_rollout(runs, RolloutSpec("r2", physical=False))
    manifest = json.loads((runs / "r2" / "run.json").read_text())
    manifest["run_id"] = "r1"
    (runs / "r2" / "run.json").write_text(json.dumps(manifest))
    con = connect(None)
    summary = ingest_runs(runs, con)
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    reasons = {Path(k).name: v[0] for k, v in summary.skipped.items()}
    assert str(runs / "r1") in reasons["r1"] and str(runs / "r2") in reasons["r1"]
    assert "differs from the folder name 'r2'" in reasons["r2"] and str(runs / "r1") in reasons["r2"]
    rows = con.execute("SELECT run_id, run_dir FROM invalid_runs ORDER BY run_dir").fetchall()
    assert [(r[0], Path(r[1]).name) for r in rows] == [("r1", "r1"), ("r2", "r2")]
    group = score_corpus(con, resamples=0)["groups"][0]
    assert sorted(r["run_id"] for r in group["coverage"]["unresolved_runs"]) == ["r1", "r2"]


def test_a_folder_named_differently_from_its_run_id_is_refused(tmp_path):
    runs = tmp_path / "runs"
    write_rollout(runs, RolloutSpec("r1"))
    (runs / "r1").rename(runs / "copy-of-r1")
    con = connect(None)
    summary = ingest_runs(runs, con)
    (reason,) = summary.skipped[str(runs / "copy-of-r1")][:1]
    assert "'r1' differs from the folder name 'copy-of-r1'" in reason
    assert con.execute("SELECT run_id FROM invalid_runs").fetchall() == [("copy-of-r1",)]
