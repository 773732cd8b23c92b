"""The reference executor: turns a pick-and-place operation into end-effector targets.

An operation ``add(wXX, pan)`` or ``remove(wXX, pan)`` becomes a waypoint plan —
approach above the standard, descend, close, lift, carry, lower, open, retreat — sampled
at the control rate with a bounded Cartesian speed.  The executor only reads the public
observation (object poses from the cameras' view, robot state); it never sees masses.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labrecord.sim.scene import HOME, PAN_SPOTS, PAN_TOP_Z, TABLE_SPOTS

SAFE_Z = 0.20
#: how far the fingers overlap the top of a standard when grasping (m)
GRIP_DEPTH = 0.016
FINGER_HALF = 0.025
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


def transfer_plan(name: str, poses: dict[str, list[float]], to_pan: bool) -> list[Waypoint]:
    """Waypoints that carry standard ``name`` onto the pan (``to_pan``) or back to the table."""
    x, y, z = poses[name]
    half = HALF_HEIGHT[name]
    grasp_z = max(z + half + FINGER_HALF - GRIP_DEPTH, z - half + FINGER_HALF + 0.004)
    dx, dy = free_pan_spot(poses, name) if to_pan else free_table_spot(poses, name)
    surface = PAN_TOP_Z if to_pan else 0.0
    # release a few millimetres above the surface so the weight settles without a push
    place_z = surface + 2 * half + FINGER_HALF - GRIP_DEPTH + 0.003
    return [
        Waypoint((x, y, SAFE_Z), 0.0),
        Waypoint((x, y, grasp_z), 0.0, speed=0.15),
        Waypoint((x, y, grasp_z), 1.0, hold=0.4),
        Waypoint((x, y, SAFE_Z), 1.0, speed=0.2),
        Waypoint((dx, dy, SAFE_Z), 1.0, speed=0.3),
        Waypoint((dx, dy, place_z), 1.0, speed=0.12, hold=0.2),
        Waypoint((dx, dy, place_z), 0.0, hold=0.4),
        Waypoint((dx, dy, SAFE_Z), 0.0, speed=0.2),
        Waypoint(HOME, 0.0),
    ]


def sample_plan(start: np.ndarray, plan: list[Waypoint], control_hz: float) -> np.ndarray:
    """(N, 4) action rows ``[x, y, z, grip]`` at the control rate, linear between waypoints."""
    period = 1.0 / control_hz
    rows: list[np.ndarray] = []
    here = np.asarray(start[:3], dtype=float)
    for waypoint in plan:
        goal = np.asarray(waypoint.pos, dtype=float)
        steps = max(1, int(np.ceil(np.linalg.norm(goal - here) / (waypoint.speed * period))))
        for k in range(1, steps + 1):
            rows.append(np.append(here + (goal - here) * k / steps, waypoint.grip))
        rows += [np.append(goal, waypoint.grip)] * int(round(waypoint.hold / period))
        here = goal
    return np.asarray(rows)


def hold_at(position: list[float] | np.ndarray, grip: float = 0.0) -> np.ndarray:
    """One action row that keeps the hand where it is."""
    return np.append(np.asarray(position[:3], dtype=float), grip)[None, :]
