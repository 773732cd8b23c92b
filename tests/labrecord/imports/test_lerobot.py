"""Tests for labrecord.imports.lerobot: a LeRobot v3 dataset, read by lerobot, as runs.

The round trip runs lerobot itself (the Python 3.12 interpreter of
tests/exporters/test_lerobot.py's ``lerobot_python``): ``export lerobot`` writes a dataset
with lerobot's writer, ``import lerobot`` reads it through ``LeRobotDataset``, and a second
``export lerobot`` of the imported runs gives a dataset equal in every feature, frame
count, task and episode index (read back by lerobot, frame by frame).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from labrecord.exporters.examples import write_demo_runs
from labrecord.imports.lerobot import split_by_names
from labrecord.rundir import read_manifest
from tests.exporters.test_lerobot import lerobot_python, read_with_lerobot


def labrecord_in(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-c", "from labrecord.cli import main; main()", *args], capture_output=True,
                          text=True, timeout=600)


def test_split_by_names() -> None:
    """key[i] runs become one key each; a scalar name beside them is a (1,) key; anything
    else stays whole."""
    assert split_by_names(["a[0]", "a[1]", "a[2]", "g"], 4, "state") == [("a", slice(0, 3)), ("g", slice(3, 4))]
    assert split_by_names(None, 2, "state") == [("state", slice(0, 2))]
    assert split_by_names(["x", "y"], 2, "state") == [("state", slice(0, 2))]  # element names, not keys
    assert split_by_names(["a[0]", "a[2]"], 2, "state") == [("state", slice(0, 2))]  # a gap
    assert split_by_names(["a[0]", "b", "a[1]"], 3, "state") == [("state", slice(0, 3))]  # interleaved


@pytest.mark.slow
def test_export_import_export_round_trip(tmp_path: Path) -> None:
    python = lerobot_python()
    write_demo_runs(tmp_path / "runs", runs=2, episodes=2, steps=4, successes=(True, True), image_size=64)
    first = tmp_path / "first"
    done = labrecord_in(python, "export", "lerobot", str(tmp_path / "runs"), "--out", str(first), "--repo-id", "local/first")
    assert done.returncode == 0, done.stderr[-3000:]
    done = labrecord_in(python, "import", "lerobot", str(first), "--out", str(tmp_path / "imported"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"imported": 4, "unchanged": 0, "error": 0, "missing": 0}
    run = tmp_path / "imported" / "lerobot-first-episode_000002"
    m = read_manifest(run).manifest
    assert m.source is not None and m.source.format_version == "v3.0" and m.source.record == "episode_000002"
    assert m.system.action_spec.control_hz == 10.0 and m.task.variant["instruction"]
    assert m.evaluation.measurements == "none"
    second = tmp_path / "second"
    done = labrecord_in(python, "export", "lerobot", str(tmp_path / "imported"), "--out", str(second),
                        "--repo-id", "local/first", "--accept", "all")
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = read_with_lerobot(python, "local/first", first), read_with_lerobot(python, "local/first", second)
    assert (a["num_episodes"], a["num_frames"], a["fps"], a["features"]) == (b["num_episodes"], b["num_frames"], b["fps"], b["features"])
    info_a, info_b = (json.loads((d / "meta" / "info.json").read_text())["features"] for d in (first, second))
    for feature in info_a:
        assert (info_a[feature]["dtype"], info_a[feature]["shape"], info_a[feature]["names"]) == (
            info_b[feature]["dtype"], info_b[feature]["shape"], info_b[feature]["names"]), feature
    for x, y in zip(a["episodes"], b["episodes"]):
        assert x["task"] == y["task"] and x["frame_index"] == y["frame_index"]
        np.testing.assert_allclose(x["state"], y["state"], rtol=1e-6)
        np.testing.assert_allclose(x["action"], y["action"], rtol=1e-6)
    # importing again changes nothing
    done = labrecord_in(python, "import", "lerobot", str(first), "--out", str(tmp_path / "imported"), "--json")
    assert json.loads(done.stdout)["counts"] == {"imported": 0, "unchanged": 4, "error": 0, "missing": 0}


def test_without_lerobot_says_how(tmp_path: Path) -> None:
    import sys

    from labrecord.errors import LabrecordError
    from labrecord.imports import import_source

    if sys.version_info >= (3, 12):
        pytest.skip("this interpreter may have lerobot")
    with pytest.raises(LabrecordError, match=r"needs lerobot, which needs Python >= 3.12 .*install-lerobot-venv"):
        import_source("lerobot", tmp_path, tmp_path / "runs")


def test_a_dataset_written_by_lerobot_keeps_success_reward_and_task(tmp_path: Path) -> None:
    """Episode 0 ends on next.success true (success), episode 1 on false (failure); state
    names x, y are not key[i] names, so the state stays one (N, 2) key; rewards 0.5 each."""
    python = lerobot_python()
    written = subprocess.run([python, str(Path(__file__).with_name("lerobot_writer.py")), str(tmp_path / "plain")],
                             capture_output=True, text=True, timeout=600)
    assert written.returncode == 0, written.stderr[-3000:]
    done = labrecord_in(python, "import", "lerobot", str(tmp_path / "plain"), "--out", str(tmp_path / "runs"), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout)["runs"]
    assert [(r["record"], r["outcome"]) for r in rows] == [("episode_000000", "success"), ("episode_000001", "failure")]
    from labrecord.demos import read_demos

    run = tmp_path / "runs" / "lerobot-plain-episode_000001"
    assert read_manifest(run).manifest.task.variant["instruction"] == "push"
    (demo,) = read_demos(run / "demo.hdf5")
    np.testing.assert_array_equal(demo.obs["state"], [[0, 0], [1, -1]])
    np.testing.assert_array_equal(demo.rewards, [0.5, 0.5])
    assert demo.control_hz == 5.0 and demo.num_samples == 2
