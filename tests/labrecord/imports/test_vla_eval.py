"""``labrecord import vla-eval`` on the recording of a real two-shard vla-eval run.

vla-eval's own Orchestrator runs both shards (tests/labrecord/imports/vla_eval_shard.py)
into one recording: two tasks x three episodes = six work items; shard 1 runs first,
finishes item 3 (task 1, episode 0) and dies while resetting item 4 (task 1, episode 1);
shard 0 then takes items 0-2 and the free item 5.  Episode 2 of task 0 raises in the
simulator (status ``error``).  So, worked out by hand:

* rows: task 0 ep 0 success (even), ep 1 fail, ep 2 error; task 1 ep 0 success, ep 2 success;
* task 1 episode 1 has no row: missing, but still a registered member (6 members);
* of the 6 members: 3 successes, 1 failure, 1 errored (unresolved), 1 missing.
"""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from labrecord.imports import import_source
from labrecord.rundir import read_events, read_manifest
from labrecord.validation import validate_run
from tests.support import require_module

require_module("vla_eval", 'pip install "labrecord[vla-eval]"')

SHARD = Path(__file__).with_name("vla_eval_shard.py")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("vla-eval") / "results"
    crashed = subprocess.run([sys.executable, str(SHARD), str(out), "ev1", "1", "2", "1"], capture_output=True)
    assert crashed.returncode == 3, crashed.stderr[-2000:]
    done = subprocess.run([sys.executable, str(SHARD), str(out), "ev1", "0", "2"], capture_output=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_a_crashed_shard_leaves_its_episode_missing_not_failed(recording: Path, tmp_path: Path) -> None:
    summary = import_source("vla-eval", recording, tmp_path / "runs")
    outcomes = {row.record: (row.status, row.outcome) for row in summary.rows}
    assert outcomes == {
        "CountingBenchmark/task0/ep0": ("imported", "success"),
        "CountingBenchmark/task0/ep1": ("imported", "failure"),
        "CountingBenchmark/task0/ep2": ("imported", "service_fault"),
        "CountingBenchmark/task1/ep0": ("imported", "success"),
        "CountingBenchmark/task1/ep2": ("imported", "success"),
        "CountingBenchmark-task0001-ep0001": ("missing", None),
    }
    assert summary.counts() == {"imported": 5, "unchanged": 0, "error": 0, "missing": 1}
    members = [json.loads(line) for line in (tmp_path / "runs" / "populations" / "vla-eval-ev1.jsonl").read_text().splitlines()]
    assert [(m["task_id"], m["fields"]) for m in members] == [
        (task, {"task_idx": t, "episode": e, "seed": 7}) for t, task in enumerate(("reach-left", "reach-right"))
        for e in range(3)]
    for run in sorted((tmp_path / "runs").glob("vla-eval-*")):
        report, _ = validate_run(run)
        assert report.ok and not report.warnings, [str(f) for f in report.errors + report.warnings]
    errored = tmp_path / "runs" / "vla-eval-ev1-CountingBenchmark-task0000-ep0002"
    manifest = read_manifest(errored).manifest
    assert manifest.source.kind == "vla-eval" and manifest.source.format_version
    assert manifest.source.attrs["failure_reason"] == "env_step" and manifest.evaluation.measurements == "none"
    assert manifest.system.action_spec.control_hz is None and manifest.seeds.task_state is None
    events = read_events(errored)
    assert [e.__struct_config__.tag for e in events] == ["episode_start", "validity", "episode_end"]
    assert events[1].kind == "service_fault" and events[1].source == "vla-eval: env_step"
    kept = json.loads((tmp_path / "runs" / "vla-eval-ev1-CountingBenchmark-task0000-ep0000" / "source.json").read_text())
    assert kept["episode"]["steps"] == 3 and [s["step"] for s in kept["steps"]] == [0, 1, 2]


def test_reimport_is_idempotent_and_a_bad_row_is_one_error(recording: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    import_source("vla-eval", recording, out)
    again = import_source("vla-eval", recording, out)
    assert again.counts() == {"imported": 0, "unchanged": 5, "error": 0, "missing": 1}
    broken = tmp_path / "broken"
    broken.mkdir()
    copy = broken / "recording-ev1.sqlite"
    copy.write_bytes((recording / "recording-ev1.sqlite").read_bytes())
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE episode_results SET status = 'exploded' WHERE episode_id = 1")
    summary = import_source("vla-eval", copy, tmp_path / "runs2")
    assert len(summary.errors) == 1
    assert str(copy) in summary.errors[0] and "CountingBenchmark/task0/ep1" in summary.errors[0]
    assert "'exploded'" in summary.errors[0]
    assert summary.counts()["imported"] == 4
