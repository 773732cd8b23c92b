"""A thin adapter that drives the recorder core from an Isaac Sim world (``[isaacsim]`` extra).

The weighing balance is an articulation whose pan link hangs on a fixed (or stiff)
tray-support joint: the joint's incoming wrench, read with
``Articulation.get_measured_joint_forces()`` after each physics step, is the load cell
(Labference sec. 8.2).  Everything that turns those sensor readings into the weighing
measurement columns is a pure function here, tested without Isaac Sim:

* :func:`quat_wxyz_to_matrix` — Isaac Sim's (w, x, y, z) quaternions to rotation matrices;
* :func:`support_force_up` — F↑: the incoming joint force rotated to the world and
  projected on the up direction (opposite gravity);
* :func:`sensing_axis_error_deg` / :func:`check_sensing_axis` — the tray's sensing axis
  checked against gravity before calibration;
* :func:`calibrate_empty` — F↑_empty from a settled empty-pan window (refuses a sign-flipped
  or unsettled reading);
* :func:`contact_codes` / :func:`weighing_columns` — contact-report body pairs and object
  velocities to the same columns the MuJoCo bench writes.

:class:`IsaacSimWeighingEnv` wires those functions to live Isaac Sim objects.  It is not
exercised here (no Isaac Sim on these machines); ``docs/simulator.md`` says exactly what is
verified and what is not.  Nothing imports Isaac Sim at module import time.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.recorders.contacts import ENTITY_CODES, OBJECT0, hand_on_pan, pairs_matrix, robot_touch, supported_by_pan


def quat_wxyz_to_matrix(q: Sequence[float]) -> np.ndarray:
    """(3, 3) rotation matrix of a unit quaternion given as (w, x, y, z); normalizes first."""
    w, x, y, z = (float(v) for v in q)
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if not norm or not math.isfinite(norm):
        raise LabrecordError(f"quaternion {tuple(q)!r}: zero or non-finite norm")
    w, x, y, z = w / norm, x / norm, y / norm, z / norm
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def up_direction(gravity: Sequence[float]) -> np.ndarray:
    """Unit vector opposite gravity."""
    g = np.asarray(gravity, dtype=float)
    norm = float(np.linalg.norm(g))
    if not norm or not math.isfinite(norm):
        raise LabrecordError(f"gravity {tuple(gravity)!r}: zero or non-finite")
    return -g / norm


def support_force_up(wrench: Sequence[float], joint_quat_wxyz: Sequence[float], gravity: Sequence[float]) -> float:
    """F↑ (N): the incoming joint force on the pan link, in the world, along −gravity.

    ``wrench`` is one row of ``get_measured_joint_forces`` (fx, fy, fz, tx, ty, tz) in the
    joint's child frame, ``joint_quat_wxyz`` that frame's world orientation.  A loaded pan
    is pushed up by its support, so F↑ grows with the load (eq. 8 subtracts F↑_empty).
    """
    force = np.asarray(wrench, dtype=float)[:3]
    return float(quat_wxyz_to_matrix(joint_quat_wxyz) @ force @ up_direction(gravity))


def sensing_axis_error_deg(axis_local: Sequence[float], joint_quat_wxyz: Sequence[float], gravity: Sequence[float]) -> float:
    """Angle (deg) between the joint's sensing axis in the world and the up direction."""
    axis = quat_wxyz_to_matrix(joint_quat_wxyz) @ np.asarray(axis_local, dtype=float)
    norm = float(np.linalg.norm(axis))
    if not norm:
        raise LabrecordError(f"sensing axis {tuple(axis_local)!r}: zero vector")
    cosine = float(np.clip(axis @ up_direction(gravity) / norm, -1.0, 1.0))
    return math.degrees(math.acos(cosine))


def check_sensing_axis(axis_local: Sequence[float], joint_quat_wxyz: Sequence[float], gravity: Sequence[float],
                       max_deg: float = 2.0) -> float:
    """Refuse a load cell whose sensing axis is tilted more than ``max_deg`` from vertical."""
    error = sensing_axis_error_deg(axis_local, joint_quat_wxyz, gravity)
    if error > max_deg:
        raise LabrecordError(f"pan support joint: sensing axis is {error:.2f} deg from vertical (limit {max_deg} deg)")
    return error


def calibrate_empty(force_up: Sequence[float], max_spread_n: float = 1e-3) -> float:
    """F↑_empty: the mean of a settled empty-pan window of F↑ samples (N).

    The pan's own weight must read positive (otherwise the joint's sign convention is the
    opposite of what :func:`support_force_up` assumes) and the window must be settled.
    """
    samples = np.asarray(force_up, dtype=float)
    if samples.size < 2 or not np.isfinite(samples).all():
        raise LabrecordError(f"empty-pan calibration: need >= 2 finite samples, got {samples.tolist()!r}")
    spread = float(samples.max() - samples.min())
    if spread > max_spread_n:
        raise LabrecordError(f"empty-pan calibration: window not settled (spread {spread:.4g} N > {max_spread_n} N)")
    mean = float(samples.mean())
    if mean <= 0:
        raise LabrecordError(f"empty-pan calibration: F_up_empty = {mean:.4g} N is not positive; the support joint's "
                             "force sign is flipped relative to gravity")
    return mean


def contact_codes(path: str, entities: Mapping[str, int]) -> int:
    """Entity code of a prim path: the longest registered prefix wins (``other`` if none)."""
    best, code = -1, ENTITY_CODES["other"]
    for prefix, value in entities.items():
        if (path == prefix or path.startswith(prefix.rstrip("/") + "/")) and len(prefix) > best:
            best, code = len(prefix), value
    return code


def entity_table(table: str, pan: str, finger_left: str, finger_right: str, palm: str,
                 objects: Sequence[str], robot: str | None = None) -> dict[str, int]:
    """Prim-path prefix -> entity code, objects in order (the sample first); ``robot``, the
    robot's root prim, makes every other link under it the ``arm`` entity (the hand's
    longer prefixes still win), so any link touching the load counts as robot contact."""
    entities = {table: ENTITY_CODES["table"], pan: ENTITY_CODES["pan"], finger_left: ENTITY_CODES["finger_left"],
                finger_right: ENTITY_CODES["finger_right"], palm: ENTITY_CODES["palm"]}
    if robot is not None:
        entities[robot] = ENTITY_CODES["arm"]
    entities.update({path: OBJECT0 + i for i, path in enumerate(objects)})
    return entities


def weighing_columns(step0: int, t: Sequence[float], force_up: Sequence[float], sensor_ok: Sequence[bool],
                     contacts: Sequence[Sequence[tuple[str, str]]], entities: Mapping[str, int],
                     velocities: np.ndarray, gripper_closed: Sequence[bool], standards: Sequence[str],
                     pan_speed: Sequence[float] | None = None) -> dict[str, np.ndarray]:
    """The weighing measurement columns of n steps from Isaac Sim readings.

    ``contacts[i]`` lists the (prim, prim) pairs in contact at step i; ``velocities`` is
    (n, k, 3) linear velocities of the k objects (sample first, then ``standards``).
    """
    n = len(t)
    n_objects = velocities.shape[1]
    codes = [[(contact_codes(a, entities), contact_codes(b, entities)) for a, b in step] for step in contacts]
    touch = pairs_matrix(codes, n_objects)
    on_pan = supported_by_pan(touch)
    contact, bilateral = robot_touch(touch)
    closed = np.asarray(gripper_closed, dtype=bool)
    speed = np.sqrt((np.asarray(velocities, dtype=float) ** 2).sum(axis=2))
    columns: dict[str, np.ndarray] = {
        "step": np.arange(step0, step0 + n, dtype=np.int64), "t": np.asarray(t, dtype=float),
        "pan_force_n": np.asarray(force_up, dtype=float),
        "sensor_ok": np.asarray(sensor_ok, dtype=bool) & np.isfinite(np.asarray(force_up, dtype=float)),
        "pan_speed": np.zeros(n) if pan_speed is None else np.asarray(pan_speed, dtype=float),
        "hand_pan_contact": hand_on_pan(touch),
    }
    for index, name in enumerate(standards, start=1):
        columns[f"{name}_on_pan"] = on_pan[:, index]
        columns[f"{name}_contact"] = contact[:, index]
        columns[f"{name}_grasped"] = bilateral[:, index] & closed
        columns[f"{name}_speed"] = speed[:, index]
    return columns


def require_isaacsim() -> Any:
    """Import Isaac Sim's Python package or say how to get it."""
    try:
        import isaacsim  # type: ignore[import-not-found]
    except ImportError as error:
        raise LabrecordError("Isaac Sim is not installed: pip install 'labrecord[isaacsim]' (Isaac Sim 5.x)") from error
    return isaacsim


class IsaacSimWeighingEnv:
    """The :class:`~labrecord.recorders.loop.Environment` of an Isaac Sim weighing world.

    Arguments are live Isaac Sim objects built by the caller's scene script: ``world``
    (``World``), ``balance`` (``Articulation`` of the balance), ``pan_link_index`` (row of
    the pan link in ``get_measured_joint_forces``), ``objects`` (name -> ``RigidPrim``; the
    sample first), ``cameras`` (name -> ``Camera``), ``apply_action`` (the robot controller
    that holds an ActionSpec command), ``read_contacts`` (the prim pairs in contact after
    the last step, e.g. from a contact-report subscription), ``gripper_closed`` and
    ``public_state`` callables, the prim ``entities`` table, and ``hold_action`` (the
    action row that keeps the robot still in the declared convention).
    """

    def __init__(self, world: Any, balance: Any, pan_link_index: int, objects: Mapping[str, Any],
                 cameras: Mapping[str, Any], apply_action: Callable[[np.ndarray], None],
                 read_contacts: Callable[[], Sequence[tuple[str, str]]], gripper_closed: Callable[[], bool],
                 public_state: Callable[[], dict[str, Any]], entities: Mapping[str, int], *,
                 physics_hz: float, control_hz: float, f_empty_n: float, gravity: Sequence[float] = (0, 0, -9.80665),
                 capacity_n: float = 50.0, hold_action: Callable[[np.ndarray | None], np.ndarray] | None = None) -> None:
        require_isaacsim()
        self.world, self.balance, self.pan_link_index = world, balance, pan_link_index
        self.objects = dict(objects)
        self._cameras = dict(cameras)
        self.cameras = tuple(cameras)
        self.apply = apply_action
        self.read_contacts, self.gripper_closed, self._public_state = read_contacts, gripper_closed, public_state
        self.entities = dict(entities)
        self.physics_hz, self.control_hz = physics_hz, control_hz
        self.f_empty_n, self.gravity, self.capacity_n = f_empty_n, tuple(gravity), capacity_n
        self.standards = [name for name in self.objects][1:]
        self._rows: list[tuple[float, float, list[tuple[str, str]], np.ndarray, bool]] = []
        self._step = 0
        self._hold = hold_action

    def hold_action(self, last: np.ndarray | None) -> np.ndarray:
        if self._hold is None:
            raise NotImplementedError("IsaacSimWeighingEnv needs hold_action= for its action convention")
        return self._hold(last)

    @property
    def time(self) -> float:
        return float(self.world.current_time)

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            self._step_once()

    def _step_once(self) -> None:
        self.world.step(render=False)
        wrench = np.asarray(self.balance.get_measured_joint_forces())[0, self.pan_link_index]
        _, quat = self.balance.get_world_poses()  # root pose; the pan joint frame is fixed to it
        force = support_force_up(wrench, np.asarray(quat)[0], self.gravity)
        velocities = np.stack([np.asarray(prim.get_linear_velocities())[0] for prim in self.objects.values()])
        self._rows.append((self.time, force, list(self.read_contacts()), velocities, bool(self.gripper_closed())))

    def end_block(self) -> dict[str, np.ndarray]:
        rows, self._rows = self._rows, []
        t, force, contacts, velocities, closed = zip(*rows)
        ok = [abs(f) <= self.capacity_n for f in force]
        columns = weighing_columns(self._step, t, force, ok, contacts, self.entities, np.stack(velocities), closed,
                                   self.standards)
        self._step += len(rows)
        return columns

    def public_state(self) -> dict[str, Any]:
        return self._public_state()

    def show(self, readouts: dict[str, Any]) -> None:
        """The display reading reaches the policy as the scorer's channel; the USD stage
        shows no digits."""

    def render(self, camera: str) -> np.ndarray:
        self.world.render()
        return np.asarray(self._cameras[camera].get_rgba())[:, :, :3].astype(np.uint8)
