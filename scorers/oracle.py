"""Oracle gains Δ_{m,o}(Y) (eq. 3) over matched pairs, and the joint-support interaction.

Run outcomes — one row per run: ``(run_id, completion, correct, e_p)``:

* completion = share of the run's episodes with valid completion (sec. 7.2), in [0, 1];
* correct = correctness of the first native choice at the *supported opportunity* — the
  checkpoint the base and supported branches share: the run's registered checkpoint
  decision, else its first eligible opportunity (:data:`~labrecord.scorers.pairs.SCORED_CHOICE_SQL`).
  A later self-correction does not make a wrong choice at the checkpoint correct;
  no identified choice there counts as not correct, as in B_next.  In {0, 1};
* e_p = mean position error of its valid geometry reports in metres (null without one).

For a registered ``oracle_pair`` (base instance b, supported instance s, mode m, Oracle o)
the gain of outcome Y is ``Y(s) − Y(b)``; error metrics (e_p) use ``Y(b) − Y(s)`` so a
positive value always means improvement.  Δ is the mean over the N registered pairs and
is reported only once every pair is resolved; before that the bounded outcomes
(completion, correct ∈ [0, 1]) get the bounds over every value the unresolved branches
could take.  For joint supports o₁+o₂ the interaction contrast of a complete matched set
is ``Y(o₁,o₂) − Y(o₁) − Y(o₂) + Y(0)`` (sign reversed for errors), averaged over the
registered sets.

Support units (sec. 6.3) — one row per delivered support of a run:
``(run_id, site, mode, agreed, substituted)`` from its first delivered ``intervention``
event of that (site, mode):

* agreed (decision:assist only) = the first native choice at the intervention's
  opportunity equals the recommended operation (``payload``); no identified choice
  does not agree;
* substituted (decision:replace only) = the original committed operation differs from
  the substituted one.

Over the supported branches of a group's registered Oracle pairs (aggregated in
:mod:`labrecord.scorers.corpus`): ``delivery`` = share with every support delivered;
``agreement`` = share whose first choice equals the recommendation (decision:assist;
null under replace, where the choice is not the system's); ``substitution_share`` = share
whose original differed from the substituted operation (decision:replace).  A branch
with no delivery neither agrees nor is substituted.
"""
from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean
from typing import TYPE_CHECKING, Any, NamedTuple

from labrecord.models import Choice, InterventionEvent, Operation, Opportunity
from labrecord.scorers.completion import EPISODE_UNITS_SQL, episode_units_reference
from labrecord.scorers.geometry import GEOMETRY_UNITS_SQL, geometry_units_reference
from labrecord.scorers.pairs import SCORED_CHOICE_SQL, scored_choices_reference
from labrecord.scorers.reference import RefCorpus

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection



class OutcomeUnit(NamedTuple):
    run_id: str
    completion: float | None
    correct: float | None
    e_p: float | None

#: outcome -> +1 when higher is better, -1 for error metrics
OUTCOMES: dict[str, int] = {"completion": 1, "correct": 1, "e_p": -1}
BOUNDED = ("completion", "correct")

RUN_OUTCOMES_SQL = f"""
WITH ep AS (SELECT run_id, avg(valid::DOUBLE) AS completion FROM ({EPISODE_UNITS_SQL}) GROUP BY run_id),
     fc AS (SELECT run_id, correct::DOUBLE AS correct FROM ({SCORED_CHOICE_SQL})),
     ge AS (SELECT run_id, avg(e_p) AS e_p FROM ({GEOMETRY_UNITS_SQL}) WHERE p_valid GROUP BY run_id)
SELECT r.run_id, ep.completion, fc.correct, ge.e_p
FROM runs r LEFT JOIN ep USING (run_id) LEFT JOIN fc USING (run_id) LEFT JOIN ge USING (run_id)
"""


class SupportUnit(NamedTuple):
    run_id: str
    site: str
    mode: str
    agreed: bool | None
    substituted: bool | None
    #: decision:replace — the system's own (original) operation was in the legal set
    own_correct: bool | None = None
    #: delivered before the first native choice at its opportunity (or no choice yet)
    in_time: bool = True


def _same_op(a: str, b: str) -> str:
    """SQL: operation ``a`` (a STRUCT or JSON) equals operation JSON ``b``, field by field."""
    return " AND ".join(f"({a_f}) IS NOT DISTINCT FROM ({b}->>'{f}')" for f, a_f in
                        ((f, a.format(f=f)) for f in ("kind", "object", "dest")))


SUPPORT_UNITS_SQL = f"""
WITH fc AS (
    SELECT run_id, opp, arg_min(op, seq) AS op, min(seq) AS seq FROM events
    WHERE type = 'choice' AND "first" AND track = 'native' GROUP BY run_id, opp
), iv AS (
    SELECT run_id, site, mode, arg_min(opp, seq) AS opp, arg_min(payload, seq) AS payload,
           arg_min(original, seq) AS original, arg_min(substituted, seq) AS substituted, min(seq) AS seq
    FROM events WHERE type = 'intervention' AND delivered GROUP BY run_id, site, mode
), op AS (
    SELECT run_id, opp, arg_min(legal, seq) AS legal FROM events WHERE type = 'opportunity' GROUP BY run_id, opp
)
SELECT iv.run_id, iv.site, iv.mode,
       CASE WHEN iv.site = 'decision' AND iv.mode = 'assist'
            THEN coalesce(fc.op IS NOT NULL AND {_same_op("fc.op.{f}", "iv.payload")}, false) END AS agreed,
       CASE WHEN iv.site = 'decision' AND iv.mode = 'replace'
            THEN NOT ({_same_op("iv.original->>'{f}'", "iv.substituted")}) END AS substituted,
       CASE WHEN iv.site = 'decision' AND iv.mode = 'replace'
            THEN coalesce(len(list_filter(op.legal, lambda x: {_same_op("x.{f}", "iv.original")})) > 0, false) END AS own_correct,
       fc.seq IS NULL OR iv.seq < fc.seq AS in_time
FROM iv LEFT JOIN fc ON fc.run_id = iv.run_id AND fc.opp = iv.opp
LEFT JOIN op ON op.run_id = iv.run_id AND op.opp = iv.opp
ORDER BY iv.run_id, iv.site, iv.mode
"""


def _op(value: Any) -> Operation | None:
    import msgspec

    try:
        return msgspec.convert(value, Operation) if value is not None else None
    except msgspec.ValidationError:
        return None


def support_units_reference(corpus: RefCorpus) -> list[SupportUnit]:
    """:data:`SUPPORT_UNITS_SQL` in plain Python over the run files."""
    units = []
    for run in corpus.runs:
        firsts: dict[str, Choice] = {}
        delivered: dict[tuple[str, str], InterventionEvent] = {}
        legal: dict[str, list[Operation]] = {}
        for event in sorted(run.events, key=lambda e: e.seq):
            if isinstance(event, Choice) and event.first and event.track == "native":
                firsts.setdefault(event.opp, event)
            elif isinstance(event, InterventionEvent) and event.delivered:
                delivered.setdefault((event.site, event.mode), event)
            elif isinstance(event, Opportunity):
                legal.setdefault(event.opp, list(event.legal or ()))
        for (site, mode), event in sorted(delivered.items()):
            agreed = substituted = own_correct = None
            choice = firsts.get(event.opp)
            if site == "decision" and mode == "assist":
                agreed = choice is not None and choice.op == _op(event.payload)
            elif site == "decision" and mode == "replace":
                substituted = _op(event.original) != _op(event.substituted)
                own_correct = _op(event.original) in legal.get(event.opp, [])
            in_time = choice is None or event.seq < choice.seq
            units.append(SupportUnit(run.run_id, site, mode, agreed, substituted, own_correct, in_time))
    return sorted(units)


def run_outcomes(con: DuckDBPyConnection) -> list[OutcomeUnit]:
    return [OutcomeUnit(*row) for row in con.execute(RUN_OUTCOMES_SQL).fetchall()]


def run_outcomes_reference(corpus: RefCorpus) -> list[OutcomeUnit]:
    completion: dict[str, list[float]] = {}
    for episode in episode_units_reference(corpus):
        completion.setdefault(episode.run_id, []).append(float(episode.valid))
    errors: dict[str, list[float]] = {}
    for unit in geometry_units_reference(corpus):
        if unit.p_valid and unit.e_p is not None:
            errors.setdefault(unit[0], []).append(unit.e_p)
    scored = scored_choices_reference(corpus)
    units = []
    for run in corpus.runs:
        e_p = fmean(errors[run.run_id]) if run.run_id in errors else None
        units.append(OutcomeUnit(run.run_id, fmean(completion[run.run_id]), float(scored[run.run_id][0]), e_p))
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


def contrast_range(outcome: str, coefficients: Mapping[str, float], known: Mapping[str, float | None]) -> tuple[float, float] | None:
    """Min and max of ``sign·Σ c_k·Y_k`` when the unknown ``Y_k`` (``None``) range over the
    outcome's range [0, 1]; ``None`` for an unbounded outcome (e_p) with any unknown.

    A gain is ``{"s": 1, "b": -1}``; with the base known at 1 and the supported branch
    unresolved the gain lies in [−1, 0]:

    >>> contrast_range("completion", {"s": 1.0, "b": -1.0}, {"s": None, "b": 1.0})
    (-1.0, 0.0)
    """
    sign = OUTCOMES[outcome]
    unknown = [k for k in coefficients if known.get(k) is None]
    if unknown and outcome not in BOUNDED:
        return None
    fixed = sum(coefficients[k] * float(value) for k in coefficients if (value := known.get(k)) is not None)
    low = fixed + sum(min(0.0, coefficients[k]) for k in unknown)
    high = fixed + sum(max(0.0, coefficients[k]) for k in unknown)
    return (sign * low, sign * high) if sign > 0 else (sign * high, sign * low)


GAIN = {"supported": 1.0, "base": -1.0}
INTERACTION = {"joint": 1.0, "first": -1.0, "second": -1.0, "base": 1.0}


def gain_bounds(total: float, unresolved: int, planned: int) -> tuple[float, float] | None:
    """Bounds of the full-population mean gain for an outcome in [0, 1]: each unresolved
    pair contributes a difference in [−1, 1]."""
    if planned == 0:
        return None
    return (total - unresolved) / planned, (total + unresolved) / planned
