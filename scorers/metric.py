"""Intervals of the metrics (the point estimates and bounds are :mod:`labrecord.scorers.metrics`).

A metric is a ratio of sums over members, each tagged with the ``cluster`` it belongs to
(a run, or a matched pair); rates have ``den = 1`` per member, means ``num = x, den = 1``.

Intervals (see docs/scoring.md for which metric uses which):

* :func:`wilson` — the Wilson score interval for a rate over independent runs (each run
  one success or failure).  It never collapses to a point, not even at 0/n or n/n.
* :class:`SharedBootstrap` — a percentile bootstrap that resamples whole clusters with
  replacement (all decisions of one rollout, both branches of a pair move together).  All
  metrics of one result group read the *same* resampled clusters, so two metrics with
  identical per-cluster counts get identical intervals.
"""
from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np


def rng_for(seed: int, *keys: str) -> np.random.Generator:
    """A generator for one (group, metric): the same seed gives the same stream regardless
    of which other metrics or groups are scored alongside."""
    tags = [zlib.crc32(key.encode("utf-8")) for key in keys]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), *tags])))


def wilson(successes: float, n: float, level: float = 0.95) -> list[float] | None:
    """Wilson score interval of a binomial rate ``successes/n``; ``None`` when ``n = 0``.

    Hand check: 0 of 6 gives ``[0, z²/(6+z²)] = [0, 0.390]`` with z = 1.96, and 6 of 6 its
    mirror ``[0.610, 1]`` — never the point [0, 0] or [1, 1] a percentile bootstrap gives.
    """
    if n <= 0:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # at 0/n (n/n) the lower (upper) end is exactly 0 (1); rounding would leave ±1e-17
    low = 0.0 if successes <= 0 else float(max(0.0, centre - half))
    high = 1.0 if successes >= n else float(min(1.0, centre + half))
    return [low, high]


class SharedBootstrap:
    """One set of resampled clusters for a whole result group.

    ``weights`` is a ``(resamples, k)`` matrix of multinomial draw counts over the group's
    ``universe`` of clusters (drawing ``k`` clusters with replacement); every metric of the
    group evaluates ``Σ w·num / Σ w·den`` over its own clusters with the same matrix.  A
    metric whose clusters are the whole universe gets exactly the plain index bootstrap.
    """

    def __init__(self, universe: Sequence[str], rng: np.random.Generator, resamples: int) -> None:
        self.index = {c: i for i, c in enumerate(sorted(set(universe)))}
        k = len(self.index)
        self.weights = (rng.multinomial(k, np.full(k, 1.0 / k), size=resamples).astype(float)
                        if k and resamples > 0 else np.zeros((0, k)))

    def interval(self, clusters: Sequence[str], num: Sequence[float], den: Sequence[float],
                 level: float = 0.95) -> list[float] | None:
        """Percentile interval of the ratio of sums; resamples with a zero denominator are dropped."""
        if not len(self.weights) or not len(clusters):
            return None
        cols = np.asarray([self.index[str(c)] for c in clusters])
        w = self.weights[:, cols]
        nums, dens = w @ np.asarray(num, dtype=float), w @ np.asarray(den, dtype=float)
        keep = dens != 0
        if not keep.any():
            return None
        values = nums[keep] / dens[keep]
        alpha = (1.0 - level) / 2.0
        lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
        return [float(lo), float(hi)]
