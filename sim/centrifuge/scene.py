"""The MuJoCo centrifuge-loading bench: a fixed-angle 12-slot rotor, two tubes, the Panda arm.

The rotor's slot bores are built from the contract's calibration
(:class:`~labrecord.scorers.contracts.centrifuge.RotorCalibration`): for every slot a ring
of wall boxes around the insertion axis (MuJoCo collides convex shapes, so a bore is no
single concave mesh) and a floor plate perpendicular to the axis at the effective socket
depth.  The rotor is a mocap body turned by the instance's rotor yaw, so the world
coordinates of the slots move while their local indices stay.  The bore walls are
rubber-lined (friction 2): in a 30° bore the tube's weight presses it on the lower wall,
and the friction holds it where it was released — a shallow insertion stays shallow.
Tubes are cylinders (radius :data:`~labrecord.sim.bench.tubes.TUBE_RADIUS`, 1.5 mm radial
clearance in a bore) standing in a two-hole stand on the table until grasped.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from labrecord.sim.bench.scene import ARM, asset_text, build_model as build_arm_model, quat
from labrecord.sim.bench.tubes import (
    CAP_RADIUS, HOLE_RADIUS as BORE_RADIUS, HOLE_WALLS as BORE_WALLS, TUBE_HALF, TUBE_RADIUS, WALL_M, TubeScene,
    hole_ring,
)

TUBES: tuple[str, ...] = ("tube_a", "tube_b")
#: rotor axis position in the world (x, y) and the height of the slot mouths (m)
ROTOR_XY = (0.12, 0.0)
ROTOR_Z = 0.12
#: mouth chamfer: plates flaring out by this angle from the bore axis, this long (m)
FUNNEL_DEG = 40.0
FUNNEL_M = 0.006
#: stand holes (x, y) on the table, one per tube; a hole is 30 mm deep, the table is its floor
STAND_SPOTS: dict[str, tuple[float, float]] = {"tube_a": (0.30, -0.22), "tube_b": (0.30, 0.22)}
STAND_DEPTH = 0.03


def _funnel(mouth: np.ndarray, rot: np.ndarray, name: str) -> list[str]:
    """The chamfer of a bore mouth: :data:`BORE_WALLS` plates flaring out by
    :data:`FUNNEL_DEG` over :data:`FUNNEL_M`, which guide a tip that arrives a few
    millimetres off the axis into the bore."""
    lines = []
    flare = math.radians(FUNNEL_DEG)
    half_width = (BORE_RADIUS + WALL_M + FUNNEL_M * math.sin(flare)) * math.tan(math.pi / BORE_WALLS)
    up = rot[:, 2]
    for k in range(BORE_WALLS):
        beta = 2 * math.pi * k / BORE_WALLS
        radial = math.cos(beta) * rot[:, 0] + math.sin(beta) * rot[:, 1]
        tangential = np.cross(up, radial)
        along = math.cos(flare) * up + math.sin(flare) * radial
        normal = math.cos(flare) * radial - math.sin(flare) * up
        pos = mouth + BORE_RADIUS * radial + along * FUNNEL_M / 2 + normal * WALL_M / 2
        q = quat(np.column_stack([normal, tangential, along]))
        lines.append(f'<geom name="{name}_f{k}" class="bore" pos="{pos[0]:.6f} {pos[1]:.6f} {pos[2]:.6f}" '
                     f'quat="{q[0]:.6f} {q[1]:.6f} {q[2]:.6f} {q[3]:.6f}" size="{WALL_M / 2} {half_width:.5f} {FUNNEL_M / 2}"/>')
    return lines


def bore_geoms(calibration: Any) -> str:
    """The MJCF geoms of every slot bore of ``calibration`` in the rotor frame."""
    mouths, axes = calibration.slots()
    lines = []
    depth = calibration.socket_depth_m
    for j, (mouth, axis) in enumerate(zip(mouths, axes)):
        up = -axis
        tangential = np.array([-mouth[1], mouth[0], 0.0]) / max(np.hypot(mouth[0], mouth[1]), 1e-12)
        x = np.cross(tangential, up)
        rot = np.column_stack([x, tangential, up])
        length = depth + 0.002  # from the mouth to the floor plate
        lines += hole_ring(mouth + axis * (length / 2), rot, f"slot{j}", length, "bore")
        lines += _funnel(mouth, rot, f"slot{j}")
        floor = mouth + axis * (depth + 0.002)
        q = quat(rot)
        half = BORE_RADIUS + WALL_M
        lines.append(f'<geom name="slot{j}_floor" class="bore" pos="{floor[0]:.6f} {floor[1]:.6f} {floor[2]:.6f}" '
                     f'quat="{q[0]:.6f} {q[1]:.6f} {q[2]:.6f} {q[3]:.6f}" size="{half} {half} 0.002"/>')
    return "\n      ".join(lines)


def stand_geoms() -> str:
    lines = ['<body name="stand" pos="0 0 0">']
    for tube, (x, y) in STAND_SPOTS.items():
        center = np.array([x, y, STAND_DEPTH / 2])
        lines += ["  " + g for g in hole_ring(center, np.eye(3), f"stand_{tube}", STAND_DEPTH, "stand")]
    lines.append("</body>")
    return "\n    ".join(lines)


#: contact sensors: (label, attributes) — per tube the rotor (support), each finger pad and the palm
def _sensors() -> list[tuple[str, str]]:
    out = []
    for tube in TUBES:
        out.append((f"{tube}_rotor", f'body1="{tube}" body2="rotor"'))
        out.append((f"{tube}_left", f'body1="{tube}" geom2="{ARM}finger_left"'))
        out.append((f"{tube}_right", f'body1="{tube}" geom2="{ARM}finger_right"'))
        out.append((f"{tube}_palm", f'body1="{tube}" geom2="{ARM}hand"'))
    return out


SENSORS: tuple[str, ...] = tuple(label for label, _ in _sensors())


def scene_xml(calibration: Any) -> str:
    text = asset_text("centrifuge.xml")
    sensors = "\n    ".join(f'<contact name="touch_{label}" {attrs} data="found" num="1"/>' for label, attrs in _sensors())
    values = {"ROTOR_X": ROTOR_XY[0], "ROTOR_Y": ROTOR_XY[1], "ROTOR_Z": ROTOR_Z, "TUBE_R": TUBE_RADIUS,
              "TUBE_HALF": TUBE_HALF, "CAP_Z": TUBE_HALF, "CAP_R": CAP_RADIUS}
    for key, value in values.items():
        text = text.replace(key, f"{value:g}")
    return (text.replace("<!--ROTOR_BORES-->", bore_geoms(calibration)).replace("<!--STANDS-->", stand_geoms())
            .replace("<!--CONTACT_SENSORS-->", sensors))


def build_model(calibration: Any) -> Any:
    return build_arm_model(scene_xml(calibration))


class CentrifugeScene(TubeScene):
    """One MuJoCo model + data of the centrifuge bench."""

    def __init__(self, calibration: Any, width: int = 224, height: int = 224) -> None:
        self.calibration = calibration
        self._bind(build_model(calibration), TUBES, "rotor", width, height)
        m = self.model
        self.mocap = int(m.body_mocapid[self.body_id["rotor"]])
        self.touch_adr = int(m.sensor_adr[m.sensor(f"touch_{SENSORS[0]}").id])
        assert m.nsensordata == self.touch_adr + len(SENSORS)

    def reset(self, instance: Any) -> None:
        """Rotor yaw, seated tubes (``instance.start``) and the rest in their stand holes."""
        mujoco, m, d = self.mujoco, self.model, self.data
        mujoco.mj_resetData(m, d)
        yaw = float(instance.rotor_yaw)
        d.mocap_pos[self.mocap] = (*ROTOR_XY, ROTOR_Z)
        d.mocap_quat[self.mocap] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))
        start = dict(instance.start)
        for tube in TUBES:
            if tube in start:
                self.seat(tube, start[tube], yaw)
            else:
                x, y = STAND_SPOTS[tube]
                self.set_tube(tube, np.array([x, y, 0.0005]), np.array([0.0, 0.0, -1.0]))
        self.home_arm()

    def slot_world(self, j: int, yaw: float) -> tuple[np.ndarray, np.ndarray]:
        """World mouth (3,) and insertion axis (3,) of local slot ``j`` under rotor ``yaw``."""
        mouths, axes = self.calibration.slots()
        c, s = math.cos(yaw), math.sin(yaw)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        return np.array([*ROTOR_XY, ROTOR_Z]) + rot @ mouths[j], rot @ axes[j]

    def seat(self, tube: str, j: int, yaw: float, depth_frac: float = 1.0) -> None:
        """Put ``tube`` into slot ``j`` at ``depth_frac`` of the effective depth (1 rests on the floor)."""
        mouth, axis = self.slot_world(j, yaw)
        self.set_tube(tube, mouth + axis * self.calibration.socket_depth_m * depth_frac, axis)

    def object_poses(self) -> dict[str, list[float]]:
        """Tube tips and axes, and the rotor frame ``[x, y, z, yaw]`` (what the cameras show)."""
        out: dict[str, list[float]] = {}
        for tube in TUBES:
            tip, axis = self.tube_pose(tube)
            out[tube] = [round(float(v), 5) for v in (*tip, *axis)]
        q = self.data.mocap_quat[self.mocap]
        out["rotor"] = [*(round(float(v), 5) for v in self.data.mocap_pos[self.mocap]),
                        round(2 * math.atan2(float(q[3]), float(q[0])), 6)]
        return out


__all__ = ["CentrifugeScene", "TUBES"]
