"""Tests for ``labrecord import`` (the command layer; labrecord.imports has its own tests)."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest

from labrecord.cli import main
from tests.labrecord.imports.layouts import write_isaaclab


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def test_import_then_score_counts_the_missing_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three demos, one malformed: one Error: line naming file and record, two runs, and
    the score's denominators keep the third as missing (2 successes of 3 members)."""
    source = write_isaaclab(tmp_path / "stack.hdf5", [(5, True), (4, True), (6, False)])
    with h5py.File(source, "a") as f:
        del f["data/demo_2/actions"]
    code, out, err = run(["import", "isaaclab", str(source), "--out", str(tmp_path / "runs")], capsys)
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("Error:")]
    assert errors == [f"Error: {source}: data/demo_2 has no actions dataset"]
    assert "isaaclab-stack-demo_0" in out and "imported" in out
    code, out, err = run(["import", "isaaclab", str(source), "--out", str(tmp_path / "runs"), "--json"], capsys)
    summary = json.loads(out)
    assert code == 1 and summary["counts"] == {"imported": 0, "unchanged": 2, "error": 1, "missing": 0}
    assert summary["population"] == "isaaclab-stack"
    code, out, _ = run(["score", str(tmp_path / "runs"), "--json"], capsys)
    assert code == 0
    coverage = json.loads(out)["groups"][0]["coverage"]
    assert coverage["missing"] == [{"population": "isaaclab-stack", "instance_id": "demo_2"}]
    assert coverage["completion.physical"] == {"resolved": 2, "registered": 3}


def test_out_inside_the_source_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "src"
    folder.mkdir()
    source = write_isaaclab(folder / "stack.hdf5", [(3, True)])
    code, _, err = run(["import", "isaaclab", str(source), "--out", str(source / "runs")], capsys)
    assert code == 1 and "--out lies inside the input" in err
    code, _, err = run(["import", "isaaclab", str(source), "--out", str(folder.parent)], capsys)
    assert code == 1 and "--out holds the input" in err


def test_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["import", "-h"], capsys)
    assert code == 0 and "Example:" in out and "isaaclab" in out
