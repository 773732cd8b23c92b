"""Paired statistics of two evaluations of the same episodes: small pure functions.

A binary outcome of ``n`` paired episodes is a 2×2 table: ``both`` (1 in A and in B),
``a_only`` (1 in A, 0 in B), ``b_only`` (0 in A, 1 in B) and ``neither``.  The functions
here take those four counts (or the paired values of a continuous metric) and return the
exact McNemar p-value, the paired difference ``p_B − p_A`` with Newcombe's hybrid score
interval, and a paired bootstrap interval; :mod:`labrecord.scorers.diff` applies them to
stored runs.  Every random draw takes an explicit :class:`numpy.random.Generator`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from labrecord.scorers.metric import wilson


class PairedTable(NamedTuple):
    """The paired 2×2 table of one binary outcome (counts of resolved pairs)."""

    both: int
    a_only: int
    b_only: int
    neither: int

    @property
    def n(self) -> int:
        return self.both + self.a_only + self.b_only + self.neither

    @property
    def discordant(self) -> int:
        return self.a_only + self.b_only


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Exact (binomial) McNemar p-value, two-sided: under H0 each of the ``m = a_only +
    b_only`` discordant pairs falls either way with probability 1/2, and
    ``p = min(1, 2 · P[X ≤ min(a_only, b_only)])`` for ``X ~ Binomial(m, 1/2)``.

    Hand check: 1 against 6 discordant pairs, m = 7: P[X ≤ 1] = (1 + 7)/2⁷ = 8/128, so
    p = 16/128 = 0.125.  No discordant pair gives p = 1.

    >>> mcnemar_exact(1, 6), mcnemar_exact(0, 0), mcnemar_exact(0, 5)
    (0.125, 1.0, 0.0625)
    """
    m = a_only + b_only
    if m == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = Fraction(sum(math.comb(m, i) for i in range(k + 1)), 2 ** m)
    return float(min(Fraction(1), 2 * tail))


def paired_difference(table: PairedTable) -> float | None:
    """``p_B − p_A = (b_only − a_only) / n``; None for no pairs."""
    return (table.b_only - table.a_only) / table.n if table.n else None


def newcombe_interval(table: PairedTable, level: float = 0.95) -> list[float] | None:
    """Newcombe's hybrid score interval for the paired difference ``p_B − p_A`` (Newcombe
    1998, *Statistics in Medicine* 17:2635, method 10).

    With ``p_A = (both + a_only)/n`` and ``p_B = (both + b_only)/n``, ``[l_A, u_A]`` and
    ``[l_B, u_B]`` their Wilson intervals and ``φ`` Newcombe's corrected phi coefficient
    of the table — ``(AD − BC)/√(margins)`` with ``AD − BC`` replaced by
    ``max(AD − BC − n/2, 0)`` when it is positive, 0 when a margin is empty — ``θ = p_B − p_A`` and

        δ = √((p_B − l_B)² − 2φ(p_B − l_B)(u_A − p_A) + (u_A − p_A)²)
        ε = √((u_B − p_B)² − 2φ(u_B − p_B)(p_A − l_A) + (p_A − l_A)²)

    the interval is ``[θ − δ, θ + ε]``.  Unlike the Wald interval it stays inside [−1, 1]
    and does not collapse when no pair is discordant.

    Hand check, both 2, a_only 6, b_only 1, neither 1 (n = 10): p_A = 0.8, p_B = 0.3,
    θ = −0.5; Wilson(8/10) = [0.4902, 0.9433], Wilson(3/10) = [0.1078, 0.6032];
    φ = (2·1 − 6·1)/√(8·2·3·7) = −0.2182; δ = √(0.1922² + 2·0.2182·0.1922·0.1433 +
    0.1433²) = 0.2636, ε = √(0.3032² + 2·0.2182·0.3032·0.3098 + 0.3098²) = 0.4785, so
    [−0.7636, −0.0215].

    >>> [round(x, 4) for x in newcombe_interval(PairedTable(2, 6, 1, 1))]
    [-0.7636, -0.0215]

    No discordant pair, both 1, neither 1 (n = 2): AD − BC = 1 ≤ n/2, so φ = 0 (uncorrected
    it would be 1 and the interval [0, 0]); p_A = p_B = 0.5, Wilson(1/2) = [0.0945, 0.9055],
    δ = ε = √(2 · 0.4055²) = 0.5734: [−0.5734, 0.5734].

    >>> [round(x, 4) for x in newcombe_interval(PairedTable(1, 0, 0, 1))]
    [-0.5734, 0.5734]
    """
    n = table.n
    if n == 0:
        return None
    p_a, p_b = (table.both + table.a_only) / n, (table.both + table.b_only) / n
    l_a, u_a = wilson(table.both + table.a_only, n, level)  # type: ignore[misc]
    l_b, u_b = wilson(table.both + table.b_only, n, level)  # type: ignore[misc]
    margins = ((table.both + table.a_only) * (table.b_only + table.neither)
               * (table.both + table.b_only) * (table.a_only + table.neither))
    # Newcombe's continuity-corrected phi: AD - BC is taken down by n/2 toward 0 when it is
    # positive (and kept when negative), so that a table with no discordant pair (phi = 1
    # uncorrected) does not give a zero-width interval
    cross = table.both * table.neither - table.a_only * table.b_only
    corrected = max(cross - n / 2, 0.0) if cross >= 0 else cross
    phi = corrected / math.sqrt(margins) if margins else 0.0
    theta = p_b - p_a
    delta = math.sqrt(max(0.0, (p_b - l_b) ** 2 - 2 * phi * (p_b - l_b) * (u_a - p_a) + (u_a - p_a) ** 2))
    epsilon = math.sqrt(max(0.0, (u_b - p_b) ** 2 - 2 * phi * (u_b - p_b) * (p_a - l_a) + (p_a - l_a) ** 2))
    return [max(-1.0, theta - delta), min(1.0, theta + epsilon)]


def paired_bootstrap(differences: Sequence[float], rng: np.random.Generator, resamples: int,
                     level: float = 0.95) -> list[float] | None:
    """Percentile interval of the mean paired difference: the pairs are resampled with
    replacement (both members of a pair move together), ``resamples`` times, from ``rng``.
    None for no pairs or no resamples."""
    values = np.asarray(differences, dtype=float)
    if not len(values) or resamples <= 0:
        return None
    index = rng.integers(0, len(values), size=(resamples, len(values)))
    means = values[index].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return [float(lo), float(hi)]


#: the table cells an unresolved pair may still fall in, given what is known of each side:
#: ``(a, b)`` with ``None`` for an unknown side
def possible_cells(a: bool | None, b: bool | None) -> list[tuple[int, int]]:
    """Every ``(y_A, y_B)`` an unresolved pair may still have: a known side stays fixed."""
    return [(ya, yb) for ya in ((int(a),) if a is not None else (0, 1)) for yb in ((int(b),) if b is not None else (0, 1))]


def difference_bounds(table: PairedTable, unresolved: Sequence[tuple[bool | None, bool | None]]) -> tuple[float, float] | None:
    """``[lower, upper]`` of ``p_B − p_A`` over every outcome the unresolved pairs may still
    have, N = resolved + unresolved pairs (Labference sec. 7.4).

    Hand check: resolved both 1, a_only 1 (n = 2), one pair with A = 1 and B unknown, one
    with both sides unknown: N = 4, resolved sum −1; the first adds −1 or 0, the second
    −1, 0 or 1, so [−3/4, 0/4].

    >>> difference_bounds(PairedTable(1, 1, 0, 0), [(True, None), (None, None)])
    (-0.75, 0.0)
    """
    total = table.n + len(unresolved)
    if total == 0:
        return None
    base = table.b_only - table.a_only
    low = base + sum(min(yb - ya for ya, yb in possible_cells(a, b)) for a, b in unresolved)
    high = base + sum(max(yb - ya for ya, yb in possible_cells(a, b)) for a, b in unresolved)
    return low / total, high / total


#: more unresolved pairs than this and the McNemar range is not enumerated
MAX_ENUMERATED = 200


def mcnemar_range(table: PairedTable, unresolved: Sequence[tuple[bool | None, bool | None]]) -> tuple[float, float] | None:
    """The smallest and largest exact McNemar p-value over every outcome the unresolved
    pairs may still have (the reachable discordant counts, enumerated exactly); None past
    :data:`MAX_ENUMERATED` unresolved pairs.

    Hand check: 5 pairs only B, one pair unknown on both sides: (0, 6) gives 2/64, (1, 5)
    gives 2·7/64 = 0.21875, (0, 5) 2/32.

    >>> mcnemar_range(PairedTable(0, 0, 5, 0), [(None, None)])
    (0.03125, 0.21875)
    """
    if len(unresolved) > MAX_ENUMERATED:
        return None
    reachable = {(table.a_only, table.b_only)}
    for a, b in unresolved:
        steps = {(int(ya == 1 and yb == 0), int(ya == 0 and yb == 1)) for ya, yb in possible_cells(a, b)}
        reachable = {(x + dx, y + dy) for x, y in reachable for dx, dy in steps}
    values = [mcnemar_exact(x, y) for x, y in reachable]
    return min(values), max(values)

