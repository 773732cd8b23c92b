"""Inputs that used to pass validation silently: each is now a finding.

NaN/inf in measurements, a missing measurements file, a non-positive opportunity window
or response deadline, a blank line in a log, and a population registry cut short.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.examples import write_example_run
from labrecord.scorers.audit import audit_run
from labrecord.scorers.synthetic import write_population
from labrecord.validation import validate_paths, validate_run
from tests.scorers.test_audit import weighing_run


def messages(run_dir: Path, severity: str = "errors") -> list[str]:
    report, _ = validate_run(run_dir)
    return [str(f) for f in getattr(report, severity)]


@pytest.mark.parametrize("column, value", [("t", float("nan")), ("pan_force_n", float("inf")), ("w20_speed", float("-inf"))])
def test_non_finite_measurement_is_an_error_and_the_audit_does_not_crash(tmp_path: Path, column: str, value: float) -> None:
    run_dir = weighing_run(tmp_path)
    path = run_dir / "measurements.parquet"
    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[7] = value
    table = table.set_column(table.schema.get_field_index(column), column, pa.array(values, pa.float64()))
    pq.write_table(table, path)
    found = messages(run_dir)
    assert len(found) == 1 and re.search(rf"{column}: column '{column}' holds 1 non-finite value\(s\).*first at row 7", found[0]), found
    findings = audit_run(run_dir).findings
    assert [f.check for f in findings] == ["read"] and "non-finite" in findings[0].message


def test_missing_measurements_of_a_contract_family_is_reported(tmp_path: Path) -> None:
    run_dir = weighing_run(tmp_path)
    (run_dir / "measurements.parquet").unlink()
    found = messages(run_dir, "warnings")
    assert any("measurements.parquet: missing: family 'weighing' replays its contract from measurements" in m for m in found), found


@pytest.mark.parametrize("window", [-1.0, 0.0])
def test_non_positive_window_is_an_error(tmp_path: Path, window: float) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    path = run_dir / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    next(e for e in events if e["type"] == "opportunity")["window_s"] = window
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    found = messages(run_dir)
    assert len(found) == 1 and f"opportunity.window_s: window_s {window} is not a positive number of seconds" in found[0]


def test_non_positive_response_deadline_is_an_error(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    raw = json.loads((run_dir / "run.json").read_text())
    raw["evaluation"]["budget"]["response_deadline_s"] = -2.0
    (run_dir / "run.json").write_text(json.dumps(raw))
    found = messages(run_dir)
    assert len(found) == 1 and "response deadline -2.0 is not a positive number" in found[0]


@pytest.mark.parametrize("where", ["middle", "end"])
def test_blank_line_in_events_is_an_error_naming_it(tmp_path: Path, where: str) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    path = run_dir / "events.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    if where == "middle":
        lines.insert(2, b"  \n")
        number = 3
    else:
        lines.append(b"\n")
        number = len(lines)
    path.write_bytes(b"".join(lines))
    found = messages(run_dir)
    assert found == [f"{path}:{number}: blank line (every line of a JSONL log holds one record)"]


def test_cut_population_line_is_an_error_and_score_exits_non_zero(tmp_path: Path) -> None:
    write_example_run(tmp_path, "r0", population=("J", "i0"))
    path = write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d0"}])
    path.write_bytes(path.read_bytes()[:-5])
    report = validate_paths([tmp_path])
    assert any("J.jsonl:1: truncated last line" in str(f) for f in report.errors), [str(f) for f in report.errors]
    result = CliRunner().invoke(cli, ["score", str(tmp_path), "--resamples", "0", "--out", str(tmp_path / "s.json")])
    assert result.exit_code == 1 and "population registry not loaded" in result.output, result.output
