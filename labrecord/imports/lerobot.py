"""LeRobot v3 dataset folders, read through lerobot's own ``LeRobotDataset``.

One run per episode (``episode_<index>``): its task text becomes ``task.variant.instruction``,
``fps`` the control rate, and the frames the demonstration (``demo.hdf5``):

* ``action`` → ``actions``;
* ``observation.state`` → observation keys split back by its feature ``names``
  (``robot0_eef_pos[0..2]`` → ``robot0_eef_pos`` (3,), ``robot0_gripper_qpos`` → (1,)), as
  labrecord's export names them; names with no ``key[i]`` among them (``x, y``) and names
  that do not line up keep the whole vector as ``state``;
* ``observation.environment_state`` → keys split the same way, listed as privileged;
* ``observation.images.<camera>`` (video or image) → ``obs/<camera>`` (H, W, 3) uint8 frames,
  decoded by lerobot;
* ``policy_in_control`` → ``control_mask``; ``next.reward`` → ``rewards``, ``next.done`` →
  ``dones``; ``next.success`` of the last frame → the outcome (else unknown).

LeRobot keeps no observation after an episode's last frame: ``next_obs`` is the next
frame's observation, and for the last row that frame's own (the demo attribute
``next_obs_last`` says so).  lerobot needs Python >= 3.12 (scripts/install-lerobot-venv.sh).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.imports.runs import ImportOptions, RecordError, SourceFile, SourceRecord
from labrecord.rundir import DEMO_FILE

INSTALL_HINT = "bash scripts/install-lerobot-venv.sh (a Python 3.12 venv with lerobot[dataset])"
STATE = "observation.state"
ENV_STATE = "observation.environment_state"
IMAGES = "observation.images."
_ELEMENT = re.compile(r"^(.+)\[(\d+)\]$")


def _require_lerobot() -> Any:
    if sys.version_info < (3, 12):
        raise LabrecordError(f"importing a LeRobot dataset needs lerobot, which needs Python >= 3.12 "
                             f"(this is {sys.version_info.major}.{sys.version_info.minor}): {INSTALL_HINT}")
    try:
        import lerobot.datasets as datasets
    except ImportError as error:
        raise LabrecordError(f"importing a LeRobot dataset needs lerobot ({error}): {INSTALL_HINT}") from error
    return datasets


def split_by_names(names: Sequence[str] | None, width: int, fallback: str) -> list[tuple[str, slice]]:
    """Observation keys and their columns in a concatenated vector, from its feature names.

    >>> split_by_names(["eef[0]", "eef[1]", "grip"], 3, "state")
    [('eef', slice(0, 2, None)), ('grip', slice(2, 3, None))]
    >>> split_by_names(["x", "y"], 2, "state")
    [('state', slice(0, 2, None))]
    """
    if not names or len(names) != width or not any(_ELEMENT.match(str(name)) for name in names):
        # plain names (x, y, joint_0 ...) describe elements, not the keys they came from
        return [(fallback, slice(0, width))]
    keys: list[tuple[str, slice]] = []
    for column, name in enumerate(names):
        match = _ELEMENT.match(str(name))
        key, element = (match.group(1), int(match.group(2))) if match else (str(name), 0)
        if keys and keys[-1][0] == key and element == keys[-1][1].stop - keys[-1][1].start:
            keys[-1] = (key, slice(keys[-1][1].start, column + 1))
        elif element == 0 and all(k != key for k, _ in keys):
            keys.append((key, slice(column, column + 1)))
        else:
            return [(fallback, slice(0, width))]
    return keys


def _column(rows: Any, name: str) -> np.ndarray:
    return np.stack([np.asarray(v) for v in rows[name]]) if len(rows) else np.zeros((0,))


def lerobot_source(path: str, options: ImportOptions) -> SourceFile:
    datasets = _require_lerobot()
    root = Path(path)
    info_path = root / "meta" / "info.json"
    if not info_path.is_file():
        raise LabrecordError(f"{root}: no meta/info.json; expected a LeRobot v3 dataset folder")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise LabrecordError(f"{info_path}: not JSON ({error})") from None
    try:
        dataset = datasets.LeRobotDataset(f"local/{root.name}", root=root, video_backend="pyav")
    except Exception as error:  # lerobot raises many kinds; the user needs the one line
        raise LabrecordError(f"{root}: lerobot cannot open the dataset: {type(error).__name__}: {error}") from None
    features: dict[str, Any] = dict(dataset.meta.features)
    records: list[SourceRecord | LabrecordError] = []
    episodes = dataset.meta.episodes
    for row in range(len(episodes)):
        episode = episodes[row]
        name = f"episode_{int(episode['episode_index']):06d}"
        try:
            records.append(_read_episode(dataset, features, episode, name, str(root)))
        except RecordError as error:
            records.append(error)
        except Exception as error:  # a decoding failure of one episode leaves the others
            records.append(RecordError(f"{root}: {name}: unreadable ({type(error).__name__}: {error})", name))
    return SourceFile(kind="lerobot", path=os.path.abspath(root), stem=root.name,
                      format_version=info.get("codebase_version"), task_id=None, control_hz=float(dataset.fps),
                      records=records, variant={})


def _read_episode(dataset: Any, features: dict[str, Any], episode: dict[str, Any], name: str, where: str) -> SourceRecord:
    start, stop = int(episode["dataset_from_index"]), int(episode["dataset_to_index"])
    n = stop - start
    if n <= 0 or n != int(episode["length"]):
        raise RecordError(f"{where}: {name} has length {episode['length']} but rows {start}..{stop}", name)
    rows = dataset.hf_dataset.select(range(start, stop))
    actions = _column(rows, "action").astype(np.float64).reshape(n, -1)
    obs: dict[str, np.ndarray] = {}
    privileged: list[str] = []
    for feature, fallback in ((STATE, "state"), (ENV_STATE, "environment_state")):
        if feature not in features:
            continue
        vector = _column(rows, feature).astype(np.float64).reshape(n, -1)
        for key, columns in split_by_names(features[feature].get("names"), vector.shape[1], fallback):
            obs[key] = vector[:, columns]
            if feature == ENV_STATE:
                privileged.append(key)
    cameras = [k for k in features if k.startswith(IMAGES)]
    for camera in cameras:
        frames = []
        for index in range(start, stop):
            image = dataset[index][camera].numpy()  # (C, H, W) float in [0, 1], decoded by lerobot
            frames.append((image.transpose(1, 2, 0) * 255.0).round().clip(0, 255).astype(np.uint8))
        obs[camera[len(IMAGES):]] = np.stack(frames)
    control = _column(rows, "policy_in_control").reshape(n).astype(bool) if "policy_in_control" in features else None
    rewards = _column(rows, "next.reward").reshape(n).astype(np.float64) if "next.reward" in features else np.zeros(n)
    dones = _column(rows, "next.done").reshape(n).astype(bool) if "next.done" in features else np.eye(1, n, n - 1)[0] > 0
    success = bool(_column(rows, "next.success").reshape(n)[-1]) if "next.success" in features else None
    tasks = [str(t) for t in episode["tasks"]]
    digest = hashlib.sha256(json.dumps({"tasks": tasks, "features": sorted(features)}, sort_keys=True).encode())
    for key in sorted(obs):
        digest.update(key.encode() + np.ascontiguousarray(obs[key]).tobytes())
    for array in (actions, rewards, dones, control if control is not None else np.zeros(0)):
        digest.update(np.ascontiguousarray(array).tobytes())
    index = int(episode["episode_index"])
    attrs = {"episode_index": index, "length": n, "tasks": tasks, "dataset_from_index": start}

    def write_demo(path: Path, run_id: str) -> None:
        from labrecord.demos import DemoWriter

        next_obs = {k: np.concatenate([v[1:], v[-1:]]) for k, v in obs.items()}
        with DemoWriter(path, {"env_name": f"lerobot:{Path(where).name}",
                               "labrecord": {"instruction": tasks[0] if tasks else None}}, overwrite=True,
                        durable=False) as demo:
            extra: dict[str, Any] = {"privileged_obs": privileged} if privileged else {}
            demo.begin(run_id, index, control_hz=float(dataset.fps), next_obs_last="repeated: the source ends here",
                       **extra)
            demo.add_steps(obs, actions, next_obs, rewards, dones, control_mask=control)
            demo.end(success)
            demo.close(accept="all")

    return SourceRecord(name=name, index=index, content_hash="sha256:" + digest.hexdigest(), attrs=attrs,
                        num_samples=n, success=success, task_id=tasks[0] if tasks else None,
                        action_dim=int(actions.shape[1]), copy_to=write_demo, copy_name=DEMO_FILE,
                        variant={"instruction": tasks[0]} if tasks else {})
