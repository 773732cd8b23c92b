"""The centrifuge bench as an :class:`~labrecord.recorders.loop.Environment`.

Measured per physics step: the rotor frame, each tube's bottom tip and unit axis (cap →
tip) from its simulated pose, its speed, support (a contact sensor between the tube and
the rotor's bores), robot contact (finger pads or palm) and the bilateral grasp —
exactly the columns ``centrifuge/1`` replays from.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from labrecord.sim.bench.env import DEFAULT_SIZE, BenchEnv
from labrecord.sim.bench.scene import FINGER_OPEN_M
from labrecord.sim.bench.tubes import tips_and_axes
from labrecord.sim.centrifuge.scene import TUBES, CentrifugeScene

CAMERAS: tuple[str, ...] = ("front", "wrist")


class CentrifugeEnv(BenchEnv):
    """The centrifuge bench: the centrifuge's raw rows and measurement columns, and the
    rotor yaw of the instance."""

    def __init__(self, calibration: Any, action_spec: Any = None, cameras: tuple[str, ...] = CAMERAS,
                 size: int = DEFAULT_SIZE) -> None:
        super().__init__(CentrifugeScene(calibration, size, size), TUBES, action_spec, cameras)
        self.rotor_yaw = 0.0

    def reset(self, instance: Any, settle_steps: int = 0) -> None:
        super().reset(instance, settle_steps)
        self.rotor_yaw = float(instance.rotor_yaw)

    def end_block(self) -> dict[str, np.ndarray]:
        """Centrifuge measurement columns for the steps since the last call (n rows)."""
        n, columns = self._block_steps()
        found = self._sensor_rows[:n, self.scene.touch_adr:] > 0
        closed = float(self._data.ctrl[self.scene.grip_ctrl]) < 0.5 * FINGER_OPEN_M
        qpos = self._qpos_rows[:n].reshape(n, len(TUBES), 7)
        lin = self._qvel_rows[:n].reshape(n, len(TUBES), 6)[:, :, :3]
        mocap = self._data.mocap_pos[self.scene.mocap]
        columns.update({
            "rotor_x": np.full(n, float(mocap[0])), "rotor_y": np.full(n, float(mocap[1])),
            "rotor_z": np.full(n, float(mocap[2])), "rotor_yaw": np.full(n, self.rotor_yaw),
        })
        for i, tube in enumerate(TUBES):
            tip, axis = tips_and_axes(qpos[:, i])
            for name, values in zip(("x", "y", "z", "ax", "ay", "az"), (*tip.T, *axis.T)):
                columns[f"{tube}_{name}"] = np.ascontiguousarray(values)
            base = 4 * i
            left, right, palm = found[:, base + 1], found[:, base + 2], found[:, base + 3]
            columns[f"{tube}_supported"] = found[:, base].copy()
            columns[f"{tube}_contact"] = left | right | palm
            columns[f"{tube}_grasped"] = left & right & closed
            columns[f"{tube}_speed"] = np.sqrt((lin[:, i] * lin[:, i]).sum(axis=1))
        return columns


__all__ = ["CAMERAS", "CentrifugeEnv"]
