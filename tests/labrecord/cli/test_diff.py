"""``labrecord diff`` on the command line: readable tables, --json, one-line errors."""
from __future__ import annotations

import json

from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.store import ingest_runs
from tests.scorers.test_diff import _two_policies


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["diff", *args])


def test_tables_and_explanation(tmp_path):
    _two_policies(tmp_path)
    result = _invoke(f"a@{tmp_path}", f"b@{tmp_path}", "--no-audit", "--resamples", "0", "--explain")
    assert result.exit_code == 0, result.output
    for text in ("compared: system_name; pairs: 6 resolved, 2 unresolved", "binary outcomes (paired)", "attribution",
                 "unresolved pair pop/i6#0: B: registered, no run", "explanation (attributed)",
                 "provisional [-62.5 pp, -37.5 pp]"):
        assert text in result.output, text
    assert "explanation (" not in _invoke(f"a@{tmp_path}", f"b@{tmp_path}", "--no-audit", "--resamples", "0").output


def test_json_from_corpus_files(tmp_path):
    runs = tmp_path / "runs"
    _two_policies(runs)
    db = tmp_path / "corpus.duckdb"
    ingest_runs(runs, db)
    result = _invoke(f"a@{db}", f"b@{db}", "--json", "--resamples", "0")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    # the library ingest stores no audit verdicts: the corpus gives the same pairs as the folder
    b_next = report["binary"]["B_next"]
    assert (b_next["both"], b_next["a_only"], b_next["b_only"], b_next["neither"], b_next["unresolved"]) == (2, 4, 0, 0, 2)
    assert report["a"]["source"] == f"a@{db}"


def test_errors_are_one_line(tmp_path):
    _two_policies(tmp_path / "runs")
    db = tmp_path / "corpus.duckdb"
    ingest_runs(tmp_path / "runs", db)
    cases = [
        ((str(tmp_path / "nope"), str(tmp_path / "runs")), "no such runs folder, corpus file or snapshot"),
        ((str(tmp_path / "runs"), str(db), "--contract-param", "weighing.success_tol_g=0.5"),
         "B must be a runs folder"),
        ((str(tmp_path / "runs"), str(tmp_path / "runs"), "--compare", "colour"), "not an episode identity field"),
        ((str(tmp_path / "runs"), str(tmp_path / "runs"), "--contract-param", "weighing.tau_f_s=1"),
         "cannot re-score weighing.tau_f_s after the fact"),
    ]
    for args, message in cases:
        result = _invoke(*args, "--no-audit")
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], result.output


def test_help_has_an_example():
    result = _invoke("-h")
    assert result.exit_code == 0 and "Example:" in result.output and "--contract-param" in result.output
