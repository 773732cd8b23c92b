"""Choice metrics: B_next, C_id and accuracy among identified (eq. 4, 5), and reach (sec. 7.1).

J, the checkpoint population (sec. 7.1)
--------------------------------------
J is the registered checkpoints that are *verified*, *evidence-delivered* and where the
native track has a *scorable physical choice*.  Each registered checkpoint member (a run
at a registered checkpoint of its instance) gets one status:

* ``scored`` — in J: its first eligible opportunity of the decision names a delivered
  observation and the first native choice came no earlier than that delivery;
* ``unverified`` — the run's manifest records the checkpoint handoff as not verified
  (``evaluation.checkpoints``; the replay audit checks the saved file it names);
* ``not_delivered`` — no eligible opportunity of the decision opened, or it names no
  delivered observation: the evidence never reached the policy;
* ``not_delivered_in_time`` — the first choice precedes the delivery of the opportunity's
  evidence (``validate`` reports it);
* ``no_physical_choice`` — every opportunity of the decision holds only Wait/Stop: not a
  physical-choice checkpoint (``validate`` refuses the registration; Wait and Stop are
  scored on the explicit-report track).

Unverified and undelivered members are *unresolved* (bounds, never failures); a
``no_physical_choice`` member is outside J.  An opportunity is *eligible* when its legal
set holds an operation other than wait/stop: an action-only policy leaves Wait and Stop
unreported (sec. 5.3).

Units
-----
*Checkpoint units* — one row per (run, registered checkpoint of that run's instance):
``(run_id, population, instance_id, decision, identified, correct, episode, status)``.
The scored choice is the first native choice (``first=true``) at the run's first
eligible opportunity of that decision; no choice by the deadline means unidentified.

*Reach units* — one row per (run, decision with an eligible opportunity anywhere in the
corpus): ``(run_id, decision, reached, identified, correct)``; ``reached`` means an
eligible opportunity of that decision opened with delivered evidence (sec. 7.1: "the runs
that reach it with delivered evidence").

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



#: the statuses of a checkpoint member; only ``scored`` members are resolved members of J
IN_J, UNVERIFIED, NOT_DELIVERED, LATE, NO_PHYSICAL_CHOICE = (
    "scored", "unverified", "not_delivered", "not_delivered_in_time", "no_physical_choice")


class CheckpointUnit(NamedTuple):
    run_id: str
    population: str
    instance_id: str
    decision: str
    identified: bool
    correct: bool
    episode: int | None = None
    status: str = IN_J


class ReachUnit(NamedTuple):
    run_id: str
    decision: str
    reached: bool
    identified: bool
    correct: bool


#: per (run, decision): the first eligible opportunity (its choice, episode, delivery and
#: timing) and whether the decision had any eligible opportunity at all
FIRST_PER_DECISION_SQL = """
SELECT f.run_id, f.decision,
       arg_min({'identified': f.identified, 'correct': f.correct, 'episode': f.episode,
                'delivered': f.obs_id IS NOT NULL AND o.obs_id IS NOT NULL,
                'late': coalesce(f.choice_t < o.t_delivered, false), 'legal': f.legal}, f.opp_seq) FILTER (WHERE f.eligible) AS first,
       bool_or(f.eligible) AS physical
FROM first_choices f
LEFT JOIN observations o ON o.run_id = f.run_id AND o.obs_id = f.obs_id
GROUP BY f.run_id, f.decision
"""

#: the handoff verification a run's manifest records for a decision (null: none recorded)
_VERIFIED_SQL = """(SELECT bool_and(c.verified) FROM (SELECT unnest(from_json(json_extract(r.manifest, '$.evaluation.checkpoints'),
                  '[{"decision": "VARCHAR", "verified": "BOOLEAN"}]')) AS c) WHERE c.decision = p.decision)"""

CHECKPOINT_UNITS_SQL = f"""
SELECT r.run_id, p.population, p.instance_id, p.decision,
       coalesce(f.first.identified, false) AS identified, coalesce(f.first.correct, false) AS correct,
       f.first.episode AS episode,
       CASE WHEN {_VERIFIED_SQL} = false THEN '{UNVERIFIED}'
            WHEN f.run_id IS NOT NULL AND NOT f.physical THEN '{NO_PHYSICAL_CHOICE}'
            WHEN f.first IS NULL OR NOT f.first.delivered THEN '{NOT_DELIVERED}'
            WHEN f.first.late THEN '{LATE}'
            ELSE '{IN_J}' END AS status
FROM populations p
JOIN runs r ON r.population_name = p.population AND r.instance_id = p.instance_id
LEFT JOIN ({FIRST_PER_DECISION_SQL}) f ON f.run_id = r.run_id AND f.decision = p.decision
WHERE p.type = 'checkpoint'
"""

REACH_UNITS_SQL = f"""
SELECT r.run_id, d.decision, coalesce(f.first.delivered, false) AS reached,
       coalesce(f.first.delivered AND f.first.identified, false) AS identified,
       coalesce(f.first.delivered AND f.first.correct, false) AS correct
FROM runs r
CROSS JOIN (SELECT DISTINCT decision FROM first_choices WHERE eligible) d
LEFT JOIN ({FIRST_PER_DECISION_SQL}) f ON f.run_id = r.run_id AND f.decision = d.decision
"""


def checkpoint_units(con: DuckDBPyConnection) -> list[CheckpointUnit]:
    return [CheckpointUnit(*row) for row in con.execute(CHECKPOINT_UNITS_SQL).fetchall()]


def reach_units(con: DuckDBPyConnection) -> list[ReachUnit]:
    return [ReachUnit(*row) for row in con.execute(REACH_UNITS_SQL).fetchall()]


class _First(NamedTuple):
    opp_seq: int
    identified: bool
    correct: bool
    episode: int | None
    delivered: bool
    late: bool


def _first_per_decision(corpus: RefCorpus) -> tuple[dict[tuple[str, str], _First], set[tuple[str, str]]]:
    """The first eligible opportunity per (run, decision), and every (run, decision) that
    opened any opportunity."""
    out: dict[tuple[str, str], _First] = {}
    opened: set[tuple[str, str]] = set()
    for run in corpus.runs:
        receipts = {r.obs_id: r for r in run.receipts}
        for c in first_choices(run):
            key = (c.run_id, c.decision)
            opened.add(key)
            if not c.eligible or (key in out and c.opp_seq >= out[key].opp_seq):
                continue
            receipt = receipts.get(c.obs_id) if c.obs_id is not None else None
            late = receipt is not None and c.choice_t is not None and c.choice_t < receipt.t_delivered
            out[key] = _First(c.opp_seq, c.identified, c.correct, c.episode, receipt is not None, late)
    return out, opened


def _status(first: _First | None, opened: bool, verified: bool | None) -> str:
    if verified is False:
        return UNVERIFIED
    if first is None:
        return NO_PHYSICAL_CHOICE if opened else NOT_DELIVERED
    if not first.delivered:
        return NOT_DELIVERED
    return LATE if first.late else IN_J


def checkpoint_units_reference(corpus: RefCorpus) -> list[CheckpointUnit]:
    first, opened = _first_per_decision(corpus)
    units = []
    for record in corpus.populations:
        if record["type"] != "checkpoint":
            continue
        for run in corpus.runs:
            if (run.row["population_name"], run.row["instance_id"]) == (record["population"], record["instance_id"]):
                key = (run.run_id, record["decision"])
                hit = first.get(key)
                checks = [c.verified for c in run.manifest.evaluation.checkpoints if c.decision == record["decision"]]
                verified = all(checks) if checks else None
                units.append(CheckpointUnit(run.run_id, record["population"], record["instance_id"], record["decision"],
                                            bool(hit and hit.identified), bool(hit and hit.correct),
                                            hit.episode if hit else None, _status(hit, key in opened, verified)))
    return units


def reach_units_reference(corpus: RefCorpus) -> list[ReachUnit]:
    first, _ = _first_per_decision(corpus)
    decisions = sorted({d for _, d in first})
    units = []
    for run in corpus.runs:
        for decision in decisions:
            hit = first.get((run.run_id, decision))
            reached = bool(hit and hit.delivered)
            units.append(ReachUnit(run.run_id, decision, reached, reached and hit.identified, reached and hit.correct))  # type: ignore[union-attr]
    return units
