"""Which recorded observations a training export may use: the one place that decides.

A demonstration's ``obs/<key>`` arrays are of three kinds:

* **cameras**: (H, W, 3) uint8 arrays kept in ``demo.hdf5``, and the run's
  ``videos/<camera>.mp4`` streams (see :mod:`labrecord.exporters.frames`);
* **proprioception**: what the robot knows about itself.  By the robomimic naming
  convention every ``robot0_*`` key (``robot0_joint_pos``, ``robot0_joint_vel``,
  ``robot0_gripper_qpos``, ``robot0_eef_pos``, ``robot0_eef_quat`` …).  Runs written
  before that convention (no ``robot0_*`` key) count the keys that describe the gripper or
  arm itself (:data:`LEGACY_PROPRIO`: ``state``, ``eef_*``, ``gripper_*``, ``joint_*``);
* **evaluator state**: everything else (display readings, stability flags, object poses),
  and every key the demo lists in its ``privileged_obs`` attribute (a JSON list), even
  one named ``robot0_*``.

Only proprioception becomes ``observation.state``.  Evaluator state becomes a feature
only when an export is asked for it explicitly (``--env-state``), and is then recorded
as privileged in the export's metadata.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError

PROPRIO_PREFIX = "robot0_"
PRIVILEGED_ATTR = "privileged_obs"
#: keys of pre-convention runs that describe the robot itself: exact names and prefixes
LEGACY_PROPRIO = ("state", "eef_", "gripper_", "joint_")


def is_camera(shape: tuple[int, ...], dtype: Any) -> bool:
    """An (H, W, 3) uint8 array."""
    return len(shape) == 3 and shape[-1] == 3 and np.dtype(dtype) == np.uint8


def privileged_keys(attrs: Mapping[str, Any], where: str) -> list[str]:
    """The demo's ``privileged_obs`` attribute as a list of keys (absent: none)."""
    raw = attrs.get(PRIVILEGED_ATTR)
    if raw is None:
        return []
    try:
        value = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except json.JSONDecodeError as error:
        raise LabrecordError(f"{where}: attribute {PRIVILEGED_ATTR!r} is not JSON: {str(raw)[:80]!r}") from error
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise LabrecordError(f"{where}: attribute {PRIVILEGED_ATTR!r} must be a JSON list of observation keys, "
                             f"got {str(raw)[:80]!r}")
    return sorted(value)


def _is_legacy_proprio(key: str) -> bool:
    return any(key == p if not p.endswith("_") else key.startswith(p) for p in LEGACY_PROPRIO)


@dataclass(frozen=True)
class ObsRoles:
    """The observation keys of a demo, by role (each list sorted)."""

    cameras: list[str]
    proprio: list[str]
    privileged: list[str]
    rule: str

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "proprioception": self.proprio, "evaluator": self.privileged,
                "cameras_in_demo": self.cameras}


def classify(obs: Mapping[str, tuple[tuple[int, ...], Any]], listed_privileged: Sequence[str] = ()) -> ObsRoles:
    """Split observation keys into cameras, proprioception and evaluator state.

    >>> shapes = {"robot0_eef_pos": ((3,), "float32"), "object": ((7,), "float32"), "front": ((8, 8, 3), "uint8")}
    >>> classify(shapes)
    ObsRoles(cameras=['front'], proprio=['robot0_eef_pos'], privileged=['object'], rule='robot0_* keys')
    """
    cameras, low_dim = [], []
    for key, (shape, dtype) in sorted(obs.items()):
        if is_camera(tuple(shape), dtype):
            cameras.append(key)
        elif np.issubdtype(np.dtype(dtype), np.number) or np.dtype(dtype) == np.bool_:
            low_dim.append(key)
        else:
            raise LabrecordError(f"observation {key!r} has dtype {dtype}; only numbers and (H, W, 3) uint8 images export")
    listed = set(listed_privileged)
    candidates = [k for k in low_dim if k not in listed]
    if any(k.startswith(PROPRIO_PREFIX) for k in low_dim):
        proprio, rule = [k for k in candidates if k.startswith(PROPRIO_PREFIX)], "robot0_* keys"
    else:
        proprio, rule = [k for k in candidates if _is_legacy_proprio(k)], "pre-convention: state, eef_*, gripper_*, joint_*"
    return ObsRoles(cameras, proprio, sorted(set(low_dim) - set(proprio)), rule)


def element_names(key: str, shape: tuple[int, ...]) -> list[str]:
    """Per-element feature names: ``key`` for a scalar, ``key[i]`` otherwise."""
    size = int(np.prod(shape, dtype=int))
    return [key] if size == 1 else [f"{key}[{i}]" for i in range(size)]


def stacked(obs: Mapping[str, np.ndarray], keys: Sequence[str], n: int) -> np.ndarray:
    """(n, S) float32: the ``keys`` flattened per row and concatenated in order."""
    if not keys:
        return np.zeros((n, 0), dtype=np.float32)
    return np.concatenate([np.asarray(obs[k]).reshape(n, -1) for k in keys], axis=1).astype(np.float32)


def demo_roles(selection: Any) -> tuple[dict[str, tuple[tuple[int, ...], Any]], list[str]]:
    """Observation shapes shared by every accepted demo (refusing a mismatch) and the keys
    any of them lists as privileged."""
    from labrecord.demos import DemoReader
    from labrecord.exporters.selection import check_same_obs

    obs = check_same_obs(selection)
    listed: set[str] = set()
    for row in selection.accepted:
        path = selection.runs[row.run_id].demo_path
        with DemoReader(path) as reader:
            attrs = reader.demo(row.demo, keys=[]).attrs
        listed.update(privileged_keys(attrs, f"{path} data/{row.demo}"))
    return obs, sorted(listed)
