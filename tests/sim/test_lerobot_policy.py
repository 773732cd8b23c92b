"""A saved LeRobot policy (a tiny ACT built here) drives weighing episodes: lerobot runs
in the Python 3.12 environment, the recorder talks to it over the agent bridge."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from labrecord.errors import LabrecordError
from labrecord.rundir import read_manifest
from labrecord.scorers.audit import audit_run
from labrecord.scorers.corpus import score_corpus
from labrecord.sim import run_episodes
from labrecord.sim.lerobot_policy import lerobot_python
from labrecord.validation import validate_run
from tests.support import require

PYTHON = lerobot_python()
require(Path(PYTHON).exists(), "a Python 3.12 environment with lerobot 0.6.1",
        "scripts/install-lerobot-venv.sh or LABRECORD_LEROBOT_PYTHON=/path/to/python")


@pytest.fixture(scope="module")
def tiny_act(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("act") / "pretrained_model"
    build = Path(__file__).with_name("build_tiny_act.py")
    done = subprocess.run([PYTHON, str(build), str(out)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return out


def test_saved_act_policy_drives_episodes_that_validate_audit_and_score(tiny_act, tmp_path) -> None:
    """0.6 s at 10 Hz: 1 settling period + 5 queries per episode, one row each."""
    runs = run_episodes("weighing", tmp_path, "basic", "lerobot", episodes=2, seed=0, size=32, max_time_s=0.6, path=str(tiny_act))
    for run in runs:
        report, _ = validate_run(run)
        assert report.ok, [str(f) for f in report.errors]
        assert audit_run(run).ok
        manifest = read_manifest(run).manifest
        assert manifest.status == "complete" and manifest.system.name == "lerobot-act" and manifest.system.kind == "vla"
        assert manifest.system.revision.startswith("sha256:")
        assert manifest.system.observation.channels == ["front", "robot"]
        assert manifest.system.preflight.announced["outputs"]["action"]["shape"] == [7]
        assert manifest.system.preflight.announced["processors"] is False  # saved without lerobot-train's processors
        policy = json.loads((run / "scores.json").read_text())["episodes"][0]["policy"]
        assert policy["queries"] == 5 and policy["rejected_chunks"] == 0 and policy["faults"] == []
    (group,) = score_corpus(tmp_path, resamples=0)["groups"]
    assert group["coverage"]["valid_runs"] == 2


def test_a_directory_lerobot_cannot_load_is_one_clear_error(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(LabrecordError, match="did not start"):
        run_episodes("weighing", tmp_path / "runs", "basic", "lerobot", episodes=1, path=str(tmp_path))
    assert not (tmp_path / "runs" / "populations").exists()
