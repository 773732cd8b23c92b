"""Policy latency per decision and wall time per episode, from a corpus."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.latency import latency_rows, latency_summary

from tests.scorers.test_audit import weighing_run


def with_costs(run: Path, walls: list[float], episode_wall_s: float) -> Path:
    """Give the run's first receipts these query latencies (the others none) and a
    scores.json whose episode records ``episode_wall_s``."""
    lines = [json.loads(line) for line in (run / "observations.jsonl").read_text().splitlines()]
    for line, wall in zip(lines, walls):
        line["wall"] = wall
    (run / "observations.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    scores = {"run_id": run.name, "status": "complete", "metrics": {}, "created_at": "2026-01-01T00:00:00Z",
              "episodes": [{"policy": {"queries": len(walls), "episode_wall_s": episode_wall_s}}]}
    (run / "scores.json").write_text(json.dumps(scores))
    return run


def test_latency_by_hand(tmp_path: Path) -> None:
    # latencies 10, 20, 30, 40 ms: mean 25, median 25, p95 = 30 + 0.85·10 = 38.5 (linear), max 40
    with_costs(weighing_run(tmp_path, "w-1"), [0.01, 0.02], 2.0)
    with_costs(weighing_run(tmp_path, "w-2"), [0.03, 0.04], 4.0)
    (row,) = latency_summary(tmp_path)
    lat, wall = row["latency"], row["episode_wall"]
    assert lat["decisions"] == 4
    assert (lat["mean_s"], lat["p50_s"], lat["p95_s"], lat["max_s"]) == pytest.approx((0.025, 0.025, 0.0385, 0.04))
    assert wall == pytest.approx({"episodes": 2, "mean_s": 3.0, "max_s": 4.0})
    assert latency_rows([row])[0][1:6] == ("4", "25.00", "25.00", "38.50", "40.00")


def test_runs_without_costs_contribute_nothing(tmp_path: Path) -> None:
    weighing_run(tmp_path, "w-1")
    assert latency_summary(tmp_path) == []


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(0.0, 2.0), min_size=1, max_size=5))
def test_mean_and_max_follow_the_receipts(tmp_path_factory, walls) -> None:
    root = tmp_path_factory.mktemp("lat")
    with_costs(weighing_run(root, "w-1"), walls, 1.0)
    (row,) = latency_summary(root)
    assert row["latency"]["decisions"] == len(walls)
    assert row["latency"]["mean_s"] == pytest.approx(sum(walls) / len(walls))
    assert row["latency"]["max_s"] == pytest.approx(max(walls))


def test_score_prints_latency_but_keeps_it_out_of_scores_json(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from labrecord.cli import cli

    with_costs(weighing_run(tmp_path, "w-1"), [0.01, 0.03], 2.0)
    text = CliRunner().invoke(cli, ["score", str(tmp_path), "--resamples", "0"])
    assert text.exit_code == 0, text.output
    assert "policy latency per decision" in text.output and "20.00" in text.output  # mean of 10 and 30 ms
    assert set(json.loads((tmp_path / "scores.json").read_text())) == {"groups", "unassigned_invalid_runs"}
