"""Choice metrics: B_next, C_id and accuracy among identified (eq. 4, 5), and reach (sec. 7.1).

Units
-----
Only *eligible* opportunities count (legal set holds an operation other than wait/stop):
an action-only policy leaves Wait and Stop unreported, so a Wait/Stop-only opportunity is
no scorable choice on the native track; terminal dwell and violations measure it
(Labference sec. 5.3).  A decision whose opportunities are all ineligible gets no reach
triple, and a checkpoint on such a decision is never identified.

*Checkpoint units* — one row per (run, registered checkpoint of that run's instance):
``(run_id, population, instance_id, decision, identified, correct)``.  The scored choice
is the first native choice (``first=true``) at the run's first eligible opportunity of
that decision; no such opportunity or no choice by the deadline means unidentified.

*Reach units* — one row per (run, decision with an eligible opportunity anywhere in the corpus):
``(run_id, decision, reached, identified, correct)``; ``reached`` means an eligible
opportunity of that decision opened in the run (opportunities name their delivered
observation and validation checks the receipt exists).

Estimators (see :mod:`labrecord.scorers.metric`): B_next = Σcorrect/|J|,
C_id = Σidentified/|J|, accuracy|identified = Σcorrect/Σidentified; reach.d =
N_reach/N_run, correct_given_reach.d = N_correct/N_reach, correct.d = N_correct/N_run,
identified_given_reach.d = N_identified/N_reach.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from labrecord.scorers.reference import RefCorpus, first_choices

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection



class CheckpointUnit(NamedTuple):
    run_id: str
    population: str
    instance_id: str
    decision: str
    identified: bool
    correct: bool


class ReachUnit(NamedTuple):
    run_id: str
    decision: str
    reached: bool
    identified: bool
    correct: bool


#: the first eligible opportunity of each (run, decision) with its first choice and legal set
FIRST_PER_DECISION_SQL = """
SELECT run_id, decision, arg_min(identified, opp_seq) AS identified, arg_min(correct, opp_seq) AS correct,
       arg_min(legal, opp_seq) AS legal
FROM first_choices WHERE eligible GROUP BY run_id, decision
"""

CHECKPOINT_UNITS_SQL = f"""
SELECT r.run_id, p.population, p.instance_id, p.decision,
       coalesce(f.identified, false) AS identified, coalesce(f.correct, false) AS correct
FROM populations p
JOIN runs r ON r.population_name = p.population AND r.instance_id = p.instance_id
LEFT JOIN ({FIRST_PER_DECISION_SQL}) f ON f.run_id = r.run_id AND f.decision = p.decision
WHERE p.type = 'checkpoint'
"""

REACH_UNITS_SQL = f"""
SELECT r.run_id, d.decision, f.run_id IS NOT NULL AS reached, coalesce(f.identified, false) AS identified,
       coalesce(f.correct, false) AS correct
FROM runs r
CROSS JOIN (SELECT DISTINCT decision FROM first_choices WHERE eligible) d
LEFT JOIN ({FIRST_PER_DECISION_SQL}) f ON f.run_id = r.run_id AND f.decision = d.decision
"""


def checkpoint_units(con: DuckDBPyConnection) -> list[CheckpointUnit]:
    return [CheckpointUnit(*row) for row in con.execute(CHECKPOINT_UNITS_SQL).fetchall()]


def reach_units(con: DuckDBPyConnection) -> list[ReachUnit]:
    return [ReachUnit(*row) for row in con.execute(REACH_UNITS_SQL).fetchall()]


def _first_per_decision(corpus: RefCorpus) -> dict[tuple[str, str], tuple[bool, bool]]:
    out: dict[tuple[str, str], tuple[int, bool, bool]] = {}
    for run in corpus.runs:
        for c in first_choices(run):
            if not c.eligible:
                continue
            key = (c.run_id, c.decision)
            if key not in out or c.opp_seq < out[key][0]:
                out[key] = (c.opp_seq, c.identified, c.correct)
    return {k: (v[1], v[2]) for k, v in out.items()}


def checkpoint_units_reference(corpus: RefCorpus) -> list[CheckpointUnit]:
    first = _first_per_decision(corpus)
    units = []
    for record in corpus.populations:
        if record["type"] != "checkpoint":
            continue
        for run in corpus.runs:
            if (run.row["population_name"], run.row["instance_id"]) == (record["population"], record["instance_id"]):
                identified, correct = first.get((run.run_id, record["decision"]), (False, False))
                units.append(CheckpointUnit(run.run_id, record["population"], record["instance_id"], record["decision"],
                                            identified, correct))
    return units


def reach_units_reference(corpus: RefCorpus) -> list[ReachUnit]:
    first = _first_per_decision(corpus)
    decisions = sorted({d for _, d in first})
    units = []
    for run in corpus.runs:
        for decision in decisions:
            hit = first.get((run.run_id, decision))
            units.append(ReachUnit(run.run_id, decision, hit is not None, bool(hit and hit[0]), bool(hit and hit[1])))
    return units
