"""State-changing and geometric pairs: P_state (eq. 7), pair validity and the provisional bounds (sec. 7.4).

Scored choice of a run — the first native choice at its registered checkpoint decision
when its instance has one, else at the run's first eligible opportunity (see
:mod:`labrecord.scorers.choice`): ``(run_id, population, instance_id, correct, legal)``
with ``legal`` the legal set of that opportunity as sorted operation strings
(``add(w10, pan)``), null when the run opened no such opportunity.

Member units — the scored choice of every run whose instance is a member of a registered
pair.

Pair validity: the members of an *answer-changing* pair must have disjoint legal sets at
the scored decision (Labference sec. 7.3).  A pair whose resolved members share an
operation is refused — it is not in P_state's N — and ``validate`` reports it too.

Per pair (formed by the aggregator): resolved when every member has a resolved run;
correct when every member's choice is legal.  With s correct pairs, u unresolved pairs
and N planned (valid) pairs: P = s/N once u = 0 (null before), bounds [s/N, (s+u)/N].
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from labrecord.scorers.choice import FIRST_PER_DECISION_SQL
from labrecord.scorers.reference import RefCorpus, first_choices

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection


class MemberUnit(NamedTuple):
    run_id: str
    population: str
    instance_id: str
    correct: bool
    legal: list[str] | None


_OPS = "list_sort(list_transform({0}, lambda o: o.kind || '(' || concat_ws(', ', o.object, o.dest) || ')'))"

#: the scored choice of every run (its checkpoint decision, else its first eligible opportunity)
SCORED_CHOICE_SQL = f"""
WITH checkpoint AS (
    SELECT population, instance_id, min(decision) AS decision FROM populations WHERE type = 'checkpoint'
    GROUP BY population, instance_id
), first_opportunity AS (
    SELECT run_id, arg_min(correct, opp_seq) AS correct, arg_min(legal, opp_seq) AS legal
    FROM first_choices WHERE eligible GROUP BY run_id
)
SELECT r.run_id, r.population_name AS population, r.instance_id,
       coalesce(CASE WHEN c.decision IS NULL THEN fo.correct ELSE fd.first.correct END, false) AS correct,
       {_OPS.format("CASE WHEN c.decision IS NULL THEN fo.legal ELSE fd.first.legal END")} AS legal
FROM runs r
LEFT JOIN checkpoint c ON c.population = r.population_name AND c.instance_id = r.instance_id
LEFT JOIN first_opportunity fo ON fo.run_id = r.run_id
LEFT JOIN ({FIRST_PER_DECISION_SQL}) fd ON fd.run_id = r.run_id AND fd.decision = c.decision
"""

MEMBER_UNITS_SQL = f"""
WITH members AS (
    SELECT DISTINCT population, unnest(members) AS instance_id FROM populations WHERE type = 'pair'
)
SELECT s.run_id, s.population, s.instance_id, s.correct, s.legal
FROM ({SCORED_CHOICE_SQL}) s JOIN members m ON m.population = s.population AND m.instance_id = s.instance_id
"""


def member_units(con: DuckDBPyConnection) -> list[MemberUnit]:
    return [MemberUnit(*row) for row in con.execute(MEMBER_UNITS_SQL).fetchall()]


def scored_choices_reference(corpus: RefCorpus) -> dict[str, tuple[bool, list[str] | None]]:
    """run id -> (correct, legal) of its scored choice, as :data:`SCORED_CHOICE_SQL`."""
    checkpoint: dict[tuple[str, str], str] = {}
    for r in corpus.populations:
        if r["type"] == "checkpoint":
            key = (r["population"], r["instance_id"])
            checkpoint[key] = min(checkpoint.get(key, r["decision"]), r["decision"])
    out: dict[str, tuple[bool, list[str] | None]] = {}
    for run in corpus.runs:
        decision = checkpoint.get((run.row["population_name"], run.row["instance_id"]))
        choices = sorted((c for c in first_choices(run) if c.eligible and (decision is None or c.decision == decision)),
                         key=lambda c: c.opp_seq)
        first = choices[0] if choices else None
        out[run.run_id] = (bool(first and first.correct), sorted(first.legal) if first else None)
    return out


def member_units_reference(corpus: RefCorpus) -> list[MemberUnit]:
    members = {(r["population"], m) for r in corpus.populations if r["type"] == "pair" for m in r["members"]}
    scored = scored_choices_reference(corpus)
    return [MemberUnit(run.run_id, run.row["population_name"], run.row["instance_id"], *scored[run.run_id])
            for run in corpus.runs if (run.row["population_name"], run.row["instance_id"]) in members]


def shared_operations(legal_sets: Sequence[Sequence[str] | None]) -> list[str]:
    """Operations legal in every member (an answer-changing pair needs none).

    >>> shared_operations([["add(w10, pan)", "wait()"], ["add(w20, pan)", "wait()"]])
    ['wait()']
    """
    known = [set(s) for s in legal_sets if s is not None]
    if len(known) < 2:
        return []
    return sorted(set.intersection(*known))


def pair_bounds(s: int, u: int, n: int) -> tuple[float | None, float | None]:
    """Provisional paired correctness ``(s/N, (s+u)/N)``; null when no pair is planned."""
    if n == 0:
        return None, None
    return s / n, (s + u) / n
