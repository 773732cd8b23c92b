"""What every scripted baseline shares (weighing, centrifuge, rack): capabilities, a
sampled plan of tool targets played one row per query, resting and stopping, and the
end-effector delta toward a target.

The baselines act through the LIBERO-style end-effector delta convention
(:func:`labrecord.sim.bench.control.action_spec`) at :data:`CONTROL_HZ`, one row per query,
computed from the measured tool pose in the ``robot`` channel.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np

from labrecord.models import ActionSpec, Operation
from labrecord.recorders.policy import ActionChunk, Capabilities
from labrecord.sim.bench.control import action_spec, matrix_to_rotvec
from labrecord.sim.fanout import check_choice

CONTROL_HZ = 10.0
ACTION_SPEC: ActionSpec = action_spec("eef_delta", CONTROL_HZ)
#: tool-centre start and rest position (m), the arm's HOME_Q pose
HOME = (0.10, 0.0, 0.30)
#: largest rotation per action row the scripted policies command (rad)
TURN_STEP = 0.3
P = TypeVar("P")


class ScriptedPolicy:
    """What every scripted baseline (weighing, centrifuge, rack) shares: its capabilities
    (``channels`` declared, operations reported), a sampled plan of tool targets played one
    row per query, the ``rest`` target it holds while idle, and stopping for good."""

    name = "scripted"
    #: the channels the policy declares
    channels: tuple[str, ...] = ()
    #: the cameras it looks at: none, it plans from the evaluator-state channels (its
    #: declared cameras are rendered only for the videos)
    looks_at: tuple[str, ...] = ()
    #: observation time before which a fresh episode makes no choice (s)
    first_wait_s = 0.0
    #: what the policy remembers across observations (declared in ``run.json``), if anything
    memory: str | None = None

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.capabilities = Capabilities(name=self.name, kind="scripted", action_spec=ACTION_SPEC, channels=self.channels,
                                         reports_operations=True, revision="1", memory=self.memory)
        self.reset(0)

    def reset(self, episode: int) -> None:
        self.episode = episode
        self.plan: np.ndarray | None = None
        self.cursor = 0
        self.wait_until = self.first_wait_s
        self.stopped = False
        self.rest: np.ndarray | None = None  # None: stay where it is

    def _plan_done(self, t: float, settle_s: float, rest: np.ndarray) -> None:
        """The plan just ran out: drop it, pause ``settle_s`` before choosing again, rest at ``rest``."""
        self.plan = None
        self.wait_until = t + settle_s
        self.rest = rest

    def _hold(self, robot: dict[str, Any]) -> ActionChunk:
        """A row toward the rest target."""
        return ActionChunk(self._toward(robot, self.rest))

    def _decline(self, robot: dict[str, Any], op: Operation | None) -> ActionChunk:
        """Hold on a choice of no operation (None, ``stop`` or ``wait``), reporting it; None and
        ``stop`` end the episode's choices."""
        self.stopped = op is None or op.kind == "stop"
        return ActionChunk(self._toward(robot, self.rest), report=op)

    def _begin(self, robot: dict[str, Any], op: Operation) -> ActionChunk:
        """The first row of the plan just made for ``op``, reporting ``op``."""
        chunk = self._next_row(robot)
        chunk.report = op
        return chunk

    def _next_row(self, robot: dict[str, Any]) -> ActionChunk:
        assert self.plan is not None
        row = self.plan[self.cursor]
        self.cursor += 1
        return ActionChunk(self._toward(robot, row))

    def _toward(self, robot: dict[str, Any], target: np.ndarray | None) -> np.ndarray:
        return delta_toward(robot, target)


def delta_toward(robot: dict[str, Any], target: np.ndarray | None) -> np.ndarray:
    """The (1, 7) end-effector delta moving the measured tool pose toward ``[x, y, z, yaw,
    grip]`` (None: stay where it is, gripper open)."""
    if target is None:
        return np.zeros((1, ACTION_SPEC.dim))
    return delta_to(robot, target[:3], down_rotation(float(target[3])), target[4])


def delta_to(robot: dict[str, Any], position: Any, rotation: np.ndarray, grip: Any) -> np.ndarray:
    """The (1, 7) end-effector delta moving the measured tool pose toward ``position`` (3,)
    and the tool ``rotation`` (3, 3) with gripper command ``grip``: the step clipped to
    5 cm per axis, the turn to :data:`TURN_STEP`."""
    here = np.asarray(robot["eef_pos"], dtype=float)
    return _clipped_row(np.asarray(position) - here, matrix_to_rotvec(rotation @ quat_matrix(robot["eef_quat"]).T), grip)


def delta_between(start: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The (1, 7) end-effector delta from plan target ``start`` to plan target ``target``
    (both ``[x, y, z, yaw, grip]``), as :func:`delta_to` would give once the tool reached
    ``start``: the open-loop row of a chunk planned ahead of the measured pose."""
    offset = np.asarray(target[:3], dtype=float) - np.asarray(start[:3], dtype=float)
    return _clipped_row(offset, matrix_to_rotvec(down_rotation(float(target[3])) @ down_rotation(float(start[3])).T),
                        target[4])


def _clipped_row(offset: np.ndarray, turn: np.ndarray, grip: Any) -> np.ndarray:
    """One action row: the offset clipped to 5 cm per axis, the turn to :data:`TURN_STEP`."""
    step = np.clip(offset, -0.05, 0.05)
    norm = float(np.linalg.norm(turn))
    if norm > TURN_STEP:
        turn = turn * (TURN_STEP / norm)
    return np.concatenate([step, turn, [grip]])[None, :]


def down_rotation(yaw: float) -> np.ndarray:
    """Tool frame pointing down (z = −world z) turned by ``yaw`` about the vertical."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])


def quat_matrix(xyzw: list[float]) -> np.ndarray:
    """Rotation matrix of a unit quaternion given as (x, y, z, w)."""
    x, y, z, w = xyzw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def build_policy(policies: Mapping[str, Callable[..., P]], name: str, seed: int, **options: Any) -> P:
    """The policy ``name`` of a family's table ``policies``, built with ``seed`` and ``options``."""
    check_choice("policy", name, policies)
    return policies[name](seed, **options)

