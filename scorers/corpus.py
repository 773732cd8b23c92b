"""Scoring a whole corpus: groups by result identity, populations, missing members, CIs.

:func:`score_corpus` is the library entry point (``labrecord score`` calls it).  The
per-unit facts come from a *source*: :class:`SqlSource` runs the SQL of each scorer
module against a DuckDB corpus (a file, an in-memory ingest, or a Parquet snapshot);
:class:`ReferenceSource` computes the same units in plain Python from the run files.
Everything after the units — grouping, denominators, missing members, bootstrap — is
shared, so the property tests compare the two sources unit for unit and metric for metric.
"""
from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.scorers import choice, completion, geometry, oracle, pairs
from labrecord.scorers.identity import (
    IDENTITY_FIELDS, INTERVENTION_FIELDS, SYSTEM_FIELDS, first_difference, identity_dict, identity_of,
    require_same_identity,
)
from labrecord.scorers.metric import estimate, ratio, rng_for
from labrecord.scorers.reference import RefCorpus, eval_valid, load_reference

RUN_COLUMNS = ("run_id", *IDENTITY_FIELDS, "population_name", "instance_id", "status", "family")
REGISTERED_TYPES = ("instance", "checkpoint", "fixed_start")


class SqlSource:
    """Units from the SQL scorers over a corpus connection."""

    def __init__(self, con: Any) -> None:
        self.con = con

    def runs(self) -> list[dict[str, Any]]:
        cols = ", ".join(f'"{c}"' for c in RUN_COLUMNS)
        return [dict(zip(RUN_COLUMNS, row)) for row in self.con.execute(f"SELECT {cols} FROM runs ORDER BY run_id").fetchall()]

    def valid_runs(self) -> set[str]:
        rows = self.con.execute(
            "SELECT run_id FROM runs WHERE status = 'complete' AND run_id NOT IN "
            "(SELECT run_id FROM events WHERE type = 'validity')").fetchall()
        return {r[0] for r in rows}

    def populations(self) -> list[dict[str, Any]]:
        cur = self.con.execute("SELECT population, type, instance_id, decision, subgoal, pair_id, members, kind, base, "
                               "supported, mode, oracle, site FROM populations ORDER BY population, line")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def checkpoint_units(self) -> list[tuple]:
        return choice.checkpoint_units(self.con)

    def reach_units(self) -> list[tuple]:
        return choice.reach_units(self.con)

    def episode_units(self) -> list[tuple]:
        return completion.episode_units(self.con)

    def fixed_units(self) -> list[tuple]:
        return completion.fixed_units(self.con)

    def member_units(self) -> list[tuple]:
        return pairs.member_units(self.con)

    def geometry_units(self) -> list[tuple]:
        return geometry.geometry_units(self.con)

    def run_outcomes(self) -> list[tuple]:
        return oracle.run_outcomes(self.con)


class ReferenceSource:
    """The same units computed in Python from the run files (for property tests)."""

    def __init__(self, corpus: RefCorpus) -> None:
        self.corpus = corpus

    def runs(self) -> list[dict[str, Any]]:
        return sorted(({c: r.row.get(c) for c in RUN_COLUMNS} for r in self.corpus.runs), key=lambda r: r["run_id"])

    def valid_runs(self) -> set[str]:
        return {r.run_id for r in self.corpus.runs if eval_valid(r)}

    def populations(self) -> list[dict[str, Any]]:
        keys = ("population", "type", "instance_id", "decision", "subgoal", "pair_id", "members", "kind", "base",
                "supported", "mode", "oracle", "site")
        return [{k: r.get(k) for k in keys} for r in self.corpus.populations]

    def checkpoint_units(self) -> list[tuple]:
        return choice.checkpoint_units_reference(self.corpus)

    def reach_units(self) -> list[tuple]:
        return choice.reach_units_reference(self.corpus)

    def episode_units(self) -> list[tuple]:
        return completion.episode_units_reference(self.corpus)

    def fixed_units(self) -> list[tuple]:
        return completion.fixed_units_reference(self.corpus)

    def member_units(self) -> list[tuple]:
        return pairs.member_units_reference(self.corpus)

    def geometry_units(self) -> list[tuple]:
        return geometry.geometry_units_reference(self.corpus)

    def run_outcomes(self) -> list[tuple]:
        return oracle.run_outcomes_reference(self.corpus)


@dataclass
class Group:
    identity: tuple[Any, ...]
    runs: list[dict[str, Any]]
    metrics: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.run_ids: set[str] = {r["run_id"] for r in self.runs}

    def field(self, name: str) -> Any:
        return identity_dict(self.identity).get(name)


@dataclass
class _Registry:
    """Population records indexed for the aggregator."""

    records: list[dict[str, Any]]

    def of(self, population: str, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["population"] == population and r["type"] == kind]

    def instances(self, population: str) -> set[str]:
        return {r["instance_id"] for r in self.records if r["population"] == population and r["type"] in REGISTERED_TYPES}


class _Scorer:
    def __init__(self, source: Any, seed: int, resamples: int, decisions: Sequence[str] | None) -> None:
        self.source, self.seed, self.resamples = source, seed, resamples
        self.decisions = list(decisions) if decisions else None
        self.all_runs = source.runs()
        self.by_id = {r["run_id"]: r for r in self.all_runs}
        self.valid = source.valid_runs()
        self.registry = _Registry(source.populations())
        self.outcomes = {row[0]: dict(zip(("completion", "correct", "e_p"), row[1:])) for row in source.run_outcomes()}

    # -- helpers ------------------------------------------------------------------------
    def metric(self, group: Group, name: str, clusters: Sequence[Any], num: Sequence[float], den: Sequence[float]) -> None:
        rng = rng_for(self.seed, repr(group.identity), name) if self.resamples > 0 else None
        group.metrics[name] = estimate(clusters, num, den, rng=rng, resamples=self.resamples)

    def populations_of(self, group: Group) -> list[str]:
        return sorted({r["population_name"] for r in group.runs if r["population_name"]})

    def expected(self, group: Group, population: str) -> set[str]:
        """Instances this group should have run: with registered Oracle pairs, base groups
        expect every instance but the supported ones, supported groups only their own."""
        instances = self.registry.instances(population)
        oracle_pairs = self.registry.of(population, "oracle_pair")
        if not oracle_pairs:
            return instances
        supported = {p["supported"] for p in oracle_pairs}
        if group.field("intervention_mode") == "none":
            return instances - supported
        return {p["supported"] for p in oracle_pairs if self._pair_in_group(p, group)}

    @staticmethod
    def _pair_in_group(pair: dict[str, Any], group: Group) -> bool:
        return (pair["mode"] == group.field("intervention_mode") and pair["oracle"] == group.field("oracle")
                and (pair["site"] is None or pair["site"] == group.field("intervention_site")))

    def missing(self, group: Group) -> list[tuple[str, str]]:
        have = {(r["population_name"], r["instance_id"]) for r in group.runs}
        return sorted((p, i) for p in self.populations_of(group) for i in self.expected(group, p) if (p, i) not in have)

    # -- metric families ---------------------------------------------------------------
    def score_group(self, group: Group, units: dict[str, list[tuple]]) -> None:
        missing = self.missing(group)
        ids = group.run_ids
        invalid = sorted(ids - self.valid)
        group.coverage = {"runs": len(ids), "valid_runs": len(ids) - len(invalid), "invalid_runs": invalid,
                          "missing": [{"population": p, "instance_id": i} for p, i in missing]}
        self.checkpoints(group, units["checkpoint"], missing)
        self.reach(group, units["reach"], missing)
        self.completion(group, units["episode"], missing)
        self.fixed(group, units["fixed"], missing)
        self.pairs(group, units["member"])
        self.geometry(group, units["geometry"])
        self.gains(group)

    def _ok(self, run_id: str, flag: Any) -> float:
        return float(bool(flag) and run_id in self.valid)

    def checkpoints(self, group: Group, units: list[tuple], missing: list[tuple[str, str]]) -> None:
        rows = [u for u in units if u[0] in group.run_ids]
        missing_set = set(missing)
        rows += [(f"missing:{c['population']}/{c['instance_id']}", c["population"], c["instance_id"], c["decision"], False, False)
                 for p in self.populations_of(group) for c in self.registry.of(p, "checkpoint")
                 if (p, c["instance_id"]) in missing_set]
        if not rows:
            return
        clusters = [u[0] for u in rows]
        identified = [self._ok(u[0], u[4]) for u in rows]
        correct = [self._ok(u[0], u[5]) for u in rows]
        self.metric(group, "B_next", clusters, correct, [1.0] * len(rows))
        self.metric(group, "C_id", clusters, identified, [1.0] * len(rows))
        self.metric(group, "accuracy_identified", clusters, correct, identified)
        group.coverage["checkpoints"] = len(rows)
        group.coverage["identified_checkpoints"] = int(sum(identified))

    def reach(self, group: Group, units: list[tuple], missing: list[tuple[str, str]]) -> None:
        rows = [u for u in units if u[0] in group.run_ids]
        decisions = self.decisions or sorted({u[1] for u in rows if u[2]})
        for decision in decisions:
            mine = [u for u in rows if u[1] == decision]
            mine += [(f"missing:{p}/{i}", decision, False, False, False) for p, i in missing]
            clusters = [u[0] for u in mine]
            reached = [self._ok(u[0], u[2]) for u in mine]
            identified = [self._ok(u[0], u[3]) for u in mine]
            correct = [self._ok(u[0], u[4]) for u in mine]
            self.metric(group, f"reach.{decision}", clusters, reached, [1.0] * len(mine))
            self.metric(group, f"correct_given_reach.{decision}", clusters, correct, reached)
            self.metric(group, f"correct.{decision}", clusters, correct, [1.0] * len(mine))
            self.metric(group, f"identified_given_reach.{decision}", clusters, identified, reached)

    def completion(self, group: Group, units: list[tuple], missing: list[tuple[str, str]]) -> None:
        rows = [u for u in units if u[0] in group.run_ids]
        rows += [(f"missing:{p}/{i}", None, False, False, False, False) for p, i in missing]
        if not rows:
            return
        clusters = [u[0] for u in rows]
        for index, name in enumerate(("physical", "valid", "clean", "recovered"), start=2):
            self.metric(group, f"completion.{name}", clusters, [self._ok(u[0], u[index]) for u in rows], [1.0] * len(rows))
        group.coverage["episodes"] = len(rows)

    def fixed(self, group: Group, units: list[tuple], missing: list[tuple[str, str]]) -> None:
        rows = [u for u in units if u[0] in group.run_ids]
        missing_set = set(missing)
        rows += [(f"missing:{f['population']}/{f['instance_id']}", f["population"], f["instance_id"], f["subgoal"], False)
                 for p in self.populations_of(group) for f in self.registry.of(p, "fixed_start")
                 if (p, f["instance_id"]) in missing_set]
        if rows:
            self.metric(group, "E_fixed", [u[0] for u in rows], [self._ok(u[0], u[4]) for u in rows], [1.0] * len(rows))

    def pairs(self, group: Group, units: list[tuple]) -> None:
        outcome: dict[tuple[str, str], tuple[str, bool]] = {}
        for run_id, population, instance, correct in sorted(u for u in units if u[0] in group.run_ids):
            outcome.setdefault((population, instance), (run_id, correct))  # lowest run_id represents the member
        for kind, name in (("answer_changing", "P_state"), ("geometric", "P_geom")):
            planned = [p for pop in self.populations_of(group) for p in self.registry.of(pop, "pair") if p["kind"] == kind]
            if not planned:
                continue
            resolved, correct = [], []
            for pair in planned:
                members = [outcome.get((pair["population"], m)) for m in pair["members"]]
                ok = all(m is not None and m[0] in self.valid for m in members)
                resolved.append(ok)
                correct.append(ok and all(m[1] for m in members))  # type: ignore[index]
            s, u, n = sum(correct), resolved.count(False), len(planned)
            if u == 0:
                self.metric(group, name, [p["pair_id"] for p in planned], [float(c) for c in correct], [1.0] * n)
            else:
                # not reportable until every pair resolves: value null, bounds s/N and (s+u)/N
                group.metrics[name] = msgspec.structs.replace(ratio(s, n, n=n), value=None)
                group.metrics[f"{name}.lower"] = ratio(s, n, n=n)
                group.metrics[f"{name}.upper"] = ratio(s + u, n, n=n)
            group.coverage[f"{name}_unresolved_pairs"] = u

    def geometry(self, group: Group, units: list[tuple]) -> None:
        rows = [u for u in units if u[0] in group.run_ids]
        if not rows:
            return
        p_valid = [u for u in rows if u[3]]
        self.metric(group, "geometry.p_valid", [u[0] for u in rows], [float(u[3]) for u in rows], [1.0] * len(rows))
        self.metric(group, "e_p", [u[0] for u in p_valid], [u[4] for u in p_valid], [1.0] * len(p_valid))
        scored = [u for u in rows if u[5]]
        if scored:
            v_valid = [u for u in scored if u[6]]
            self.metric(group, "geometry.v_valid", [u[0] for u in scored], [float(u[6]) for u in scored], [1.0] * len(scored))
            self.metric(group, "e_v", [u[0] for u in v_valid], [u[7] for u in v_valid], [1.0] * len(v_valid))

    # -- Oracle pairs ------------------------------------------------------------------
    def branch_run(self, population: str, instance: str, like: Group, mode: str | None, oracle_name: str | None) -> str | None:
        """The valid run of ``instance`` whose identity equals ``like`` except for the
        intervention fields (set to ``mode``/``oracle_name``); refuse a same-system run that
        differs in another identity field."""
        target = identity_dict(like.identity)
        candidates = [r for r in self.all_runs if r["population_name"] == population and r["instance_id"] == instance]
        fields = [f for f in IDENTITY_FIELDS if f not in INTERVENTION_FIELDS]
        matched = []
        for run in candidates:
            if run["intervention_mode"] != mode or run["oracle"] != oracle_name:
                continue
            differing = first_difference(target, run, fields)
            if differing is None:
                matched.append(run["run_id"])
            elif first_difference(target, run, SYSTEM_FIELDS) is None:
                raise LabrecordError(
                    f"cannot pair run {run['run_id']!r} with group of {like.runs[0]['run_id']!r} across different result "
                    f"identities: {differing} differs ({run[differing]!r} vs {target[differing]!r})")
        valid = sorted(m for m in matched if m in self.valid)
        return valid[0] if valid else None

    def gains(self, group: Group) -> None:
        if group.field("intervention_mode") in (None, "none"):
            return
        for population in self.populations_of(group):
            planned = [p for p in self.registry.of(population, "oracle_pair") if self._pair_in_group(p, group)]
            if not planned:
                continue
            matched = []
            for pair in planned:
                supported = self.branch_run(population, pair["supported"], group, group.field("intervention_mode"), group.field("oracle"))
                base = self.branch_run(population, pair["base"], group, "none", None)
                matched.append((pair, base, supported))
            for outcome in oracle.OUTCOMES:
                self._gain(group, outcome, matched)
            self._interactions(group, population, planned)

    def _gain(self, group: Group, outcome: str, matched: list[tuple[dict[str, Any], str | None, str | None]]) -> None:
        diffs = []
        for pair, base, supported in matched:
            d = None if base is None or supported is None else oracle.paired_gain(outcome, self.outcomes[base], self.outcomes[supported])
            diffs.append((pair["pair_id"], d))
        resolved = [(p, d) for p, d in diffs if d is not None]
        unresolved, planned = len(diffs) - len(resolved), len(diffs)
        name = f"gain.{outcome}"
        if unresolved == 0:
            self.metric(group, name, [p for p, _ in resolved], [d for _, d in resolved], [1.0] * planned)
        else:
            total = sum(d for _, d in resolved)
            group.metrics[name] = msgspec.structs.replace(ratio(total, len(resolved), n=len(resolved)), value=None)
            bounds = oracle.gain_bounds(total, unresolved, planned) if outcome in oracle.BOUNDED else None
            if bounds:
                group.metrics[f"{name}.lower"] = ratio(total - unresolved, planned, n=planned)
                group.metrics[f"{name}.upper"] = ratio(total + unresolved, planned, n=planned)
        group.coverage["oracle_pairs"] = planned
        group.coverage[f"{name}_unresolved_pairs"] = unresolved

    def _interactions(self, group: Group, population: str, joint_pairs: list[dict[str, Any]]) -> None:
        parts = (group.field("oracle") or "").split("+")
        if len(parts) != 2:
            return
        singles = {(p["base"], p["oracle"]): p for p in self.registry.of(population, "oracle_pair")}
        mode = group.field("intervention_mode")
        for outcome in oracle.OUTCOMES:
            clusters, values = [], []
            for pair in joint_pairs:
                one, two = singles.get((pair["base"], parts[0])), singles.get((pair["base"], parts[1]))
                if one is None or two is None:
                    continue
                runs = [self.branch_run(population, pair["base"], group, "none", None),
                        self.branch_run(population, one["supported"], group, one["mode"], parts[0]),
                        self.branch_run(population, two["supported"], group, two["mode"], parts[1]),
                        self.branch_run(population, pair["supported"], group, mode, group.field("oracle"))]
                if any(r is None for r in runs):
                    continue
                y0, y1, y2, y12 = (self.outcomes[r] for r in runs)  # type: ignore[index]
                value = oracle.interaction(outcome, y0, y1, y2, y12)
                if value is not None:
                    clusters.append(pair["base"])
                    values.append(value)
            if clusters:
                self.metric(group, f"interaction.{outcome}", clusters, values, [1.0] * len(values))


def _units(source: Any) -> dict[str, list[tuple]]:
    return {"checkpoint": source.checkpoint_units(), "reach": source.reach_units(), "episode": source.episode_units(),
            "fixed": source.fixed_units(), "member": source.member_units(), "geometry": source.geometry_units()}


def form_groups(runs: Iterable[dict[str, Any]], one_group: bool = False) -> list[Group]:
    """Split runs by result identity (sorted); ``one_group`` pools them and refuses
    when identities differ."""
    runs = list(runs)
    if one_group:
        common = require_same_identity(runs, what="score the runs as one group")
        return [Group(identity_of(common), runs)]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        groups[identity_of(run)].append(run)
    return [Group(k, v) for k, v in sorted(groups.items(), key=lambda kv: tuple("" if x is None else str(x) for x in kv[0]))]


def score_source(source: Any, *, seed: int = 0, resamples: int = 1000, decisions: Sequence[str] | None = None,
                 one_group: bool = False, where: Any = None) -> dict[str, Any]:
    """Score every group of ``source``; returns ``{"groups": [{identity, metrics, coverage}]}``.

    ``where`` optionally filters runs: a callable taking a run row dict.
    """
    scorer = _Scorer(source, seed, resamples, decisions)
    runs = [r for r in scorer.all_runs if where is None or where(r)]
    units = _units(source)
    result = []
    for group in form_groups(runs, one_group):
        scorer.score_group(group, units)
        result.append({"identity": identity_dict(group.identity), "metrics": {k: _metric_json(v) for k, v in group.metrics.items()},
                       "coverage": group.coverage})
    return {"groups": result}


def _metric_json(value: Any) -> dict[str, Any]:
    data = msgspec.to_builtins(value)
    data.setdefault("ci", None)
    return {"value": data["value"], "num": data["num"], "den": data["den"], "n": data.get("n"), "ci": data["ci"]}


def score_corpus(con_or_path: Any, seed: int = 0, resamples: int = 1000, **options: Any) -> dict[str, Any]:
    """Library entry point: score a DuckDB connection, a corpus file, a runs folder or a
    Parquet snapshot folder (``parquet=True``).  ``options``: ``decisions``, ``one_group``,
    ``where``, ``parquet``."""
    con = con_or_path
    if not hasattr(con_or_path, "execute"):
        from labrecord.store import open_source

        con, _, _ = open_source(con_or_path, parquet=options.pop("parquet", False))
    options.pop("parquet", None)
    return score_source(SqlSource(con), seed=seed, resamples=resamples, **options)


def score_reference(runs_dir: str | os.PathLike[str], seed: int = 0, resamples: int = 1000, **options: Any) -> dict[str, Any]:
    """The same result computed by the pure-Python reference units (for tests)."""
    return score_source(ReferenceSource(load_reference(runs_dir)), seed=seed, resamples=resamples, **options)
