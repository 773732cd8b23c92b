"""HDF5 files written to robomimic's and Isaac Lab's documented layouts, for the import tests.

robomimic (docs "Dataset structure"): ``data`` attrs ``total`` and ``env_args`` (JSON with
``env_name``, ``type``, ``env_kwargs``); ``data/demo_<k>`` attrs ``num_samples`` and
``model_file``; datasets ``actions``, ``states``, ``rewards``, ``dones``, ``obs/<key>``,
``next_obs/<key>``; ``mask/<filter>`` lists demo names.

Isaac Lab (``HDF5DatasetFileHandler``): ``data`` attrs ``total`` and ``env_args`` (JSON with
``env_name`` and ``type``); ``data/demo_<k>`` attrs ``num_samples``, ``seed``, ``success``;
datasets ``actions``, ``obs/<key>``, ``initial_state/<kind>/<name>/<stream>`` (one row) and
``states/<kind>/<name>/<stream>`` (one row per step).

lerobot-eval (0.6.1, ``eval_policy_all``): ``eval_info.json`` with ``per_task``,
``per_group`` and ``overall``, and ``videos/<task_group>_<task_id>/eval_episode_<k>.mp4``.
"""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def lerobot_eval_info(tasks: dict[tuple[str, int], list[tuple[float, float, bool]]], folder: Path | None = None,
              video_bytes: bytes = b"\x00\x00\x00\x18ftypisom") -> dict[str, Any]:
    """An ``eval_info.json`` as lerobot 0.6.1's ``eval_policy_all`` writes it, for episodes
    ``(sum_reward, max_reward, success)`` per ``(task_group, task_id)``; with ``folder``,
    the videos of the first ten episodes of each task are written where lerobot puts them
    (their listed paths relative to the directory lerobot-eval ran in, as it lists them)."""
    per_task, groups = [], {}
    for (group, task_id), episodes in tasks.items():
        videos = []
        for k in range(min(10, len(episodes))):
            relative = Path("videos") / f"{group}_{task_id}" / f"eval_episode_{k}.mp4"
            videos.append(str(Path("outputs/eval/2026-12-02/12-00-00_pusht_act") / relative))
            if folder is not None:
                (folder / relative).parent.mkdir(parents=True, exist_ok=True)
                (folder / relative).write_bytes(video_bytes + bytes([k]))
        per_task.append({"task_group": group, "task_id": task_id, "metrics": {
            "sum_rewards": [e[0] for e in episodes], "max_rewards": [e[1] for e in episodes],
            "successes": [e[2] for e in episodes], "video_paths": videos, "predicted_video_paths": []}})
        acc = groups.setdefault(group, {"sum": [], "max": [], "success": [], "videos": []})
        acc["sum"] += [e[0] for e in episodes]
        acc["max"] += [e[1] for e in episodes]
        acc["success"] += [e[2] for e in episodes]
        acc["videos"] += videos

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else math.nan

    per_group = {g: {"avg_sum_reward": mean(a["sum"]), "avg_max_reward": mean(a["max"]),
                     "pc_success": mean([float(s) for s in a["success"]]) * 100, "n_episodes": len(a["sum"]),
                     "video_paths": a["videos"], "predicted_video_paths": []} for g, a in groups.items()}
    every = [e for episodes in tasks.values() for e in episodes]
    overall = {"avg_sum_reward": mean([e[0] for e in every]), "avg_max_reward": mean([e[1] for e in every]),
               "pc_success": mean([float(e[2]) for e in every]) * 100, "n_episodes": len(every), "eval_s": 12.5,
               "eval_ep_s": 6.25, "video_paths": [v for a in groups.values() for v in a["videos"]],
               "predicted_video_paths": []}
    return {"per_task": per_task, "per_group": per_group, "overall": overall}
