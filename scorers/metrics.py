"""The metric registry: every population metric as a small pure function over typed units.

Two registries live here.

* :data:`UNIT_KINDS` — each kind of per-run fact the metrics consume, with its row type
  (a ``NamedTuple``), the SQL that computes it over a corpus and the plain-Python
  reference that computes it from the run files, side by side.  The property tests run
  both and compare them row for row.
* :data:`METRICS` — each metric family with its members, its interval (:data:`WILSON` or
  :data:`BOOTSTRAP`) and its unit; the families themselves are the pure functions at the
  end of this module (:func:`checkpoint_metrics`, :func:`reach_metrics`,
  :func:`completion_metrics`, :func:`fixed_metrics`, :func:`pair_metric`,
  :func:`geometry_metrics`, :func:`contrast_unit`), each from typed units to members.

The one rule for incomplete evidence (Labference sec. 7.4) is :func:`measure`: a metric is
a ratio of sums over :class:`Unit` rows, one per registered member; a member is either
*resolved* (its ``num``/``den`` contribution is known) or *unresolved* (missing run,
invalid run, failed replay audit, ``aborted``/``running``, evaluator-side validity fault).
While any member is unresolved the value is null and the bounds are the minimum and the
maximum of the ratio over every outcome the unresolved members could still have — for a
rate with ``s`` successes and ``u`` unresolved among ``N`` that is ``[s/N, (s+u)/N]``.
Unbounded metrics (mean errors) get no bounds.

Worked example (the case that motivated the rule): 8 registered checkpoints, 5 correct,
1 wrong, 1 missing run, 1 service fault.  ``measure`` gives value null, lower 5/8,
upper 7/8, resolved 6 of 8 — not the 5/8 "final" rate a policy-failure reading prints.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from labrecord.scorers import choice, completion, geometry, oracle, pairs
from labrecord.scorers.reference import RefCorpus

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

# -- units of evidence -----------------------------------------------------------------------


@dataclass(frozen=True)
class UnitKind:
    """One kind of per-run fact: its row type, its SQL and its Python reference."""

    name: str
    row: type
    sql: str
    reference: Callable[[RefCorpus], list[Any]]
    #: a query that is true exactly when ``sql`` can return a row (the rows it is built
    #: on exist); when false the unit query, which joins and groups the whole event
    #: table, is not run
    possible: str | None = None

    def from_sql(self, con: DuckDBPyConnection) -> list[Any]:
        if self.possible is not None and not con.execute(self.possible).fetchone()[0]:  # type: ignore[index]
            return []
        return [self.row(*r) for r in con.execute(self.sql).fetchall()]


UNIT_KINDS: dict[str, UnitKind] = {k.name: k for k in (
    UnitKind("checkpoint", choice.CheckpointUnit, choice.CHECKPOINT_UNITS_SQL, choice.checkpoint_units_reference),
    UnitKind("reach", choice.ReachUnit, choice.REACH_UNITS_SQL, choice.reach_units_reference),
    UnitKind("episode", completion.EpisodeUnit, completion.EPISODE_UNITS_SQL, completion.episode_units_reference),
    UnitKind("fixed", completion.FixedUnit, completion.FIXED_UNITS_SQL, completion.fixed_units_reference),
    UnitKind("member", pairs.MemberUnit, pairs.MEMBER_UNITS_SQL, pairs.member_units_reference,
             # its rows join the members of the pair populations
             "SELECT EXISTS (SELECT 1 FROM populations WHERE type = 'pair' AND len(members) > 0)"),
    UnitKind("geometry", geometry.GeometryUnit, geometry.GEOMETRY_UNITS_SQL, geometry.geometry_units_reference),
    UnitKind("outcome", oracle.OutcomeUnit, oracle.RUN_OUTCOMES_SQL, oracle.run_outcomes_reference),
    UnitKind("support", oracle.SupportUnit, oracle.SUPPORT_UNITS_SQL, oracle.support_units_reference,
             # one row per delivered intervention (site, mode) of a run
             "SELECT EXISTS (SELECT 1 FROM events WHERE type = 'intervention' AND delivered)"),
)}


# -- members and the one rule -----------------------------------------------------------------

#: the (num, den) contributions an unresolved member of a plain rate could still make
RATE_OPTIONS: tuple[tuple[float, float], ...] = ((0.0, 1.0), (1.0, 1.0))
#: ... of a ratio whose denominator is itself an outcome (accuracy|identified, x|reach)
CONDITIONAL_OPTIONS: tuple[tuple[float, float], ...] = ((0.0, 0.0), (0.0, 1.0), (1.0, 1.0))


class Unit(NamedTuple):
    """One registered member's contribution to a ratio of sums.

    ``cluster`` is the resampling unit (a run, a pair, a matched set).  A resolved member
    has ``options=()`` and a known ``num``/``den``; an unresolved one has ``num = den =
    None`` and ``options`` — every (num, den) it could still contribute — or ``None`` when
    the outcome is unbounded (then the metric gets no bounds).
    """

    cluster: str
    num: float | None
    den: float | None
    options: tuple[tuple[float, float], ...] | None = ()

    @property
    def resolved(self) -> bool:
        return self.num is not None

    @classmethod
    def unresolved(cls, cluster: str, options: tuple[tuple[float, float], ...] | None) -> Unit:
        return cls(cluster, None, None, options)


class Estimate(NamedTuple):
    """A metric over its registered members.

    ``value`` is null while any member is unresolved (or the denominator is zero);
    ``lower``/``upper`` are the extremes over the unresolved members' possible outcomes
    (equal to ``value`` once everything is resolved; null for unbounded metrics), each with
    the ``(num, den)`` that attains it.
    """

    value: float | None
    num: float
    den: float
    lower: float | None
    upper: float | None
    lower_counts: tuple[float, float] | None
    upper_counts: tuple[float, float] | None
    resolved: int
    registered: int
    clusters: int


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def _extreme(num: float, den: float, options: Sequence[Sequence[tuple[float, float]]], sign: float) -> tuple[float, float] | None:
    """The ``(num, den)`` minimizing (``sign=1``) or maximizing (``sign=-1``) ``num/den``
    when each unresolved member picks one of its options (Dinkelbach's iteration: at the
    optimum ratio λ each member independently picks the option minimizing ``sign·(a − λb)``,
    so the iteration ends exactly after a few rounds)."""
    if not options:
        return (num, den) if den else None
    # start from the options with the largest denominator, so the first ratio is defined
    pick = [max(opts, key=lambda o: (o[1], -sign * o[0])) for opts in options]
    best: tuple[float, float] | None = None
    for _ in range(64):
        n, d = num + sum(a for a, _ in pick), den + sum(b for _, b in pick)
        if not d:
            return best
        lam = n / d
        if best is not None and (sign * lam >= sign * (best[0] / best[1]) - 1e-15):
            return best
        best = (n, d)
        pick = [min(opts, key=lambda o: (sign * (o[0] - lam * o[1]), -o[1])) for opts in options]
    return best


def measure(units: Sequence[Unit]) -> Estimate:
    """The one rule: value over resolved members when none is unresolved, else bounds.

    >>> u = [Unit("a", 1, 1), Unit("b", 0, 1), Unit.unresolved("c", RATE_OPTIONS)]
    >>> e = measure(u); (e.value, e.lower, e.upper, e.resolved, e.registered)
    (None, 0.3333333333333333, 0.6666666666666666, 2, 3)
    """
    resolved = [u for u in units if u.resolved]
    open_ = [u for u in units if not u.resolved]
    num = float(sum(u.num for u in resolved))  # type: ignore[misc]
    den = float(sum(u.den for u in resolved))  # type: ignore[misc]
    clusters = len({u.cluster for u in resolved})
    if not open_:
        value = _ratio(num, den)
        counts = (num, den) if value is not None else None
        return Estimate(value, num, den, value, value, counts, counts, len(resolved), len(units), clusters)
    if any(u.options is None for u in open_):
        return Estimate(None, num, den, None, None, None, None, len(resolved), len(units), clusters)
    options = [u.options for u in open_]
    low = _extreme(num, den, options, 1.0)  # type: ignore[arg-type]
    high = _extreme(num, den, options, -1.0)  # type: ignore[arg-type]
    return Estimate(None, num, den, _ratio(*low) if low else None, _ratio(*high) if high else None,
                    low, high, len(resolved), len(units), clusters)


def rate_unit(cluster: str, success: bool | None) -> Unit:
    """A member of a plain rate: success 1/1, failure 0/1, unresolved either."""
    return Unit.unresolved(cluster, RATE_OPTIONS) if success is None else Unit(cluster, float(success), 1.0)


def conditional_unit(cluster: str, hit: bool | None, given: bool | None) -> Unit:
    """A member of ``Σhit/Σgiven`` (accuracy among identified, correct among reached)."""
    if hit is None or given is None:
        return Unit.unresolved(cluster, CONDITIONAL_OPTIONS)
    return Unit(cluster, float(hit and given), float(given))


def interval_unit(cluster: str, value: float | None, low: float | None, high: float | None) -> Unit:
    """A member of a mean whose unresolved value lies in ``[low, high]`` (``None`` bounds:
    unbounded, e.g. an error in metres)."""
    if value is not None:
        return Unit(cluster, float(value), 1.0)
    if low is None or high is None:
        return Unit.unresolved(cluster, None)
    return Unit.unresolved(cluster, ((float(low), 1.0), (float(high), 1.0)))


def average_within_members(units: Sequence[Unit]) -> list[Unit]:
    """Repeated runs of one member (units sharing a ``member:`` cluster) averaged into one
    unit ``(Σnum/k, Σden/k)`` over its k units, so every member weighs the same; while any
    of them is unresolved the member is, with every average its runs could still give.

    >>> [tuple(u[:3]) for u in average_within_members([Unit("member:J/i0", 1.0, 1.0), Unit("member:J/i0", 0.0, 1.0)])]
    [('member:J/i0', 0.5, 1.0)]
    """
    by_cluster: dict[str, list[Unit]] = {}
    for u in units:
        by_cluster.setdefault(u.cluster, []).append(u)
    out = []
    for cluster, group in by_cluster.items():
        if len(group) == 1 or not cluster.startswith("member:"):
            out.extend(group)
            continue
        k = float(len(group))
        known = [u for u in group if u.resolved]
        sums: set[tuple[float, float]] = {(sum(float(u.num or 0.0) for u in known), sum(float(u.den or 0.0) for u in known))}
        open_ = [u for u in group if not u.resolved]
        if any(u.options is None for u in open_):
            out.append(Unit.unresolved(cluster, None))
            continue
        for u in open_:
            sums = {(a + x, b + y) for a, b in sums for x, y in (u.options or ())}
        if not open_:
            ((n, d),) = sums
            out.append(Unit(cluster, n / k, d / k))
        else:
            out.append(Unit.unresolved(cluster, tuple(sorted((n / k, d / k) for n, d in sums))))
    return out


# -- metric families --------------------------------------------------------------------------

WILSON, BOOTSTRAP, NONE = "wilson", "bootstrap", "none"


@dataclass(frozen=True)
class MetricFamily:
    """A family of metrics: its names, what a member is, its interval and its unit of measure."""

    pattern: str
    members: str
    interval: str
    unit: str
    equation: str


#: every population metric, in report order; ``interval`` WILSON means: Wilson score over
#: the runs when each run contributes one member, else the shared cluster bootstrap
METRICS: tuple[MetricFamily, ...] = (
    MetricFamily("B_next", "registered checkpoint (run at it)", WILSON, "rate", "eq. 4"),
    MetricFamily("C_id", "registered checkpoint", WILSON, "rate", "eq. 5"),
    MetricFamily("accuracy_identified", "registered checkpoint with an identified choice", WILSON, "rate", "B_next/C_id"),
    MetricFamily("reach.<d>", "run", WILSON, "rate", "N_reach/N_run"),
    MetricFamily("correct_given_reach.<d>", "run that reached d", WILSON, "rate", "N_correct/N_reach"),
    MetricFamily("correct.<d>", "run", WILSON, "rate", "N_correct/N_run"),
    MetricFamily("identified_given_reach.<d>", "run that reached d", WILSON, "rate", "N_identified/N_reach"),
    MetricFamily("completion.<kind>", "episode (a run may hold several)", WILSON, "rate", "sec. 7.2"),
    MetricFamily("runtime.<clock>", "episode with a recorded runtime on that clock", BOOTSTRAP, "seconds", "sec. 9.5"),
    MetricFamily("policy_time_per_query", "episode with a recorded policy time", BOOTSTRAP, "seconds", "sec. 9.5"),
    MetricFamily("E_fixed", "registered fixed start", WILSON, "rate", "eq. 6"),
    MetricFamily("P_state", "registered answer-changing pair (disjoint legal sets)", WILSON, "rate", "eq. 7"),
    MetricFamily("P_geom", "registered geometric pair", WILSON, "rate", "eq. 7"),
    MetricFamily("geometry.p_valid", "geometry report", WILSON, "rate", "eq. 2"),
    MetricFamily("geometry.v_valid", "geometry report with a reference axis", WILSON, "rate", "eq. 2"),
    MetricFamily("e_p", "valid geometry report", BOOTSTRAP, "metres", "eq. 2"),
    MetricFamily("e_v", "valid axis report", BOOTSTRAP, "radians", "eq. 2"),
    MetricFamily("gain.<Y>", "registered Oracle pair", BOOTSTRAP, "difference of Y", "eq. 3"),
    MetricFamily("delivery", "supported branch of a registered Oracle pair", WILSON, "rate", "sec. 6.3"),
    MetricFamily("agreement", "supported branch of a registered decision:assist pair", WILSON, "rate", "sec. 6.3"),
    MetricFamily("substitution_share", "supported branch of a registered decision:replace pair", WILSON, "rate",
                 "sec. 6.3"),
    MetricFamily("own_correct", "supported branch of a registered decision:replace pair (its original output)", WILSON,
                 "rate", "sec. 6.2"),
    MetricFamily("interaction.<Y>", "registered matched set (base, o1, o2, o1+o2)", BOOTSTRAP, "difference of Y", "sec. 6.4"),
)


def family_of(name: str) -> MetricFamily:
    """The registry entry of a metric name (``reach.select_weight`` → ``reach.<d>``)."""
    for family in METRICS:
        head = family.pattern.split("<", 1)[0]
        if name == family.pattern or ("<" in family.pattern and name.startswith(head)):
            return family
    raise KeyError(name)


# -- the metrics: pure functions from typed units to members ------------------------------------
# Each takes ``(cluster, unit)`` pairs, one per registered member, with ``unit`` None for an
# unresolved member, and returns the members of its metrics; :func:`measure` does the rest.

class Members(NamedTuple):
    """The members of one metric, the kind of cluster they resample, and its interval."""

    units: list[Unit]
    clusters: str  # "run", "pair", "oracle_pair" or "set"
    interval: str


Registered = Sequence[tuple[str, Any]]


def checkpoint_metrics(members: Registered) -> dict[str, Members]:
    """B_next = Σcorrect/|J| (eq. 4), C_id = Σidentified/|J| (eq. 5), accuracy|identified =
    Σcorrect/Σidentified over :class:`~labrecord.scorers.choice.CheckpointUnit` members.

    >>> from labrecord.scorers.choice import CheckpointUnit as C
    >>> m = checkpoint_metrics([("r0", C("r0", "J", "i0", "d", True, True)), ("r1", None)])
    >>> measure(m["B_next"].units)[3:5], measure(m["accuracy_identified"].units)[3:5]
    ((0.5, 1.0), (0.5, 1.0))
    """
    return {
        "B_next": Members([rate_unit(c, None if u is None else u.correct) for c, u in members], "run", WILSON),
        "C_id": Members([rate_unit(c, None if u is None else u.identified) for c, u in members], "run", WILSON),
        "accuracy_identified": Members([conditional_unit(c, *((u.correct, u.identified) if u else (None, None)))
                                        for c, u in members], "run", WILSON),
    }


def reach_metrics(decision: str, members: Registered) -> dict[str, Members]:
    """The reach triple of one decision over :class:`~labrecord.scorers.choice.ReachUnit`
    members (one per run): N_reach/N_run, N_correct/N_reach, N_correct/N_run, N_identified/N_reach."""
    return {
        f"reach.{decision}": Members([rate_unit(c, None if u is None else u.reached) for c, u in members], "run", WILSON),
        f"correct_given_reach.{decision}": Members(
            [conditional_unit(c, *((u.correct, u.reached) if u else (None, None))) for c, u in members], "run", WILSON),
        f"correct.{decision}": Members([rate_unit(c, None if u is None else u.correct) for c, u in members], "run", WILSON),
        f"identified_given_reach.{decision}": Members(
            [conditional_unit(c, *((u.identified, u.reached) if u else (None, None))) for c, u in members], "run", WILSON),
    }


def completion_metrics(members: Registered) -> dict[str, Members]:
    """completion.physical/valid/clean/recovered over :class:`~labrecord.scorers.completion.EpisodeUnit`
    members (episodes; an unresolved run counts as one unresolved member), and the mean
    episode runtime per clock (``runtime.sim``, ``runtime.wall``, seconds) and policy time
    per query (``policy_time_per_query``, seconds) over the episodes that record them —
    unbounded means, so an unresolved episode withholds them.

    >>> from labrecord.scorers.completion import EpisodeUnit as E
    >>> m = completion_metrics([("a", E("a", 0, True, True, True, False, 130.0, "wall")),
    ...                         ("b", E("b", 0, False, False, False, False, 140.0, "wall"))])
    >>> measure(m["runtime.wall"].units).value, measure(m["completion.valid"].units).value
    (135.0, 0.5)
    """
    metrics = {f"completion.{kind}": Members([rate_unit(c, None if u is None else bool(getattr(u, kind))) for c, u in members],
                                             "run", WILSON)
               for kind in ("physical", "valid", "clean", "recovered")}
    unresolved = [interval_unit(c, None, None, None) for c, u in members if u is None]
    for clock in sorted({u.runtime_clock for _, u in members if u is not None and u.runtime_s is not None}):
        metrics[f"runtime.{clock}"] = Members([Unit(c, float(u.runtime_s), 1.0) for c, u in members
                                               if u is not None and u.runtime_s is not None and u.runtime_clock == clock]
                                              + unresolved, "run", BOOTSTRAP)
    timed = [(c, u) for c, u in members if u is not None and u.policy_s_per_query is not None]
    if timed:
        metrics["policy_time_per_query"] = Members([Unit(c, float(u.policy_s_per_query), 1.0) for c, u in timed] + unresolved,
                                                   "run", BOOTSTRAP)
    return metrics


def fixed_metrics(members: Registered) -> dict[str, Members]:
    """E_fixed = Σconfirmed/|K| (eq. 6) over :class:`~labrecord.scorers.completion.FixedUnit` members."""
    return {"E_fixed": Members([rate_unit(c, None if u is None else u.confirmed) for c, u in members], "run", WILSON)}


def pair_metric(pairs: Sequence[tuple[str, Sequence[Any]]], answer_changing: bool) -> tuple[Members, list[tuple[str, list[str]]]]:
    """P_state/P_geom (eq. 7) over pairs of :class:`~labrecord.scorers.pairs.MemberUnit`
    (None: unresolved member).  An answer-changing pair whose members share a legal
    operation is refused: returned as ``(cluster, shared operations)``, not a member.

    >>> from labrecord.scorers.pairs import MemberUnit as M
    >>> same = [M("r0", "B", "i0", True, ["add(w10, pan)"]), M("r1", "B", "i1", True, ["add(w10, pan)"])]
    >>> members, refused = pair_metric([("b0", same)], answer_changing=True)
    >>> (len(members.units), refused)
    (0, [('b0', ['add(w10, pan)'])])
    """
    from labrecord.scorers.pairs import shared_operations

    units, refused = [], []
    for cluster, members in pairs:
        if any(m is None for m in members):
            units.append(rate_unit(cluster, None))
            continue
        shared = shared_operations([m.legal for m in members]) if answer_changing else []
        if shared:
            refused.append((cluster, shared))
            continue
        units.append(rate_unit(cluster, all(m.correct for m in members)))
    return Members(units, "pair", WILSON), refused


def geometry_metrics(reports: Sequence[Any], unresolved: Sequence[str]) -> dict[str, Members]:
    """geometry.p_valid/v_valid (rates over reports) and e_p/e_v (means over valid reports,
    unbounded: any unresolved run withholds them without bounds) over
    :class:`~labrecord.scorers.geometry.GeometryUnit` reports of resolved runs."""
    metrics = {
        "geometry.p_valid": Members([rate_unit(u.run_id, u.p_valid) for u in reports] + [rate_unit(c, None) for c in unresolved],
                                    "run", WILSON),
        "e_p": Members([Unit(u.run_id, u.e_p, 1.0) for u in reports if u.p_valid]
                       + [interval_unit(c, None, None, None) for c in unresolved], "run", BOOTSTRAP),
    }
    scored = [u for u in reports if u.v_scored]
    if scored:
        metrics["geometry.v_valid"] = Members([rate_unit(u.run_id, u.v_valid) for u in scored]
                                              + [rate_unit(c, None) for c in unresolved], "run", WILSON)
        metrics["e_v"] = Members([Unit(u.run_id, u.e_v, 1.0) for u in scored if u.v_valid]
                                 + [interval_unit(c, None, None, None) for c in unresolved], "run", BOOTSTRAP)
    return metrics


def support_metrics(members: Registered, supports: Sequence[tuple[str, str]]) -> dict[str, Members]:
    """delivery, agreement and substitution share (sec. 6.3) over the supported branches of
    a group's registered Oracle pairs; ``members`` holds ``(cluster, units)`` per branch,
    ``units`` the branch run's :class:`~labrecord.scorers.oracle.SupportUnit` rows (None:
    unresolved).  ``supports`` is the group's (site, mode) list.  Agreement is measured
    under decision:assist; under decision:replace it is null (no members) and the
    substitution share is reported instead.

    Hand check: three replace branches, substituted in two, the third unresolved:

    >>> from labrecord.scorers.oracle import SupportUnit as S
    >>> rows = [("a", [S("a", "decision", "replace", None, True)]), ("b", [S("b", "decision", "replace", None, False)]),
    ...         ("c", None)]
    >>> m = support_metrics(rows, [("decision", "replace")])
    >>> e = measure(m["substitution_share"].units); (e.value, e.lower, e.upper), measure(m["agreement"].units).value
    ((None, 0.3333333333333333, 0.6666666666666666), None)
    """
    def pick(units: Any, site: str, mode: str) -> Any:
        return next((u for u in units if (u.site, u.mode) == (site, mode)), None)

    metrics = {"delivery": Members([rate_unit(c, None if units is None else all(pick(units, *s) for s in supports))
                                    for c, units in members], "oracle_pair", WILSON)}
    if ("decision", "assist") in supports:
        def agreed(units: Any) -> bool | None:
            u = None if units is None else pick(units, "decision", "assist")
            if units is None or (u is not None and not u.in_time):
                return None  # unresolved, or delivered only after the choice: not delivered in time
            return bool(u and u.agreed)

        metrics["agreement"] = Members([rate_unit(c, agreed(units)) for c, units in members], "oracle_pair", WILSON)
    if ("decision", "replace") in supports:
        metrics["substitution_share"] = Members([rate_unit(c, None if units is None else bool(
            (u := pick(units, "decision", "replace")) and u.substituted)) for c, units in members], "oracle_pair", WILSON)
        # the system's own output at the site, scored directly (sec. 6.2); a branch where the
        # support never fired recorded no original: unresolved
        metrics["own_correct"] = Members([rate_unit(c, None if units is None else (
            None if (u := pick(units, "decision", "replace")) is None else u.own_correct)) for c, units in members],
            "oracle_pair", WILSON)
        if ("decision", "assist") not in supports:
            metrics["agreement"] = Members([], "oracle_pair", WILSON)  # null: the choice was substituted
    return metrics


def contrast_unit(cluster: str, outcome: str, coefficients: dict[str, float], values: dict[str, float | None],
                  resolved: dict[str, bool]) -> Unit | None:
    """One member of an Oracle gain (eq. 3) or interaction contrast: ``sign·Σ c_k·Y_k`` when
    every branch is resolved, else its range over the unresolved branches' outcomes; None
    when resolved branches lack the outcome (no geometry report: the pair measures no e_p).

    >>> contrast_unit("p", "completion", oracle.GAIN, {"supported": None, "base": 1.0}, {"supported": False, "base": True})
    Unit(cluster='p', num=None, den=None, options=((-1.0, 1.0), (0.0, 1.0)))
    """
    if all(resolved.values()):
        if any(v is None for v in values.values()):
            return None
        return Unit(cluster, oracle.OUTCOMES[outcome] * sum(coefficients[k] * float(v) for k, v in values.items() if v is not None), 1.0)
    known = {k: (v if resolved[k] else None) for k, v in values.items()}
    span = oracle.contrast_range(outcome, coefficients, known)
    return interval_unit(cluster, None, *(span or (None, None)))
