"""Tests for labrecord.exporters.lerobot.

The export itself needs lerobot (Python >= 3.12).  The main test suite runs on 3.11, so the
end-to-end tests run the interpreter named by ``LABRECORD_LEROBOT_PYTHON`` (or the venv that
scripts/install-lerobot-venv.sh builds) in a subprocess:
``labrecord export lerobot`` writes the dataset, ``lerobot_reader.py`` loads it with
``lerobot.datasets.LeRobotDataset(repo_id, root=...)`` and the comparison with the source
runs happens here.  Without such an interpreter the tests skip locally and fail when CI=true.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import labrecord
from hypothesis import given
from hypothesis import strategies as st

from labrecord.demos import DemoReader
from labrecord.errors import LabrecordError
from labrecord.examples import example_manifest
from labrecord.exporters.examples import camera_frame, write_demo_runs
from labrecord.demos import Demo
from labrecord.exporters.lerobot import (
    EpisodePlan, FeatureMap, build_features, control_segments, export_lerobot, iter_frames, task_string,
)
from labrecord.exporters.observations import stacked

from tests.exporters.conftest import require_reader

READER = Path(__file__).with_name("lerobot_reader.py")
#: mean absolute error (0-255 scale) allowed between a source frame and its AV1-decoded copy
VIDEO_TOLERANCE = 6.0
#: the same for a frame that went through the run's H.264 video first, then AV1
TWICE_ENCODED_TOLERANCE = 8.0
PROPRIO = ["robot0_eef_pos", "robot0_gripper_qpos"]


def lerobot_python(checkout: bool = True) -> str:
    """``LABRECORD_LEROBOT_PYTHON``, else the venv scripts/install-lerobot-venv.sh builds
    (``$LABRECORD_LEROBOT_VENV`` or ``~/.cache/labrecord/lerobot-venv``); with ``checkout``,
    one whose labrecord is this checkout's (tests that run only lerobot's own programs in
    it pass False)."""
    python = os.environ.get("LABRECORD_LEROBOT_PYTHON", "")
    if not python:
        venv = os.environ.get("LABRECORD_LEROBOT_VENV") or str(Path.home() / ".cache/labrecord/lerobot-venv")
        candidate = Path(venv) / "bin" / "python"
        python = str(candidate) if candidate.exists() else ""
    require_reader(bool(python), "a Python 3.12 with lerobot[dataset] and labrecord",
                   "set LABRECORD_LEROBOT_PYTHON=/path/to/venv/bin/python or run scripts/install-lerobot-venv.sh")
    if not checkout:
        return python
    # the subprocess must export with this checkout's code, the wings included (an editable
    # install of another clone maps labrecord.<wing> elsewhere even when labrecord resolves here)
    code = "import labrecord, labrecord.exporters.lerobot as m; print(labrecord.__file__); print(m.__file__)"
    found = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    root = Path(labrecord.__file__).resolve().parents[1]
    paths = [Path(line).resolve() for line in found.stdout.split()]
    has = ", ".join(map(str, paths)) or (found.stderr.strip().splitlines() or ["nothing"])[-1]
    require_reader(found.returncode == 0 and len(paths) == 2 and all(p.is_relative_to(root) for p in paths),
                   f"{python} with this checkout's labrecord (it has: {has})",
                   f"{python} -m pip install -e {root}")
    return python


def run_cli(python: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = "from labrecord.cli import main; main()"
    return subprocess.run([python, "-c", code, "export", "lerobot", *args], capture_output=True, text=True,
                          timeout=600)


def read_with_lerobot(python: str, repo_id: str, root: Path) -> dict:
    result = subprocess.run([python, str(READER), repo_id, str(root)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def source_demos(runs: Path) -> dict[tuple[str, str], object]:
    demos = {}
    for run in sorted(runs.iterdir()):
        with DemoReader(run / "demo.hdf5") as reader:
            for name in reader.demo_names:
                demos[(run.name, name)] = reader.demo(name)
    return demos


def check_against_sources(read: dict, root: Path, runs: Path, keep: bool, cameras: bool = True) -> None:
    meta = json.loads((root / "meta" / "labrecord.json").read_text())
    sources = source_demos(runs)
    assert read["num_episodes"] == len(meta["episodes"]) == len(read["episodes"])
    assert read["fps"] == 10
    for episode, plan in zip(read["episodes"], meta["episodes"]):
        demo = sources[(plan["run_id"], plan["source_demo"])]
        start, end = plan["source_frames"]
        assert len(episode["state"]) == end - start
        assert episode["frame_index"] == list(range(end - start))
        state = stacked(demo.obs, PROPRIO, demo.num_samples)
        np.testing.assert_array_equal(np.array(episode["state"], dtype=np.float32), state[start:end])
        np.testing.assert_array_equal(np.array(episode["action"], dtype=np.float32), demo.actions[start:end])
        if cameras:
            frames = np.array(episode["images"]["observation.images.front"], dtype=np.float64)
            error = np.abs(frames - demo.obs["front"][start:end]).mean(axis=(1, 2, 3))
            assert error.max() < VIDEO_TOLERANCE, error
            # wrist frames come from videos/wrist.mp4: frame i of the episode is camera_frame(i, episode)
            wrist = np.array(episode["images"]["observation.images.wrist"], dtype=np.float64)
            expected = np.stack([camera_frame(i, demo.episode, 64) for i in range(start, end)])
            error = np.abs(wrist - expected).mean(axis=(1, 2, 3))
            assert error.max() < TWICE_ENCODED_TOLERANCE, error
        if keep:
            assert episode["control"] == demo.control_mask.tolist()
        else:
            assert demo.control_mask[start:end].all()
        assert demo.success and episode["task"] == "weighing (basic): weighing-basic"
    accepted = [d for d in sources.values() if d.success]
    expected = sum(d.num_samples if keep else int(d.control_mask.sum()) for d in accepted)
    assert read["num_frames"] == expected


@pytest.fixture(scope="module")
def lerobot_export(demo_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    python = lerobot_python()
    out = tmp_path_factory.mktemp("lerobot") / "weighing"
    result = run_cli(python, str(demo_runs), "--out", str(out), "--repo-id", "local/weighing", "--split", "train=0.75",
                     "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    # 4 accepted demos, each cut into 2 stretches of policy control by the env-controlled frames
    assert (summary["demos"], summary["train"], summary["valid"]) == (8, 6, 2)
    return python, out


def test_split_export_read_by_lerobot(lerobot_export: tuple[str, Path], demo_runs: Path) -> None:
    python, out = lerobot_export
    read = read_with_lerobot(python, "local/weighing", out)
    assert read["splits"] == {"train": "0:6", "valid": "6:8"}
    assert {"observation.state", "action", "observation.images.front", "observation.images.wrist"} <= set(read["features"])
    assert not any("hidden" in f or "score" in f or "legal" in f or "object" in f or "environment" in f
                   for f in read["features"])
    check_against_sources(read, out, demo_runs, keep=False)
    meta = json.loads((out / "meta" / "labrecord.json").read_text())
    assert meta["acceptance"] == {"rule": "success", "valid_ratio": 0.25, "seed": 0}
    assert meta["env_frames"]["rule"] == "split"
    assert len(meta["attempts"]) == 6 and sum(a["accepted"] for a in meta["attempts"]) == 4
    assert meta["source_runs"] == ["demo-run-0000", "demo-run-0001"]
    assert meta["cameras"] == [{"name": "front", "source": "demo", "recorded_size": [64, 64], "exported_size": [64, 64]},
                               {"name": "wrist", "source": "video", "recorded_size": [64, 64], "exported_size": [64, 64]}]
    assert "held for one control period" in meta["action_convention"] and meta["action_spec"]["dim"] == 4
    assert meta["observations"]["proprioception"] == PROPRIO and meta["observations"]["evaluator"] == ["object"]
    assert meta["privileged_features"] == [] and not meta["observations"]["environment_state"]["requested"]
    notes = {(a["run_id"], a["episode"]): a["note"] for a in meta["attempts"]}
    assert notes[("demo-run-0000", 1)] == "rejected by rule 'success'"
    first = meta["episodes"][0]
    assert notes[(first["run_id"], first["source_episode"])].startswith(f"exported ({first['split']}) as episode(s) 0, ")


def test_keep_export_read_by_lerobot(demo_runs: Path, tmp_path: Path) -> None:
    python = lerobot_python()
    out = tmp_path / "keep"
    result = run_cli(python, str(demo_runs), "--out", str(out), "--repo-id", "local/keep", "--env-frames", "keep",
                     "--split", "train=1.0", "--env-state", "--cameras", "wrist", "--image-size", "32x48")
    assert result.returncode == 0, result.stderr[-3000:]
    read = read_with_lerobot(python, "local/keep", out)
    assert "policy_in_control" in read["features"] and read["splits"] == {"train": "0:4"}
    assert "observation.images.front" not in read["features"]
    check_against_sources(read, out, demo_runs, keep=True, cameras=False)
    sources = source_demos(demo_runs)
    meta = json.loads((out / "meta" / "labrecord.json").read_text())
    assert meta["privileged_features"] == ["observation.environment_state"]
    assert meta["observations"]["environment_state"]["names"] == ["object[0]", "object[1]", "object[2]"]
    assert meta["cameras"] == [{"name": "wrist", "source": "video", "recorded_size": [64, 64],
                                "exported_size": [32, 48]}]
    for episode, plan in zip(read["episodes"], meta["episodes"]):
        demo = sources[(plan["run_id"], plan["source_demo"])]
        np.testing.assert_array_equal(np.array(episode["env"], dtype=np.float32), demo.obs["object"])
        assert np.array(episode["images"]["observation.images.wrist"]).shape == (demo.num_samples, 32, 48, 3)


def test_hostile_inputs_through_lerobot_cli(lerobot_export: tuple[str, Path], demo_runs: Path, tmp_path: Path) -> None:
    python, existing = lerobot_export
    before = sorted(p.name for p in existing.rglob("*"))
    result = run_cli(python, str(demo_runs), "--out", str(existing))
    assert result.returncode == 1 and "already exists; pass --overwrite" in result.stderr
    assert sorted(p.name for p in existing.rglob("*")) == before

    result = run_cli(python, str(demo_runs), "--out", str(tmp_path / "none"), "--accept", "num_samples > 1000")
    assert result.returncode == 1 and "none accepted by rule 'num_samples > 1000'" in result.stderr
    assert not (tmp_path / "none").exists()

    mixed = tmp_path / "mixed"
    write_demo_runs(mixed, runs=1, episodes=1, steps=3, image_size=8, prefix="eef")
    write_demo_runs(mixed, runs=1, episodes=1, steps=3, image_size=8, prefix="joint", action_dim=7,
                    action_spec={"representation": "joint"})
    result = run_cli(python, str(mixed), "--out", str(tmp_path / "mixed-out"))
    assert result.returncode == 1
    assert "runs 'eef-0000'" in result.stderr and "'joint-0000'" in result.stderr and "dim 4 vs 7" in result.stderr
    assert not (tmp_path / "mixed-out").exists()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="checks the message on interpreters without lerobot")
def test_without_lerobot_says_how_to_install(demo_runs: Path, tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match=r'pip install "labrecord\[lerobot\]".*Python >= 3.12'):
        export_lerobot(demo_runs, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_control_segments_by_hand() -> None:
    assert control_segments(np.array([1, 1, 0, 0, 1], dtype=bool)) == [(0, 2), (4, 5)]
    assert control_segments(np.array([0, 0], dtype=bool)) == []
    assert control_segments(np.array([], dtype=bool)) == []
    assert control_segments(np.ones(3, dtype=bool)) == [(0, 3)]


@given(st.lists(st.booleans(), max_size=60))
def test_control_segments_property(mask: list[bool]) -> None:
    array = np.array(mask, dtype=bool)
    segments = control_segments(array)
    covered = np.zeros(len(mask), dtype=bool)
    previous_end = -1
    for start, end in segments:
        assert previous_end < start < end  # ordered, non-empty, separated by at least one false frame
        covered[start:end] = True
        previous_end = end
    np.testing.assert_array_equal(covered, array)


def test_features_and_task() -> None:
    obs = {"robot0_eef_pos": ((3,), np.dtype("float32")), "front": ((64, 64, 3), np.dtype("uint8")),
           "display_reading_g": ((1,), np.dtype("float32")), "object": ((2,), np.dtype("float64"))}
    features = build_features(obs, 4, "keep")
    assert features["observation.images.front"]["dtype"] == "video"
    assert features["observation.state"] == {"dtype": "float32", "shape": (3,),
                                             "names": ["robot0_eef_pos[0]", "robot0_eef_pos[1]", "robot0_eef_pos[2]"]}
    # evaluator state is no feature unless asked for, then one privileged vector
    assert not any("display" in f or "object" in f or "environment" in f for f in features)
    assert features["action"]["shape"] == (4,) and "policy_in_control" in features
    assert "policy_in_control" not in build_features(obs, 4, "split")
    env = build_features(obs, 4, "split", env_state=True)["observation.environment_state"]
    assert env["names"] == ["display_reading_g", "object[0]", "object[1]"] and env["shape"] == (3,)
    with pytest.raises(LabrecordError, match="'label' has dtype <U3"):
        build_features({"label": ((), np.dtype("<U3"))}, 4, "split")
    manifest = example_manifest()
    manifest.task.variant = {"goal": "180 g", "rule": "exactly one standard", "seed": 3}
    assert task_string(manifest) == "weighing (basic): weighing-basic; goal: 180 g; rule: exactly one standard"
    assert task_string(manifest, {"labrecord": {"instruction": "weigh out 180 g"}}) == "weigh out 180 g"
    manifest.task.variant = {"instruction": "put 20 g on the pan"}
    assert task_string(manifest) == "put 20 g on the pan"


def test_state_composed_from_robomimic_keys() -> None:
    obs = {"robot0_eef_pos": ((3,), np.dtype("float32")), "robot0_gripper_qpos": ((1,), np.dtype("float32")),
           "object": ((2,), np.dtype("float32")), "agentview": ((8, 8, 3), np.dtype("uint8"))}
    features = FeatureMap.from_obs(obs, env_state=True)
    spec = features.features(4, "split")
    assert spec["observation.state"]["names"] == ["robot0_eef_pos[0]", "robot0_eef_pos[1]", "robot0_eef_pos[2]",
                                                  "robot0_gripper_qpos"]
    assert set(spec) == {"action", "observation.state", "observation.environment_state",
                         "observation.images.agentview"}
    demo = Demo(name="demo_0", run_id="r", episode=0, success=True, control_hz=10.0, action_units="m",
                actions=np.zeros((2, 4), dtype=np.float32),
                obs={"robot0_eef_pos": np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32),
                     "robot0_gripper_qpos": np.array([[7], [8]], dtype=np.float32),
                     "object": np.array([[9, 10], [11, 12]], dtype=np.float32),
                     "agentview": np.zeros((2, 8, 8, 3), dtype=np.uint8)},
                next_obs={}, rewards=np.zeros(2), dones=np.zeros(2), control_mask=np.ones(2, dtype=bool),
                timestamps={}, attrs={})
    frames = list(iter_frames(demo, EpisodePlan(None, 0, 2, "t"), features, "split"))  # type: ignore[arg-type]
    np.testing.assert_array_equal(frames[1]["observation.state"], [4, 5, 6, 8])
    np.testing.assert_array_equal(frames[1]["observation.environment_state"], [11, 12])
    assert frames[0]["observation.images.agentview"].shape == (8, 8, 3) and frames[0]["task"] == "t"
