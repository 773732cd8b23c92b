"""What every bench scene shares: the Panda arm attached to a family's MJCF, the model's
ids, the arm's reset, joint-space command, stepping, proprioception and offscreen rendering.

A family's scene (``sim/<family>/scene.py``) builds its MJCF text, compiles it with the arm
through :func:`build_model` and binds the result with :meth:`BenchScene._bind`, naming its
free bodies and its fixture; its ``reset`` places its objects and ends with
:meth:`BenchScene.home_arm`.
"""
from __future__ import annotations

import importlib.resources
import math
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError

PHYSICS_HZ = 500.0
#: the arm's base frame in the world (m); the arm faces +x, over the bench
ARM_BASE = (-0.40, 0.0, 0.0)
#: names of the attached arm's elements carry this prefix
ARM = "panda/"
ARM_JOINTS: tuple[str, ...] = tuple(f"{ARM}joint{i}" for i in range(1, 8))
#: start configuration: tool centre 0.5 m in front of the base, 0.3 m up, pointing down
HOME_Q: tuple[float, ...] = (0.0, -0.098, 0.0, -2.287, 0.0, 2.19, 0.785)
#: finger travel per finger (m): 0.04 open, 0 closed
FINGER_OPEN_M = 0.04
#: registered camera name -> model camera, where they differ (the wrist camera rides on the arm's hand)
CAMERA_OF = {"wrist": f"{ARM}wrist"}


def asset_text(name: str) -> str:
    """The text of ``sim/assets/<name>``."""
    return importlib.resources.files("labrecord.sim.assets").joinpath(name).read_text()


def arm_path() -> str:
    """Path of the standalone Panda MJCF (arm + gripper; meshes beside it)."""
    return str(importlib.resources.files("labrecord.sim.assets").joinpath("panda", "panda.xml"))


def build_model(text: str) -> Any:
    """The compiled scene: a bench's MJCF ``text`` with the Panda attached at :data:`ARM_BASE`."""
    import mujoco

    spec = mujoco.MjSpec.from_string(text)
    arm = mujoco.MjSpec.from_file(arm_path())
    frame = spec.worldbody.add_frame(pos=list(ARM_BASE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the arm's own compiler options are the scene's
        frame.attach_body(arm.body("link0"), ARM, "")
    return spec.compile()


def quat(rot: np.ndarray) -> tuple[float, float, float, float]:
    """(w, x, y, z) of a rotation matrix."""
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.asarray(rot, dtype=float).reshape(-1))
    w, x, y, z = (float(v) for v in q)
    return w, x, y, z


def ring(center: np.ndarray, rot: np.ndarray, name: str, length: float, cls: str, *, radius: float,
         walls: int, wall_m: float) -> list[str]:
    """Wall boxes of one round hole (convex shapes: MuJoCo collides no concave mesh):
    ``center`` (3,) is the middle of the hole on its axis, ``rot`` columns are (x, y,
    axis-up) of the hole frame; ``walls`` boxes ``wall_m`` thick around ``radius``."""
    lines = []
    half_width = (radius + wall_m) * math.tan(math.pi / walls)
    for k in range(walls):
        beta = 2 * math.pi * k / walls
        radial = math.cos(beta) * rot[:, 0] + math.sin(beta) * rot[:, 1]
        tangential = np.cross(rot[:, 2], radial)
        pos = center + (radius + wall_m / 2) * radial
        q = quat(np.column_stack([radial, tangential, rot[:, 2]]))
        lines.append(f'<geom name="{name}_w{k}" class="{cls}" pos="{pos[0]:.6f} {pos[1]:.6f} {pos[2]:.6f}" '
                     f'quat="{q[0]:.6f} {q[1]:.6f} {q[2]:.6f} {q[3]:.6f}" size="{wall_m / 2} {half_width:.5f} {length / 2}"/>')
    return lines


_NONE = np.zeros(0, dtype=np.int64)


def _culling_is_exact(model: Any) -> bool:
    """Whether a geom outside a camera's view can be left out without changing its frame:
    only when nothing out of view can reach the image, that is no reflective material, no
    shadow-casting light, and only plain perspective cameras (no intrinsics, no orthographic
    projection, which :meth:`BenchScene.outside_view` does not model)."""
    return bool((model.mat_reflectance == 0).all() and not (model.light_castshadow.any() and model.vis.quality.shadowsize > 0)
                and (model.cam_projection == 0).all() and (model.cam_sensorsize == 0).all())


class BenchScene(ABC):
    """One MuJoCo model + data of a bench with the Panda arm.

    ``step()`` advances physics; ``apply`` holds a joint-space command: seven joint
    position targets (rad) and a gripper command in [0, 1] (0 open, 1 closed).  The
    policy-facing action conventions are converted to it by
    :class:`labrecord.sim.bench.control.ArmController`.
    """

    model: Any
    data: Any

    def _bind(self, model: Any, objects: Sequence[str], fixture: str, width: int, height: int) -> None:
        """Take ``model`` with a fresh data and the ids every bench's arm methods read: the
        free ``objects``' bodies and joint addresses, the ``fixture`` body, the arm's joints,
        fingers, actuators and TCP site."""
        import mujoco

        self.mujoco = mujoco
        self.model = m = model
        self.data = mujoco.MjData(m)
        self.width, self.height = width, height
        self._renderer: Any = None
        self.dt = float(m.opt.timestep)
        self.body_id = {name: m.body(name).id for name in (*objects, fixture)}
        self.qpos_adr = {name: int(m.jnt_qposadr[m.joint(name).id]) for name in objects}
        self.qvel_adr = {name: int(m.jnt_dofadr[m.joint(name).id]) for name in objects}
        self.arm_qpos = np.array([m.jnt_qposadr[m.joint(j).id] for j in ARM_JOINTS])
        self.arm_qvel = np.array([m.jnt_dofadr[m.joint(j).id] for j in ARM_JOINTS])
        self.finger_qpos = np.array([m.jnt_qposadr[m.joint(f"{ARM}finger_{side}").id] for side in ("left", "right")])
        self.arm_ctrl = np.array([m.actuator(j).id for j in ARM_JOINTS])
        self.grip_ctrl = int(m.actuator(f"{ARM}gripper").id)
        self.tcp_site = int(m.site(f"{ARM}tcp").id)

    # -- instance ---------------------------------------------------------------------
    @abstractmethod
    def reset(self, instance: Any) -> None:
        """Put ``instance`` into the model (a family's objects), the arm at :data:`HOME_Q`."""

    def home_arm(self) -> None:
        """The arm at :data:`HOME_Q` with open fingers, commanded to stay there; the rest of
        the model's state as set, positions forwarded (the last step of every bench's reset)."""
        self.data.qpos[self.arm_qpos] = HOME_Q
        self.data.qpos[self.finger_qpos] = FINGER_OPEN_M
        self.apply(np.array([*HOME_Q, 0.0]))
        self.mujoco.mj_forward(self.model, self.data)

    def _set_free(self, name: str, pos: tuple[float, float, float]) -> None:
        adr = self.qpos_adr[name]
        self.data.qpos[adr:adr + 3] = pos
        self.data.qpos[adr + 3:adr + 7] = (1.0, 0.0, 0.0, 0.0)

    # -- control and stepping ---------------------------------------------------------
    def apply(self, command: np.ndarray) -> None:
        """Hold ``[q1 … q7, grip]``: joint position targets and the gripper command."""
        self.data.ctrl[self.arm_ctrl] = command[:7]
        self.data.ctrl[self.grip_ctrl] = FINGER_OPEN_M * (1.0 - float(np.clip(command[7], 0.0, 1.0)))

    def step(self) -> None:
        self.mujoco.mj_step(self.model, self.data)

    @property
    def time(self) -> float:
        return float(self.data.time)

    def contacts(self) -> np.ndarray:
        """(ncon, 2) geom ids of the current contacts (a copy)."""
        return self.data.contact.geom[: self.data.ncon].copy()

    def joint_pos(self) -> np.ndarray:
        return self.data.qpos[self.arm_qpos].copy()

    def tcp_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """Tool-centre position (3,) and rotation matrix (3, 3) in the world frame."""
        return self.data.site_xpos[self.tcp_site].copy(), self.data.site_xmat[self.tcp_site].reshape(3, 3).copy()

    def robot_state(self) -> dict[str, Any]:
        """Proprioception: joint positions and velocities (rad, rad/s), finger positions (m,
        each finger from closed), tool-centre position (m, world) and orientation
        (quaternion x, y, z, w, world)."""
        pos, rot = self.tcp_pose()
        wxyz = np.zeros(4)
        self.mujoco.mju_mat2Quat(wxyz, rot.reshape(-1))
        d = self.data
        # one list of Python floats, rounded in one pass, then cut into the fields
        values = [round(v, 6) for v in np.concatenate((d.qpos[self.arm_qpos], d.qvel[self.arm_qvel],
                                                        d.qpos[self.finger_qpos], pos, wxyz[1:], wxyz[:1])).tolist()]
        arm, fingers = len(self.arm_qpos), len(self.finger_qpos)
        return {"joint_pos": values[:arm], "joint_vel": values[arm:2 * arm],
                "gripper_qpos": values[2 * arm:2 * arm + fingers], "eef_pos": values[2 * arm + fingers:2 * arm + fingers + 3],
                "eef_quat": values[2 * arm + fingers + 3:]}

    @abstractmethod
    def object_poses(self) -> dict[str, Any]:
        """The evaluator-state channel ``object_poses`` (what the cameras show of the objects)."""

    # -- rendering --------------------------------------------------------------------
    def _make_renderer(self) -> Any:
        # The offscreen buffer only as large as the frames: the software rasterizer
        # (llvmpipe) clears and resolves the whole multisampled buffer every frame, and the
        # frames come out pixel-identical (the recorded video digests of
        # tests/sim/test_same_runs.py hold that).  The 4 samples stay: fewer change the pixels.
        visual = self.model.vis
        visual.global_.offwidth, visual.global_.offheight = self.width, self.height
        try:
            return self.mujoco.Renderer(self.model, self.height, self.width)
        except Exception as error:  # mujoco raises RuntimeError/FatalError/ctypes errors by backend
            backend = os.environ.get("MUJOCO_GL", "(unset)")
            raise LabrecordError(
                f"offscreen rendering is unavailable (MUJOCO_GL={backend}): {str(error).splitlines()[-1]}; "
                "install EGL (Debian: apt-get install libegl1 libgl1-mesa-dri) or run without cameras (--no-cameras)"
            ) from error

    def render(self, camera: str) -> np.ndarray:
        """An RGB frame (H, W, 3) uint8 from a named camera.

        Geoms wholly outside the camera's view are left out of the scene first
        (:meth:`outside_view`): the software rasterizer's time goes into every geom's
        triangles whether or not they land on the image, and a geom out of view adds no
        pixel, so the frame is the same."""
        if self._renderer is None:
            self._renderer = self._make_renderer()
            self._cull = _culling_is_exact(self.model)
        name = CAMERA_OF.get(camera, camera)
        hidden = self.outside_view(name) if self._cull else _NONE
        if len(hidden) == 0:
            self._renderer.update_scene(self.data, camera=name)
            return self._renderer.render()
        # mjv_updateScene leaves out geoms of zero alpha; the model's own alpha is put back at once
        rgba = self.model.geom_rgba
        alpha = rgba[hidden, 3].copy()
        rgba[hidden, 3] = 0.0
        try:
            self._renderer.update_scene(self.data, camera=name)
        finally:
            rgba[hidden, 3] = alpha
        return self._renderer.render()

    def outside_view(self, camera: str) -> np.ndarray:
        """Ids of the geoms whose bounding sphere lies wholly outside the view frustum of the
        model camera ``camera`` (a perspective camera) in the current kinematics.

        In camera coordinates (x right, y up, looking along -z) a side plane of the frustum
        is x = ±tx·(-z) (y = ±ty·(-z) above and below), tx = aspect·ty, ty = tan(fovy / 2);
        a sphere of radius r at (x, y, z) is outside it when (±x + tx·z) / √(1 + tx²) > r
        (the same for y with ty).  Hand check: fovy 90°, square image (tx = ty = 1), a unit
        sphere at (3, 0, -1) is 2 / √2 ≈ 1.41 > 1 beyond the right plane: outside; at
        (1.5, 0, -1) it is 0.35 < 1: kept.  The four side planes meet at the camera, so a sphere
        wholly behind it is outside them too.  Planes (radius 0) are always kept; a 1 mm
        margin absorbs rounding."""
        m, d = self.model, self.data
        cam = m.camera(camera).id
        rel = (d.geom_xpos - d.cam_xpos[cam]) @ d.cam_xmat[cam].reshape(3, 3)
        x, y, z = rel[:, 0], rel[:, 1], rel[:, 2]
        ty = math.tan(math.radians(float(m.cam_fovy[cam])) / 2.0)
        tx = ty * self.width / self.height
        radius = m.geom_rbound + 1e-3
        outside = ((np.abs(x) + tx * z) / math.hypot(1.0, tx) > radius) | ((np.abs(y) + ty * z) / math.hypot(1.0, ty) > radius)
        return np.flatnonzero(outside & (m.geom_rbound > 0))

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
