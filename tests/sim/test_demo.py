"""``labrecord demo`` end to end on a tiny evaluation."""
from __future__ import annotations

import json
from pathlib import Path


from tests.support import require_module
from click.testing import CliRunner

from labrecord.cli import cli

require_module("mujoco", 'pip install "labrecord[sim]"')


def test_demo_runs_the_whole_loop(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out), "--episodes", "2", "--no-cameras", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["runs"] == {"reference": 2, "fixed-preference": 2}
    assert summary["validation"]["errors"] == 0
    assert summary["audit"] == {"runs": 4, "agree": 4, "disagreements": 0}
    for name in ("corpus.duckdb", "scores.json", "report.html"):
        assert (out / name).is_file(), name
    systems = {group["system"]: group["metrics"] for group in summary["groups"]}
    assert set(systems) == {"reference", "fixed-preference"}
    assert systems["reference"]["completion.valid"]["value"] == 1.0
    assert "<svg" in (out / "report.html").read_text() or "data:image/png;base64" in (out / "report.html").read_text()


def test_demo_refuses_to_overwrite_without_flag(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["demo", "--out", str(out), "--episodes", "1", "--no-cameras"])
    assert result.exit_code == 1
    assert "already exists and is not empty; pass --overwrite" in result.output
    assert (out / "keep.txt").read_text() == "mine"


def test_demo_family_all_scores_every_family(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--family", "all", "--out", str(out), "--episodes", "1", "--no-cameras",
                                      "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert set(summary["runs"]) == {f"{family}/{policy}" for family in ("weighing", "centrifuge", "rack")
                                    for policy in ("reference", "fixed-preference")}
    assert summary["validation"]["errors"] == 0 and summary["audit"]["disagreements"] == 0
    tasks = {(group["task"], group["system"]) for group in summary["groups"]}
    assert {("centrifuge-basic", "reference"), ("weighing-basic", "reference"), ("rack-basic", "reference")} <= tasks


def test_demo_runs_on_every_usable_cpu_unless_told(tmp_path: Path, monkeypatch) -> None:
    """Default --workers is the usable CPU count (3 here, patched); --workers 1 is kept."""
    import labrecord.cli.demo as demo_cli
    import labrecord.sim.demo as sim_demo

    seen: list[int] = []

    def fake_run_demo(out, *, workers, **_):
        seen.append(workers)
        raise SystemExit(0)

    monkeypatch.setattr(demo_cli, "usable_cpus", lambda: 3)
    monkeypatch.setattr(sim_demo, "run_demo", fake_run_demo)
    CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "a"), "--no-cameras"])
    CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "b"), "--no-cameras", "--workers", "1"])
    assert seen == [3, 1]
