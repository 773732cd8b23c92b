"""Planar frame changes shared by the contracts (rack slots, centrifuge sockets).

Array kernels only: the bulk path (the replay audit) calls them on whole columns, the
step-by-step path (the online scorer) on a block of one or two rows, so both paths run the
same operations and agree bit for bit.
"""
from __future__ import annotations

import numpy as np


def to_frame(px: np.ndarray, py: np.ndarray, x0: np.ndarray | float, y0: np.ndarray | float,
             yaw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World points (px, py) in the frame at (x0, y0) turned by ``yaw`` about z.

    >>> lx, ly = to_frame(np.array([1.0]), np.array([1.0]), 1.0, 0.0, np.array([np.pi / 2]))
    >>> round(float(lx[0]), 12), round(float(ly[0]), 12)
    (1.0, 0.0)
    """
    c, s = np.cos(yaw), np.sin(yaw)
    dx, dy = px - x0, py - y0
    return c * dx + s * dy, -s * dx + c * dy
