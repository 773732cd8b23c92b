"""HDF5 files written to robomimic's and Isaac Lab's documented layouts, for the import tests.

robomimic (docs "Dataset structure"): ``data`` attrs ``total`` and ``env_args`` (JSON with
``env_name``, ``type``, ``env_kwargs``); ``data/demo_<k>`` attrs ``num_samples`` and
``model_file``; datasets ``actions``, ``states``, ``rewards``, ``dones``, ``obs/<key>``,
``next_obs/<key>``; ``mask/<filter>`` lists demo names.

Isaac Lab (``HDF5DatasetFileHandler``): ``data`` attrs ``total`` and ``env_args`` (JSON with
``env_name`` and ``type``); ``data/demo_<k>`` attrs ``num_samples``, ``seed``, ``success``;
datasets ``actions``, ``obs/<key>``, ``initial_state/<kind>/<name>/<stream>`` (one row) and
``states/<kind>/<name>/<stream>`` (one row per step).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def write_robomimic(path: Path, lengths: Sequence[int], *, seed: int = 0, control_freq: float | None = 20.0) -> Path:
    import h5py

    rng = np.random.default_rng(seed)
    kwargs = {} if control_freq is None else {"control_freq": control_freq}
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({"env_name": "Lift", "type": 1, "env_version": "1.4.1", "env_kwargs": kwargs})
        total = 0
        for k, n in enumerate(lengths):
            demo = data.create_group(f"demo_{k}")
            demo.attrs["num_samples"] = n
            demo.attrs["model_file"] = f"<mujoco model='lift-{k}'/>"
            demo.create_dataset("actions", data=rng.uniform(-1, 1, size=(n, 7)))
            demo.create_dataset("states", data=rng.normal(size=(n, 32)))
            demo.create_dataset("rewards", data=np.zeros(n))
            demo.create_dataset("dones", data=np.eye(1, n, n - 1, dtype=np.int64)[0])
            eef = rng.normal(size=(n + 1, 3))
            cube = rng.normal(size=(n + 1, 3))
            for folder, rows in (("obs", slice(0, n)), ("next_obs", slice(1, n + 1))):
                demo.create_dataset(f"{folder}/robot0_eef_pos", data=eef[rows])
                demo.create_dataset(f"{folder}/cube_pos", data=cube[rows])
            total += n
        data.attrs["total"] = total
        names = [f"demo_{k}".encode() for k in range(len(lengths))]
        f.create_dataset("mask/train", data=np.array(names, dtype="S"))
    return path


def write_isaaclab(path: Path, demos: Sequence[tuple[int, bool]], *, seed: int = 0,
                   env_name: str = "Isaac-Stack-Cube-Franka-IK-Rel-v0") -> Path:
    """``demos`` is ``(num_samples, success)`` per demo; the recorder's seed is ``seed``."""
    import h5py

    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as f:
        data = f.create_group("data")
        data.attrs["env_args"] = json.dumps({"env_name": env_name, "type": 2})
        data.attrs["total"] = 0
        for k, (n, success) in enumerate(demos):
            demo = data.create_group(f"demo_{k}")
            demo.attrs["num_samples"] = n
            demo.attrs["seed"] = seed
            demo.attrs["success"] = success
            demo.create_dataset("actions", data=rng.normal(size=(n, 7)).astype(np.float32))
            demo.create_dataset("obs/joint_pos", data=rng.normal(size=(n, 9)).astype(np.float32))
            demo.create_dataset("obs/eef_pos", data=rng.normal(size=(n, 3)).astype(np.float32))
            for folder, rows in (("initial_state", 1), ("states", n)):
                demo.create_dataset(f"{folder}/rigid_object/cube/root_pose", data=rng.normal(size=(rows, 7)))
                demo.create_dataset(f"{folder}/rigid_object/cube/root_velocity", data=rng.normal(size=(rows, 6)))
                demo.create_dataset(f"{folder}/articulation/robot/joint_position", data=rng.normal(size=(rows, 9)))
            data.attrs["total"] += n
    return path
