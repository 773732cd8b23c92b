"""Tests for labrecord.exporters.hdf5: the merged robomimic-layout export."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.demos import DemoReader, read_demos
from labrecord.errors import LabrecordError
from labrecord.exporters.examples import camera_frame, write_demo_runs
from labrecord.exporters.hdf5 import export_hdf5

from tests.exporters.conftest import require_reader

#: mean absolute error (0-255 scale) of a frame decoded from the run's H.264 video
H264_TOLERANCE = 6.0


def _sources(runs: Path) -> dict[tuple[str, int], object]:
    return {(d.run_id, d.episode): d for run in sorted(runs.iterdir()) for d in read_demos(run / "demo.hdf5")}


def test_merge_by_hand(demo_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "train.hdf5"
    summary = export_hdf5(demo_runs, out, accept="success", valid_ratio=0.25, seed=0)
    # 2 runs x 3 episodes, episodes 0 and 2 succeed: 4 demos of 12 steps
    assert (summary.demos, summary.frames, summary.attempts) == (4, 48, 6)
    assert (summary.train, summary.valid) == (3, 1)
    sources = _sources(demo_runs)
    with DemoReader(out) as reader:
        assert reader.demo_names == ["demo_0", "demo_1", "demo_2", "demo_3"]
        assert sorted(reader.mask("train") + reader.mask("valid")) == reader.demo_names
        assert reader.mask_attrs("train") == {"rule": "success", "valid_ratio": 0.25, "seed": 0}
        assert reader.env_args["type"] == 2 and reader.env_args["env_name"] == "weighing-basic"
        assert reader.env_args["labrecord"]["runs"] == ["demo-run-0000", "demo-run-0001"]
        manifest = reader.manifest()
        assert len(manifest) == 6
        rejected = [a for a in manifest if not a.extra["accepted"]]
        assert [(a.run_id, a.episode, a.demo, a.extra["note"]) for a in rejected] == [
            ("demo-run-0000", 1, None, "rejected by rule 'success'"),
            ("demo-run-0001", 1, None, "rejected by rule 'success'")]
        exported = [a for a in manifest if a.extra["accepted"]]
        assert [a.extra["note"] for a in exported][:1] == [f"exported as {exported[0].demo} ({exported[0].extra['split']})"]
        for name in reader.demo_names:
            demo = reader.demo(name)
            source = sources[(demo.run_id, demo.episode)]
            np.testing.assert_array_equal(demo.actions, source.actions)
            assert sorted(demo.obs) == ["robot0_eef_pos", "robot0_gripper_qpos"]  # no images, no evaluator state
            for key in demo.obs:
                np.testing.assert_array_equal(demo.obs[key], source.obs[key])
                np.testing.assert_array_equal(demo.next_obs[key], source.next_obs[key])
            np.testing.assert_array_equal(demo.control_mask, source.control_mask)
            assert not demo.control_mask.all()  # the environment-controlled stretch survives
            assert "hidden_mass_g" in reader.diagnostics(name)
    with h5py.File(out, "r") as f:
        assert f["data"].attrs["total"] == 48
        for name in f["data"]:
            text = json.dumps({k: str(v) for k, v in f["data"][name].attrs.items()})
            assert "hidden_mass" not in text and "hidden_mass" not in str(list(f["data"][name].keys()))


def test_sql_rule_and_all(demo_runs: Path, tmp_path: Path) -> None:
    summary = export_hdf5(demo_runs, tmp_path / "a.hdf5", accept="all", valid_ratio=0.0)
    assert (summary.demos, summary.valid) == (6, 0)
    summary = export_hdf5(demo_runs, tmp_path / "b.hdf5", accept="run_id = 'demo-run-0001' AND episode >= 1")
    assert summary.demos == 2
    with DemoReader(tmp_path / "b.hdf5") as reader:
        assert [reader.demo(n).episode for n in reader.demo_names] == [1, 2]
        assert reader.mask("failed") == ["demo_0"]
    with pytest.raises(LabrecordError, match="unknown column .no_such_column."):
        export_hdf5(demo_runs, tmp_path / "c.hdf5", accept="no_such_column > 1")
    assert not (tmp_path / "c.hdf5").exists()


def test_hostile_inputs(demo_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.hdf5"
    export_hdf5(demo_runs, out)
    with pytest.raises(LabrecordError, match="already exists; pass --overwrite"):
        export_hdf5(demo_runs, out)
    export_hdf5(demo_runs, out, accept="all", overwrite=True)
    (tmp_path / "empty").mkdir()
    with pytest.raises(LabrecordError, match="no run directories"):
        export_hdf5(tmp_path / "empty", tmp_path / "y.hdf5")
    with pytest.raises(LabrecordError, match=r"none accepted by rule 'episode > 99' \(2 unsuccessful"):
        export_hdf5(demo_runs, tmp_path / "y.hdf5", accept="episode > 99")
    assert not (tmp_path / "y.hdf5").exists()


def test_different_action_specs_refused(tmp_path: Path) -> None:
    write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=3, image_size=8, prefix="eef")
    write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=3, image_size=8, prefix="joint", action_dim=7,
                    action_spec={"representation": "joint", "units": "rad"})
    with pytest.raises(LabrecordError, match=r"runs 'eef-0000' .* and 'joint-0000' .*different action specs "
                                             r"\(dim 4 vs 7; representation 'eef' vs 'joint'; units 'm' vs 'rad'\)"):
        export_hdf5(tmp_path / "runs", tmp_path / "out.hdf5")
    assert not (tmp_path / "out.hdf5").exists()


def test_different_observations_refused(tmp_path: Path) -> None:
    write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=3, image_size=8, prefix="small")
    write_demo_runs(tmp_path / "runs", runs=1, episodes=1, steps=3, image_size=16, prefix="large")
    with pytest.raises(LabrecordError, match=r"demos large-0000/demo_0 and small-0000/demo_0 differ in observations"
                                             r".*front\[16, 16, 3\].*front\[8, 8, 3\]"):
        export_hdf5(tmp_path / "runs", tmp_path / "out.hdf5")
    assert not (tmp_path / "out.hdf5").exists()


def test_robomimic_sequence_dataset(demo_runs: Path, tmp_path: Path) -> None:
    try:
        import robomimic.utils.obs_utils as obs_utils
        from robomimic.utils.dataset import SequenceDataset
    except ImportError:
        require_reader(False, "robomimic", 'pip install robomimic==0.3.0 six torch==2.13.0')
    out = tmp_path / "robomimic.hdf5"
    export_hdf5(demo_runs, out, valid_ratio=0.25, seed=1, images=True)
    keys = ("robot0_eef_pos", "robot0_gripper_qpos", "front_image", "wrist_image")
    obs_utils.initialize_obs_utils_with_obs_specs({"obs": {"low_dim": list(keys[:2]), "rgb": list(keys[2:])}})
    dataset = SequenceDataset(hdf5_path=str(out), obs_keys=keys, dataset_keys=("actions", "rewards", "dones"),
                              filter_by_attribute="train")
    with DemoReader(out) as reader:
        train = reader.mask("train")
        demos = {name: reader.demo(name) for name in train}
        assert "object" not in reader.obs_shapes(train[0])  # evaluator state stays out without env_state
    assert dataset.n_demos == len(train) == 3
    assert len(dataset) == sum(d.num_samples for d in demos.values()) == 36
    index = 0
    for name in sorted(train, key=lambda n: int(n[5:])):
        demo = demos[name]
        for step in range(demo.num_samples):
            item = dataset[index]
            np.testing.assert_allclose(item["actions"][0], demo.actions[step], rtol=1e-6)
            for key in keys[:2]:
                np.testing.assert_allclose(item["obs"][key][0], demo.obs[key][step], rtol=1e-6)
                np.testing.assert_allclose(item["next_obs"][key][0], demo.next_obs[key][step], rtol=1e-6)
            np.testing.assert_array_equal(item["obs"]["front_image"][0], demo.obs["front_image"][step])
            assert item["obs"]["wrist_image"][0].shape == (64, 64, 3)
            assert item["rewards"][0] == demo.rewards[step] and item["dones"][0] == demo.dones[step]
            index += 1
    sources = _sources(demo_runs)
    for demo in demos.values():
        source = sources[(demo.run_id, demo.episode)]
        np.testing.assert_array_equal(demo.obs["front_image"], source.obs["front"])  # kept frames: lossless
        wrist = np.stack([camera_frame(i, demo.episode, 64) for i in range(demo.num_samples)]).astype(float)
        assert np.abs(demo.obs["wrist_image"] - wrist).mean(axis=(1, 2, 3)).max() < H264_TOLERANCE
        np.testing.assert_array_equal(demo.next_obs["wrist_image"][:-1], demo.obs["wrist_image"][1:])
        np.testing.assert_array_equal(demo.next_obs["wrist_image"][-1], demo.obs["wrist_image"][-1])
    # next_obs of step i is obs of step i + 1 inside a demo
    first = demos[train[0]]
    np.testing.assert_array_equal(first.next_obs["robot0_eef_pos"][:-1], first.obs["robot0_eef_pos"][1:])


def test_images_selected_resized_and_env_state(demo_runs: Path, tmp_path: Path) -> None:
    out = tmp_path / "small.hdf5"
    export_hdf5(demo_runs, out, images=True, cameras=["wrist"], image_size="16x24", env_state=True)
    with DemoReader(out) as reader:
        shapes = reader.obs_shapes("demo_0")
        demo = reader.demo("demo_0", keys=[])
        labrecord = reader.env_args["labrecord"]
    assert shapes["wrist_image"] == ((16, 24, 3), np.dtype("uint8")) and "front_image" not in shapes
    assert shapes["object"][0] == (3,)
    assert json.loads(demo.attrs["privileged_obs"]) == ["object"]
    assert labrecord["cameras"] == [{"name": "wrist", "source": "video", "recorded_size": [64, 64],
                                     "exported_size": [16, 24], "obs_key": "wrist_image"}]
    assert labrecord["observations"]["privileged_obs"] == ["object"] and labrecord["runs"] == ["demo-run-0000",
                                                                                               "demo-run-0001"]
    assert labrecord["rule"] == "success" and "held for one control period" in labrecord["action_convention"]
    with pytest.raises(LabrecordError, match=r"has no camera 'side' \(it has: front, wrist"):
        export_hdf5(demo_runs, tmp_path / "x.hdf5", images=True, cameras=["side"])
    with pytest.raises(LabrecordError, match="pass --images too"):
        export_hdf5(demo_runs, tmp_path / "x.hdf5", cameras=["front"])
    assert not (tmp_path / "x.hdf5").exists()


@settings(max_examples=8, deadline=None)
@given(successes=st.lists(st.booleans(), min_size=1, max_size=4), runs=st.integers(1, 3),
       ratio=st.sampled_from([0.0, 0.3, 0.5]))
def test_export_property(tmp_path_factory: pytest.TempPathFactory, successes: list[bool], runs: int, ratio: float) -> None:
    """Accepted = successful attempts; frames add up; train and valid partition the demos."""
    root = tmp_path_factory.mktemp("prop")
    write_demo_runs(root / "runs", runs=runs, episodes=len(successes), steps=3, successes=tuple(successes),
                    image_size=4, cameras=())
    expected = runs * sum(successes)
    if expected == 0:
        with pytest.raises(LabrecordError, match="none accepted"):
            export_hdf5(root / "runs", root / "o.hdf5", valid_ratio=ratio)
        return
    summary = export_hdf5(root / "runs", root / "o.hdf5", valid_ratio=ratio)
    assert summary.demos == expected and summary.frames == 3 * expected
    assert summary.train + summary.valid == expected and summary.train >= 1
    with DemoReader(root / "o.hdf5") as reader:
        assert len(reader.manifest()) == runs * len(successes)
        assert all(reader.demo(n).success for n in reader.demo_names)
