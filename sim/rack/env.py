"""The rack bench as an :class:`~labrecord.recorders.loop.Environment`, with its own
occluded transition (``environment_in_control``; Labference sec. 8.3, eq. 10)."""
from __future__ import annotations

from typing import Any

import numpy as np

from labrecord.sim.bench.env import DEFAULT_SIZE, BenchEnv
from labrecord.sim.bench.scene import FINGER_OPEN_M
from labrecord.sim.bench.tubes import tips_and_axes
from labrecord.sim.rack.scene import OCCLUSION_MOVE_S, OCCLUSION_S, TRIGGER_S, WITHDRAWN_M, RackScene

CAMERAS: tuple[str, ...] = ("front", "wrist")


class RackEnv(BenchEnv):
    """The rack bench with its own occluded transition (``environment_in_control``)."""

    def __init__(self, distractors: int = 0, action_spec: Any = None, cameras: tuple[str, ...] = CAMERAS,
                 size: int = DEFAULT_SIZE) -> None:
        scene = RackScene(distractors, size, size)
        super().__init__(scene, scene.tubes, action_spec, cameras)
        self.moved_pose: tuple[float, float, float, float] | None = None
        self._reset_transition()

    def _reset_transition(self) -> None:
        self.phase = "before"        # before -> occluded -> after
        self.resting_since: float | None = None
        self.occluded_since = 0.0
        self.moved = False

    def reset(self, instance: Any, settle_steps: int = 0) -> None:
        super().reset(instance, settle_steps)
        self.moved_pose = tuple(instance.moved_pose) if instance.moved_pose else None
        self._reset_transition()

    def environment_in_control(self) -> bool:
        return self.phase == "occluded"

    def end_block(self) -> dict[str, np.ndarray]:
        """Rack measurement columns for the steps since the last call, then the transition's
        next move (taken at this control boundary)."""
        n, columns = self._block_steps()
        scene = self.scene
        k = len(scene.tubes)
        found = (self._sensor_rows[:n, scene.touch_adr:] > 0).reshape(n, k, 5)
        closed = float(self._data.ctrl[scene.grip_ctrl]) < 0.5 * FINGER_OPEN_M
        qpos = self._qpos_rows[:n, :7]
        lin = self._qvel_rows[:n].reshape(n, k, 6)[:, :, :3]
        speed = np.sqrt((lin * lin).sum(axis=2))
        tip, _ = tips_and_axes(qpos)
        rx, ry, rz, ryaw = scene.rack_pose()
        grip = self._sensor_rows[:n, scene.grip_adr:scene.grip_adr + 6]
        columns.update({
            "rack_x": np.full(n, rx), "rack_y": np.full(n, ry), "rack_z": np.full(n, rz), "rack_yaw": np.full(n, ryaw),
            "tube_x": np.ascontiguousarray(tip[:, 0]), "tube_y": np.ascontiguousarray(tip[:, 1]),
            "tube_z": np.ascontiguousarray(tip[:, 2]),
            "tube_in_rack": found[:, 0, 0].copy(), "tube_on_table": found[:, 0, 1].copy(),
            "tube_contact": found[:, 0, 2] | found[:, 0, 3] | found[:, 0, 4],
            "tube_grasped": found[:, 0, 2] & found[:, 0, 3] & closed,
            "tube_speed": speed[:, 0].copy(),
            "grip_x": grip[:, 0].copy(), "grip_y": grip[:, 1].copy(), "grip_z": grip[:, 2].copy(),
            "grip_vz": grip[:, 5].copy(),
            "occluded": np.full(n, self.phase == "occluded"),
        })
        if n:
            self._transition(columns, found, speed)
        return columns

    def _transition(self, columns: dict[str, np.ndarray], found: np.ndarray, speed: np.ndarray) -> None:
        t = float(columns["t"][-1])
        if self.phase == "before":
            rest = (columns["tube_in_rack"] & ~columns["tube_contact"] & (columns["tube_speed"] <= 0.01)
                    & (columns["grip_z"] - columns["rack_z"] >= WITHDRAWN_M)).all()
            self.resting_since = (self.resting_since if self.resting_since is not None else float(columns["t"][0])) if rest else None
            if self.resting_since is not None and t - self.resting_since >= TRIGGER_S:
                self.phase, self.occluded_since = "occluded", t
        elif self.phase == "occluded":
            if not self.moved and t - self.occluded_since >= OCCLUSION_MOVE_S:
                carried = [name for i, name in enumerate(self.scene.tubes) if found[-1, i, 0]]
                if self.moved_pose is not None:
                    self.scene.relocate(self.moved_pose, carried)
                self.moved = True
            elif self.moved and t - self.occluded_since >= OCCLUSION_S and (speed[-1] <= 0.01).all():
                self.phase = "after"

    def render(self, camera: str) -> np.ndarray:
        frame = self.scene.render(camera)
        return np.zeros_like(frame) if self.phase == "occluded" else frame
