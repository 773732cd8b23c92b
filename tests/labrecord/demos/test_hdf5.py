"""Tests for labrecord/demos/hdf5.py: the robomimic-layout demonstration file."""
from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.demos import DemoReader, DemoWriter, read_demos, split_names
from labrecord.errors import LabrecordError, SchemaVersionError


def _step(i: int) -> dict:
    obs = {"state": np.array([i, 10.0 * i]), "front": np.full((4, 4, 3), i, dtype=np.uint8)}
    nxt = {"state": np.array([i + 1, 10.0 * (i + 1)]), "front": np.full((4, 4, 3), i + 1, dtype=np.uint8)}
    return {"obs": obs, "action": np.array([0.5 * i, -1.0, 0.0]), "next_obs": nxt, "reward": float(i == 2),
            "done": i == 2, "timestamps": {"t": 0.1 * i, "front_acquired": 0.1 * i - 0.01}, "control": i != 1}


def _write_small(path: Path) -> None:
    with DemoWriter(path, {"env_name": "weighing-basic", "labrecord": {"task": "weighing"}}, block=2) as demo:
        demo.begin("r1", 0, control_hz=10.0, action_units="m")
        for i in range(3):
            demo.add_step(**_step(i))
        demo.end(True, diagnostics={"scores": {"b_next": 1.0}, "legal": [["add", "w20", "pan"]]})
        demo.begin("r1", 1, control_hz=10.0, action_units="m")
        for i in range(2):
            demo.add_step(**_step(i))
        demo.end(False, reason="timeout")
        demo.begin("r1", 2)
        demo.end(False, reason="service_fault")


def test_layout_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "demo.hdf5"
    _write_small(path)
    with h5py.File(path, "r") as f:
        env_args = json.loads(f["data"].attrs["env_args"])
        assert env_args == {"env_name": "weighing-basic", "type": 2, "labrecord": {"task": "weighing"}}
        assert f["data"].attrs["total"] == 5
        assert sorted(f["data"]) == ["demo_0", "demo_1"]  # the empty attempt is manifest-only
        d0 = f["data/demo_0"]
        assert d0.attrs["num_samples"] == 3 and d0.attrs["run_id"] == "r1" and d0.attrs["success"]
        assert d0.attrs["control_hz"] == 10.0 and d0.attrs["action_units"] == "m"
        np.testing.assert_array_equal(d0["actions"][()], [[0, -1, 0], [0.5, -1, 0], [1.0, -1, 0]])
        np.testing.assert_array_equal(d0["obs/state"][()], [[0, 0], [1, 10], [2, 20]])
        np.testing.assert_array_equal(d0["next_obs/state"][()], [[1, 10], [2, 20], [3, 30]])
        assert d0["obs/front"].shape == (3, 4, 4, 3) and d0["obs/front"].dtype == np.uint8
        np.testing.assert_array_equal(d0["rewards"][()], [0, 0, 1])
        np.testing.assert_array_equal(d0["dones"][()], [0, 0, 1])
        np.testing.assert_array_equal(d0["control_mask"][()], [True, False, True])
        np.testing.assert_allclose(d0["timestamps/front_acquired"][()], [-0.01, 0.09, 0.19])
        # evaluator data lives outside data/
        assert "scores" not in json.dumps(dict(d0.attrs), default=str)
        assert json.loads(f["diagnostics/demo_0"].attrs["json"])["scores"] == {"b_next": 1.0}
        assert [v.decode() for v in f["mask/success"][()]] == ["demo_0"]
        assert [v.decode() for v in f["mask/failed"][()]] == ["demo_1"]
        assert [v.decode() for v in f["mask/train"][()]] == ["demo_0"]
        assert f["mask/train"].attrs["rule"] == "success"
        assert len(f["manifest"]) == 3


def test_reader_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "demo.hdf5"
    _write_small(path)
    with DemoReader(path) as reader:
        assert reader.demo_names == ["demo_0", "demo_1"]
        assert reader.mask("train") == ["demo_0"] and reader.mask("valid") == []
        assert reader.mask_attrs("train")["rule"] == "success"
        attempts = reader.manifest()
        assert [(a.episode, a.demo, a.num_samples, a.success, a.reason) for a in attempts] == [
            (0, "demo_0", 3, True, None), (1, "demo_1", 2, False, "timeout"), (2, None, 0, False, "service_fault")]
        assert reader.diagnostics("demo_0")["legal"] == [["add", "w20", "pan"]]
        demo = reader.demo("demo_1", keys=["state"])
        assert list(demo.obs) == ["state"] and demo.num_samples == 2 and not demo.success
    demos = read_demos(path)
    assert [d.num_samples for d in demos] == [3, 2]
    assert demos[0].timestamps["t"].tolist() == pytest.approx([0.0, 0.1, 0.2])


def test_bulk_equals_streaming(tmp_path: Path) -> None:
    steps = [_step(i) for i in range(3)]
    with DemoWriter(tmp_path / "bulk.hdf5", {"env_name": "x"}) as demo:
        demo.begin("r1", 0)
        demo.add_steps(
            obs={k: np.stack([s["obs"][k] for s in steps]) for k in steps[0]["obs"]},
            actions=np.stack([s["action"] for s in steps]),
            next_obs={k: np.stack([s["next_obs"][k] for s in steps]) for k in steps[0]["obs"]},
            rewards=np.array([s["reward"] for s in steps]), dones=np.array([s["done"] for s in steps]),
            timestamps={k: np.array([s["timestamps"][k] for s in steps]) for k in steps[0]["timestamps"]},
            control_mask=np.array([s["control"] for s in steps]))
        demo.end(True)
    with DemoWriter(tmp_path / "stream.hdf5", {"env_name": "x"}) as demo:
        demo.begin("r1", 0)
        for s in steps:
            demo.add_step(**s)
        demo.end(True)
    a, b = read_demos(tmp_path / "bulk.hdf5")[0], read_demos(tmp_path / "stream.hdf5")[0]
    for key in ("actions", "rewards", "dones", "control_mask"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
    for key in a.obs:
        np.testing.assert_array_equal(a.obs[key], b.obs[key])
        np.testing.assert_array_equal(a.next_obs[key], b.next_obs[key])


def test_accept_all_and_filters(tmp_path: Path) -> None:
    path = tmp_path / "demo.hdf5"
    demo = DemoWriter(path, {"env_name": "x"})
    for episode in range(10):
        demo.begin("r", episode)
        demo.add_step({"s": np.zeros(1)}, np.zeros(2), {"s": np.ones(1)})
        demo.end(episode % 2 == 0)
    demo.close(accept="all", valid_ratio=0.2, seed=3, filters={"first": ["demo_0"]})
    with DemoReader(path) as reader:
        train, valid = reader.mask("train"), reader.mask("valid")
        assert len(train) == 8 and len(valid) == 2 and not set(train) & set(valid)
        assert reader.mask("first") == ["demo_0"]
        assert reader.mask_attrs("valid") == {"rule": "all", "valid_ratio": 0.2, "seed": 3}


@pytest.mark.parametrize("action", ["shape", "keys", "timestamps"])
def test_inconsistent_steps_refused(tmp_path: Path, action: str) -> None:
    demo = DemoWriter(tmp_path / "d.hdf5", {"env_name": "x"})
    demo.begin("r", 0)
    demo.add_step({"s": np.zeros(2)}, np.zeros(3), {"s": np.zeros(2)}, timestamps={"t": 0.0})
    with pytest.raises(LabrecordError, match="step 1"):
        if action == "shape":
            demo.add_step({"s": np.zeros(2)}, np.zeros(4), {"s": np.zeros(2)}, timestamps={"t": 0.1})
        elif action == "keys":
            demo.add_step({"q": np.zeros(2)}, np.zeros(3), {"q": np.zeros(2)}, timestamps={"t": 0.1})
        else:
            demo.add_step({"s": np.zeros(2)}, np.zeros(3), {"s": np.zeros(2)})
    demo.abort()
    assert not list(tmp_path.iterdir())


def test_lifecycle_errors(tmp_path: Path) -> None:
    path = tmp_path / "d.hdf5"
    with pytest.raises(LabrecordError, match="env_name"):
        DemoWriter(path, {})
    demo = DemoWriter(path, {"env_name": "x"})
    with pytest.raises(LabrecordError, match="begin"):
        demo.add_step({}, np.zeros(1), {})
    demo.begin("r", 0)
    with pytest.raises(LabrecordError, match="before end"):
        demo.begin("r", 1)
    with pytest.raises(LabrecordError, match="still open"):
        demo.close()
    with pytest.raises(LabrecordError, match="obs keys"):
        demo.add_step({"a": 1}, np.zeros(1), {"b": 1})
    demo.end(None)
    with pytest.raises(LabrecordError, match="acceptance rule 'best'"):
        demo.close(accept="best")
    demo.close()
    with pytest.raises(LabrecordError, match="already exists"):
        DemoWriter(path, {"env_name": "x"})
    DemoWriter(path, {"env_name": "y"}, overwrite=True).close()
    with DemoReader(path) as reader:
        assert reader.env_args["env_name"] == "y"


def test_exception_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with DemoWriter(tmp_path / "d.hdf5", {"env_name": "x"}) as demo:
            demo.begin("r", 0)
            raise RuntimeError("simulator crashed")
    assert list(tmp_path.iterdir()) == []


def test_hostile_files(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="no such demo file"):
        DemoReader(tmp_path / "missing.hdf5")
    junk = tmp_path / "junk.hdf5"
    junk.write_bytes(b"not hdf5 at all")
    with pytest.raises(LabrecordError, match="not a readable HDF5"):
        DemoReader(junk)
    empty = tmp_path / "empty.hdf5"
    h5py.File(empty, "w").close()
    with pytest.raises(LabrecordError, match="no 'data' group"):
        DemoReader(empty)
    newer = tmp_path / "newer.hdf5"
    with h5py.File(newer, "w") as f:
        f.create_group("data").attrs["format"] = "labrecord.demo/2"
    with pytest.raises(SchemaVersionError, match="labrecord.demo/2"):
        DemoReader(newer)
    short = tmp_path / "short.hdf5"
    _write_small(short)
    with h5py.File(short, "r+") as f:
        del f["data/demo_0/rewards"]
        f["data/demo_0"].create_dataset("rewards", data=np.zeros(2))
    with DemoReader(short) as reader, pytest.raises(LabrecordError, match="rewards has 2 rows, num_samples is 3"):
        reader.demo("demo_0")
    with DemoReader(short) as reader, pytest.raises(LabrecordError, match="no demo data/demo_9"):
        reader.demo("demo_9")
    bad_manifest = tmp_path / "bad_manifest.hdf5"
    _write_small(bad_manifest)
    with h5py.File(bad_manifest, "r+") as f:
        f["manifest"][1] = '{"attempt": 1}'
        f["data"].attrs["env_args"] = "{not json"
    with pytest.raises(LabrecordError, match="env_args'] is not JSON"):
        DemoReader(bad_manifest)
    with h5py.File(bad_manifest, "r+") as f:
        f["data"].attrs["env_args"] = "{}"
    with DemoReader(bad_manifest) as reader, pytest.raises(LabrecordError, match=r"manifest\[1\]: bad manifest entry"):
        reader.manifest()


def test_split_by_hand() -> None:
    train, valid = split_names(["a", "b", "c", "d"], 0.25, seed=0)
    assert len(valid) == 1 and sorted(train + valid) == ["a", "b", "c", "d"]
    assert split_names(["a"], 0.5, seed=0) == (["a"], [])
    assert split_names([], 0.5, seed=0) == ([], [])
    with pytest.raises(LabrecordError, match="valid ratio 1.0"):
        split_names(["a"], 1.0, seed=0)


@given(n=st.integers(0, 40), ratio=st.floats(0.0, 0.95), seed=st.integers(0, 2**32 - 1))
def test_split_properties(n: int, ratio: float, seed: int) -> None:
    names = [f"demo_{i}" for i in range(n)]
    train, valid = split_names(names, ratio, seed)
    assert sorted(train + valid, key=names.index) == names
    assert not set(train) & set(valid)
    assert len(valid) == min(round(ratio * n), max(n - 1, 0))
    assert (train, valid) == split_names(names, ratio, seed)


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(0, 7), min_size=1, max_size=4), dim=st.integers(1, 4),
       block=st.integers(1, 5), seed=st.integers(0, 1000))
def test_round_trip_property(tmp_path_factory: pytest.TempPathFactory, lengths: list[int], dim: int,
                             block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    path = tmp_path_factory.mktemp("demo") / "d.hdf5"
    written = []
    with DemoWriter(path, {"env_name": "x"}, block=block) as demo:
        for episode, n in enumerate(lengths):
            demo.begin("r", episode)
            states = rng.normal(size=(n + 1, dim))
            actions = rng.normal(size=(n, dim))
            for i in range(n):
                demo.add_step({"state": states[i]}, actions[i], {"state": states[i + 1]}, reward=i, done=i == n - 1)
            demo.end(bool(episode % 2))
            written.append((n, states, actions))
    demos = {d.episode: d for d in read_demos(path)}
    for episode, (n, states, actions) in enumerate(written):
        if n == 0:
            assert episode not in demos
            continue
        d = demos[episode]
        np.testing.assert_array_equal(d.actions, actions)
        np.testing.assert_array_equal(d.obs["state"], states[:-1])
        np.testing.assert_array_equal(d.next_obs["state"], states[1:])
        assert d.dones.tolist() == [0] * (n - 1) + [1]
    with DemoReader(path) as reader:
        assert len(reader.manifest()) == len(lengths)
        assert sum(a.num_samples for a in reader.manifest()) == sum(lengths)
