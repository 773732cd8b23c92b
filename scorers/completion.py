"""Completion (sec. 7.2) and fixed-subgoal execution E_fixed (eq. 6).

Episode units — one row per episode (a run without any ``episode_start`` gives one row
with episode null and every flag false):
``(run_id, episode, physical, valid, clean, recovered)`` where

* physical  = the episode ended with ``physical_complete``;
* valid     = physical ∧ ``valid_complete`` ∧ no irreversible violation (an irreversible
  protocol or safety violation invalidates completion even if the arrangement is restored);
* clean     = valid ∧ no failure ∧ no violation ∧ every *eligible* opportunity has an
  identified, legal first choice ("correct identified choices at all eligible
  opportunities", sec. 7.2; Wait/Stop-only opportunities are not native-track choices,
  their timing is judged by the terminal dwell and by violations such as early_stop);
* recovered = valid ∧ at least one failure, all failures recoverable and each resolved
  by a ``recovery`` with ``resolved=true``;
* runtime_s / runtime_clock / policy_s_per_query = the ``episode_end``'s runtime on its
  named clock (sim or wall) and the policy's mean compute time per query (null when not
  recorded).  ``runtime.<clock>`` is their mean over episodes (Table 3's runtime column);
  runtimes on different clocks are never averaged together.

Fixed-start units — one row per (run, registered fixed start of its instance):
``(run_id, population, instance_id, subgoal, confirmed, verified)``; confirmed = a
``confirm`` event whose obligation is the subgoal; verified = the start's recorded handoff
verification (``evaluation.checkpoints``).  K holds *verified* starts (sec. 7.2): an
unverified start is an unresolved member.  E_fixed = Σconfirmed/|K|.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from labrecord.models import Confirm, EpisodeEnd, EpisodeStart, Failure, Recovery, Violation
from labrecord.scorers.reference import RefCorpus, RefRun, first_choices

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection



class EpisodeUnit(NamedTuple):
    run_id: str
    episode: int | None
    physical: bool
    valid: bool
    clean: bool
    recovered: bool
    #: the episode_end's runtime (seconds on ``runtime_clock``) and policy time per query
    runtime_s: float | None = None
    runtime_clock: str | None = None
    policy_s_per_query: float | None = None


class FixedUnit(NamedTuple):
    run_id: str
    population: str
    instance_id: str
    subgoal: str
    confirmed: bool
    #: the start's recorded handoff verification (null: none recorded, the registered
    #: initialization itself); False makes the start an unresolved member of K
    verified: bool | None = None


EPISODE_UNITS_SQL = """
WITH flags AS (
    SELECT run_id, episode, physical_complete AS physical,
           physical_complete AND valid_complete AND irreversible_violations = 0 AS valid,
           failures = 0 AND violations = 0 AND identified_choices = eligible_opportunities
               AND correct_choices = eligible_opportunities AS clean_history,
           failures > 0 AND recoverable_failures = failures AND resolved_failures = failures AS recovered_history
    FROM episodes
)
SELECT r.run_id, f.episode, coalesce(f.physical, false) AS physical, coalesce(f.valid, false) AS valid,
       coalesce(f.valid AND f.clean_history, false) AS clean, coalesce(f.valid AND f.recovered_history, false) AS recovered,
       t.runtime_s, t.runtime_clock, t.policy_s_per_query
FROM runs r LEFT JOIN flags f USING (run_id)
LEFT JOIN (SELECT run_id, episode, arg_min(runtime_s, seq) AS runtime_s, arg_min(runtime_clock, seq) AS runtime_clock,
                  arg_min(policy_s_per_query, seq) AS policy_s_per_query
           FROM events WHERE type = 'episode_end' GROUP BY run_id, episode) t
       ON t.run_id = r.run_id AND t.episode = f.episode
"""

FIXED_UNITS_SQL = """
SELECT r.run_id, p.population, p.instance_id, p.subgoal,
       EXISTS (SELECT 1 FROM events e WHERE e.run_id = r.run_id AND e.type = 'confirm' AND e.obligation = p.subgoal) AS confirmed,
       (SELECT bool_and(c.verified) FROM (SELECT unnest(from_json(json_extract(r.manifest, '$.evaluation.checkpoints'),
               '[{"verified": "BOOLEAN"}]')) AS c)) AS verified
FROM populations p
JOIN runs r ON r.population_name = p.population AND r.instance_id = p.instance_id
WHERE p.type = 'fixed_start'
"""


def episode_units(con: DuckDBPyConnection) -> list[EpisodeUnit]:
    return [EpisodeUnit(*row) for row in con.execute(EPISODE_UNITS_SQL).fetchall()]


def fixed_units(con: DuckDBPyConnection) -> list[FixedUnit]:
    return [FixedUnit(*row) for row in con.execute(FIXED_UNITS_SQL).fetchall()]


def _episode_timing(run: RefRun, episode: int) -> tuple[float | None, str | None, float | None]:
    end = next((e for e in sorted(run.events, key=lambda e: e.seq) if isinstance(e, EpisodeEnd) and e.episode == episode), None)
    return (None, None, None) if end is None else (end.runtime_s, end.runtime_clock, end.policy_s_per_query)


def _episode_flags(run: RefRun, episode: int) -> tuple[bool, bool, bool, bool]:
    mine = [e for e in run.events if run.episode_of.get(e.seq) == episode]
    end = next((e for e in mine if isinstance(e, EpisodeEnd)), None)
    physical = bool(end and end.physical_complete)
    irreversible = any(isinstance(e, Violation) and e.irreversible for e in mine)
    valid = physical and bool(end and end.valid_complete) and not irreversible
    failures = [e for e in mine if isinstance(e, Failure)]
    violations = [e for e in mine if isinstance(e, Violation)]
    choices = [c for c in first_choices(run) if c.episode == episode and c.eligible]
    clean = valid and not failures and not violations and all(c.identified and c.correct for c in choices)
    resolved = {e.of_seq for e in run.events if isinstance(e, Recovery) and e.resolved}
    recovered = (valid and bool(failures) and all(f.recoverable for f in failures)
                 and all(f.seq in resolved for f in failures))
    return physical, valid, clean, recovered


def episode_units_reference(corpus: RefCorpus) -> list[EpisodeUnit]:
    units: list[EpisodeUnit] = []
    for run in corpus.runs:
        starts = [e.episode for e in run.events if isinstance(e, EpisodeStart)]
        if not starts:
            units.append(EpisodeUnit(run.run_id, None, False, False, False, False))
        for episode in starts:
            units.append(EpisodeUnit(run.run_id, episode, *_episode_flags(run, episode), *_episode_timing(run, episode)))
    return units


def fixed_units_reference(corpus: RefCorpus) -> list[FixedUnit]:
    units = []
    for record in corpus.populations:
        if record["type"] != "fixed_start":
            continue
        for run in corpus.runs:
            if (run.row["population_name"], run.row["instance_id"]) == (record["population"], record["instance_id"]):
                confirmed = any(isinstance(e, Confirm) and e.obligation == record["subgoal"] for e in run.events)
                checks = [c.verified for c in run.manifest.evaluation.checkpoints]
                units.append(FixedUnit(run.run_id, record["population"], record["instance_id"], record["subgoal"], confirmed,
                                       all(checks) if checks else None))
    return units
