"""The reference executor: turns a pick-and-place operation into tool-centre targets.

An operation ``add(wXX, pan)`` or ``remove(wXX, pan)`` becomes a waypoint plan —
approach above the standard, descend, close, lift, carry, lower, open, retreat — sampled
at the control rate with a bounded Cartesian speed.  Each row is an absolute tool-centre
target ``[x, y, z, yaw, grip]`` with the gripper pointing down; the policy turns it into
its declared action convention (an end-effector delta from the measured pose).  The
fingers close across the direction from the pan centre, so open fingers never reach
into the sample box.  The executor reads object poses (a declared privileged channel)
and never sees masses.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from labrecord.models import Operation
from labrecord.recorders.adapters.faults import InterfaceViolation
from labrecord.sim.bench.policies import CONTROL_HZ, HOME, delta_toward
from labrecord.sim.weighing.scene import PAN_SPOTS, PAN_TOP_Z, TABLE_SPOTS

SAFE_Z = 0.22
#: finger pad half-height (m): the tool centre is the pads' centre
PAD_HALF = 0.009
#: lowest tool-centre height over a surface so the pads clear it (m)
PAD_CLEAR = 0.012
#: standard half-heights (m), read off the labels' catalogue (public geometry)
HALF_HEIGHT = {"w10": 0.01, "w20": 0.0125, "w50": 0.016, "w100": 0.02}
PAN_RADIUS_ON = 0.095


@dataclass
class Waypoint:
    """Target ``pos`` (m) and ``grip`` (0 open … 1 closed), reached at speed ``speed``
    (m/s) and then held for ``hold`` seconds."""

    pos: tuple[float, float, float]
    grip: float
    hold: float = 0.0
    speed: float = 0.3
    yaw: float = 0.0


def on_pan(pos: list[float] | np.ndarray) -> bool:
    """Whether a visible object position lies over the pan and above the table."""
    return bool(np.hypot(pos[0], pos[1]) < PAN_RADIUS_ON and pos[2] > PAN_TOP_Z - 0.005)


def free_pan_spot(poses: dict[str, list[float]], moving: str) -> tuple[float, float]:
    """The pan spot farthest from every other standard on the pan."""
    others = [p for name, p in poses.items() if name.startswith("w") and name != moving and on_pan(p)]
    return max(PAN_SPOTS, key=lambda s: min((np.hypot(s[0] - p[0], s[1] - p[1]) for p in others), default=1.0))


def free_table_spot(poses: dict[str, list[float]], moving: str) -> tuple[float, float]:
    """The table spot farthest from every other standard."""
    others = [p for name, p in poses.items() if name != moving]
    return max(TABLE_SPOTS, key=lambda s: min((np.hypot(s[0] - p[0], s[1] - p[1]) for p in others), default=1.0))


def closing_yaw(x: float, y: float) -> float:
    """Hand yaw (rad, in (−π/2, π/2]) whose fingers close across the radial direction
    from the pan centre (0 on the table: the spots are in a row along y)."""
    if np.hypot(x, y) > 0.15:
        return 0.0
    yaw = float(np.arctan2(y, x))
    while yaw > np.pi / 2:
        yaw -= np.pi
    while yaw <= -np.pi / 2:
        yaw += np.pi
    return yaw


def transfer_plan(name: str, poses: dict[str, list[float]], to_pan: bool, *, drop_lift: float | None = None) -> list[Waypoint]:
    """Waypoints that carry standard ``name`` onto the pan (``to_pan``) or back to the table.

    ``drop_lift`` (m): lift the standard that far above where it was grasped and open the
    gripper there, in free air above the table (the ``clumsy`` policy's drop), then go home.
    """
    x, y, z = poses[name]
    half = HALF_HEIGHT[name]
    grasp_z = max(z + half - PAD_HALF - 0.002, z - half + PAD_CLEAR)
    dx, dy = free_pan_spot(poses, name) if to_pan else free_table_spot(poses, name)
    surface = PAN_TOP_Z if to_pan else 0.0
    # release a few millimetres above the surface so the weight settles without a push
    place_z = surface + half + (grasp_z - z) + 0.003
    pick_yaw, place_yaw = closing_yaw(x, y), closing_yaw(dx, dy)
    yaw = place_yaw if to_pan else pick_yaw  # a cylinder may be turned freely in the grasp
    plan = [
        Waypoint((x, y, SAFE_Z), 0.0, yaw=yaw),
        Waypoint((x, y, grasp_z), 0.0, speed=0.12, hold=0.2, yaw=yaw),
        Waypoint((x, y, grasp_z), 1.0, hold=0.5, yaw=yaw),
        Waypoint((x, y, SAFE_Z), 1.0, speed=0.15, yaw=yaw),
    ]
    if drop_lift is not None:
        return plan[:3] + [Waypoint((x, y, grasp_z + drop_lift), 1.0, speed=0.15, hold=0.3, yaw=yaw),
                           Waypoint((x, y, grasp_z + drop_lift), 0.0, hold=0.5, yaw=yaw),
                           Waypoint((x, y, SAFE_Z), 0.0, speed=0.15, yaw=yaw), Waypoint(HOME, 0.0)]
    return plan + [
        Waypoint((dx, dy, SAFE_Z), 1.0, speed=0.2, yaw=place_yaw),
        Waypoint((dx, dy, place_z), 1.0, speed=0.08, hold=0.3, yaw=place_yaw),
        Waypoint((dx, dy, place_z), 0.0, hold=0.5, yaw=place_yaw),
        Waypoint((dx, dy, SAFE_Z), 0.0, speed=0.15, yaw=place_yaw),
        Waypoint(HOME, 0.0),
    ]


def sample_plan(start: np.ndarray, plan: list[Waypoint], control_hz: float) -> np.ndarray:
    """(N, 5) rows ``[x, y, z, yaw, grip]`` at the control rate, linear between waypoints
    (the yaw turns within the first leg it changes on)."""
    period = 1.0 / control_hz
    rows: list[np.ndarray] = []
    here = np.asarray(start[:3], dtype=float)
    yaw = float(start[3]) if len(start) > 3 else 0.0
    for waypoint in plan:
        goal = np.asarray(waypoint.pos, dtype=float)
        steps = max(1, int(np.ceil(np.linalg.norm(goal - here) / (waypoint.speed * period))),
                    int(np.ceil(abs(waypoint.yaw - yaw) / (1.5 * period))))
        for k in range(1, steps + 1):
            rows.append(np.append(here + (goal - here) * k / steps, (yaw + (waypoint.yaw - yaw) * k / steps, waypoint.grip)))
        rows += [np.append(goal, (waypoint.yaw, waypoint.grip))] * int(round(waypoint.hold / period))
        here, yaw = goal, waypoint.yaw
    return np.asarray(rows)


class SkillRun:
    """The reference executor carrying out one pick-and-place operation: the planned tool
    targets, each turned into an end-effector delta from the measured pose."""

    def __init__(self, op: Operation, state: dict[str, Any], control_hz: float = CONTROL_HZ) -> None:
        from labrecord.sim.weighing.scene import STANDARDS

        if op.kind not in ("add", "remove") or op.object not in STANDARDS or op.dest not in (None, "pan"):
            raise InterfaceViolation("call_skill", "op", str(op),
                                     f"add(wXX, pan) or remove(wXX, pan) with wXX one of {list(STANDARDS)}")
        robot = state["robot"]
        self.op = op
        self.rows = sample_plan(np.append(robot["eef_pos"], 0.0),
                                transfer_plan(op.object, state["object_poses"], op.kind == "add"), control_hz)
        self.cursor = 0

    def next_row(self, state: dict[str, Any]) -> np.ndarray | None:
        if self.cursor >= len(self.rows):
            return None
        row = self.rows[self.cursor]
        self.cursor += 1
        return delta_toward(state["robot"], row)[0]
