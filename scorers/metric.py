"""The one estimator every metric uses: a ratio of sums over resampling units, and its intervals.

A metric is given as per-row ``num`` and ``den`` contributions, each row tagged with the
``cluster`` it belongs to (a run, or a matched pair).  The point estimate is
``sum(num) / sum(den)``; rates have ``den = 1`` per row, means have ``num = x`` and
``den = 1``.

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
from typing import Any

import numpy as np

from labrecord.models import MetricValue

#: resamples drawn per block, to bound memory at (block x clusters) weights
_BLOCK = 200


def rng_for(seed: int, *keys: str) -> np.random.Generator:
    """A generator for one (group, metric): the same seed gives the same stream regardless
    of which other metrics or groups are scored alongside."""
    tags = [zlib.crc32(key.encode("utf-8")) for key in keys]
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), *tags])))


def ratio(num: float, den: float, n: int | None = None, ci: list[float | None] | None = None) -> MetricValue:
    """``num/den`` with its counts; a zero denominator gives ``value=None``, never 0 or NaN."""
    value = float(num) / float(den) if den else None
    return MetricValue(value=value, num=_clean(num), den=_clean(den), n=n, ci=ci)


def _clean(x: float) -> float:
    x = float(x)
    return int(x) if x.is_integer() else x  # type: ignore[return-value]


def cluster_sums(clusters: Sequence[Any], num: Sequence[float], den: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster sums of ``num`` and ``den`` (clusters in first-seen order); shapes (k,), (k,)."""
    _, inverse = np.unique(np.asarray([str(c) for c in clusters], dtype=object), return_inverse=True)
    k = int(inverse.max()) + 1 if len(inverse) else 0
    return (np.bincount(inverse, weights=np.asarray(num, dtype=float), minlength=k),
            np.bincount(inverse, weights=np.asarray(den, dtype=float), minlength=k))


def bootstrap_ratio(cluster_num: np.ndarray, cluster_den: np.ndarray, rng: np.random.Generator,
                    resamples: int, level: float = 0.95) -> list[float | None] | None:
    """Percentile interval of ``sum(num)/sum(den)`` under cluster resampling.

    Each resample draws ``k`` clusters with replacement.  Clusters with the same
    ``(num, den)`` are interchangeable, so the draw is made as multinomial counts over
    the distinct pairs (for a 0/1 rate: two categories) — the same distribution as
    drawing cluster indices, at a cost independent of ``k``.  Resamples whose
    denominator is zero are dropped.  Returns ``[lo, hi]`` or ``None``.
    """
    k = len(cluster_num)
    if k == 0 or resamples <= 0:
        return None
    pairs, counts = np.unique(np.column_stack([cluster_num, cluster_den]), axis=0, return_counts=True)
    stats = []
    left = resamples
    while left > 0:
        block = min(_BLOCK, left)
        weights = rng.multinomial(k, counts / k, size=block)
        nums, dens = weights @ pairs[:, 0], weights @ pairs[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            stats.append(np.where(dens != 0, nums / np.where(dens != 0, dens, 1), np.nan))
        left -= block
    values = np.concatenate(stats)
    values = values[~np.isnan(values)]
    if len(values) == 0:
        return None
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(values, [alpha, 1.0 - alpha])
    return [float(lo), float(hi)]


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
    return [float(max(0.0, centre - half)), float(min(1.0, centre + half))]


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


def estimate(clusters: Sequence[Any], num: Sequence[float], den: Sequence[float], *,
             rng: np.random.Generator | None, resamples: int) -> MetricValue:
    """Point estimate, counts and (when ``rng`` is given) the cluster-bootstrap interval.

    ``n`` is the number of clusters (the resampling units).
    """
    cnum, cden = cluster_sums(clusters, num, den)
    total_num, total_den = float(cnum.sum()), float(cden.sum())
    ci = None
    if rng is not None and total_den:
        ci = bootstrap_ratio(cnum, cden, rng, resamples)
    return ratio(total_num, total_den, n=len(cnum), ci=ci)
