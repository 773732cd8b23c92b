"""The Gymnasium environment writes proper run directories through the step owner."""
import json
from pathlib import Path

import numpy as np

from labrecord.rundir import read_manifest
from labrecord.scorers.audit import audit_run
from labrecord.validation import validate_run
from tests.support import require_module

gymnasium = require_module("gymnasium", 'pip install "labrecord[gym]"')


def test_make_by_module_path_spaces_and_runs(tmp_path) -> None:
    """0.5 s at 20 Hz = 10 control periods: one settles the scene, 9 are agent steps; the
    episode is truncated (no completion), reward 0; the run validates and audits."""
    env = gymnasium.make("labrecord.sim:labrecord/Weighing-v0", out_dir=tmp_path, profile="libero", size=32,
                         max_time_s=0.5)
    assert env.action_space.shape == (7,) and env.action_space.high[0] == np.float32(0.05)
    assert sorted(env.observation_space.spaces) == ["front", "robot", "wrist"]
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) and info["instruction"].startswith("Bring the balance reading")
    steps, done = 0, False
    while not done:
        obs, reward, terminated, truncated, step_info = env.step(np.zeros(7, np.float32))
        assert env.observation_space.contains(obs)
        steps += 1
        done = terminated or truncated
    assert (steps, reward, terminated, truncated) == (9, 0.0, False, True)
    run = Path(step_info["run_dir"])
    env.reset()  # the next episode of the same seed
    env.close()
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    assert audit_run(run).ok
    manifest = read_manifest(run).manifest
    assert manifest.run_id == "weighing-basic-gym-libero-s3-e000" and manifest.status == "complete"
    assert manifest.system.name == "gymnasium-agent" and manifest.system.action_spec.control_hz == 20.0
    receipts = [json.loads(line) for line in (run / "observations.jsonl").open()]
    assert len(receipts) == 9 and all(r["chunk_len"] == 1 for r in receipts)
    assert (tmp_path / "weighing-basic-gym-libero-s3-e001" / "run.json").is_file()
    registry = (tmp_path / "populations" / "weighing-basic-s3.jsonl").read_text().splitlines()
    assert len(registry) == 4  # an instance and a checkpoint per episode


def test_droid_profile_spaces(tmp_path) -> None:
    env = gymnasium.make("labrecord.sim:labrecord/Weighing-v0", out_dir=tmp_path, profile="droid", size=16)
    assert env.action_space.shape == (8,) and env.observation_space["front"].shape == (16, 16, 3)
    assert env.observation_space["robot"]["joint_pos"].shape == (7,)
    env.close()
    assert not any(tmp_path.iterdir())  # nothing written before the first reset


def test_every_family_has_its_id_and_the_centrifuge_runs(tmp_path) -> None:
    """``labrecord/<Family>-v0`` for every registered family; the centrifuge episode writes
    a validating, audited run registered in its own population (pairs included)."""
    from labrecord.families import FAMILIES
    from labrecord.sim.gym_env import env_id

    assert [env_id(name) for name in FAMILIES] == ["labrecord/Weighing-v0", "labrecord/Centrifuge-v0",
                                                   "labrecord/Rack-v0"]
    # the seated tube settles for 0.5 s before recording: 0.3 s of agent steps after that
    env = gymnasium.make("labrecord.sim:labrecord/Centrifuge-v0", out_dir=tmp_path, profile="libero", size=32,
                         max_time_s=0.8)
    obs, info = env.reset(seed=0)
    assert info["instruction"].startswith("Balance the rotor")
    done = False
    while not done:
        obs, reward, terminated, truncated, step_info = env.step(np.zeros(7, np.float32))
        done = terminated or truncated
    env.close()
    run = Path(step_info["run_dir"])
    assert run.name == "centrifuge-basic-gym-libero-s0-e000"
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    assert audit_run(run).ok
    assert (tmp_path / "populations" / "centrifuge-basic-s0.jsonl").is_file()
