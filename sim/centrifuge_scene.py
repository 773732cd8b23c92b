"""The MuJoCo centrifuge-loading bench: a fixed-angle 12-slot rotor, two tubes, the Panda arm.

The rotor's slot bores are built from the contract's calibration
(:class:`~labrecord.scorers.contracts.centrifuge.RotorCalibration`): for every slot a ring
of :data:`BORE_WALLS` boxes around the insertion axis (MuJoCo collides convex shapes, so a
bore is no single concave mesh) and a floor plate perpendicular to the axis at the
effective socket depth.  The rotor is a mocap body turned by the instance's rotor yaw, so
the world coordinates of the slots move while their local indices stay.  The bore walls
are rubber-lined (friction 2): in a 30° bore the tube's weight presses it on the lower
wall, and the friction holds it where it was released — a shallow insertion stays
shallow.  Tubes are cylinders (radius :data:`TUBE_RADIUS`, 1.5 mm radial clearance in a
bore) standing in a two-hole stand on the table until grasped.

Measured per physics step (:class:`CentrifugeEnv`): the rotor frame, each tube's bottom
tip and unit axis (cap → tip) from its simulated pose, its speed, support (a contact
sensor between the tube and the rotor's bores), robot contact (finger pads or palm) and
the bilateral grasp — exactly the columns ``centrifuge/1`` replays from.
"""
from __future__ import annotations

import importlib.resources
import math
from typing import Any

import numpy as np

from labrecord.sim.env import DEFAULT_SIZE, WeighingEnv
from labrecord.sim.scene import ARM, FINGER_OPEN_M, WeighingScene
from labrecord.sim.scene import build_model as build_arm_model

TUBES: tuple[str, ...] = ("tube_a", "tube_b")
#: rotor axis position in the world (x, y) and the height of the slot mouths (m)
ROTOR_XY = (0.12, 0.0)
ROTOR_Z = 0.12
TUBE_RADIUS = 0.0065
TUBE_HALF = 0.04
CAP_RADIUS = 0.0075
BORE_RADIUS = 0.008
BORE_WALLS = 8
WALL_M = 0.002
#: mouth chamfer: plates flaring out by this angle from the bore axis, this long (m)
FUNNEL_DEG = 40.0
FUNNEL_M = 0.006
#: stand holes (x, y) on the table, one per tube; a hole is 30 mm deep, the table is its floor
STAND_SPOTS: dict[str, tuple[float, float]] = {"tube_a": (0.30, -0.22), "tube_b": (0.30, 0.22)}
STAND_DEPTH = 0.03
CAMERAS: tuple[str, ...] = ("front", "wrist")
#: evaluator-state channel given only to a scripted system that declares it
PRIVILEGED_CHANNELS: tuple[str, ...] = ("object_poses",)


def _quat(rot: np.ndarray) -> tuple[float, float, float, float]:
    """(w, x, y, z) of a rotation matrix."""
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.asarray(rot, dtype=float).reshape(-1))
    return tuple(float(v) for v in q)  # type: ignore[return-value]


def _ring(center: np.ndarray, rot: np.ndarray, name: str, length: float, cls: str) -> list[str]:
    """Wall boxes of one bore: ``center`` (3,) is the middle of the bore on its axis,
    ``rot`` columns are (x, y, axis-up) of the bore frame."""
    lines = []
    half_width = (BORE_RADIUS + WALL_M) * math.tan(math.pi / BORE_WALLS)
    for k in range(BORE_WALLS):
        beta = 2 * math.pi * k / BORE_WALLS
        radial = math.cos(beta) * rot[:, 0] + math.sin(beta) * rot[:, 1]
        tangential = np.cross(rot[:, 2], radial)
        pos = center + (BORE_RADIUS + WALL_M / 2) * radial
        q = _quat(np.column_stack([radial, tangential, rot[:, 2]]))
        lines.append(f'<geom name="{name}_w{k}" class="{cls}" pos="{pos[0]:.6f} {pos[1]:.6f} {pos[2]:.6f}" '
                     f'quat="{q[0]:.6f} {q[1]:.6f} {q[2]:.6f} {q[3]:.6f}" size="{WALL_M / 2} {half_width:.5f} {length / 2}"/>')
    return lines


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
        q = _quat(np.column_stack([normal, tangential, along]))
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
        lines += _ring(mouth + axis * (length / 2), rot, f"slot{j}", length, "bore")
        lines += _funnel(mouth, rot, f"slot{j}")
        floor = mouth + axis * (depth + 0.002)
        q = _quat(rot)
        half = BORE_RADIUS + WALL_M
        lines.append(f'<geom name="slot{j}_floor" class="bore" pos="{floor[0]:.6f} {floor[1]:.6f} {floor[2]:.6f}" '
                     f'quat="{q[0]:.6f} {q[1]:.6f} {q[2]:.6f} {q[3]:.6f}" size="{half} {half} 0.002"/>')
    return "\n      ".join(lines)


def stand_geoms() -> str:
    lines = ['<body name="stand" pos="0 0 0">']
    for tube, (x, y) in STAND_SPOTS.items():
        center = np.array([x, y, STAND_DEPTH / 2])
        lines += ["  " + g for g in _ring(center, np.eye(3), f"stand_{tube}", STAND_DEPTH, "stand")]
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
    text = importlib.resources.files("labrecord.sim.assets").joinpath("centrifuge.xml").read_text()
    sensors = "\n    ".join(f'<contact name="touch_{label}" {attrs} data="found" num="1"/>' for label, attrs in _sensors())
    values = {"ROTOR_X": ROTOR_XY[0], "ROTOR_Y": ROTOR_XY[1], "ROTOR_Z": ROTOR_Z, "TUBE_R": TUBE_RADIUS,
              "TUBE_HALF": TUBE_HALF, "CAP_Z": TUBE_HALF, "CAP_R": CAP_RADIUS}
    for key, value in values.items():
        text = text.replace(key, f"{value:g}")
    return (text.replace("<!--ROTOR_BORES-->", bore_geoms(calibration)).replace("<!--STANDS-->", stand_geoms())
            .replace("<!--CONTACT_SENSORS-->", sensors))


def build_model(calibration: Any) -> Any:
    return build_arm_model(scene_xml(calibration))


class CentrifugeScene(WeighingScene):
    """One MuJoCo model + data of the centrifuge bench (the arm methods are the weighing
    scene's: ``apply``, ``tcp_pose``, ``robot_state``, ``render`` …)."""

    def __init__(self, calibration: Any, width: int = 224, height: int = 224) -> None:
        self.calibration = calibration
        self._bind(build_model(calibration), TUBES, "rotor", width, height)
        m = self.model
        self.mocap = int(m.body_mocapid[self.body_id["rotor"]])
        self.touch_adr = int(m.sensor_adr[m.sensor(f"touch_{SENSORS[0]}").id])
        assert m.nsensordata == self.touch_adr + len(SENSORS)
        self._displayed = None

    def reset(self, instance: Any) -> None:  # type: ignore[override]
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

    def set_tube(self, tube: str, tip: np.ndarray, axis: np.ndarray) -> None:
        """Place ``tube`` with its bottom tip at ``tip`` and its cap → tip axis along ``axis``."""
        axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
        z = -axis  # the body's z runs from the tip to the cap
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        rot = np.column_stack([x, np.cross(z, x), z])
        adr = self.qpos_adr[tube]
        self.data.qpos[adr:adr + 3] = np.asarray(tip) + z * TUBE_HALF
        self.data.qpos[adr + 3:adr + 7] = _quat(rot)
        vel = self.qvel_adr[tube]
        self.data.qvel[vel:vel + 6] = 0.0

    def tube_pose(self, tube: str) -> tuple[np.ndarray, np.ndarray]:
        """World tip (3,) and unit axis cap → tip (3,) of a tube."""
        body = self.body_id[tube]
        rot = self.data.xmat[body].reshape(3, 3)
        axis = -rot[:, 2]
        return self.data.xpos[body] + axis * TUBE_HALF, axis.copy()

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


class TubeBenchEnv(WeighingEnv):
    """A tube bench (centrifuge, rack) as an :class:`~labrecord.recorders.loop.Environment`:
    the weighing bench's arm stepping (``apply``, ``advance``, ``hold_action``) and reset
    (the scene's, then ``settle_steps``) on its own ``scene``, with the raw rows of its free
    ``tubes``; its public state is proprioception and ``object_poses``."""

    privileged_channels = PRIVILEGED_CHANNELS

    def __init__(self, scene: Any, tubes: tuple[str, ...], action_spec: Any, cameras: tuple[str, ...]) -> None:
        from labrecord.sim.control import ArmController, action_spec as spec_of

        self.scene = scene
        self.action_spec = action_spec or spec_of("eef_delta")
        self.controller = ArmController(self.scene, self.action_spec)
        self.control_hz = self.action_spec.control_hz
        self.cameras = cameras
        self._k = 0
        self._step = 0
        self._ramp = None
        self.display = lambda: {}
        self._bind_rows(tubes)

    def public_state(self) -> dict[str, Any]:
        """Proprioception (``robot``, native) and ``object_poses`` (evaluator state: what the
        scene's ``object_poses`` gives), which reaches only a policy that declares it."""
        return {"robot": self.scene.robot_state(), "object_poses": self.scene.object_poses()}


class CentrifugeEnv(TubeBenchEnv):
    """The centrifuge bench: the centrifuge's raw rows and measurement columns, and the
    rotor yaw of the instance."""

    def __init__(self, calibration: Any, action_spec: Any = None, cameras: tuple[str, ...] = CAMERAS,
                 size: int = DEFAULT_SIZE) -> None:
        super().__init__(CentrifugeScene(calibration, size, size), TUBES, action_spec, cameras)
        self.rotor_yaw = 0.0

    def reset(self, instance: Any, settle_steps: int = 0) -> None:  # type: ignore[override]
        super().reset(instance, settle_steps)
        self.rotor_yaw = float(instance.rotor_yaw)

    def end_block(self) -> dict[str, np.ndarray]:
        """Centrifuge measurement columns for the steps since the last call (n rows)."""
        n = self._k
        found = self._sensor_rows[:n, self.scene.touch_adr:] > 0
        closed = float(self._data.ctrl[self.scene.grip_ctrl]) < 0.5 * FINGER_OPEN_M
        qpos = self._qpos_rows[:n].reshape(n, len(TUBES), 7)
        lin = self._qvel_rows[:n].reshape(n, len(TUBES), 6)[:, :, :3]
        mocap = self._data.mocap_pos[self.scene.mocap]
        columns: dict[str, np.ndarray] = {
            "step": np.arange(self._step, self._step + n, dtype=np.int64), "t": self._t[:n].copy(),
            "rotor_x": np.full(n, float(mocap[0])), "rotor_y": np.full(n, float(mocap[1])),
            "rotor_z": np.full(n, float(mocap[2])), "rotor_yaw": np.full(n, self.rotor_yaw),
        }
        for i, tube in enumerate(TUBES):
            w, x, y, z = (qpos[:, i, 3 + k] for k in range(4))
            # cap -> tip axis = -(body z column) of the rotation of quaternion (w, x, y, z)
            axis = -np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=1)
            tip = qpos[:, i, :3] + axis * TUBE_HALF
            for name, values in zip(("x", "y", "z", "ax", "ay", "az"), (*tip.T, *axis.T)):
                columns[f"{tube}_{name}"] = np.ascontiguousarray(values)
            base = 4 * i
            left, right, palm = found[:, base + 1], found[:, base + 2], found[:, base + 3]
            columns[f"{tube}_supported"] = found[:, base].copy()
            columns[f"{tube}_contact"] = left | right | palm
            columns[f"{tube}_grasped"] = left & right & closed
            columns[f"{tube}_speed"] = np.sqrt((lin[:, i] * lin[:, i]).sum(axis=1))
        self._step += n
        self._k = 0
        return columns

    def render(self, camera: str) -> np.ndarray:
        return self.scene.render(camera)


__all__ = ["CentrifugeEnv", "CentrifugeScene", "TUBES", "TubeBenchEnv"]
