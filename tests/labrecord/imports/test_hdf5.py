"""Tests for labrecord.imports.hdf5: robomimic and Isaac Lab HDF5 files as run directories."""
from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.imports import ImportOptions, import_source
from labrecord.imports.hdf5 import _state_columns, content_hash
from labrecord.imports.runs import OUTCOME_UNKNOWN
from labrecord.measurements import FAMILY_COLUMNS
from labrecord.models import EpisodeEnd
from labrecord.rundir import MEASUREMENTS_FILE, read_events, read_manifest
from labrecord.validation import validate_paths
from tests.labrecord.imports.layouts import write_isaaclab, write_robomimic
from tests.support import require_module


def _ends(run_dir: Path) -> list[tuple[int, str, bool]]:
    return [(e.episode, e.reason, e.physical_complete) for e in read_events(run_dir) if isinstance(e, EpisodeEnd)]


def test_isaaclab_runs_keep_outcome_seed_and_attrs(tmp_path: Path) -> None:
    source = write_isaaclab(tmp_path / "stack.hdf5", [(5, True), (4, False), (6, True)], seed=42)
    summary = import_source("isaaclab", source, tmp_path / "runs")
    assert summary.counts() == {"imported": 3, "unchanged": 0, "error": 0, "missing": 0}
    runs = tmp_path / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [
        "isaaclab-stack-demo_0", "isaaclab-stack-demo_1", "isaaclab-stack-demo_2", "populations"]
    m = read_manifest(runs / "isaaclab-stack-demo_1").manifest
    assert m.source is not None
    assert (m.source.kind, m.source.path, m.source.record) == ("isaaclab", str(source.resolve()), "data/demo_1")
    assert m.source.format_version is None  # the recorder declares none
    assert m.source.attrs == {"num_samples": 4, "seed": 42, "success": False}
    with h5py.File(source) as f:
        assert m.source.content_hash == content_hash(f["data/demo_1"])
    assert m.task.task_id == "Isaac-Stack-Cube-Franka-IK-Rel-v0"
    assert m.seeds.task_state == 42
    # what the file does not say stays unknown
    assert m.system.kind is None and m.system.action_spec.control_hz is None
    assert m.system.action_spec.representation is None and m.system.action_spec.mode is None
    assert m.system.action_spec.dim == 7
    assert m.evaluation.measurements == "none"
    assert m.evaluation.population is not None and m.evaluation.population.instance_id == "demo_1"
    assert _ends(runs / "isaaclab-stack-demo_0") == [(0, "success", True)]
    assert _ends(runs / "isaaclab-stack-demo_1") == [(1, "failure", False)]
    registry = [json.loads(line) for line in (runs / "populations" / "isaaclab-stack.jsonl").read_text().splitlines()]
    assert [r["instance_id"] for r in registry] == ["demo_0", "demo_1", "demo_2"]
    report = validate_paths([str(runs)])
    assert report.ok and not report.warnings, (report.errors, report.warnings)


def test_isaaclab_record_read_back_by_robomimic(tmp_path: Path) -> None:
    """The kept record is a one-demo file of the same layout: robomimic's SequenceDataset reads it."""
    require_module("robomimic", "pip install robomimic==0.3.0 six torch==2.13.0")
    import robomimic.utils.obs_utils as obs_utils
    from robomimic.utils.dataset import SequenceDataset

    source = write_isaaclab(tmp_path / "stack.hdf5", [(5, True), (4, False)])
    import_source("isaaclab", source, tmp_path / "runs")
    kept = tmp_path / "runs" / "isaaclab-stack-demo_1" / "source.hdf5"
    obs_utils.initialize_obs_utils_with_obs_specs({"obs": {"low_dim": ["joint_pos", "eef_pos"]}})
    dataset = SequenceDataset(hdf5_path=str(kept), obs_keys=("joint_pos", "eef_pos"), dataset_keys=("actions",),
                              load_next_obs=False)
    assert dataset.n_demos == 1 and len(dataset) == 4
    items = [dataset[step] for step in range(4)]
    dataset.close_and_delete_hdf5_handle()
    with h5py.File(source) as f, h5py.File(kept) as g:
        original = f["data/demo_1"]
        for step, item in enumerate(items):
            np.testing.assert_array_equal(item["actions"][0], original["actions"][step])
            np.testing.assert_array_equal(item["obs"]["joint_pos"][0], original["obs/joint_pos"][step])
        copy = g["data/demo_1"]
        assert dict(copy.attrs) == dict(original.attrs)
        for stream in ("initial_state/rigid_object/cube/root_pose", "states/articulation/robot/joint_position"):
            np.testing.assert_array_equal(copy[stream][()], original[stream][()])
        assert content_hash(copy) == content_hash(original)


def test_robomimic_outcome_unknown_and_read_back(tmp_path: Path) -> None:
    """robomimic stores no success attribute: the episode is unresolved, never a failure."""
    require_module("robomimic", "pip install robomimic==0.3.0 six torch==2.13.0")
    import robomimic.utils.obs_utils as obs_utils
    from robomimic.utils.dataset import SequenceDataset

    source = write_robomimic(tmp_path / "lift.hdf5", [3, 5])
    summary = import_source("robomimic", source, tmp_path / "runs")
    assert [row.outcome for row in summary.rows] == [OUTCOME_UNKNOWN, OUTCOME_UNKNOWN]
    run = tmp_path / "runs" / "robomimic-lift-demo_1"
    m = read_manifest(run).manifest
    assert m.system.action_spec.control_hz == 20.0  # env_kwargs.control_freq
    assert m.source is not None and m.source.attrs["model_file"] == "<mujoco model='lift-1'/>"
    ends = [e for e in read_events(run) if isinstance(e, EpisodeEnd)]
    assert ends[0].reason == OUTCOME_UNKNOWN and ends[0].t == pytest.approx(5 / 20.0)
    obs_utils.initialize_obs_utils_with_obs_specs({"obs": {"low_dim": ["robot0_eef_pos", "cube_pos"]}})
    dataset = SequenceDataset(hdf5_path=str(run / "source.hdf5"), obs_keys=("robot0_eef_pos", "cube_pos"),
                              dataset_keys=("actions", "rewards", "dones"))
    assert len(dataset) == 5
    with h5py.File(source) as f:
        for step in range(5):
            item = dataset[step]
            np.testing.assert_array_equal(item["next_obs"]["cube_pos"][0], f["data/demo_1/next_obs/cube_pos"][step])
            np.testing.assert_array_equal(item["actions"][0], f["data/demo_1/actions"][step])


def test_state_streams_become_columns(tmp_path: Path) -> None:
    """root_pose (x y z qw qx qy qz) gives <body>_x/_y/_z; root_velocity's linear part its
    speed: velocity (3, 4, 0, ...) has speed 5; an observation <name>_pos gives <name>_x..."""
    with h5py.File(tmp_path / "f.hdf5", "w") as f:
        g = f.create_group("demo_0")
        g["states/rigid_object/tube/root_pose"] = np.array([[1.0, 2.0, 3.0, 1, 0, 0, 0], [4.0, 5.0, 6.0, 1, 0, 0, 0]])
        g["states/rigid_object/tube/root_velocity"] = np.array([[3.0, 4.0, 0.0, 9, 9, 9], [0.0, 0.0, 2.0, 0, 0, 0]])
        g["obs/grip_pos"] = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
        g["obs/occluded"] = np.array([False, True])
        g["obs/image"] = np.zeros((2, 4, 4, 3))
        columns = _state_columns(g, h5py, 2)
    assert sorted(columns) == ["grip_x", "grip_y", "grip_z", "occluded", "tube_speed", "tube_x", "tube_y", "tube_z"]
    np.testing.assert_array_equal(columns["tube_y"], [2.0, 5.0])
    np.testing.assert_allclose(columns["tube_speed"], [5.0, 2.0])
    np.testing.assert_array_equal(columns["grip_z"], [0.3, 0.6])


def test_measurements_written_when_the_contract_columns_are_held(tmp_path: Path) -> None:
    """Every rack column in the file and a control rate: measurements.parquet, declared recorded."""
    import pyarrow.parquet as pq

    source = write_isaaclab(tmp_path / "rack.hdf5", [(4, True)])
    with h5py.File(source, "a") as f:
        for column, kind in FAMILY_COLUMNS["rack"].items():
            f[f"data/demo_0/obs/{column}"] = np.zeros(4, dtype=bool) if kind == "bool" else np.arange(4.0)
    stated = {"rack_pose": [0.5, 0.2, 0.05, 0.0]}
    summary = import_source("isaaclab", source, tmp_path / "runs",
                            options=ImportOptions(family="rack", control_hz=10.0, instance=stated))
    assert summary.rows[0].measurements == "recorded"
    run = tmp_path / "runs" / "isaaclab-rack-demo_0"
    table = pq.read_table(run / MEASUREMENTS_FILE)
    assert table.column("t").to_pylist() == [0.0, 0.1, 0.2, 0.3]
    assert table.column("tube_in_rack").type == "bool"
    assert read_manifest(run).manifest.evaluation.measurements == "recorded"
    assert read_manifest(run).manifest.task.variant["rack_pose"] == [0.5, 0.2, 0.05, 0.0]
    # without the task instance the contract would judge against its defaults: unaudited
    summary = import_source("isaaclab", source, tmp_path / "fourth", options=ImportOptions(family="rack", control_hz=10.0))
    assert summary.rows[0].measurements == "none" and "--instance" in (summary.rows[0].message or "")
    # without a rate the same file stays unaudited, and says why
    summary = import_source("isaaclab", source, tmp_path / "other", options=ImportOptions(family="rack"))
    assert summary.rows[0].measurements == "none" and "control rate" in (summary.rows[0].message or "")
    # a family whose columns the file lacks: unaudited, naming the first missing ones
    plain = write_isaaclab(tmp_path / "plain.hdf5", [(4, True)])
    summary = import_source("isaaclab", plain, tmp_path / "third",
                            options=ImportOptions(family="rack", control_hz=10.0, instance=stated))
    assert summary.rows[0].measurements == "none" and "grip_vz" in (summary.rows[0].message or "")


def test_malformed_records_are_named_and_the_rest_import(tmp_path: Path) -> None:
    source = write_isaaclab(tmp_path / "bad.hdf5", [(5, True), (4, False), (6, True), (3, True)])
    with h5py.File(source, "a") as f:
        f["data/demo_1"].attrs["num_samples"] = 9
        del f["data/demo_2/obs/joint_pos"]
        f["data/demo_2/obs/joint_pos"] = np.zeros((2, 9))
    summary = import_source("isaaclab", source, tmp_path / "runs")
    assert summary.counts() == {"imported": 2, "unchanged": 0, "error": 2, "missing": 0}
    assert summary.errors == [
        f"{source}: data/demo_1 attribute num_samples is 9 but actions has 4 rows",
        f"{source}: data/demo_2/obs/joint_pos has 2 rows, actions has 6",
    ]
    registry = (tmp_path / "runs" / "populations" / "isaaclab-bad.jsonl").read_text().splitlines()
    assert len(registry) == 4  # the two that failed stay registered: missing in the denominators


def test_reimport_is_idempotent_and_refuses_other_content(tmp_path: Path) -> None:
    source = write_isaaclab(tmp_path / "stack.hdf5", [(5, True), (4, False)])
    import_source("isaaclab", source, tmp_path / "runs")
    before = {p: p.read_bytes() for p in sorted((tmp_path / "runs").rglob("*")) if p.is_file()}
    again = import_source("isaaclab", source, tmp_path / "runs")
    assert [row.status for row in again.rows] == ["unchanged", "unchanged"]
    assert {p: p.read_bytes() for p in sorted((tmp_path / "runs").rglob("*")) if p.is_file()} == before
    with h5py.File(source, "a") as f:
        f["data/demo_1/actions"][0, 0] += 1.0
    changed = import_source("isaaclab", source, tmp_path / "runs")
    assert [row.status for row in changed.rows] == ["unchanged", "error"]
    assert "isaaclab-stack-demo_1 already holds other content" in changed.errors[0]


def test_not_a_source(tmp_path: Path) -> None:
    from labrecord.errors import LabrecordError

    (tmp_path / "x.hdf5").write_bytes(b"not hdf5")
    with pytest.raises(LabrecordError, match=r"x.hdf5: not an HDF5 file"):
        import_source("robomimic", tmp_path / "x.hdf5", tmp_path / "runs")
    with h5py.File(tmp_path / "empty.hdf5", "w"):
        pass
    with pytest.raises(LabrecordError, match=r"empty.hdf5: no 'data' group"):
        import_source("isaaclab", tmp_path / "empty.hdf5", tmp_path / "runs")


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=12),
       index=st.integers(min_value=0, max_value=11))
def test_content_hash_follows_the_bytes(tmp_path_factory: pytest.TempPathFactory, values: list[float], index: int) -> None:
    """Equal records hash alike wherever they sit; changing any value changes the hash."""
    path = tmp_path_factory.mktemp("h") / "f.hdf5"
    array = np.array(values, dtype=np.float32).reshape(-1, 1)
    with h5py.File(path, "w") as f:
        f["a/actions"] = array
        f["b/nested/actions"] = array
        f["a"].attrs["success"] = True
        f["b/nested"].attrs["success"] = True
        changed = array.copy()
        changed[index % len(values), 0] = np.float32(changed[index % len(values), 0]) + np.float32(1.0)
        f["c/actions"] = changed
        f["c"].attrs["success"] = True
        assert content_hash(f["a"]) == content_hash(f["b/nested"])
        if not np.array_equal(changed, array):
            assert content_hash(f["c"]) != content_hash(f["a"])


def _set(path: str, value: object):
    def change(f: h5py.File) -> None:
        group, _, attr = path.partition("@")
        if attr:
            f[group].attrs[attr] = value
        else:
            del f[group]
            f[group] = value
    return change


@pytest.mark.parametrize(("change", "message"), [
    (_set("data/demo_0@success", "yes"), r"data/demo_0 attribute success is 'yes', expected a boolean"),
    (_set("data/demo_0@seed", 1.5), r"data/demo_0 attribute seed is 1.5, expected an integer"),
    (_set("data/demo_0/actions", np.zeros(3)), r"data/demo_0/actions has shape \(3,\), expected \(N, A\)"),
    (_set("data/demo_0/states/rigid_object/cube/root_pose", np.zeros((2, 7))),
     r"data/demo_0/states/rigid_object/cube/root_pose has 2 rows, actions has 5"),
])
def test_should_fail_records(tmp_path: Path, change, message: str) -> None:
    source = write_isaaclab(tmp_path / "f.hdf5", [(5, True), (4, True)])
    with h5py.File(source, "a") as f:
        change(f)
    summary = import_source("isaaclab", source, tmp_path / "runs")
    assert [row.status for row in summary.rows] == ["error", "imported"]
    assert len(summary.errors) == 1 and summary.errors[0].startswith(f"{source}: data/demo_0")
    assert re.search(message, summary.errors[0]), summary.errors[0]


def test_should_fail_files(tmp_path: Path) -> None:
    from labrecord.errors import LabrecordError

    source = write_isaaclab(tmp_path / "cut.hdf5", [(50, True)] * 4)
    data = source.read_bytes()
    source.write_bytes(data[: len(data) // 2])  # a copy cut short
    with pytest.raises(LabrecordError, match=r"cut.hdf5: not an HDF5 file|cut.hdf5: data/demo_\d: unreadable"):
        summary = import_source("isaaclab", source, tmp_path / "runs")
        assert summary.errors  # if the header survived, the cut records are named one by one
        raise LabrecordError(summary.errors[0])
    other = write_isaaclab(tmp_path / "env.hdf5", [(3, True)])
    with h5py.File(other, "a") as f:
        f["data"].attrs["env_args"] = "{not json"
    with pytest.raises(LabrecordError, match=r"env.hdf5: data attribute env_args is not JSON"):
        import_source("isaaclab", other, tmp_path / "runs")
