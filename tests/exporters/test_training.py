"""The exports train: lerobot's own ``lerobot-train`` (ACT) and robomimic's BC trainer run a
few steps on exports of simulated weighing demonstrations and leave checkpoints that load.

Two reference episodes are simulated with cameras at 48x48 (``labrecord.sim.run_weighing``,
about 110 control steps each).  ACT runs in the Python 3.12 environment that has lerobot
(see tests/exporters/test_lerobot.py), on the CPU, with tiny model dimensions and no
pretrained backbone (no ImageNet download).  robomimic 0.3.0's BC trainer runs on the HDF5
export (written here), once on low-dimensional observations and once with camera images;
it runs in the same 3.12 environment because robomimic's networks need torchvision, and
that environment's torch and torchvision load together (the PyPI torchvision build does not
load against the CPU-only torch of the main test environment).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from labrecord.demos import DemoReader
from labrecord.exporters.hdf5 import export_hdf5

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


@pytest.fixture(scope="module")
def simulated_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from labrecord.sim import run_weighing

    root = tmp_path_factory.mktemp("sim") / "runs"
    paths = run_weighing(root, "basic", "reference", episodes=2, seed=0, cameras=True, size=48)
    assert all((p / "videos" / "front.mp4").is_file() for p in paths)
    return root


def test_lerobot_train_act_on_the_export(simulated_runs: Path, tmp_path: Path) -> None:
    python = lerobot_python()
    dataset = tmp_path / "weighing"
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
    out = tmp_path / "train"
    done = subprocess.run(
        [str(trainer), "--dataset.repo_id=local/weighing", f"--dataset.root={dataset}", "--dataset.video_backend=pyav",
         "--policy.type=act", "--policy.device=cpu", "--policy.push_to_hub=false",
         "--policy.pretrained_backbone_weights=null", *TINY_ACT, f"--steps={ACT_STEPS}", "--batch_size=2",
         "--num_workers=0", f"--save_freq={ACT_STEPS}", "--log_freq=1", "--wandb.enable=false", f"--output_dir={out}"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert f"step:{ACT_STEPS} " in done.stdout + done.stderr  # the trainer logged the last requested step
    checkpoint = out / "checkpoints" / f"{ACT_STEPS:06d}" / "pretrained_model"
    assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "config.json").is_file()

    loaded = subprocess.run([python, str(CHECKPOINT_SCRIPT), str(checkpoint), "local/weighing", str(dataset)],
                            capture_output=True, text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    report = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert report["inputs"] == {"observation.state": [len(STATE_NAMES)], "observation.images.front": [3, 32, 32],
                                "observation.images.wrist": [3, 32, 32]}
    assert report["action_shape"] == [1, ACTION_DIM] and report["finite"]


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
