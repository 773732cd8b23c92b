"""Table 3 of the Labference paper rebuilt from constructed episode records, through the CLI."""
from __future__ import annotations

import json
import re

from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.scorers.synthetic import write_table3


def _tables(output: str) -> dict[str, str]:
    """Split the printed output into {system name: text of its table}."""
    parts = re.split(r"^\s*(\S+)@", output, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _row(table: str, metric: str) -> str:
    return next(line for line in table.splitlines() if f" {metric} " in line)


def test_score_prints_table3(tmp_path):
    runs = write_table3(tmp_path / "runs")
    result = CliRunner().invoke(cli, ["score", str(runs), "--resamples", "50", "--no-audit"], terminal_width=200)
    assert result.exit_code == 0, result.output
    tables = _tables(result.output)
    expected = {"pi05": ("20 % (10/50)", "16 % (8/50)"), "groot-n1.5": ("18 % (9/50)", "8 % (4/50)"),
                "gpt-driven": ("100 % (10/10)", "80 % (8/10)")}
    for system, (selection, completion) in expected.items():
        assert selection in _row(tables[system], "correct.select_weight")
        assert completion in _row(tables[system], "completion.valid")
        assert completion in _row(tables[system], "completion.physical")
    assert (runs / "scores.json").is_file()


def test_score_json_table3(tmp_path):
    runs = write_table3(tmp_path / "runs")
    result = CliRunner().invoke(cli, ["score", str(runs), "--json", "--resamples", "50", "--seed", "3", "--no-audit"])
    assert result.exit_code == 0, result.output
    groups = {g["identity"]["system_name"]: g["metrics"] for g in json.loads(result.output)["groups"]}
    assert groups["pi05"]["correct.select_weight"]["num"] == 10
    assert groups["pi05"]["correct.select_weight"]["den"] == 50
    assert groups["groot-n1.5"]["completion.valid"]["value"] == 4 / 50
    gpt = groups["gpt-driven"]["completion.valid"]
    assert (gpt["num"], gpt["den"], gpt["value"]) == (8, 10, 0.8)
    lo, hi = gpt["ci"]
    assert lo <= 0.8 <= hi
    assert set(json.loads((runs / "scores.json").read_text())) == {"groups", "unassigned_invalid_runs"}


def test_table3_reproduces_under_the_default_score(tmp_path):
    """The records log events only and declare no measurement stream, so the default
    ``labrecord score`` (replay audit on) scores them from their events, marks them
    unaudited (audited 0/50, 0/50, 0/10), and prints Table 3's runtime column: mean
    episode runtime 135.60 s (π0.5) and 86.81 s (GR00T-N1.5) on the wall clock."""
    runs = write_table3(tmp_path / "runs")
    result = CliRunner().invoke(cli, ["score", str(runs), "--resamples", "50"], terminal_width=200)
    assert result.exit_code == 0, result.output
    tables = _tables(result.output)
    assert "20 % (10/50)" in _row(tables["pi05"], "correct.select_weight")
    assert "8 % (4/50)" in _row(tables["groot-n1.5"], "completion.valid")
    assert "80 % (8/10)" in _row(tables["gpt-driven"], "completion.valid")
    assert "135.60 s" in _row(tables["pi05"], "runtime.wall")
    assert "86.81 s" in _row(tables["groot-n1.5"], "runtime.wall")
    assert "runtime.wall" not in tables["gpt-driven"]
    assert "audited 0/50" in tables["pi05"] and "audited 0/10" in tables["gpt-driven"]
    assert "provisional" not in result.output
