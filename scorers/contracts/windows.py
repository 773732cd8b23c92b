"""Trailing time windows over a measurement series, in bulk (numpy) and one step at a time.

Both forms use the same membership rule — sample j is in the window of step k when
``t[k] - t[j] <= width`` and j is not before the current run start — and exact max / min,
so they agree bit for bit.
"""
from __future__ import annotations

from collections import deque

import numpy as np


def window_left(t: np.ndarray, width: float) -> np.ndarray:
    """First index j (n,) with ``t[k] - t[j] <= width`` for each k (t non-decreasing)."""
    n = len(t)
    index = np.arange(n)
    left = np.minimum(np.searchsorted(t, t - width, side="left"), index)
    while True:  # searchsorted compares t[j] >= t[k] - width; fix the rounding at the edge
        down = (left > 0) & (t - t[np.maximum(left - 1, 0)] <= width)
        up = (t - t[left] > width) & (left < index)
        if not down.any() and not up.any():
            return left
        left = left - down + up


def range_of(values: np.ndarray, left: np.ndarray) -> np.ndarray:
    """``max(values[left[k]:k+1]) - min(...)`` for every k, by a sparse table, O(n log w)."""
    n = len(values)
    if n == 0:
        return np.zeros(0)
    index = np.arange(n)
    span = index - left + 1
    max_levels, min_levels = [values], [values]
    length = 1
    while 2 * length <= span.max():
        max_levels.append(np.maximum(max_levels[-1][:-length], max_levels[-1][length:]))
        min_levels.append(np.minimum(min_levels[-1][:-length], min_levels[-1][length:]))
        length *= 2
    level = np.floor(np.log2(span)).astype(np.int64)
    out = np.empty(n)
    for lvl in np.unique(level):
        sel = np.flatnonzero(level == lvl)
        a, b = left[sel], sel - (1 << lvl) + 1
        hi = np.maximum(max_levels[lvl][a], max_levels[lvl][b])
        lo = np.minimum(min_levels[lvl][a], min_levels[lvl][b])
        out[sel] = hi - lo
    return out


class SlidingRange:
    """Scalar twin of :func:`window_left` + :func:`range_of` (monotone deques)."""

    __slots__ = ("width", "_max", "_min")

    def __init__(self, width: float) -> None:
        self.width = width
        self._max: deque[tuple[float, float]] = deque()
        self._min: deque[tuple[float, float]] = deque()

    def clear(self) -> None:
        self._max.clear()
        self._min.clear()

    def deques(self) -> tuple[deque[tuple[float, float]], deque[tuple[float, float]]]:
        """The (time, value) deques of the running max and min, for loops that inline :meth:`push`."""
        return self._max, self._min

    def push(self, t: float, value: float) -> float:
        """Add a sample; returns max - min over the trailing window."""
        hi, lo = self._max, self._min
        while hi and hi[-1][1] <= value:
            hi.pop()
        hi.append((t, value))
        while lo and lo[-1][1] >= value:
            lo.pop()
        lo.append((t, value))
        while t - hi[0][0] > self.width:
            hi.popleft()
        while t - lo[0][0] > self.width:
            lo.popleft()
        return hi[0][1] - lo[0][1]
