"""``labrecord export lerobot``: a LeRobot v3 dataset written through lerobot's own API.

Every frame goes through ``LeRobotDataset.create / add_frame / save_episode / finalize``,
so the dataset is whatever lerobot itself writes (parquet data, AV1 video via PyAV,
statistics, episode metadata).  lerobot is the ``[lerobot]`` extra and needs Python ≥ 3.12;
it is imported only inside :func:`export_lerobot`.

Features (from the runs' ActionSpec and the demo's observation keys):

* ``action``: float32 (A,), A = ActionSpec.dim
* ``observation.state``: float32, the obs key ``state``, or else every low-dimensional
  obs key concatenated in sorted order (``names`` lists where each element came from)
* ``observation.images.<camera>``: video, from every (H, W, 3) uint8 obs key
* ``observation.<key>``: float32, other low-dimensional keys when ``state`` exists

Frames where the environment was in control (``control_mask`` false) follow a declared
rule: ``split`` (default) cuts the demo there, so each stretch of policy control becomes
its own LeRobot episode; ``keep`` keeps every frame and adds a ``policy_in_control``
feature.  Diagnostics (hidden masses, legal sets, scores) are never read.

The acceptance rule, the split assignment and the source of every episode are written
to ``meta/labrecord.json``; the train/valid split is also in ``meta/info.json``'s
``splits`` (train episodes first, so both are index ranges).
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from labrecord.demos import Demo, DemoReader
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_path, atomic_write_bytes, dumps_pretty
from labrecord.models import RunManifest

from labrecord.exporters.hdf5 import ExportSummary
from labrecord.exporters.selection import AttemptRow, Selection, check_output, check_same_obs, select

INSTALL_HINT = 'pip install "labrecord[lerobot]" (lerobot needs Python >= 3.12)'
EXPORT_FORMAT = "labrecord.lerobot-export/1"
METADATA_FILE = "meta/labrecord.json"
ENV_FRAME_RULES = ("split", "keep")
DEFAULT_CODEC = "libsvtav1"


def require_lerobot() -> Any:
    """Import lerobot's dataset module or say how to install it."""
    if sys.version_info < (3, 12):
        raise LabrecordError(f"the LeRobot export needs lerobot, which needs Python >= 3.12 "
                             f"(this is {sys.version_info.major}.{sys.version_info.minor}); "
                             f"in a Python 3.12 environment run: {INSTALL_HINT}")
    try:
        import lerobot.datasets as datasets
    except ImportError as error:
        raise LabrecordError(f"the LeRobot export needs lerobot ({error}); install it with: {INSTALL_HINT}") from error
    return datasets


def is_camera(shape: tuple[int, ...], dtype: Any) -> bool:
    return len(shape) == 3 and shape[-1] == 3 and np.dtype(dtype) == np.uint8


@dataclass
class FeatureMap:
    """How demo observation keys become LeRobot features.

    ``observation.state`` is the demo's ``state`` key when it has one; otherwise it is the
    concatenation of every low-dimensional key in sorted order (robomimic-style demos keep
    ``robot0_eef_pos``, ``robot0_gripper_qpos`` … apart), and its ``names`` say which
    element came from which key.  Cameras become ``observation.images.<key>`` videos; with
    an explicit ``state`` key the other low-dimensional keys keep their own
    ``observation.<key>`` features.
    """

    cameras: dict[str, str]
    state_keys: list[str]
    state_names: list[str]
    separate: dict[str, str]
    shapes: dict[str, tuple[int, ...]]

    @classmethod
    def from_obs(cls, obs: dict[str, tuple[tuple[int, ...], Any]]) -> FeatureMap:
        cameras: dict[str, str] = {}
        low_dim: dict[str, tuple[int, ...]] = {}
        for key, (shape, dtype) in sorted(obs.items()):
            if is_camera(shape, dtype):
                cameras[key] = f"observation.images.{key}"
            elif np.issubdtype(np.dtype(dtype), np.number) or np.dtype(dtype) == np.bool_:
                low_dim[key] = tuple(shape)
            else:
                raise LabrecordError(f"observation {key!r} has dtype {dtype}; only numbers and (H, W, 3) uint8 images export")
        state_keys = ["state"] if "state" in low_dim else sorted(low_dim)
        separate = {k: f"observation.{k}" for k in low_dim if k not in state_keys}
        names = [name for k in state_keys for name in _element_names(k, low_dim[k])]
        return cls(cameras, state_keys, names, separate, {k: tuple(s) for k, (s, _) in obs.items()})

    def features(self, action_dim: int, env_frames: str) -> dict[str, dict]:
        features: dict[str, dict] = {"action": {"dtype": "float32", "shape": (action_dim,), "names": None}}
        if self.state_keys:
            features["observation.state"] = {"dtype": "float32", "shape": (len(self.state_names),),
                                             "names": self.state_names}
        for key, name in self.separate.items():
            features[name] = {"dtype": "float32", "shape": (int(np.prod(self.shapes[key], dtype=int)),), "names": None}
        for key, name in self.cameras.items():
            features[name] = {"dtype": "video", "shape": self.shapes[key], "names": ["height", "width", "channels"]}
        if env_frames == "keep":
            features["policy_in_control"] = {"dtype": "bool", "shape": (1,), "names": None}
        return features

    def state(self, demo: Demo) -> np.ndarray:
        """(N, S) float32 state rows for a whole demo."""
        parts = [demo.obs[k].reshape(demo.num_samples, -1) for k in self.state_keys]
        return np.concatenate(parts, axis=1).astype(np.float32)


def _element_names(key: str, shape: tuple[int, ...]) -> list[str]:
    size = int(np.prod(shape, dtype=int))
    return [key] if size == 1 else [f"{key}[{i}]" for i in range(size)]


def build_features(obs: dict[str, tuple[tuple[int, ...], Any]], action_dim: int, env_frames: str) -> dict[str, dict]:
    """LeRobot feature specs for the shared observation keys and the action."""
    return FeatureMap.from_obs(obs).features(action_dim, env_frames)


def task_string(manifest: RunManifest, env_args: dict[str, Any] | None = None) -> str:
    """The language task: the run's instruction (``task.variant.instruction`` or the demo's
    ``env_args.labrecord.instruction``) if it has one, else built from goal and rule."""
    task = manifest.task
    variant = dict(task.variant)
    recorded = dict((env_args or {}).get("labrecord") or {})
    for instruction in (variant.pop("instruction", None), recorded.get("instruction")):
        if isinstance(instruction, str) and instruction:
            return instruction
    goal = variant.pop("goal", None)
    rule = variant.pop("rule", None)
    if goal is None and variant:
        goal = ", ".join(f"{k}={variant[k]}" for k in sorted(variant))
    parts = [f"{task.family} ({task.condition}): {task.task_id}"]
    if goal is not None:
        parts.append(f"goal: {goal}")
    if rule is not None:
        parts.append(f"rule: {rule}")
    return "; ".join(parts)


def control_segments(mask: np.ndarray) -> list[tuple[int, int]]:
    """Half-open ``[start, end)`` ranges where ``mask`` is true, in order.

    >>> control_segments(np.array([1, 1, 0, 0, 1], dtype=bool))
    [(0, 2), (4, 5)]
    """
    padded = np.concatenate([[False], mask.astype(bool), [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


@dataclass
class EpisodePlan:
    """One LeRobot episode: a stretch ``[start, end)`` of one accepted demo."""

    row: AttemptRow
    start: int
    end: int
    task: str


def fps_of(selection: Selection) -> int:
    hz = selection.action_spec().control_hz
    if hz <= 0 or abs(hz - round(hz)) > 1e-9:
        raise LabrecordError(f"control_hz {hz} of run {selection.accepted[0].run_id!r} is not a whole number; "
                             "LeRobot datasets need an integer fps")
    return int(round(hz))


def plan_episodes(selection: Selection, env_frames: str) -> list[EpisodePlan]:
    """Train episodes first, then valid, each in run order; segments per the env-frame rule."""
    plans: list[EpisodePlan] = []
    for split in ("train", "valid"):
        for row in (r for r in selection.accepted if r.split == split):
            source = selection.runs[row.run_id]
            task = task_string(source.manifest, source.env_args)
            if env_frames == "keep":
                plans.append(EpisodePlan(row, 0, row.num_samples, task))
                continue
            with DemoReader(source.demo_path) as reader:  # type: ignore[arg-type]
                mask = reader.demo(row.demo, keys=[]).control_mask  # type: ignore[arg-type]
            plans.extend(EpisodePlan(row, a, b, task) for a, b in control_segments(mask))
    return plans


def iter_frames(demo: Demo, plan: EpisodePlan, features: FeatureMap, env_frames: str) -> Iterator[dict[str, Any]]:
    """The ``add_frame`` dicts of one planned episode."""
    state = features.state(demo) if features.state_keys else None
    for i in range(plan.start, plan.end):
        frame: dict[str, Any] = {"action": demo.actions[i].astype(np.float32), "task": plan.task}
        if state is not None:
            frame["observation.state"] = state[i]
        for key, name in features.separate.items():
            frame[name] = np.ravel(demo.obs[key][i]).astype(np.float32)
        for key, name in features.cameras.items():
            frame[name] = demo.obs[key][i]
        if env_frames == "keep":
            frame["policy_in_control"] = np.array([bool(demo.control_mask[i])])
        yield frame


def export_lerobot(runs_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, repo_id: str = "local/labrecord",
                   accept: str = "success", valid_ratio: float = 0.1, seed: int = 0, env_frames: str = "split",
                   overwrite: bool = False, codec: str = DEFAULT_CODEC) -> ExportSummary:
    """Write a LeRobot dataset at ``out``; nothing is written when the selection is empty or refused."""
    datasets = require_lerobot()
    if env_frames not in ENV_FRAME_RULES:
        raise LabrecordError(f"env-frame rule {env_frames!r} is not one of {', '.join(ENV_FRAME_RULES)}")
    out = check_output(out, overwrite)
    selection = select(runs_dir, accept, valid_ratio=valid_ratio, seed=seed)
    obs = check_same_obs(selection)
    feature_map = FeatureMap.from_obs(obs)
    features = feature_map.features(selection.action_spec().dim, env_frames)
    fps = fps_of(selection)
    plans = plan_episodes(selection, env_frames)
    if not plans:
        raise LabrecordError(f"{selection.runs_dir}: the accepted demos have no frames under policy control; "
                             "nothing exported (try --env-frames keep)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out, folder=True) as tmp:
        tmp.rmdir()  # LeRobotDataset.create makes its root itself
        frames = _write_dataset(datasets, tmp, repo_id, fps, features, selection, plans, feature_map, env_frames,
                                codec)
        n_train = sum(1 for p in plans if p.row.split == "train")
        _write_metadata(tmp, selection, plans, n_train, accept, valid_ratio, seed, env_frames)
    return ExportSummary(out, len(plans), frames, len(selection.attempts), n_train, len(plans) - n_train)


def _write_dataset(datasets: Any, root: Path, repo_id: str, fps: int, features: dict[str, dict], selection: Selection,
                   plans: list[EpisodePlan], feature_map: FeatureMap, env_frames: str, codec: str) -> int:
    from lerobot.configs.video import RGBEncoderConfig

    has_video = any(f["dtype"] == "video" for f in features.values())
    # lerobot's streaming encoder drops a frame when its queue stays full for 0.1 s (right
    # for live cameras, wrong for an export): a queue that holds a whole episode never fills.
    longest = max(plan.end - plan.start for plan in plans)
    dataset = datasets.LeRobotDataset.create(
        repo_id, fps=fps, features=features, root=root, use_videos=has_video, video_backend="pyav",
        rgb_encoder=RGBEncoderConfig(vcodec=codec), streaming_encoding=has_video, encoder_queue_maxsize=longest + 2)
    frames = 0
    loaded: tuple[str, str, Demo] | None = None
    try:
        for plan in plans:
            row = plan.row
            if loaded is None or loaded[:2] != (row.run_id, row.demo):
                with DemoReader(selection.runs[row.run_id].demo_path) as reader:  # type: ignore[arg-type]
                    loaded = (row.run_id, row.demo, reader.demo(row.demo))  # type: ignore[arg-type]
            for frame in iter_frames(loaded[2], plan, feature_map, env_frames):
                dataset.add_frame(frame)
            dataset.save_episode()
            frames += plan.end - plan.start
    finally:
        dataset.finalize()
    return frames


def _write_metadata(root: Path, selection: Selection, plans: list[EpisodePlan], n_train: int, accept: str,
                    valid_ratio: float, seed: int, env_frames: str) -> None:
    from lerobot.datasets.io_utils import load_info, write_info

    info = load_info(root)
    info.splits = {"train": f"0:{n_train}"} | ({"valid": f"{n_train}:{len(plans)}"} if len(plans) > n_train else {})
    write_info(info, root)
    document = {
        "format": EXPORT_FORMAT,
        "acceptance": {"rule": accept, "valid_ratio": valid_ratio, "seed": seed},
        "env_frames": {"rule": env_frames,
                       "meaning": "each stretch of policy control is its own episode" if env_frames == "split"
                       else "all frames kept; policy_in_control marks who was in control"},
        "action_spec": msgspec.to_builtins(selection.action_spec()),
        "splits": info.splits,
        "episodes": [{"episode_index": i, "split": p.row.split, "run_id": p.row.run_id, "source_demo": p.row.demo,
                      "source_episode": p.row.episode, "source_frames": [p.start, p.end], "success": p.row.success,
                      "task": p.task} for i, p in enumerate(plans)],
        "attempts": [row.to_json() for row in selection.attempts],
    }
    atomic_write_bytes(root / METADATA_FILE, dumps_pretty(document))


def read_export_metadata(root: str | os.PathLike[str]) -> dict[str, Any]:
    """``meta/labrecord.json`` of an exported dataset."""
    path = Path(root) / METADATA_FILE
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError as error:
        raise LabrecordError(f"{path}: missing; not a labrecord LeRobot export") from error
