"""``labrecord export lerobot``: a LeRobot v3 dataset written through lerobot's own API.

Every frame goes through ``LeRobotDataset.create / add_frame / save_episode / finalize``,
so the dataset is whatever lerobot itself writes (parquet data, AV1 video via PyAV,
statistics, episode metadata).  lerobot is the ``[lerobot]`` extra and needs Python ≥ 3.12;
it is imported only inside :func:`export_lerobot`.

Features (from the runs' ActionSpec, the demo's observation keys and the run's cameras;
which observation is proprioception and which is evaluator state is decided in
:mod:`labrecord.exporters.observations`):

* ``action``: float32 (A,), A = ActionSpec.dim
* ``observation.state``: float32, the proprioceptive keys concatenated in sorted order
  (``names`` lists where each element came from)
* ``observation.images.<camera>``: video, one per camera (``videos/<camera>.mp4`` decoded
  and matched to the steps by time, or images kept in ``demo.hdf5``), selectable and
  resizable (:mod:`labrecord.exporters.frames`)
* ``observation.environment_state``: float32, the evaluator state, only on request,
  recorded as privileged

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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from labrecord.demos import Demo, DemoReader
from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_path, atomic_write_bytes, dumps_pretty
from labrecord.models import RunManifest

from labrecord.exporters.frames import CameraPlan, FrameSource, parse_image_size, plan_cameras
from labrecord.exporters.hdf5 import ACTION_CONVENTION, ExportSummary
from labrecord.exporters.observations import ObsRoles, classify, demo_roles, element_names, stacked
from labrecord.exporters.selection import AttemptRow, Selection, check_output, select

INSTALL_HINT = 'pip install "labrecord[lerobot]" (lerobot needs Python >= 3.12)'
EXPORT_FORMAT = "labrecord.lerobot-export/1"
METADATA_FILE = "meta/labrecord.json"
ENV_FRAME_RULES = ("split", "keep")
DEFAULT_CODEC = "libsvtav1"
ENV_STATE = "observation.environment_state"


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


@dataclass
class FeatureMap:
    """How a demo's observations become LeRobot features (roles from
    :func:`labrecord.exporters.observations.classify`, the one place that decides them).

    * ``observation.state``: the proprioceptive keys concatenated in sorted order; its
      ``names`` say which element came from which key (``robot0_eef_pos[0]`` …)
    * ``observation.images.<camera>``: one video per exported camera
    * ``observation.environment_state``: the evaluator keys concatenated, only when asked
      for (``env_state``); it is recorded as privileged in ``meta/labrecord.json``
    """

    roles: ObsRoles
    cameras: list[CameraPlan]
    state_names: list[str]
    env_names: list[str]
    env_state: bool
    shapes: dict[str, tuple[int, ...]]

    @classmethod
    def from_obs(cls, obs: dict[str, tuple[tuple[int, ...], Any]], *, listed_privileged: list[str] | None = None,
                 cameras: list[CameraPlan] | None = None, env_state: bool = False) -> FeatureMap:
        roles = classify(obs, listed_privileged or [])
        if cameras is None:  # every image kept in the demo, at its own size
            cameras = [CameraPlan(c, "demo", tuple(obs[c][0][:2]), tuple(obs[c][0][:2])) for c in roles.cameras]  # type: ignore[arg-type]
        shapes = {k: tuple(s) for k, (s, _) in obs.items()}
        state_names = [name for k in roles.proprio for name in element_names(k, shapes[k])]
        env_names = [name for k in roles.privileged for name in element_names(k, shapes[k])] if env_state else []
        return cls(roles, cameras, state_names, env_names, env_state, shapes)

    @property
    def state_keys(self) -> list[str]:
        return self.roles.proprio

    @property
    def read_keys(self) -> list[str]:
        """The observation keys the features are built from (nothing else is read)."""
        env = self.roles.privileged if self.env_names else []
        return [*self.roles.proprio, *env, *(c.name for c in self.cameras if c.source == "demo")]

    def features(self, action_dim: int, env_frames: str) -> dict[str, dict]:
        features: dict[str, dict] = {"action": {"dtype": "float32", "shape": (action_dim,), "names": None}}
        if self.state_names:
            features["observation.state"] = {"dtype": "float32", "shape": (len(self.state_names),),
                                             "names": self.state_names}
        if self.env_names:
            features[ENV_STATE] = {"dtype": "float32", "shape": (len(self.env_names),), "names": self.env_names}
        for camera in self.cameras:
            features[image_feature(camera.name)] = {"dtype": "video", "shape": (*camera.size, 3),
                                                    "names": ["height", "width", "channels"]}
        if env_frames == "keep":
            features["policy_in_control"] = {"dtype": "bool", "shape": (1,), "names": None}
        return features

    def state(self, demo: Demo) -> np.ndarray:
        """(N, S) float32 proprioception rows for a whole demo."""
        return stacked(demo.obs, self.roles.proprio, demo.num_samples)

    def environment_state(self, demo: Demo) -> np.ndarray:
        """(N, E) float32 evaluator-state rows (only exported when asked for)."""
        return stacked(demo.obs, self.roles.privileged, demo.num_samples)

    def metadata(self) -> dict[str, Any]:
        return {**self.roles.to_json(), "state_names": self.state_names,
                "environment_state": {"requested": self.env_state, "names": self.env_names,
                                      "privileged": bool(self.env_names)}}


def image_feature(camera: str) -> str:
    return f"observation.images.{camera}"


def build_features(obs: dict[str, tuple[tuple[int, ...], Any]], action_dim: int, env_frames: str,
                   env_state: bool = False) -> dict[str, dict]:
    """LeRobot feature specs for the shared observation keys and the action."""
    return FeatureMap.from_obs(obs, env_state=env_state).features(action_dim, env_frames)


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
    hz = selection.control_hz()
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


def iter_frames(demo: Demo, plan: EpisodePlan, features: FeatureMap, env_frames: str,
                images: dict[str, np.ndarray] | None = None) -> Iterator[dict[str, Any]]:
    """The ``add_frame`` dicts of one planned episode; ``images`` holds each exported
    camera's aligned (N, H, W, 3) frames for the whole demo (default: the demo's own)."""
    if images is None:
        images = {c.name: demo.obs[c.name] for c in features.cameras}
    # whole-demo float32 arrays, then one row of each per frame (views, no per-frame copies)
    columns: dict[str, np.ndarray] = {"action": demo.actions.astype(np.float32, copy=False)}
    if features.state_names:
        columns["observation.state"] = features.state(demo)
    if features.env_names:
        columns[ENV_STATE] = features.environment_state(demo)
    for camera in features.cameras:
        columns[image_feature(camera.name)] = images[camera.name]
    if env_frames == "keep":
        columns["policy_in_control"] = demo.control_mask.astype(bool).reshape(-1, 1)
    for i in range(plan.start, plan.end):
        frame: dict[str, Any] = {name: values[i] for name, values in columns.items()}
        frame["task"] = plan.task
        yield frame


@dataclass
class LerobotSummary(ExportSummary):
    """An :class:`ExportSummary` plus the camera frames written and the time spent decoding."""

    cameras: tuple[str, ...] = ()
    decode_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "cameras": list(self.cameras), "decode_s": round(self.decode_s, 3)}


def export_lerobot(runs_dir: str | os.PathLike[str], out: str | os.PathLike[str], *, repo_id: str = "local/labrecord",
                   accept: str = "success", valid_ratio: float = 0.1, seed: int = 0, env_frames: str = "split",
                   overwrite: bool = False, codec: str = DEFAULT_CODEC, cameras: Sequence[str] | None = None,
                   image_size: str | int | None = None, env_state: bool = False) -> LerobotSummary:
    """Write a LeRobot dataset at ``out``; nothing is written when the selection is empty or refused.

    ``cameras`` selects cameras by name (default: every camera of the runs), ``image_size``
    (``96`` or ``96x128``) resizes them, ``env_state`` adds the evaluator state as the
    privileged ``observation.environment_state``.
    """
    out = check_output(out, overwrite, runs_dir)
    datasets = require_lerobot()
    if env_frames not in ENV_FRAME_RULES:
        raise LabrecordError(f"env-frame rule {env_frames!r} is not one of {', '.join(ENV_FRAME_RULES)}")
    size = parse_image_size(image_size)
    selection = select(runs_dir, accept, valid_ratio=valid_ratio, seed=seed)
    obs, listed = demo_roles(selection)
    roles = classify(obs, listed)
    camera_plans = plan_cameras(selection, roles.cameras, list(cameras) if cameras is not None else None, size)
    feature_map = FeatureMap.from_obs(obs, listed_privileged=listed, cameras=camera_plans, env_state=env_state)
    features = feature_map.features(selection.action_spec().dim, env_frames)
    fps = fps_of(selection)
    plans = plan_episodes(selection, env_frames)
    if not plans:
        raise LabrecordError(f"{selection.runs_dir}: the accepted demos have no frames under policy control; "
                             "nothing exported (try --env-frames keep)")
    frame_source = FrameSource(selection, camera_plans, 1.0 / fps, order=[p.row.run_id for p in plans])
    out.parent.mkdir(parents=True, exist_ok=True)
    with frame_source, atomic_path(out, folder=True) as tmp:
        tmp.rmdir()  # LeRobotDataset.create makes its root itself
        frames = _write_dataset(datasets, tmp, repo_id, fps, features, selection, plans, feature_map, env_frames,
                                codec, frame_source)
        n_train = sum(1 for p in plans if p.row.split == "train")
        _write_metadata(tmp, selection, plans, n_train, accept, valid_ratio, seed, env_frames, feature_map)
    return LerobotSummary(out, len(plans), frames, len(selection.attempts), n_train, len(plans) - n_train,
                          tuple(c.name for c in camera_plans), frame_source.decode_s)


def _write_dataset(datasets: Any, root: Path, repo_id: str, fps: int, features: dict[str, dict], selection: Selection,
                   plans: list[EpisodePlan], feature_map: FeatureMap, env_frames: str, codec: str,
                   frame_source: FrameSource) -> int:
    from lerobot.configs.video import RGBEncoderConfig

    has_video = any(f["dtype"] == "video" for f in features.values())
    # lerobot's streaming encoder drops a frame when its queue stays full for 0.1 s (right
    # for live cameras, wrong for an export): a queue that holds a whole episode never fills.
    longest = max(plan.end - plan.start for plan in plans)
    dataset = datasets.LeRobotDataset.create(
        repo_id, fps=fps, features=features, root=root, use_videos=has_video, video_backend="pyav",
        rgb_encoder=RGBEncoderConfig(vcodec=codec), streaming_encoding=has_video, encoder_queue_maxsize=longest + 2)
    frames = 0
    loaded: tuple[str, str | None, Demo, dict[str, np.ndarray]] | None = None
    try:
        for plan in plans:
            row = plan.row
            if loaded is None or loaded[:2] != (row.run_id, row.demo):
                with DemoReader(selection.runs[row.run_id].demo_path) as reader:  # type: ignore[arg-type]
                    demo = reader.demo(row.demo, keys=feature_map.read_keys)  # type: ignore[arg-type]
                images = frame_source.frames(row.run_id, row.demo, demo.obs)  # type: ignore[arg-type]
                loaded = (row.run_id, row.demo, demo, images)
            for frame in iter_frames(loaded[2], plan, feature_map, env_frames, loaded[3]):
                dataset.add_frame(frame)
            dataset.save_episode()
            frames += plan.end - plan.start
    finally:
        dataset.finalize()
    return frames




def _write_metadata(root: Path, selection: Selection, plans: list[EpisodePlan], n_train: int, accept: str,
                    valid_ratio: float, seed: int, env_frames: str, feature_map: FeatureMap) -> None:
    from lerobot.datasets.io_utils import load_info, write_info

    info = load_info(root)
    info.splits = {"train": f"0:{n_train}"} | ({"valid": f"{n_train}:{len(plans)}"} if len(plans) > n_train else {})
    write_info(info, root)
    exported: dict[tuple[str, str | None], list[int]] = {}
    for index, plan in enumerate(plans):
        exported.setdefault((plan.row.run_id, plan.row.demo), []).append(index)
    attempts = []
    for row in selection.attempts:
        record = row.to_json()
        episodes = exported.get((row.run_id, row.demo), []) if row.accepted else []
        record["exported_episodes"] = episodes
        if row.accepted:
            record["note"] = (f"exported ({row.split}) as episode(s) {', '.join(map(str, episodes))}" if episodes
                              else "accepted, but no frame was under policy control (--env-frames split)")
        attempts.append(record)
    document = {
        "format": EXPORT_FORMAT,
        "acceptance": {"rule": accept, "valid_ratio": valid_ratio, "seed": seed},
        "env_frames": {"rule": env_frames,
                       "meaning": "each stretch of policy control is its own episode" if env_frames == "split"
                       else "all frames kept; policy_in_control marks who was in control"},
        "action_spec": msgspec.to_builtins(selection.action_spec()),
        "action_convention": ACTION_CONVENTION.replace("actions[i]", "action[i]").replace("obs[i]", "frame i").replace("control_hz", "fps"),
        "observations": feature_map.metadata(),
        "privileged_features": [ENV_STATE] if feature_map.env_names else [],
        "cameras": [c.to_json() for c in feature_map.cameras],
        "source_runs": list(dict.fromkeys(r.run_id for r in selection.accepted)),
        "splits": info.splits,
        "episodes": [{"episode_index": i, "split": p.row.split, "run_id": p.row.run_id, "source_demo": p.row.demo,
                      "source_episode": p.row.episode, "source_frames": [p.start, p.end], "success": p.row.success,
                      "task": p.task} for i, p in enumerate(plans)],
        "attempts": attempts,
    }
    atomic_write_bytes(root / METADATA_FILE, dumps_pretty(document))


def read_export_metadata(root: str | os.PathLike[str]) -> dict[str, Any]:
    """``meta/labrecord.json`` of an exported dataset."""
    path = Path(root) / METADATA_FILE
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError as error:
        raise LabrecordError(f"{path}: missing; not a labrecord LeRobot export") from error
