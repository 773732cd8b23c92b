"""``labrecord ingest | sql | snapshot | score | report`` through the command line."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from labrecord.cli import cli, main
from labrecord.examples import write_example_run
from labrecord.scorers.synthetic import RolloutSpec, write_rollout


@pytest.fixture()
def corpus(tmp_path):
    runs = tmp_path / "runs"
    write_example_run(runs, "r0")
    write_example_run(runs, "r1", correct=False, complete=False)
    db = tmp_path / "c.duckdb"
    result = CliRunner().invoke(cli, ["ingest", str(runs), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "2 added, 0 replaced, 0 unchanged, 0 skipped" in result.output
    return runs, db


def _run(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out = capsys.readouterr()
    return exit_info.value.code, out.out, out.err


def test_ingest_twice_reports_unchanged_and_json(corpus):
    runs, db = corpus
    result = CliRunner().invoke(cli, ["ingest", str(runs), "--db", str(db), "--json"])
    assert json.loads(result.output)["unchanged"] == 2


def test_ingest_prints_findings_of_skipped_runs_and_strict_fails(tmp_path):
    runs = tmp_path / "runs"
    bad = write_example_run(runs, "bad")
    (bad / "run.json").write_text("{")
    result = CliRunner().invoke(cli, ["ingest", str(runs), "--db", str(tmp_path / "c.duckdb"), "--strict"])
    assert result.exit_code == 1
    assert f"skipped {bad}" in result.output and "invalid JSON" in result.output


def test_sql_outputs(corpus):
    _, db = corpus
    runner = CliRunner()
    query = "SELECT run_id, correct FROM first_choices ORDER BY run_id"
    as_json = runner.invoke(cli, ["sql", query, "--db", str(db), "--json"])
    assert json.loads(as_json.output) == [{"run_id": "r0", "correct": True}, {"run_id": "r1", "correct": False}]
    as_csv = runner.invoke(cli, ["sql", query, "--db", str(db), "--csv"])
    assert as_csv.output.splitlines() == ["run_id,correct", "r0,True", "r1,False"]
    schema = runner.invoke(cli, ["sql", "--schema", "--db", str(db), "--json"])
    documented = {(r["relation"], r["column"]): r["comment"] for r in json.loads(schema.output)}
    assert documented[("first_choices", "correct")].startswith("identified and the choice is in the legal set")


def test_sql_error_is_one_line(corpus, capsys):
    _, db = corpus
    code, _, err = _run(["sql", "SELECT nope FROM runs", "--db", str(db)], capsys)
    assert code == 1 and err.startswith("Error: query failed: Binder Error") and err.count("\n") == 1


def test_missing_corpus_is_one_line_error(tmp_path, capsys):
    code, _, err = _run(["sql", "SELECT 1", "--db", str(tmp_path / "none.duckdb")], capsys)
    assert code == 1 and "no such corpus file" in err


def test_snapshot_then_score_parquet(corpus, tmp_path):
    _, db = corpus
    runner = CliRunner()
    assert runner.invoke(cli, ["snapshot", "--db", str(db), "--parquet", str(tmp_path / "snap")]).exit_code == 0
    from_db = runner.invoke(cli, ["score", str(db), "--json", "--resamples", "30"])
    from_snapshot = runner.invoke(cli, ["score", "--parquet", str(tmp_path / "snap"), "--json", "--resamples", "30"])
    assert json.loads(from_db.output) == json.loads(from_snapshot.output)
    assert (tmp_path / "scores.json").is_file()  # beside the corpus file


def test_score_json_shape(corpus):
    runs, _ = corpus
    result = CliRunner().invoke(cli, ["score", str(runs), "--json", "--resamples", "20"])
    (group,) = json.loads(result.output)["groups"]
    assert set(group) == {"identity", "metrics", "coverage"}
    assert set(group["metrics"]["completion.valid"]) >= {"value", "num", "den", "ci"}
    assert json.loads((runs / "scores.json").read_text()) == json.loads(result.output)


def test_score_refuses_pooling_differing_identities(tmp_path, capsys):
    runs = tmp_path / "runs"
    write_rollout(runs, RolloutSpec("r0", evaluation_version="1"))
    write_rollout(runs, RolloutSpec("r1", evaluation_version="2"))
    code, _, err = _run(["score", str(runs), "--one-group", "--resamples", "0"], capsys)
    assert code == 1 and "evaluation_version differs" in err


def test_score_needs_a_source(capsys):
    code, _, err = _run(["score"], capsys)
    assert code == 2 and "give either SOURCE or --parquet DIR" in err


def test_score_runs_folder_names_skipped_runs(tmp_path, capsys):
    runs = tmp_path / "runs"
    write_example_run(runs, "good")
    bad = write_example_run(runs, "bad")
    (bad / "run.json").write_text("[]")
    code, out, err = _run(["score", str(runs), "--resamples", "0"], capsys)
    assert code == 0 and f"invalid {bad}" in err and "expected a JSON object" in err
    assert "completion.valid" in out
