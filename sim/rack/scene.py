"""The MuJoCo placement-recall bench: a 3×4 tube rack the environment relocates under occlusion.

The rack (``sim/assets/rack.xml``) is a mocap body whose frame is the contract's rack
frame (origin at the slot-grid centre on the top face, row A at +y, column 1 at −x);
each hole is a ring of boxes (convex shapes) over the rack block, whose top face is the
hole floor 30 mm below the rim.  The long edge on row A's side is red, the short edge
on column 1's side blue, and an orange marker sits at A1, so the rack's orientation is
visible after any turn.  The sample tube starts in a stand on the table; in the
extended condition three distractor tubes with the same cap occupy registered slots.

The environment transition (Labference sec. 8.3, eq. 10) is the env's own: once the
sample has rested released in the rack for :data:`TRIGGER_S` with the hand withdrawn,
the cameras go dark (``occluded``), the robot is held still and the policy is not
queried (``environment_in_control``); each tube's transform relative to the rack is
saved, the empty rack is moved to the instance's ``moved_pose`` (kept where it is when
there is none), the tubes are recreated at T'_world,tube = T'_world,rack · T_rack,tube
with zero velocity, and the frames stay dark until :data:`OCCLUSION_S` has passed and
every tube is at rest.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from labrecord.sim.bench.scene import ARM, asset_text, build_model as build_arm_model, quat
from labrecord.sim.bench.tubes import CAP_RADIUS, TUBE_HALF, TUBE_RADIUS, TubeScene, hole_ring

HOLE_DEPTH = 0.03
PITCH = 0.025
#: where the sample tube stands before it is placed (x, y)
STAND = (0.34, -0.02)
#: the marked table region (x0, x1, y0, y1)
REGION = (0.14, 0.32, -0.34, -0.18)
DISTRACTORS: tuple[str, ...] = ("d1", "d2", "d3")
#: a placed, released tube at rest this long with the hand withdrawn starts the transition
TRIGGER_S = 1.5
#: the shortest occluded interval (s); the rack moves OCCLUSION_MOVE_S into it
OCCLUSION_S = 2.0
OCCLUSION_MOVE_S = 0.4
#: the hand counts as withdrawn this high above the rack top (m)
WITHDRAWN_M = 0.15


def slot_local(label: str) -> tuple[float, float]:
    from labrecord.scorers.contracts.rack import slot_center

    return slot_center(label, PITCH)


def pose_matrix(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    from labrecord.scorers.contracts.rack import pose_matrix as matrix

    return matrix(x, y, z, yaw)


def hole_geoms() -> str:
    from labrecord.scorers.contracts.rack import SLOTS

    lines = []
    for label in SLOTS:
        x, y = slot_local(label)
        lines += hole_ring(np.array([x, y, -HOLE_DEPTH / 2]), np.eye(3), f"hole_{label}", HOLE_DEPTH, "hole")
    return "\n      ".join(lines)


def _tubes(names: tuple[str, ...]) -> str:
    lines = []
    for i, name in enumerate(names):
        lines.append(f'<body name="{name}" pos="{-0.3 + 0.05 * i} 0.45 0.05"><freejoint name="{name}"/>'
                     f'<geom name="{name}" class="tube"/><geom name="{name}_cap" class="cap"/></body>')
    return "\n    ".join(lines)


def _sensors(names: tuple[str, ...]) -> list[tuple[str, str]]:
    out = []
    for name in names:
        out += [(f"{name}_rack", f'body1="{name}" body2="rack"'), (f"{name}_table", f'body1="{name}" geom2="table"'),
                (f"{name}_left", f'body1="{name}" geom2="{ARM}finger_left"'),
                (f"{name}_right", f'body1="{name}" geom2="{ARM}finger_right"'),
                (f"{name}_palm", f'body1="{name}" geom2="{ARM}hand"')]
    return out


def tube_names(distractors: int) -> tuple[str, ...]:
    return ("tube", *DISTRACTORS[:distractors])


def scene_xml(distractors: int) -> str:
    text = asset_text("rack.xml")
    names = tube_names(distractors)
    x0, x1, y0, y1 = REGION
    values = {"TUBE_R": f"{TUBE_RADIUS:g}", "TUBE_HALF": f"{TUBE_HALF:g}", "CAP_R": f"{CAP_RADIUS:g}",
              "REGION_POS": f"{(x0 + x1) / 2:g} {(y0 + y1) / 2:g} 0.0005",
              "REGION_SIZE": f"{(x1 - x0) / 2:g} {(y1 - y0) / 2:g} 0.0005"}
    for key, value in values.items():
        text = text.replace(key, value)
    stand = ['<body name="stand" pos="0 0 0">']
    stand += ["  " + g for g in hole_ring(np.array([*STAND, 0.015]), np.eye(3), "stand", 0.03, "stand")]
    stand.append("</body>")
    sensors = "\n    ".join(f'<contact name="touch_{label}" {attrs} data="found" num="1"/>' for label, attrs in _sensors(names))
    return (text.replace("<!--RACK_HOLES-->", hole_geoms()).replace("<!--STANDS-->", "\n    ".join(stand))
            .replace("<!--TUBES-->", _tubes(names)).replace("<!--CONTACT_SENSORS-->", sensors))


def build_model(distractors: int) -> Any:
    return build_arm_model(scene_xml(distractors))


class RackScene(TubeScene):
    """One MuJoCo model + data of the rack bench."""

    def __init__(self, distractors: int, width: int = 224, height: int = 224) -> None:  # noqa: D107
        self.tubes = tube_names(distractors)
        self._bind(build_model(distractors), self.tubes, "rack", width, height)
        m = self.model
        self.mocap = int(m.body_mocapid[self.body_id["rack"]])
        self.grip_adr = int(m.sensor_adr[m.sensor("grip_pos").id])
        self.touch_adr = int(m.sensor_adr[m.sensor(f"touch_{_sensors(self.tubes)[0][0]}").id])
        assert m.nsensordata == self.touch_adr + len(_sensors(self.tubes))

    def set_rack(self, pose: tuple[float, float, float, float]) -> None:
        x, y, z, yaw = pose
        self.data.mocap_pos[self.mocap] = (x, y, z)
        self.data.mocap_quat[self.mocap] = (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))

    def rack_pose(self) -> tuple[float, float, float, float]:
        q = self.data.mocap_quat[self.mocap]
        x, y, z = (float(v) for v in self.data.mocap_pos[self.mocap])
        return x, y, z, 2 * math.atan2(float(q[3]), float(q[0]))

    def slot_world(self, label: str, pose: tuple[float, float, float, float] | None = None) -> np.ndarray:
        """World point of a slot's floor centre under ``pose`` (default: the current pose)."""
        lx, ly = slot_local(label)
        return (pose_matrix(*(pose or self.rack_pose())) @ np.array([lx, ly, -HOLE_DEPTH, 1.0]))[:3]

    def reset(self, instance: Any) -> None:
        """Rack at its start pose, distractors in their slots, the sample in the stand."""
        mujoco, m, d = self.mujoco, self.model, self.data
        mujoco.mj_resetData(m, d)
        self.set_rack(tuple(instance.rack_pose))  # type: ignore[arg-type]
        mujoco.mj_kinematics(m, d)
        down = np.array([0.0, 0.0, -1.0])
        for name, label in dict(instance.distractors).items():
            self.set_tube(name, self.slot_world(label) + np.array([0, 0, 0.0005]), down)
        self.set_tube("tube", np.array([*STAND, 0.0005]), down)
        self.home_arm()

    def relocate(self, pose: tuple[float, float, float, float], carried: list[str]) -> None:
        """Eq. 10: move the empty rack to ``pose`` and recreate each ``carried`` tube at
        T'_world,tube = T'_world,rack · T_rack,tube, at rest."""
        d = self.data
        old = pose_matrix(*self.rack_pose())
        new = pose_matrix(*pose)
        saved = {}
        for name in carried:
            body = self.body_id[name]
            t_world = np.eye(4)
            t_world[:3, :3] = d.xmat[body].reshape(3, 3)
            t_world[:3, 3] = d.xpos[body]
            saved[name] = np.linalg.solve(old, t_world)  # T_rack,tube
        self.set_rack(pose)
        for name, t_rack_tube in saved.items():
            t_new = new @ t_rack_tube
            adr, vel = self.qpos_adr[name], self.qvel_adr[name]
            d.qpos[adr:adr + 3] = t_new[:3, 3]
            d.qpos[adr + 3:adr + 7] = quat(t_new[:3, :3])
            d.qvel[vel:vel + 6] = 0.0
        self.mujoco.mj_forward(self.model, d)

    def object_poses(self) -> dict[str, Any]:
        """The rack frame ``[x, y, z, yaw]`` and the bottom tips of every tube as ``seen0``,
        ``seen1`` … in sorted order, unlabeled (same-cap tubes look alike: which one is the
        sample is not given); ``seen0``–``seen3`` always, nan where a condition has fewer tubes."""
        tips = sorted([round(float(v), 5) for v in self.tube_pose(name)[0]] for name in self.tubes)
        tips += [[math.nan] * 3] * (1 + len(DISTRACTORS) - len(tips))  # one shape for every condition
        return {"rack": [round(v, 6) for v in self.rack_pose()], **{f"seen{i}": tip for i, tip in enumerate(tips)}}
