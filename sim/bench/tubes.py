"""What the tube benches share (centrifuge loading, placement recall): the tube's shape,
round holes built of wall boxes, placing a tube by its tip and axis, and reading a
tube's tip and axis back from its simulated pose."""
from __future__ import annotations

import numpy as np

from labrecord.sim.bench.scene import BenchScene, quat, ring

TUBE_RADIUS = 0.0065
TUBE_HALF = 0.04
CAP_RADIUS = 0.0075
#: radius of a hole a tube goes into (1.5 mm radial clearance), its walls and their thickness (m)
HOLE_RADIUS = 0.008
HOLE_WALLS = 8
WALL_M = 0.002


def hole_ring(center: np.ndarray, rot: np.ndarray, name: str, length: float, cls: str) -> list[str]:
    """The wall boxes of one tube hole (:func:`labrecord.sim.bench.scene.ring` of
    :data:`HOLE_RADIUS`, :data:`HOLE_WALLS` walls of :data:`WALL_M`)."""
    return ring(center, rot, name, length, cls, radius=HOLE_RADIUS, walls=HOLE_WALLS, wall_m=WALL_M)


def tips_and_axes(qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bottom tips (..., 3) and unit cap → tip axes (..., 3) of tubes from their free-joint
    rows ``[x, y, z, qw, qx, qy, qz]`` (..., 7)."""
    w, x, y, z = (qpos[..., 3 + k] for k in range(4))
    # cap -> tip axis = -(body z column) of the rotation of quaternion (w, x, y, z)
    axis = -np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=-1)
    return qpos[..., :3] + axis * TUBE_HALF, axis


class TubeScene(BenchScene):
    """A bench scene whose free bodies are tubes, placed and read by tip and axis."""

    def set_tube(self, tube: str, tip: np.ndarray, axis: np.ndarray) -> None:
        """Place ``tube`` with its bottom tip at ``tip`` and its cap → tip axis along ``axis``, at rest."""
        axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
        z = -axis  # the body's z runs from the tip to the cap
        helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        x = np.cross(helper, z)
        x /= np.linalg.norm(x)
        rot = np.column_stack([x, np.cross(z, x), z])
        adr = self.qpos_adr[tube]
        self.data.qpos[adr:adr + 3] = np.asarray(tip) + z * TUBE_HALF
        self.data.qpos[adr + 3:adr + 7] = quat(rot)
        vel = self.qvel_adr[tube]
        self.data.qvel[vel:vel + 6] = 0.0

    def tube_pose(self, tube: str) -> tuple[np.ndarray, np.ndarray]:
        """World tip (3,) and unit axis cap → tip (3,) of a tube."""
        body = self.body_id[tube]
        rot = self.data.xmat[body].reshape(3, 3)
        axis = -rot[:, 2]
        return self.data.xpos[body] + axis * TUBE_HALF, axis.copy()
