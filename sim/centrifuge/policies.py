"""Scripted centrifuge-loading policies and their executor (tilted-axis insertion).

Every policy reads the declared evaluator-state channel ``object_poses`` (tube tips and
axes, the rotor frame) besides cameras and proprioception — the same declared-channel
rule as the weighing policies — and decides only when nothing is in its hand and the
scene has settled:

* ``reference`` — a tube in a slot region but not seated is pushed home first; with the
  rotor empty it loads the slot of its current pose nearest the arm's side, otherwise the
  slot opposite the tube actually seated; stops when both sit opposite;
* ``fixed-preference`` — always its preferred local slot (default 0), the next free one
  when that is taken;
* ``random`` — a uniformly drawn free slot (seeded per episode);
* ``clumsy`` — the reference choices, but its first insertion stops at 40 % depth and
  lets go (a shallow insertion the contract flags from the measured depth); it then
  regrasps the tube in the bore and pushes it home.

An insertion is executed as waypoints ``[x, y, z, yaw, tilt, grip]`` of the tool centre:
grasp the tube upright in its stand with the fingers closing across the slot's
tangential direction, carry it above the slot with the hand tilted by the slot's tilt
(the tube's axis on the slot axis), descend along the axis to the target depth, release
and withdraw along the axis.  The grasp offset (tip below the tool centre along the
axis) is measured after the lift, so a tube that slipped in the fingers still lands on
the floor of the bore.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import Operation
from labrecord.sim.bench.policies import HOME, build_policy, quat_matrix
from labrecord.sim.bench.tube_policies import (
    GRASP_FROM_TIP, SAFE_Z, Step, TubePolicy, hand_for_axis, lift_upright, tool_rotation,
)

#: start of the straight insertion, measured along the slot axis above the mouth (m)
APPROACH_M = 0.06
SHALLOW_FRAC = 0.4


def rotor_slots(poses: dict[str, list[float]], calibration: Any) -> tuple[np.ndarray, np.ndarray]:
    """World mouths (n, 3) and axes (n, 3) of every slot under the observed rotor pose."""
    x, y, z, yaw = poses["rotor"]
    mouths, axes = calibration.slots()
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return mouths @ rot.T + np.array([x, y, z]), axes @ rot.T


def tube_slot(poses: dict[str, list[float]], tube: str, calibration: Any) -> tuple[int, float]:
    """``(slot, depth fraction)`` of a tube whose tip lies within 5 mm of a slot axis below
    its mouth, else ``(-1, nan)`` (what the cameras show of where a tube sits)."""
    mouths, axes = rotor_slots(poses, calibration)
    tip = np.asarray(poses[tube][:3])
    e = tip - mouths
    depth = (e * axes).sum(axis=1)
    radial = np.linalg.norm(e - depth[:, None] * axes, axis=1)
    j = int(np.argmin(radial))
    if radial[j] > 0.005 or depth[j] < -0.005:
        return -1, math.nan
    return j, float(depth[j] / calibration.socket_depth_m)


class ScriptedCentrifugePolicy(TubePolicy):
    """Shared machinery: wait until settled, choose ``insert(tube, slot)``, execute it."""

    #: insertion depth of the first attempt as a fraction of the effective depth
    first_depth = 1.0

    def __init__(self, seed: int = 0, calibration: Any = None) -> None:
        from labrecord.scorers.contracts.centrifuge import RotorCalibration

        self.calibration = calibration or RotorCalibration()
        super().__init__(seed)

    # -- choice -----------------------------------------------------------------------
    def occupancy(self, poses: dict[str, list[float]]) -> tuple[dict[str, int], dict[str, int]]:
        """``(seated, unfinished)``: tubes home in a slot (depth ≥ 90 %) and tubes in a slot short of it."""
        seated: dict[str, int] = {}
        unfinished: dict[str, int] = {}
        for tube in ("tube_a", "tube_b"):
            j, frac = tube_slot(poses, tube, self.calibration)
            if j >= 0:
                (seated if frac >= 0.9 else unfinished)[tube] = j
        return seated, unfinished

    def choose_slot(self, poses: dict[str, list[float]], seated: dict[str, int]) -> int:
        """The local slot for the next tube (rotor holding ``seated``)."""
        n = self.calibration.n_slots
        if seated:
            return (next(iter(seated.values())) + n // 2) % n
        # the pair across the rotor that lies most to the arm's sides (both ends in easy reach)
        mouths, _ = rotor_slots(poses, self.calibration)
        center = np.asarray(poses["rotor"][:2])
        return int(np.argmin(np.abs(mouths[:, 0] - center[0])))

    def choose(self, poses: dict[str, list[float]]) -> Operation | None:
        seated, unfinished = self.occupancy(poses)
        if len(seated) == 2:
            return Operation("stop")
        for tube, j in unfinished.items():
            return Operation("insert", tube, f"slot{j}")
        tube = next(t for t in ("tube_a", "tube_b") if t not in seated)
        return Operation("insert", tube, f"slot{self.choose_slot(poses, seated)}")

    def depth_for(self, attempt: int) -> float:
        return self.first_depth if attempt == 1 else 1.0

    def phases_for(self, op: Operation, poses: dict[str, list[float]]) -> list[Any]:
        """Plan builders for ``op``, each called when the previous leg has run."""
        tube, j = str(op.object), int(str(op.dest)[4:])
        frac = self.depth_for(self.operations)
        in_slot, _ = tube_slot(poses, tube, self.calibration)
        if in_slot == j:  # regrasp the tube where it sits and push it home
            return [lambda r, p: self.regrasp(tube, p), lambda r, p: self.insert(tube, j, p, r, 1.0)]
        return [lambda r, p: self.pick(tube, j, p), lambda r, p: self.insert(tube, j, p, r, frac)]

    def pick(self, tube: str, j: int, poses: dict[str, list[float]]) -> list[Step]:
        """Grasp the tube upright in its stand, fingers across slot ``j``'s tangent; lift."""
        tip = np.asarray(poses[tube][:3])
        _, axes = rotor_slots(poses, self.calibration)
        yaw, _ = hand_for_axis(axes[j])
        return lift_upright(tip, yaw)

    def regrasp(self, tube: str, poses: dict[str, list[float]]) -> list[Step]:
        """Open fingers down the tube's own axis to the grasp height, close, draw it out."""
        tip, axis = np.asarray(poses[tube][:3]), np.asarray(poses[tube][3:6])
        yaw, tilt = hand_for_axis(axis)
        grasp = tip - GRASP_FROM_TIP * axis
        above = grasp - APPROACH_M * axis
        return [Step(tuple(above + np.array([0, 0, 0.05])), 0.0, yaw, tilt),  # type: ignore[arg-type]
                Step(tuple(above), 0.0, yaw, tilt, speed=0.1),  # type: ignore[arg-type]
                Step(tuple(grasp), 0.0, yaw, tilt, speed=0.05, hold=0.3),  # type: ignore[arg-type]
                Step(tuple(grasp), 1.0, yaw, tilt, hold=0.6),  # type: ignore[arg-type]
                Step(tuple(above), 1.0, yaw, tilt, speed=0.05, hold=0.3)]  # type: ignore[arg-type]

    def insert(self, tube: str, j: int, poses: dict[str, list[float]], robot: dict[str, Any], frac: float) -> list[Step]:
        """Carry the grasped tube onto slot ``j``'s axis, push it to ``frac`` of the depth, let go."""
        mouths, axes = rotor_slots(poses, self.calibration)
        mouth, axis = mouths[j], axes[j]
        yaw, tilt = hand_for_axis(axis)
        # the tip as the hand holds it (tool frame, measured): carried onto the slot axis
        held = quat_matrix(robot["eef_quat"]).T @ (np.asarray(poses[tube][:3]) - np.asarray(robot["eef_pos"]))
        tip_from_tcp = tool_rotation(yaw, tilt) @ held
        depth = self.calibration.socket_depth_m * frac + (0.001 if frac >= 1.0 else 0.0)
        above = mouth - APPROACH_M * axis - tip_from_tcp
        seat = mouth + depth * axis - tip_from_tcp
        return [Step((float(above[0]), float(above[1]), max(SAFE_Z, float(above[2]))), 1.0, yaw, tilt, speed=0.2),
                Step(tuple(above), 1.0, yaw, tilt, speed=0.1, hold=0.3),  # type: ignore[arg-type]
                Step(tuple(seat), 1.0, yaw, tilt, speed=0.04, hold=0.4),  # type: ignore[arg-type]
                Step(tuple(seat), 0.0, yaw, tilt, hold=0.6),  # type: ignore[arg-type]
                Step(tuple(above), 0.0, yaw, tilt, speed=0.08),  # type: ignore[arg-type]
                Step(HOME, 0.0, 0.0, 0.0)]

class ReferencePolicy(ScriptedCentrifugePolicy):
    name = "reference"


class FixedPreferencePolicy(ScriptedCentrifugePolicy):
    """Always its preferred local slot, or the next free slot after it."""

    name = "fixed-preference"

    def __init__(self, seed: int = 0, calibration: Any = None, slot: int = 0) -> None:
        self.slot = slot
        super().__init__(seed, calibration)
        if not 0 <= slot < self.calibration.n_slots:
            raise LabrecordError(f"slot {slot}: expected 0..{self.calibration.n_slots - 1}")

    def choose_slot(self, poses: dict[str, list[float]], seated: dict[str, int]) -> int:
        n = self.calibration.n_slots
        taken = set(seated.values())
        return next((self.slot + k) % n for k in range(n) if (self.slot + k) % n not in taken)


class RandomPolicy(ScriptedCentrifugePolicy):
    """A uniformly drawn free slot."""

    name = "random"

    def choose_slot(self, poses: dict[str, list[float]], seated: dict[str, int]) -> int:
        free = [j for j in range(self.calibration.n_slots) if j not in set(seated.values())]
        return int(free[int(self.rng.integers(len(free)))])


class ClumsyPolicy(ScriptedCentrifugePolicy):
    """Reference choices; the first insertion lets go at 40 % depth, then it recovers."""

    name = "clumsy"
    first_depth = SHALLOW_FRAC


POLICIES: dict[str, type[ScriptedCentrifugePolicy]] = {
    "reference": ReferencePolicy, "fixed-preference": FixedPreferencePolicy, "random": RandomPolicy,
    "clumsy": ClumsyPolicy,
}


def make_policy(name: str, seed: int = 0, **options: Any) -> ScriptedCentrifugePolicy:
    """Build a centrifuge baseline by name (``reference``, ``fixed-preference``, ``random``, ``clumsy``)."""
    return build_policy(POLICIES, name, seed, **options)
