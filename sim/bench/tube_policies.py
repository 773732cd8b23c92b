"""What the scripted tube-bench baselines share (centrifuge loading, placement recall):
tool steps with a hand yaw and tilt, the upright grasp-and-lift of a tube, and the act
loop that plays an operation's legs, each planned from the measured state when the
previous one has run."""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from labrecord.models import Operation
from labrecord.recorders.policy import ActionChunk, Observation
from labrecord.sim.bench.policies import ACTION_SPEC, CONTROL_HZ, HOME, ScriptedPolicy, delta_to, down_rotation

#: cameras and proprioception (native) plus the declared privileged channel
CHANNELS = ("front", "wrist", "robot", "object_poses")
SAFE_Z = 0.26
#: the tube is grasped this far above its bottom tip (m); a stand hole is 30 mm deep
GRASP_FROM_TIP = 0.064
#: pause after an operation (and at the start) before choosing again (s)
SETTLE_S = 1.2


@dataclass
class Step:
    """A tool-centre target ``pos`` with hand ``yaw`` and ``tilt`` (rad) and ``grip`` (0 open,
    1 closed), reached at ``speed`` m/s, then held ``hold`` s."""

    pos: tuple[float, float, float]
    grip: float
    yaw: float = 0.0
    tilt: float = 0.0
    speed: float = 0.25
    hold: float = 0.0


def lift_upright(tip: Any, yaw: float, *, open_grip: float = 0.0, descend_speed: float = 0.12) -> list[Step]:
    """Grasp a tube standing upright with its bottom tip at ``tip`` (3,): over it at
    :data:`SAFE_Z` with the fingers open to ``open_grip`` and turned by ``yaw``, down at
    ``descend_speed`` to :data:`GRASP_FROM_TIP` above the tip, close, lift back to SAFE_Z."""
    grasp = (float(tip[0]), float(tip[1]), float(tip[2]) + GRASP_FROM_TIP)
    return [Step((grasp[0], grasp[1], SAFE_Z), open_grip, yaw),
            Step(grasp, open_grip, yaw, speed=descend_speed, hold=0.3),
            Step(grasp, 1.0, yaw, hold=0.6),
            Step((grasp[0], grasp[1], SAFE_Z), 1.0, yaw, speed=0.15)]


def tool_rotation(yaw: float, tilt: float) -> np.ndarray:
    """The hand pointing down turned by ``yaw``, then tilted by ``tilt`` about its finger
    axis: the tool z (the grasped tube's cap → tip axis) becomes
    (sin tilt cos yaw, sin tilt sin yaw, −cos tilt)."""
    c, s = math.cos(tilt), math.sin(tilt)
    return down_rotation(yaw) @ np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def hand_for_axis(axis: np.ndarray) -> tuple[float, float]:
    """``(yaw, tilt)`` with yaw in (−π/2, π/2] whose tool z is ``axis`` (unit, pointing down)."""
    tilt = math.acos(float(np.clip(-axis[2], -1.0, 1.0)))
    if tilt < 1e-9:
        return 0.0, 0.0
    yaw = math.atan2(float(axis[1]), float(axis[0]))
    if yaw > math.pi / 2:
        yaw, tilt = yaw - math.pi, -tilt
    elif yaw <= -math.pi / 2:
        yaw, tilt = yaw + math.pi, -tilt
    return yaw, tilt


def sample_steps(start: np.ndarray, steps: list[Step], control_hz: float) -> np.ndarray:
    """(N, 6) rows ``[x, y, z, yaw, tilt, grip]`` at the control rate, linear between steps."""
    period = 1.0 / control_hz
    rows: list[np.ndarray] = []
    here = np.asarray(start, dtype=float)
    for step in steps:
        goal = np.array([*step.pos, step.yaw, step.tilt], dtype=float)
        n = max(1, int(np.ceil(np.linalg.norm(goal[:3] - here[:3]) / (step.speed * period))),
                int(np.ceil(np.abs(goal[3:] - here[3:]).max() / (1.0 * period))))
        for k in range(1, n + 1):
            rows.append(np.append(here + (goal - here) * k / n, step.grip))
        rows += [np.append(goal, step.grip)] * int(round(step.hold / period))
        here = goal
    return np.asarray(rows)


class TubePolicy(ScriptedPolicy, ABC):
    """Wait until settled, choose an operation (:meth:`choose`), execute its legs
    (:meth:`phases_for`: plan builders, each called when the previous leg has run)."""

    channels = CHANNELS
    first_wait_s = SETTLE_S
    #: the commit hook (a decision-site *replace* support): called with every operation this
    #: policy commits to and the observation it chose on; returns the operation carried out
    commit_hook: Callable[[Operation, Observation], Operation] | None = None
    #: the Oracle supports (site, mode) this system consumes (its capability preflight)
    oracle_inputs: frozenset[tuple[str, str]] = frozenset({("decision", "replace")})

    def reset(self, episode: int) -> None:
        super().reset(episode)
        self.phases: list[Any] = []
        #: operations started this episode
        self.operations = 0
        self.rng = np.random.default_rng([self.seed, episode])

    @abstractmethod
    def choose(self, poses: dict[str, Any]) -> Operation | None:
        """The operation this policy commits to in the observed state."""

    @abstractmethod
    def phases_for(self, op: Operation, poses: dict[str, Any]) -> list[Any]:
        """Plan builders ``(robot, poses) -> [Step, …]`` for ``op``, in order."""

    # -- acting -----------------------------------------------------------------------
    def act(self, observation: Observation) -> ActionChunk:
        robot, poses = observation.state["robot"], observation.state["object_poses"]
        if self.plan is not None and self.cursor < len(self.plan):
            return self._next_row(robot)
        if self.phases:  # the next leg is planned from the measured state
            self._start(robot, self.phases.pop(0)(robot, poses))
            return self._next_row(robot)
        if self.plan is not None:
            self._plan_done(observation.t, SETTLE_S, np.asarray([*HOME, 0.0, 0.0, 0.0]))
        if self.stopped or observation.t < self.wait_until:
            return self._hold(robot)
        op = self.choose(poses)
        if op is not None and self.commit_hook is not None:
            op = self.commit_hook(op, observation)
        if op is None or op.kind in ("stop", "wait"):
            return self._decline(robot, op)
        self.operations += 1
        self.phases = self.phases_for(op, poses)
        self._start(robot, self.phases.pop(0)(robot, poses))
        return self._begin(robot, op)

    def _start(self, robot: dict[str, Any], steps: list[Step]) -> None:
        start = self.plan[-1][:5] if self.plan is not None and len(self.plan) else np.append(robot["eef_pos"], (0.0, 0.0))
        self.plan = sample_steps(start, steps, CONTROL_HZ)
        self.cursor = 0

    def _toward(self, robot: dict[str, Any], target: np.ndarray | None) -> np.ndarray:
        """The delta action moving the measured tool pose toward ``[x, y, z, yaw, tilt, grip]``."""
        if target is None:
            return np.zeros((1, ACTION_SPEC.dim))
        return delta_to(robot, target[:3], tool_rotation(float(target[3]), float(target[4])), target[5])


