"""Oracle gains Δ_{m,o}(Y) (eq. 3) over matched pairs, and the joint-support interaction.

Run outcomes — one row per run: ``(run_id, completion, correct, e_p)`` with
completion = share of the run's episodes with valid completion, correct = share of its
eligible opportunities (see :mod:`labrecord.scorers.choice`) whose first choice was legal
(null without one), e_p = mean
position error of its valid geometry reports (null without one).

For a registered ``oracle_pair`` (base instance b, supported instance s, mode m,
Oracle o) the gain of outcome Y is ``Y(s) − Y(b)``; error metrics (e_p) use ``Y(b) −
Y(s)`` so a positive value always means improvement.  Δ is the mean over the N planned
pairs and is reported only once every pair is resolved; before that the bounded
outcomes (completion, correct ∈ [0, 1]) get provisional bounds ``(Σd − u)/N`` and
``(Σd + u)/N``.  For joint supports o₁+o₂ the interaction contrast per base instance is
``Y(o₁,o₂) − Y(o₁) − Y(o₂) + Y(0)`` (sign reversed for errors), averaged over bases.
"""
from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean
from typing import Any

from labrecord.scorers.completion import EPISODE_UNITS_SQL, episode_units_reference
from labrecord.scorers.geometry import GEOMETRY_UNITS_SQL, geometry_units_reference
from labrecord.scorers.reference import RefCorpus, first_choices

OutcomeUnit = tuple[str, Any, Any, Any]
#: outcome -> +1 when higher is better, -1 for error metrics
OUTCOMES: dict[str, int] = {"completion": 1, "correct": 1, "e_p": -1}
BOUNDED = ("completion", "correct")

RUN_OUTCOMES_SQL = f"""
WITH ep AS (SELECT run_id, avg(valid::DOUBLE) AS completion FROM ({EPISODE_UNITS_SQL}) GROUP BY run_id),
     fc AS (SELECT run_id, avg(correct::DOUBLE) AS correct FROM first_choices WHERE eligible GROUP BY run_id),
     ge AS (SELECT run_id, avg(e_p) AS e_p FROM ({GEOMETRY_UNITS_SQL}) WHERE p_valid GROUP BY run_id)
SELECT r.run_id, ep.completion, fc.correct, ge.e_p
FROM runs r LEFT JOIN ep USING (run_id) LEFT JOIN fc USING (run_id) LEFT JOIN ge USING (run_id)
"""


def run_outcomes(con: Any) -> list[OutcomeUnit]:
    return [tuple(row) for row in con.execute(RUN_OUTCOMES_SQL).fetchall()]  # type: ignore[misc]


def run_outcomes_reference(corpus: RefCorpus) -> list[OutcomeUnit]:
    completion: dict[str, list[float]] = {}
    for run_id, _, _, valid, _, _ in episode_units_reference(corpus):
        completion.setdefault(run_id, []).append(float(valid))
    errors: dict[str, list[float]] = {}
    for unit in geometry_units_reference(corpus):
        if unit[3]:
            errors.setdefault(unit[0], []).append(unit[4])
    units = []
    for run in corpus.runs:
        choices = [c for c in first_choices(run) if c.eligible]
        correct = fmean(float(c.correct) for c in choices) if choices else None
        e_p = fmean(errors[run.run_id]) if run.run_id in errors else None
        units.append((run.run_id, fmean(completion[run.run_id]), correct, e_p))
    return units


def paired_gain(outcome: str, base: Mapping[str, Any], supported: Mapping[str, Any]) -> float | None:
    """Signed improvement of one matched pair; None when either side lacks the outcome."""
    y_base, y_supported = base.get(outcome), supported.get(outcome)
    if y_base is None or y_supported is None:
        return None
    return OUTCOMES[outcome] * (float(y_supported) - float(y_base))


def interaction(outcome: str, base: Mapping[str, Any], first: Mapping[str, Any], second: Mapping[str, Any],
                joint: Mapping[str, Any]) -> float | None:
    """``Y(o1,o2) − Y(o1) − Y(o2) + Y(0)``, sign-adjusted so positive = super-additive improvement."""
    values = [side.get(outcome) for side in (joint, first, second, base)]
    if any(v is None for v in values):
        return None
    y12, y1, y2, y0 = (float(v) for v in values)  # type: ignore[arg-type]
    return OUTCOMES[outcome] * (y12 - y1 - y2 + y0)


def gain_bounds(total: float, unresolved: int, planned: int) -> tuple[float, float] | None:
    """Bounds of the full-population mean gain for an outcome in [0, 1]: each unresolved
    pair contributes a difference in [−1, 1]."""
    if planned == 0:
        return None
    return (total - unresolved) / planned, (total + unresolved) / planned
