"""State-changing and geometric pairs: P_state (eq. 7) and the provisional bounds (sec. 7.4).

Member units — one row per (run, instance that is a member of a registered pair):
``(run_id, population, instance_id, correct)``.  A member's scored choice is the first
native choice at its registered checkpoint decision when the instance has one, else at
the run's first eligible opportunity (see :mod:`labrecord.scorers.choice`).

Per pair (formed by the aggregator): resolved when every member has a valid run;
correct when every member's choice is legal.  With s correct pairs, u unresolved pairs
and N planned pairs: P = s/N once u = 0 (null before), bounds [s/N, (s+u)/N].
"""
from __future__ import annotations

from typing import Any

from labrecord.scorers.choice import _FIRST_PER_DECISION, _first_per_decision
from labrecord.scorers.reference import RefCorpus, first_choices

MemberUnit = tuple[str, str, str, bool]

MEMBER_UNITS_SQL = f"""
WITH members AS (
    SELECT DISTINCT population, unnest(members) AS instance_id FROM populations WHERE type = 'pair'
), checkpoint AS (
    SELECT population, instance_id, min(decision) AS decision FROM populations WHERE type = 'checkpoint'
    GROUP BY population, instance_id
), first_opportunity AS (
    SELECT run_id, arg_min(correct, opp_seq) AS correct FROM first_choices WHERE eligible GROUP BY run_id
)
SELECT r.run_id, m.population, m.instance_id,
       coalesce(CASE WHEN c.decision IS NULL THEN fo.correct ELSE fd.correct END, false) AS correct
FROM members m
JOIN runs r ON r.population_name = m.population AND r.instance_id = m.instance_id
LEFT JOIN checkpoint c ON c.population = m.population AND c.instance_id = m.instance_id
LEFT JOIN first_opportunity fo ON fo.run_id = r.run_id
LEFT JOIN ({_FIRST_PER_DECISION}) fd ON fd.run_id = r.run_id AND fd.decision = c.decision
"""


def member_units(con: Any) -> list[MemberUnit]:
    return [tuple(row) for row in con.execute(MEMBER_UNITS_SQL).fetchall()]  # type: ignore[misc]


def member_units_reference(corpus: RefCorpus) -> list[MemberUnit]:
    members = {(r["population"], m) for r in corpus.populations if r["type"] == "pair" for m in r["members"]}
    checkpoint: dict[tuple[str, str], str] = {}
    for r in corpus.populations:
        if r["type"] == "checkpoint":
            key = (r["population"], r["instance_id"])
            checkpoint[key] = min(checkpoint.get(key, r["decision"]), r["decision"])
    per_decision = _first_per_decision(corpus)
    units = []
    for run in corpus.runs:
        key = (run.row["population_name"], run.row["instance_id"])
        if key not in members:
            continue
        if key in checkpoint:
            correct = per_decision.get((run.run_id, checkpoint[key]), (False, False))[1]
        else:
            choices = sorted((c for c in first_choices(run) if c.eligible), key=lambda c: c.opp_seq)
            correct = choices[0].correct if choices else False
        units.append((run.run_id, key[0], key[1], correct))
    return units


def pair_bounds(s: int, u: int, n: int) -> tuple[float | None, float | None]:
    """Provisional paired correctness ``(s/N, (s+u)/N)``; null when no pair is planned."""
    if n == 0:
        return None, None
    return s / n, (s + u) / n
