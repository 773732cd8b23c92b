"""Why two evaluations disagree: episodes paired by identity, paired tests, attribution.

:func:`diff_paths` compares evaluation A with evaluation B (runs folders, corpus files,
snapshots, ``SYSTEM@PATH``); :func:`diff_evaluations` does the work on loaded episodes.
Every episode carries its identity key (the ``episode_identity`` view, documented in
docs/scoring.md, "Episode identity").  The key has two parts:

* **instance fields** (:data:`INSTANCE_FIELDS`) — which initial state was run: task,
  condition, registered instance, episode number, seeds, realized layout;
* **setting fields** (:data:`SETTING_FIELDS`) — how it was run: system, control rate and
  chunk execution, observation profile, simulator, assets, renderer, contract, served
  policy metadata.

The fields *under comparison* are the setting fields whose recorded values differ
between A and B (or those named by the caller).  Episodes are paired on every other field
of the key; a pair is then the same initial state run under the two settings.  For each
binary outcome (B_next, C_id, the completion kinds, agreement) the pairs form a 2×2 table
with the exact McNemar p-value and the paired difference p_B − p_A with Newcombe's
interval; for each continuous metric (e_p, e_v, episode duration) the mean paired
difference with a paired bootstrap interval.  An episode without a partner is listed
with why: missing on the other side, or its identity differs in a named field.

Incomplete evidence (Labference sec. 7.4) holds for pairs: a pair with an unresolved side
(missing registered run, invalid run, failed replay audit, aborted, evaluator fault) is
unresolved; while any pair is unresolved the difference is null and bounded by the
outcomes the unresolved sides may still have, and the McNemar p-value is replaced by its
range.

**Attribution**: for each field under comparison, the pairs whose two sides differ in it
and the outcome flips co-occurring with it.  :func:`explain` turns that into a verdict —
exactly one field differs in every flipped pair: the attributed cause; several do:
confounded; fields unknown on a side are named, because an unrecorded setting could
differ too.
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.scorers.metric import rng_for
from labrecord.scorers.paired import (
    PairedTable, difference_bounds, mcnemar_exact, mcnemar_range, newcombe_interval, paired_bootstrap,
    paired_difference,
)

#: which initial state an episode ran; never compared, always paired on (unless named)
INSTANCE_FIELDS: tuple[str, ...] = (
    "family", "task_id", "condition", "population_name", "instance_id", "episode",
    "seed_task_state", "seed_layout", "seed_appearance", "seed_policy", "layout_hash",
)
#: how it was run: compared when their values differ between the two evaluations
SETTING_FIELDS: tuple[str, ...] = (
    "system_name", "system_revision", "system_kind", "task_version", "contract_hash",
    "control_hz", "max_chunk", "chunk_length", "actions_per_query", "action_convention",
    "observation_condition", "cameras", "image_size", "state_convention",
    "simulator", "physics_hz", "renderer", "parallel_envs", "asset_scene", "asset_revision",
    "policy_protocol", "policy_profile", "policy_metadata",
)
IDENTITY_KEY: tuple[str, ...] = INSTANCE_FIELDS + SETTING_FIELDS
#: setting fields that restate others: a changed contract version (or what-if label) changes
#: its hash, a changed rate or chunk limit changes the action convention string
DERIVED: dict[str, tuple[str, ...]] = {"contract_hash": ("task_version",), "action_convention": ("control_hz", "max_chunk")}
#: the fields that still pair an unresolved episode whose other fields may be unknown
RESOLVING_FIELDS: tuple[str, ...] = ("task_id", "population_name", "instance_id", "episode")

BINARY_OUTCOMES: tuple[str, ...] = (
    "B_next", "C_id", "completion.physical", "completion.valid", "completion.clean", "completion.recovered",
    "agreement",
)
CONTINUOUS_METRICS: tuple[str, ...] = ("e_p", "e_v", "duration_s")

_DURATION_SQL = """
SELECT run_id, episode, max(t) FILTER (WHERE type = 'episode_end') - min(t) FILTER (WHERE type = 'episode_start')
FROM events GROUP BY run_id, episode
"""


@dataclass
class Episode:
    """One episode of one evaluation: its identity key and what it measured.

    ``outcomes`` holds the binary outcomes the episode measures, ``values`` the
    continuous ones; ``unresolved`` is why the episode cannot be scored (then both are
    empty: nothing of it is known)."""

    run_id: str
    identity: dict[str, Any]
    outcomes: dict[str, bool] = field(default_factory=dict)
    values: dict[str, float] = field(default_factory=dict)
    unresolved: str | None = None

    def label(self) -> str:
        who = "/".join(str(self.identity.get(f)) for f in ("population_name", "instance_id") if self.identity.get(f))
        return f"{who or self.run_id}#{self.identity.get('episode')}"


@dataclass
class Evaluation:
    """The episodes of one side, and the registered instances of the populations they
    belong to (a registered instance without an episode is a missing member)."""

    name: str
    episodes: list[Episode]
    registered: set[tuple[str, str]] = field(default_factory=set)


def load_evaluation(con: Any, name: str, where: Any = None, loaded: Any = None) -> Evaluation:
    """The episodes of a corpus connection (``where``: an optional filter on the identity
    dict, e.g. one system), with outcomes from the same units the scorers count;
    ``loaded`` is what :func:`load_episodes` returned for ``con`` (read once for both sides
    of a diff within one corpus)."""
    episodes, populations = loaded if loaded is not None else load_episodes(con)
    chosen = [ep for ep in episodes if where is None or where(ep.identity)]
    # as in the scorers: a population counts its missing members for the runs pointing at it
    pointed = {ep.identity.get("population_name") for ep in chosen}
    registered = {(p["population"], p["instance_id"]) for p in populations
                  if p["type"] in ("instance", "checkpoint", "fixed_start") and p["instance_id"]
                  and p["population"] in pointed}
    return Evaluation(name, sorted(chosen, key=lambda e: (e.run_id, e.identity["episode"])), registered)


def load_episodes(con: Any) -> tuple[list[Episode], list[dict[str, Any]]]:
    """Every episode of the corpus (invalid runs as unresolved ones) and its population records."""
    from labrecord.scorers.corpus import SqlSource

    source = SqlSource(con)
    cur = con.execute(f"SELECT {', '.join(IDENTITY_KEY)}, run_id FROM episode_identity ORDER BY run_id, episode")
    rows = [dict(zip((*IDENTITY_KEY, "run_id"), row)) for row in cur.fetchall()]
    for row in rows:
        if row["episode"] is None:
            row["episode"] = 0  # a run without episode_start counts as one episode
        for name_, value in row.items():
            if isinstance(value, list):
                row[name_] = tuple(value)
    unresolved = source.unresolved()
    episodes = {(r["run_id"], r["episode"]): Episode(r["run_id"], {k: r[k] for k in IDENTITY_KEY},
                                                      unresolved=unresolved.get(r["run_id"])) for r in rows}
    first: dict[str, int] = {}
    for run_id, episode in sorted(episodes):
        first.setdefault(run_id, episode)
    _attach(episodes, first, source, con)
    for invalid in source.invalid_runs():
        identity = {k: invalid.get(k) for k in IDENTITY_KEY}
        identity["episode"] = 0
        episodes[(invalid.get("run_id") or invalid["run_dir"], 0)] = Episode(
            invalid.get("run_id") or invalid["run_dir"], identity, unresolved=f"invalid run: {invalid['reason']}")
    for ep in episodes.values():
        if ep.unresolved is not None:
            ep.outcomes.clear()
            ep.values.clear()
    return list(episodes.values()), source.populations()


def _attach(episodes: dict[tuple[str, int], Episode], first: dict[str, int], source: Any, con: Any) -> None:
    """Outcomes per episode: completion per episode; run-level facts (checkpoint choice,
    agreement, geometry) on the run's first episode."""
    for unit in source.units("episode"):
        ep = episodes.get((unit.run_id, unit.episode if unit.episode is not None else 0))
        if ep is not None:
            for kind in ("physical", "valid", "clean", "recovered"):
                ep.outcomes[f"completion.{kind}"] = bool(getattr(unit, kind))
    for unit in source.units("checkpoint"):
        ep = episodes.get((unit.run_id, first.get(unit.run_id, 0)))
        if ep is not None:
            ep.outcomes["B_next"], ep.outcomes["C_id"] = bool(unit.correct), bool(unit.identified)
    for unit in source.units("support"):
        ep = episodes.get((unit.run_id, first.get(unit.run_id, 0)))
        if ep is not None and unit.agreed is not None:
            ep.outcomes["agreement"] = bool(unit.agreed)
    errors: dict[tuple[str, str], list[float]] = defaultdict(list)
    for unit in source.units("geometry"):
        if unit.p_valid and unit.e_p is not None:
            errors[(unit.run_id, "e_p")].append(unit.e_p)
        if unit.v_valid and unit.e_v is not None:
            errors[(unit.run_id, "e_v")].append(unit.e_v)
    for (run_id, metric), values in errors.items():
        ep = episodes.get((run_id, first.get(run_id, 0)))
        if ep is not None:
            ep.values[metric] = sum(values) / len(values)
    for run_id, episode, duration in con.execute(_DURATION_SQL).fetchall():
        ep = episodes.get((run_id, episode if episode is not None else 0))
        if ep is not None and duration is not None:
            ep.values["duration_s"] = float(duration)


# -- pairing ---------------------------------------------------------------------------------

@dataclass
class Pair:
    """A paired episode; ``a`` or ``b`` is None for a registered instance missing on that side."""

    a: Episode | None
    b: Episode | None

    @property
    def resolved(self) -> bool:
        return self.a is not None and self.b is not None and self.a.unresolved is None and self.b.unresolved is None

    def label(self) -> str:
        side = self.a if self.a is not None else self.b
        assert side is not None  # a pair has at least one side
        return side.label()

    def sides(self) -> tuple[Episode, Episode]:
        """Both episodes of a pair with two sides (every resolved pair)."""
        assert self.a is not None and self.b is not None
        return self.a, self.b

    def field(self, name: str) -> tuple[Any, Any]:
        """``name``'s identity value on each side of a pair with two sides."""
        a, b = self.sides()
        return a.identity.get(name), b.identity.get(name)

    def differs(self, name: str) -> bool:
        a, b = self.field(name)
        return bool(a != b)


@dataclass
class Pairing:
    compared: list[str]
    paired_on: list[str]
    pairs: list[Pair]
    one_sided: list[dict[str, Any]]


def _values(episodes: Sequence[Episode], name: str) -> set[Any]:
    """The recorded values of ``name``; an unresolved episode's null (an unreadable run.json)
    says nothing about the setting and is left out."""
    return {e.identity.get(name) for e in episodes if e.unresolved is None or e.identity.get(name) is not None}


def compared_fields(a: Evaluation, b: Evaluation) -> list[str]:
    """The setting fields whose recorded values (over the episodes of instances both
    evaluations ran) differ between the two evaluations; an evaluation that also ran other
    tasks does not make their settings "compared"."""
    shared = {_key(e, RESOLVING_FIELDS) for e in a.episodes} & {_key(e, RESOLVING_FIELDS) for e in b.episodes}
    mine = [e for e in a.episodes if _key(e, RESOLVING_FIELDS) in shared] if shared else a.episodes
    theirs = [e for e in b.episodes if _key(e, RESOLVING_FIELDS) in shared] if shared else b.episodes
    # a side with no recorded value of a field says nothing about it
    return [f for f in SETTING_FIELDS if (va := _values(mine, f)) and (vb := _values(theirs, f)) and va != vb]


def _key(ep: Episode, fields: Sequence[str]) -> tuple[Any, ...]:
    return tuple(ep.identity.get(f) for f in fields)


def pair_episodes(a: Evaluation, b: Evaluation, compare: Sequence[str] | None = None) -> Pairing:
    """Pair A's and B's episodes on every identity field not under comparison.

    Order of matching: the whole remaining key; then an unresolved episode by the
    resolving fields alone (its other fields may be unknown); then a registered instance
    of the other side's population with no episode there is a pair with that side missing.
    Whatever is left is one-sided, with the reason.
    """
    compare = list(compared_fields(a, b) if compare is None else compare)
    unknown = [f for f in compare if f not in IDENTITY_KEY]
    if unknown:
        raise LabrecordError(f"cannot compare on {unknown[0]!r}: not an episode identity field "
                             f"(known: {', '.join(IDENTITY_KEY)})")
    paired_on = [f for f in IDENTITY_KEY if f not in compare]
    pairs: list[Pair] = []
    left_a, left_b = list(a.episodes), list(b.episodes)
    for fields, only_unresolved in ((paired_on, False), ([f for f in RESOLVING_FIELDS if f not in compare], True)):
        index: dict[tuple[Any, ...], list[Episode]] = defaultdict(list)
        for ep in left_b:
            index[_key(ep, fields)].append(ep)
        rest_a = []
        for ep in left_a:
            candidates = index.get(_key(ep, fields), [])
            if only_unresolved:
                candidates = [c for c in candidates if c.unresolved is not None or ep.unresolved is not None]
            if candidates:
                partner = candidates[0]
                index[_key(ep, fields)].remove(partner)
                pairs.append(Pair(ep, partner))
            else:
                rest_a.append(ep)
        taken = {id(p.b) for p in pairs}
        left_a, left_b = rest_a, [ep for ep in left_b if id(ep) not in taken]
    one_sided: list[dict[str, Any]] = []
    for side, mine, other_left, other in (("a", left_a, left_b, b), ("b", left_b, left_a, a)):
        for ep in mine:
            instance = (ep.identity.get("population_name"), ep.identity.get("instance_id"))
            near = [o for o in other_left if _key(o, RESOLVING_FIELDS) == _key(ep, RESOLVING_FIELDS)]
            if near:
                differing = [f for f in paired_on if ep.identity.get(f) != near[0].identity.get(f)]
                reason = "identity differs in " + ", ".join(
                    f"{f} ({_show(ep.identity.get(f))} vs {_show(near[0].identity.get(f))})" for f in differing)
            elif instance in other.registered and all(instance):
                pairs.append(Pair(ep, None) if side == "a" else Pair(None, ep))
                continue
            else:
                reason = f"missing on side {'B' if side == 'a' else 'A'} (no episode of this instance there)"
            if ep.unresolved is not None:
                reason += f"; unresolved on its own side: {ep.unresolved}"
            one_sided.append({"side": side.upper(), "run_id": ep.run_id, "episode": ep.label(), "reason": reason})
    pairs.sort(key=lambda p: p.label())
    return Pairing(compare, paired_on, pairs, one_sided)


def _show(value: Any) -> str:
    return "unknown" if value is None else repr(value)


# -- comparisons -----------------------------------------------------------------------------

def binary_comparison(pairs: Sequence[Pair], outcome: str) -> dict[str, Any] | None:
    """The paired table of ``outcome`` over the pairs measuring it, its exact McNemar
    p-value and the paired difference p_B − p_A with Newcombe's interval; with unresolved
    pairs the difference and p-value are null and their bounds/range are given."""
    cells = [0, 0, 0, 0]
    open_: list[tuple[bool | None, bool | None]] = []
    for pair in pairs:
        ya = _outcome(pair.a, outcome)
        yb = _outcome(pair.b, outcome)
        if ya is _ABSENT or yb is _ABSENT:
            continue  # one side does not measure this outcome at all
        if pair.resolved:
            cells[{(True, True): 0, (True, False): 1, (False, True): 2, (False, False): 3}[(ya, yb)]] += 1  # type: ignore[index]
        else:
            open_.append((ya if isinstance(ya, bool) else None, yb if isinstance(yb, bool) else None))
    table = PairedTable(*cells)
    if table.n == 0 and not open_:
        return None
    out: dict[str, Any] = {"both": table.both, "a_only": table.a_only, "b_only": table.b_only,
                           "neither": table.neither, "n": table.n, "unresolved": len(open_),
                           "a_rate": (table.both + table.a_only) / table.n if table.n else None,
                           "b_rate": (table.both + table.b_only) / table.n if table.n else None}
    if open_:
        bounds = difference_bounds(table, open_)
        p_range = mcnemar_range(table, open_)
        out.update(difference=None, ci=None, lower=bounds[0] if bounds else None, upper=bounds[1] if bounds else None,
                   mcnemar_p=None, mcnemar_p_range=list(p_range) if p_range else None)
    else:
        out.update(difference=paired_difference(table), ci=newcombe_interval(table),
                   lower=paired_difference(table), upper=paired_difference(table),
                   mcnemar_p=mcnemar_exact(table.a_only, table.b_only), mcnemar_p_range=None)
    return out


class _Absent:
    """The side does not measure the outcome (not the same as unresolved)."""


_ABSENT = _Absent()


def _outcome(ep: Episode | None, outcome: str) -> bool | None | _Absent:
    if ep is None or ep.unresolved is not None:
        return None
    return ep.outcomes.get(outcome, _ABSENT)  # type: ignore[return-value]


def continuous_comparison(pairs: Sequence[Pair], metric: str, rng: Any, resamples: int) -> dict[str, Any] | None:
    """Mean paired difference B − A of ``metric`` over the pairs measuring it on both
    sides, with a paired bootstrap interval; an unresolved pair withholds it (these
    metrics are unbounded, so no bounds)."""
    diffs, a_values, b_values, unresolved = [], [], [], 0
    for pair in pairs:
        if not pair.resolved:
            # unresolved for this metric unless the known side shows it does not measure it
            known = [ep for ep in (pair.a, pair.b) if ep is not None and ep.unresolved is None]
            if not known or metric in known[0].values:
                unresolved += 1
            continue
        a, b = pair.sides()
        va, vb = a.values.get(metric), b.values.get(metric)
        if va is None or vb is None:
            continue
        diffs.append(vb - va)
        a_values.append(va)
        b_values.append(vb)
    if not diffs and not unresolved:
        return None
    final = not unresolved and bool(diffs)
    return {"n": len(diffs), "unresolved": unresolved,
            "a_mean": sum(a_values) / len(a_values) if a_values else None,
            "b_mean": sum(b_values) / len(b_values) if b_values else None,
            "difference": sum(diffs) / len(diffs) if final else None,
            "ci": paired_bootstrap(diffs, rng, resamples) if final else None}


def flips(pair: Pair) -> list[str]:
    """The binary outcomes whose value differs between the two sides of a resolved pair."""
    if not pair.resolved:
        return []
    a, b = (ep.outcomes for ep in pair.sides())
    return [o for o in BINARY_OUTCOMES if o in a and o in b and a[o] != b[o]]


def attribution(pairing: Pairing) -> list[dict[str, Any]]:
    """Per field under comparison: its values on each side, the resolved pairs whose sides
    differ in it, and the outcome flips co-occurring with it (any outcome, and per
    outcome); ``unknown_pairs`` counts pairs where a side does not record it."""
    resolved = [p for p in pairing.pairs if p.resolved]
    rows = []
    for name in pairing.compared:
        differ = [p for p in resolved if p.differs(name)]
        unknown = sum(1 for p in resolved if None in p.field(name))
        per_outcome: dict[str, int] = defaultdict(int)
        for pair in differ:
            for outcome in flips(pair):
                per_outcome[outcome] += 1
        rows.append({"field": name,
                     "a_values": sorted({_show(p.field(name)[0]) for p in resolved}),
                     "b_values": sorted({_show(p.field(name)[1]) for p in resolved}),
                     "pairs_differing": len(differ), "unknown_pairs": unknown,
                     "flips": sum(1 for p in differ if flips(p)), "flips_by_outcome": dict(sorted(per_outcome.items()))})
    return rows


def explain(pairing: Pairing, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The harness-conformance verdict: which compared field the outcome flips go with.

    * ``attributed`` — exactly one field differs in every flipped pair: the cause;
    * ``confounded`` — several fields differ in every flipped pair (they changed together;
      the data cannot tell them apart);
    * ``unexplained`` — no field differs in every flipped pair;
    * ``no_flips`` — no resolved pair flips an outcome.

    ``unknown_fields`` are setting fields a side does not record for some pair: an
    attribution holds only if those did not differ.
    """
    resolved = [p for p in pairing.pairs if p.resolved]
    flipped = [p for p in resolved if flips(p)]
    differing = [r["field"] for r in rows if r["pairs_differing"]]
    unknown = [f for f in SETTING_FIELDS if f not in pairing.compared
               and any(_unrecorded(p, f) for p in resolved)]
    candidates = [f for f in differing
                  if all(p.differs(f) for p in flipped)]
    # a field that records another candidate again (a contract version's hash) is not a second cause
    candidates = [f for f in candidates if not any(src in candidates for src in DERIVED.get(f, ()))]
    caveat = f"; not recorded on a side, so not ruled out: {', '.join(unknown)}" if unknown else ""
    if not flipped:
        verdict, cause = "no_flips", None
        text = (f"no outcome flips in {len(resolved)} resolved pair(s)"
                + (f"; differing settings: {', '.join(differing)}" if differing else ""))
    elif len(candidates) == 1:
        verdict, cause = "attributed", candidates[0]
        text = (f"{len(flipped)} of {len(resolved)} resolved pair(s) flip an outcome; {cause} differs in every flipped pair"
                + (" and is the only setting that differs" if differing == [cause] else
                   f" (also differing: {', '.join(f for f in differing if f != cause)}, not in every flipped pair)"))
    elif candidates:
        verdict, cause = "confounded", None
        text = (f"{len(flipped)} of {len(resolved)} resolved pair(s) flip an outcome; {', '.join(candidates)} differ "
                "together in every flipped pair, so the flips cannot be attributed to one of them")
    else:
        verdict, cause = "unexplained", None
        text = (f"{len(flipped)} of {len(resolved)} resolved pair(s) flip an outcome; no compared setting differs in "
                "every flipped pair")
    return {"verdict": verdict, "cause": cause, "candidates": candidates, "differing": differing,
            "unknown_fields": unknown, "flipped_pairs": len(flipped), "resolved_pairs": len(resolved),
            "text": text + caveat}


#: settings that apply only when another says so: image size with cameras, the endpoint's
#: fields with a served policy
_APPLIES_WHEN: dict[str, str] = {"image_size": "cameras", "policy_profile": "policy_protocol",
                                 "policy_metadata": "policy_protocol", "policy_protocol": "policy_protocol"}


def _unrecorded(pair: Pair, name: str) -> bool:
    """A side of ``pair`` does not record setting ``name`` although it applies (no image
    size is needed without cameras, no endpoint metadata without a served policy)."""
    sides = tuple(ep.identity for ep in pair.sides())
    gate = _APPLIES_WHEN.get(name)
    if gate is not None and all(not s.get(gate) for s in sides):
        return False
    return any(s.get(name) is None for s in sides)


# -- entry point -----------------------------------------------------------------------------

def diff_evaluations(a: Evaluation, b: Evaluation, *, compare: Sequence[str] | None = None, seed: int = 0,
                     resamples: int = 1000) -> dict[str, Any]:
    """Compare two evaluations episode by episode; returns the JSON-ready result (see
    docs/scoring.md, ``labrecord diff``)."""
    if not a.episodes and not b.episodes:
        raise LabrecordError(f"nothing to compare: no episodes in {a.name} or {b.name}")
    pairing = pair_episodes(a, b, compare)
    episodes = a.episodes + b.episodes
    measured = {o for e in episodes for o in e.outcomes} | {m for e in episodes for m in e.values}
    binary = {o: c for o in BINARY_OUTCOMES if o in measured and (c := binary_comparison(pairing.pairs, o)) is not None}
    continuous = {m: c for m in CONTINUOUS_METRICS if m in measured
                  and (c := continuous_comparison(pairing.pairs, m, rng_for(seed, "diff", m), resamples)) is not None}
    rows = attribution(pairing)
    return {
        "a": _side(a), "b": _side(b),
        "compared": pairing.compared, "paired_on": pairing.paired_on,
        "pairs": {"resolved": sum(1 for p in pairing.pairs if p.resolved),
                  "unresolved": sum(1 for p in pairing.pairs if not p.resolved)},
        "binary": binary, "continuous": continuous,
        "one_sided": pairing.one_sided,
        "unresolved_pairs": [{"episode": p.label(), "reason": _why(p)} for p in pairing.pairs if not p.resolved],
        "attribution": rows,
        "explanation": explain(pairing, rows),
        "episodes": [_pair_row(p) for p in pairing.pairs],
        "seed": seed, "resamples": resamples,
    }


def _side(ev: Evaluation) -> dict[str, Any]:
    return {"source": ev.name, "episodes": len(ev.episodes), "unresolved": sum(e.unresolved is not None for e in ev.episodes)}


def _why(pair: Pair) -> str:
    parts = []
    for side, ep in (("A", pair.a), ("B", pair.b)):
        if ep is None:
            parts.append(f"{side}: registered, no run")
        elif ep.unresolved is not None:
            parts.append(f"{side}: {ep.unresolved}")
    return "; ".join(parts)


def _pair_row(pair: Pair) -> dict[str, Any]:
    return {"episode": pair.label(), "a_run": pair.a.run_id if pair.a else None, "b_run": pair.b.run_id if pair.b else None,
            "resolved": pair.resolved,
            "a": dict(pair.a.outcomes) if pair.a else {}, "b": dict(pair.b.outcomes) if pair.b else {},
            "flips": flips(pair)}


def diff_sources(a: Any, b: Any, *, names: tuple[str, str] = ("A", "B"), **options: Any) -> dict[str, Any]:
    """:func:`diff_evaluations` of two loaded corpus connections (``where_a``/``where_b``
    filter each side's episodes by identity)."""
    where_a, where_b = options.pop("where_a", None), options.pop("where_b", None)
    loaded_a = load_episodes(a)
    loaded_b = loaded_a if b is a else load_episodes(b)
    return diff_evaluations(load_evaluation(a, names[0], where_a, loaded_a), load_evaluation(b, names[1], where_b, loaded_b),
                            **options)


# -- presentation --------------------------------------------------------------------------

def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.1f} %"


def _signed(x: float | None, percent: bool) -> str:
    if x is None:
        return "—"
    return f"{x * 100:+.1f} pp" if percent else f"{x:+.4g}"


def binary_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One table row per binary outcome: counts, rates, B − A with its interval (or its
    bounds while pairs are unresolved) and the McNemar p-value (or its range)."""
    rows = []
    for name, c in result["binary"].items():
        if c["difference"] is not None:
            ci = f" [{_signed(c['ci'][0], True)}, {_signed(c['ci'][1], True)}]" if c["ci"] else ""
            change = _signed(c["difference"], True) + ci
            p = f"{c['mcnemar_p']:.4g}"
        else:
            change = (f"provisional [{_signed(c['lower'], True)}, {_signed(c['upper'], True)}]"
                      if c["lower"] is not None else "unavailable")
            p = f"[{c['mcnemar_p_range'][0]:.3g}, {c['mcnemar_p_range'][1]:.3g}]" if c["mcnemar_p_range"] else "—"
        rows.append((name, c["both"], c["a_only"], c["b_only"], c["neither"], c["unresolved"], _pct(c["a_rate"]),
                     _pct(c["b_rate"]), change, p))
    return rows


def attribution_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    """One table row per compared field: values on each side, pairs differing, flips."""
    return [(r["field"], ", ".join(r["a_values"]), ", ".join(r["b_values"]), r["pairs_differing"], r["flips"],
             ", ".join(f"{k} {v}" for k, v in r["flips_by_outcome"].items()) or "—") for r in result["attribution"]]


def continuous_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows = []
    for name, c in result["continuous"].items():
        ci = f"[{c['ci'][0]:+.4g}, {c['ci'][1]:+.4g}]" if c["ci"] else "—"
        rows.append((name, c["n"], c["unresolved"], c["a_mean"], c["b_mean"],
                     _signed(c["difference"], False) if c["difference"] is not None else "unavailable", ci))
    return rows


# -- opening the two sides -------------------------------------------------------------------

@dataclass
class Side:
    """What one side of a diff was given: ``system`` (from ``SYSTEM@source``) filters its
    episodes; ``params`` re-score a runs folder under changed contract thresholds."""

    text: str
    path: str
    system: str | None = None


def parse_side(text: str) -> Side:
    """``runs/``, ``corpus.duckdb``, a snapshot folder, or ``SYSTEM@corpus.duckdb``."""
    import os

    if os.path.exists(text):
        return Side(text, text)
    system, at, path = text.partition("@")
    if at and system and os.path.exists(path):
        return Side(text, path, system)
    raise LabrecordError(f"{text}: no such runs folder, corpus file or snapshot (or SYSTEM@PATH with an existing PATH)")


def open_side(side: Side, *, audit: bool = True, params: Any = None, work_dir: Any = None) -> Any:
    """One side, opened as every command opens stored runs (:func:`labrecord.store.open_source`,
    locked): a corpus file read-only, a runs folder ingested into memory (replay-audited
    unless ``audit`` is false), a snapshot folder; with ``params`` a runs folder re-scored
    into ``work_dir`` first."""
    from pathlib import Path

    path = Path(side.path)
    if params:
        if not path.is_dir() or (path / "runs").is_dir():
            raise LabrecordError(f"{side.text}: --contract-param re-scores stored measurements, so B must be a runs folder")
        from labrecord.scorers.whatif import open_rescored

        con, _ = open_rescored(path, params, work_dir, audit=audit)
        return con
    from labrecord.store import open_source

    con, kind, _ = open_source(path)
    if kind == "runs" and audit:
        from labrecord.scorers.corpus import audit_corpus

        audit_corpus(con)
    return con


def diff_paths(a: str, b: str, *, audit: bool = True, params: Any = None, **options: Any) -> dict[str, Any]:
    """Library entry point behind ``labrecord diff A B``: open both sides (``params``
    re-scores B's runs under changed thresholds, see :mod:`labrecord.scorers.whatif`) and
    compare them."""
    import os
    import tempfile

    side_a, side_b = parse_side(a), parse_side(b)
    with tempfile.TemporaryDirectory(prefix="labrecord-whatif-") as work:
        con_a = open_side(side_a, audit=audit)
        same = not params and os.path.realpath(side_a.path) == os.path.realpath(side_b.path)
        con_b = con_a if same else open_side(side_b, audit=audit, params=params, work_dir=work)  # one corpus read once
        where_a = (lambda row: row.get("system_name") == side_a.system) if side_a.system else None
        where_b = (lambda row: row.get("system_name") == side_b.system) if side_b.system else None
        name_b = side_b.text + (f" whatif({_label(params)})" if params else "")
        return diff_sources(con_a, con_b, names=(side_a.text, name_b), where_a=where_a, where_b=where_b, **options)


def _label(params: Any) -> str:
    from labrecord.scorers.whatif import label_of

    return label_of(params)
