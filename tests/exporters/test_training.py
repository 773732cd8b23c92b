"""The exports train: lerobot's own ``lerobot-train`` (ACT) and robomimic's BC trainer run a
few steps on exports of simulated weighing demonstrations and leave checkpoints that load.

Two reference episodes are simulated with cameras at 48x48 (``labrecord.sim.run_episodes``,
about 110 control steps each).  ACT runs in the Python 3.12 environment that has lerobot
(see tests/exporters/test_lerobot.py), on the CPU, with tiny model dimensions and no
pretrained backbone (no ImageNet download).  robomimic 0.3.0's BC trainer runs on the HDF5
export (written here), once on low-dimensional observations and once with camera images;
it runs in the same 3.12 environment because robomimic's networks need torchvision, and
that environment's torch and torchvision load together (the PyPI torchvision build does not
load against the CPU-only torch of the main test environment).  The ACT checkpoint then
drives a short episode in the simulator through the LeRobot policy adapter (``--policy
lerobot``), and that run validates, passes the replay audit and scores: the loop closes.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from labrecord.demos import DemoReader
from labrecord.exporters.hdf5 import export_hdf5
from labrecord.sim.lerobot_server import STATE_FIELDS

from tests.exporters.conftest import require_reader
from tests.exporters.test_lerobot import lerobot_python, run_cli

CHECKPOINT_SCRIPT = Path(__file__).with_name("act_checkpoint.py")
BC_SCRIPT = Path(__file__).with_name("robomimic_bc.py")
#: the arm bench's proprioception (robomimic names) and its size per key
PROPRIO_DIMS = {"robot0_eef_pos": 3, "robot0_eef_quat": 4, "robot0_gripper_qpos": 2, "robot0_joint_pos": 7,
                "robot0_joint_vel": 7}
PROPRIO = sorted(PROPRIO_DIMS)
STATE_NAMES = [f"{key}[{i}]" for key in PROPRIO for i in range(PROPRIO_DIMS[key])]
ACTION_DIM = 7  # the reference policy's end-effector deltas: xyz, axis-angle, gripper
#: ACT at toy size: every option is a documented ACTConfig field
TINY_ACT = ["--policy.dim_model=32", "--policy.n_heads=2", "--policy.dim_feedforward=64",
            "--policy.n_encoder_layers=1", "--policy.n_decoder_layers=1", "--policy.n_vae_encoder_layers=1",
            "--policy.latent_dim=8", "--policy.chunk_size=10", "--policy.n_action_steps=10"]
ACT_STEPS = 2
#: what the checkpoint reads: the 23 proprioceptive values and both cameras at the exported 32x32
INPUTS = {"observation.state": [len(STATE_NAMES)], "observation.images.front": [3, 32, 32],
          "observation.images.wrist": [3, 32, 32]}


@pytest.fixture(scope="module")
def simulated_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from labrecord.sim import run_episodes

    root = tmp_path_factory.mktemp("sim") / "runs"
    paths = run_episodes("weighing", root, "basic", "reference", episodes=2, seed=0, cameras=True, size=48)
    assert all((p / "videos" / "front.mp4").is_file() for p in paths)
    return root


@pytest.fixture(scope="module")
def trained_act(simulated_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """The export of the simulated runs and an ACT checkpoint lerobot-train saved from it:
    (the LeRobot Python, the dataset, the checkpoint's pretrained_model folder)."""
    python = lerobot_python()
    root = tmp_path_factory.mktemp("act")
    dataset = root / "weighing"
    result = run_cli(python, str(simulated_runs), "--out", str(dataset), "--repo-id", "local/weighing",
                     "--cameras", "front,wrist", "--image-size", "32", "--split", "train=1", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary["demos"] >= 1 and summary["cameras"] == ["front", "wrist"]
    info = json.loads((dataset / "meta" / "info.json").read_text())
    assert info["features"]["observation.state"]["names"] == STATE_NAMES
    assert not any(k.startswith("observation.environment") or "display_reading" in k for k in info["features"])

    trainer = Path(python).parent / "lerobot-train"
    require_reader(trainer.exists(), f"{trainer} (lerobot[training])", "bash scripts/install-lerobot-venv.sh")
    out = root / "train"
    done = subprocess.run(
        [str(trainer), "--dataset.repo_id=local/weighing", f"--dataset.root={dataset}", "--dataset.video_backend=pyav",
         "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
         "--policy.pretrained_backbone_weights=null", *TINY_ACT, f"--steps={ACT_STEPS}", "--batch_size=2",
         "--num_workers=0", f"--save_freq={ACT_STEPS}", "--log_freq=1", "--wandb.enable=false", f"--output_dir={out}"],
        capture_output=True, text=True, timeout=900, cwd=root)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert f"step:{ACT_STEPS} " in done.stdout + done.stderr  # the trainer logged the last requested step
    checkpoint = out / "checkpoints" / f"{ACT_STEPS:06d}" / "pretrained_model"
    assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "config.json").is_file()
    return python, dataset, checkpoint


def test_lerobot_train_act_on_the_export(trained_act: tuple[str, Path, Path]) -> None:
    python, dataset, checkpoint = trained_act
    loaded = subprocess.run([python, str(CHECKPOINT_SCRIPT), str(checkpoint), "local/weighing", str(dataset)],
                            capture_output=True, text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    report = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert report["inputs"] == INPUTS
    assert report["action_shape"] == [1, ACTION_DIM] and report["finite"]


@pytest.mark.slow
def test_the_trained_act_acts_in_the_simulator_and_its_run_validates(
        trained_act: tuple[str, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop closes: the checkpoint just trained drives one short weighing episode
    (``--policy lerobot``), whose run folder validates, passes the replay audit and scores.

    1.0 s at 10 Hz is 10 control periods: the first is the scene settling, so the policy is
    asked 9 times, one eef_delta row each.  The checkpoint is named by a relative path, as
    a user types it (the policy process runs elsewhere and must still find it)."""
    from labrecord.rundir import read_manifest
    from labrecord.scorers.audit import audit_run
    from labrecord.scorers.corpus import score_corpus
    from labrecord.sim import run_episodes
    from labrecord.validation import validate_run

    python, _, checkpoint = trained_act
    monkeypatch.setenv("LABRECORD_LEROBOT_PYTHON", python)
    monkeypatch.chdir(checkpoint.parents[3])
    relative = checkpoint.relative_to(checkpoint.parents[3])
    (run,) = run_episodes("weighing", tmp_path / "eval", "basic", "lerobot", episodes=1, seed=0, size=48, max_time_s=1.0,
                          path=str(relative))
    report, _ = validate_run(run)
    assert report.ok, [str(f) for f in report.errors]
    assert audit_run(run).ok
    manifest = read_manifest(run).manifest
    assert manifest.status == "complete" and manifest.system.name == "lerobot-act"
    assert manifest.system.observation.channels == ["front", "wrist", "robot"]
    announced = manifest.system.preflight.announced
    assert {k: v["shape"] for k, v in announced["inputs"].items()} == INPUTS
    assert announced["processors"] is True  # the dataset's normalization statistics travel with the checkpoint
    # the adapter builds observation.state in the order the export named its elements
    assert [f"robot0_{name}[{i}]" for name, n in STATE_FIELDS for i in range(n)] == STATE_NAMES
    policy = json.loads((run / "scores.json").read_text())["episodes"][0]["policy"]
    assert policy["queries"] == 9 and policy["faults"] == [] and policy["interface_failures"] == 0
    with DemoReader(run / "demo.hdf5") as reader:
        demo = reader.demo(reader.demo_names[0])
    assert demo.actions.shape == (10, ACTION_DIM) and demo.control_mask.sum() == 9
    (group,) = score_corpus(tmp_path / "eval", resamples=0)["groups"]
    assert group["coverage"]["valid_runs"] == 1


def test_parquet_steps_of_recorded_runs_hold_proprioception_only(simulated_runs: Path, tmp_path: Path) -> None:
    """The recorder writes the display reading, the stability flag and the object poses next
    to the arm's proprioception: the steps table keeps them out unless asked for, and then
    names them env_state.<key>, tagged privileged."""
    import pyarrow.parquet as pq

    from labrecord.exporters.parquet import export_parquet

    plain = pq.read_table(export_parquet(simulated_runs, tmp_path / "plain").out / "steps.parquet")
    assert sorted(c for c in plain.column_names if c.startswith("obs.")) == [f"obs.{k}" for k in PROPRIO]
    assert not any("display" in c or "object" in c or "env_state" in c for c in plain.column_names)
    full = pq.read_table(export_parquet(simulated_runs, tmp_path / "full", env_state=True).out / "steps.parquet")
    evaluator = ["display_reading_g", "display_stable", "object"]
    assert sorted(c for c in full.column_names if c.startswith("env_state.")) == [f"env_state.{k}" for k in evaluator]
    roles = {f.name: f.metadata[b"labrecord.role"] for f in full.schema if f.name.startswith("env_state.")}
    assert set(roles.values()) == {b"privileged"}


@pytest.mark.parametrize("images", [False, True], ids=["low-dim", "images"])
def test_robomimic_bc_on_the_export(simulated_runs: Path, tmp_path: Path, images: bool) -> None:
    python = lerobot_python()
    data = tmp_path / "weighing.hdf5"
    export_hdf5(simulated_runs, data, valid_ratio=0.0, images=images, cameras=["front", "wrist"] if images else None,
                image_size="32" if images else None)
    rgb = ["front_image", "wrist_image"] if images else []
    with DemoReader(data) as reader:
        assert sorted(reader.obs_shapes(reader.demo_names[0])) == sorted(PROPRIO + rgb)
    done = subprocess.run([python, str(BC_SCRIPT), str(data), str(tmp_path / "bc"), ",".join(PROPRIO), ",".join(rgb)],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["checkpoints"]) == 1
    assert report["action_shape"] == [ACTION_DIM] and report["finite"]
