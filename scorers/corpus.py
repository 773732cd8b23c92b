"""Scoring a whole corpus: groups by result identity, registered members, the one rule, intervals.

:func:`score_corpus` is the library entry point (``labrecord score`` calls it).  The
per-run facts come from a *source*: :class:`SqlSource` runs the SQL of each unit kind of
:data:`~labrecord.scorers.metrics.UNIT_KINDS` against a DuckDB corpus (a file, an
in-memory ingest, or a Parquet snapshot); :class:`ReferenceSource` computes the same
units in plain Python from the run files.  Everything after the units — grouping,
registered members, the unresolved rule, intervals — is shared, so the property tests
compare the two sources unit for unit and metric for metric.

Members (Labference sec. 7.4).  Each population metric counts *registered members*:
checkpoints, fixed starts, pairs, Oracle pairs and matched sets from ``populations/``; runs
and their episodes otherwise — and without a registry every run folder found is a member,
valid or not.  A member is *unresolved* when its run is missing, failed validation or run
identity (an ``invalid_runs`` row), failed the replay audit, is not ``complete``, or
carries an evaluator-side ``validity`` fault; :func:`~labrecord.scorers.metrics.measure`
then withholds the value and gives bounds.
"""
from __future__ import annotations

import functools
import os
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError
from labrecord.scorers import choice, oracle
from labrecord.scorers.identity import (
    IDENTITY_FIELDS, INTERVENTION_FIELDS, SYSTEM_FIELDS, first_difference, identity_dict, identity_of,
    require_same_identity,
)
from labrecord.scorers.metric import SharedBootstrap, rng_for, wilson
from labrecord.scorers.choice import ReachUnit
from labrecord.scorers.completion import FixedUnit
from labrecord.scorers.metrics import (
    BOOTSTRAP, UNIT_KINDS, WILSON, Estimate, Members, Unit, average_within_members, checkpoint_metrics, completion_metrics, contrast_unit,
    fixed_metrics, geometry_metrics, measure, pair_metric, reach_metrics, support_metrics,
)
from labrecord.scorers.pairs import MemberUnit
from labrecord.scorers.audit import FAULT_END_REASONS
from labrecord.scorers.reference import RefCorpus, episode_reasons, load_reference, unresolved_as_a_whole, unresolved_reason

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

RUN_COLUMNS = ("run_id", *IDENTITY_FIELDS, "population_name", "instance_id", "status", "family")
REGISTERED_TYPES = ("instance", "checkpoint", "fixed_start")
#: how repeated runs of one registered member are treated: refused, or averaged within the member
REPEATS = ("refuse", "mean")
POPULATION_KEYS = ("population", "type", "instance_id", "task_id", "decision", "subgoal", "pair_id", "members", "kind", "base",
                   "supported", "mode", "oracle", "site")

#: why each recorded episode is unresolved (null: an evaluated outcome) — the SQL twin of
#: :func:`~labrecord.scorers.reference.episode_reasons`
EPISODE_REASONS_SQL = f"""
SELECT s.run_id, s.episode,
       CASE WHEN v.seq IS NOT NULL THEN v.kind || ' from ' || v.source || ' at seq ' || v.seq
            WHEN e.seq IS NULL THEN 'episode ' || s.episode || ' has no episode_end (interrupted or cut log)'
            WHEN e.reason IN ({", ".join(f"'{r}'" for r in sorted(FAULT_END_REASONS))}) THEN 'episode ' || s.episode || ' ended on ' || e.reason
       END AS reason
FROM events s
LEFT JOIN (SELECT run_id, episode, min(seq) AS seq FROM events WHERE type = 'episode_end' GROUP BY run_id, episode) x
       ON x.run_id = s.run_id AND x.episode = s.episode
LEFT JOIN events e ON e.run_id = x.run_id AND e.seq = x.seq
LEFT JOIN (SELECT run_id, episode, arg_min(kind, seq) AS kind, arg_min(source, seq) AS source, min(seq) AS seq
           FROM events WHERE type = 'validity' AND episode IS NOT NULL GROUP BY run_id, episode) v
       ON v.run_id = s.run_id AND v.episode = s.episode
WHERE s.type = 'episode_start'
"""

#: why a loaded run is not wholly an evaluated outcome: a failed audit, a validity fault
#: outside any episode, its first unresolved episode, or (no episode recorded) its status
UNRESOLVED_SQL = f"""
WITH ep AS ({EPISODE_REASONS_SQL}),
first_open AS (SELECT run_id, arg_min(reason, episode) AS reason FROM ep WHERE reason IS NOT NULL GROUP BY run_id),
counted AS (SELECT run_id, count(*) AS episodes FROM ep GROUP BY run_id),
loose AS (SELECT run_id, arg_min(kind, seq) AS kind, arg_min(source, seq) AS source, min(seq) AS seq
          FROM events WHERE type = 'validity' AND episode IS NULL GROUP BY run_id)
SELECT r.run_id,
       CASE WHEN a.ok = false THEN 'replay audit: ' || a.reason
            ELSE CASE WHEN r.status <> 'complete' THEN 'status ' || r.status ELSE '' END
                 || CASE WHEN r.status <> 'complete' AND (l.seq IS NOT NULL OR f.reason IS NOT NULL) THEN ': ' ELSE '' END
                 || coalesce(l.kind || ' from ' || l.source || ' at seq ' || l.seq, f.reason, '') END AS reason,
       (a.ok = false OR l.seq IS NOT NULL OR f.reason IS NOT NULL
        OR (r.status <> 'complete' AND coalesce(c.episodes, 0) = 0)) AS unresolved,
       (a.ok = false OR l.seq IS NOT NULL OR (r.status <> 'complete' AND coalesce(c.episodes, 0) = 0)) AS whole
FROM runs r
LEFT JOIN loose l USING (run_id)
LEFT JOIN first_open f USING (run_id)
LEFT JOIN counted c USING (run_id)
LEFT JOIN {{audits}} a ON a.run_id = r.run_id AND a.content_hash = r.content_hash
"""
UNVERIFIED_SQL = """
SELECT run_id FROM (SELECT run_id, unnest(from_json(json_extract(manifest, '$.evaluation.checkpoints'),
                                                  '[{"verified": "BOOLEAN"}]')) AS c FROM runs)
WHERE c.verified = false GROUP BY run_id
"""
AUDITED_SQL = "SELECT a.run_id FROM {audits} a JOIN runs r ON a.run_id = r.run_id AND a.content_hash = r.content_hash WHERE a.ok AND coalesce(a.audited, true)"
_EMPTY_AUDITS = ("(SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS content_hash, NULL::BOOLEAN AS ok, NULL::VARCHAR AS reason, "
                 "NULL::BOOLEAN AS audited WHERE false)")


class SqlSource:
    """Units from the SQL of the registry over a corpus connection."""

    def __init__(self, con: DuckDBPyConnection) -> None:
        self.con = con
        self.tables = {row[0] for row in con.execute(
            "SELECT table_name FROM duckdb_tables() UNION ALL SELECT view_name FROM duckdb_views()").fetchall()}

    def runs(self) -> list[dict[str, Any]]:
        cols = ", ".join(f'"{c}"' for c in RUN_COLUMNS)
        return [dict(zip(RUN_COLUMNS, row)) for row in self.con.execute(f"SELECT {cols} FROM runs ORDER BY run_id").fetchall()]

    def _audits(self) -> str:
        return "audits" if "audits" in self.tables else _EMPTY_AUDITS

    def unresolved(self) -> dict[str, str]:
        rows = self.con.execute(UNRESOLVED_SQL.format(audits=self._audits())).fetchall()
        return {run_id: reason for run_id, reason, unresolved, _ in rows if unresolved}

    def whole_run(self) -> set[str]:
        """Runs unresolved as a whole (failed audit, a fault outside any episode, no episode
        recorded), not episode by episode."""
        rows = self.con.execute(UNRESOLVED_SQL.format(audits=self._audits())).fetchall()
        return {run_id for run_id, _, _, whole in rows if whole}

    def episode_reasons(self) -> dict[tuple[str, int], str | None]:
        return {(run_id, episode): reason for run_id, episode, reason in self.con.execute(EPISODE_REASONS_SQL).fetchall()}

    def audited(self) -> set[str]:
        return {row[0] for row in self.con.execute(AUDITED_SQL.format(audits=self._audits())).fetchall()}

    def unverified(self) -> set[str]:
        """Runs whose manifest records a checkpoint handoff that was not verified."""
        return {row[0] for row in self.con.execute(UNVERIFIED_SQL).fetchall()}

    def invalid_runs(self) -> list[dict[str, Any]]:
        if "invalid_runs" not in self.tables:
            return []
        cur = self.con.execute("SELECT * EXCLUDE (ingested_at, content_hash) FROM invalid_runs ORDER BY run_dir")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def populations(self) -> list[dict[str, Any]]:
        cur = self.con.execute(f"SELECT {', '.join(POPULATION_KEYS)} FROM populations ORDER BY population, line")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def units(self, kind: str) -> list[Any]:
        # a read-only corpus or snapshot of an older release reads the columns added since
        # as nulls (labrecord.store.connect / open_snapshot), so every unit's SQL runs as is
        return UNIT_KINDS[kind].from_sql(self.con)


class ReferenceSource:
    """The same units computed in Python from the run files (for property tests)."""

    def __init__(self, corpus: RefCorpus) -> None:
        self.corpus = corpus

    def runs(self) -> list[dict[str, Any]]:
        return sorted(({c: r.row.get(c) for c in RUN_COLUMNS} for r in self.corpus.runs), key=lambda r: r["run_id"])

    def unresolved(self) -> dict[str, str]:
        reasons = {r.run_id: unresolved_reason(r) for r in self.corpus.runs}
        return {k: v for k, v in reasons.items() if v is not None}

    def episode_reasons(self) -> dict[tuple[str, int], str | None]:
        return {(r.run_id, episode): reason for r in self.corpus.runs for episode, reason in episode_reasons(r).items()}

    def audited(self) -> set[str]:
        return set()  # the reference reads the files; it replays nothing

    def unverified(self) -> set[str]:
        return {r.run_id for r in self.corpus.runs if any(not c.verified for c in r.manifest.evaluation.checkpoints)}

    def whole_run(self) -> set[str]:
        return {r.run_id for r in self.corpus.runs if unresolved_as_a_whole(r)}

    def invalid_runs(self) -> list[dict[str, Any]]:
        return sorted(({k: v for k, v in r.items() if k not in ("ingested_at", "content_hash")} for r in self.corpus.invalid),
                      key=lambda r: r["run_dir"])

    def populations(self) -> list[dict[str, Any]]:
        return [{k: r.get(k) for k in POPULATION_KEYS} for r in self.corpus.populations]

    def units(self, kind: str) -> list[Any]:
        return UNIT_KINDS[kind].reference(self.corpus)


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

    def instances(self, population: str, task_id: str | None = None) -> set[str]:
        """The registered members of ``population``; with ``task_id``, those of that task.

        A member belongs to a task when its ``instance`` record names it.  In a population
        that registers members for ``task_id``, a member registered for another task is not
        one of ``task_id``'s (a two-task vla-eval run expects each task's episodes in that
        task's group only); a member with no task named, or a population that names none
        for ``task_id``, belongs to every task, as before.
        """
        members = {r["instance_id"] for r in self.records if r["population"] == population and r["type"] in REGISTERED_TYPES}
        if task_id is None:
            return members
        tasks = {r["instance_id"]: r.get("task_id") for r in self.of(population, "instance")}
        if task_id not in tasks.values():
            return members
        return {m for m in members if tasks.get(m) in (None, task_id)}


class CorpusScorer:
    """Forms each group's registered members from the source's units and measures every metric."""

    def __init__(self, source: Any, seed: int, resamples: int, decisions: Sequence[str] | None,
                 repeats: str = "refuse") -> None:
        if repeats not in REPEATS:
            raise LabrecordError(f"repeats {repeats!r}: expected one of {', '.join(REPEATS)}")
        self.source, self.seed, self.resamples, self.repeats = source, seed, resamples, repeats
        self.decisions = list(decisions) if decisions else None
        self.reasons = source.unresolved()
        self.whole = source.whole_run()
        self.episode_reasons = source.episode_reasons()
        self.audited = source.audited()
        self.unverified = source.unverified()
        self.invalid = source.invalid_runs()
        loaded = [{**r, "reason": self.reasons.get(r["run_id"]), "invalid": False} for r in source.runs()]
        placed = [{**{c: r.get(c) for c in RUN_COLUMNS}, "reason": r["reason"], "invalid": True}
                  for r in self.invalid if r["identity_readable"]]
        self.all_runs = sorted(loaded + placed, key=lambda r: (r["run_id"] or "", r["invalid"]))
        self.registry = _Registry(source.populations())
        self.units = {kind: source.units(kind) for kind in ("checkpoint", "reach", "episode", "fixed", "member", "geometry")}
        self.supports: dict[str, list[Any]] = defaultdict(list)
        for unit in source.units("support"):
            self.supports[unit.run_id].append(unit)

    @functools.cached_property
    def outcomes(self) -> dict[str, dict[str, Any]]:
        """Each run's outcomes for the Oracle pairs and matched sets (completion, first
        checkpoint choice, position error), read when a group is an Oracle study."""
        return {u.run_id: u._asdict() for u in self.source.units("outcome")}

    def unassigned(self) -> list[dict[str, Any]]:
        """Invalid run folders whose run.json could not be read: in no group."""
        return [{"run_dir": r["run_dir"], "run_id": r["run_id"], "reason": r["reason"]}
                for r in self.invalid if not r["identity_readable"]]

    # -- helpers ------------------------------------------------------------------------
    @staticmethod
    def resolved(run: dict[str, Any]) -> bool:
        return run["reason"] is None

    def populations_of(self, group: Group) -> list[str]:
        return sorted({r["population_name"] for r in group.runs if r["population_name"]})

    def expected(self, group: Group, population: str) -> set[str]:
        """Instances this group should have run: with registered Oracle pairs, base groups
        expect every instance but the supported ones, supported groups only their own."""
        instances = self.registry.instances(population, group.field("task_id"))
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

    def runs_of(self, group: Group, population: str, instance: str) -> list[dict[str, Any]]:
        return [r for r in group.runs if (r["population_name"], r["instance_id"]) == (population, instance)]

    # -- members of each metric family -----------------------------------------------------
    def members(self, group: Group) -> dict[str, Members]:
        missing = self.missing(group)
        metrics: dict[str, Members] = {}
        metrics.update(self.checkpoints(group, missing))
        metrics.update(self.reach(group, missing))
        metrics.update(self.completion(group, missing))
        metrics.update(self.fixed(group, missing))
        metrics.update(self.pairs(group))
        metrics.update(self.geometry(group))
        metrics.update(self.gains(group))
        return metrics

    def _registered(self, group: Group, missing: list[tuple[str, str]], kind: str, units: list[Any], key: str,
                    absent: Any) -> list[tuple[str, Any]]:
        """``(cluster, unit or None)`` per run at each registered ``kind`` record of the
        group's populations; None marks an unresolved member (its run unresolved or missing).
        A resolved run without a unit row gets ``absent(run_id, population, instance, key)``."""
        index = {(u.run_id, u.population, u.instance_id, getattr(u, key)): u for u in units}
        missing_set = set(missing)
        out: list[tuple[str, Any]] = []
        for population in self.populations_of(group):
            for record in self.registry.of(population, kind):
                instance = record["instance_id"]
                for run in self.runs_of(group, population, instance):
                    cluster = self.member_cluster(run, population, instance)
                    if not self.resolved(run):
                        out.append((cluster, None))
                        continue
                    unit = index.get((run["run_id"], population, instance, record[key]))
                    out.append((cluster, unit or absent(run["run_id"], population, instance, record[key])))
                if (population, instance) in missing_set:
                    out.append((f"missing:{population}/{instance}", None))
        return out

    @staticmethod
    def cluster(run: dict[str, Any]) -> str:
        """The cluster name of a run: its id when resolved, else marked as unresolved."""
        return run["run_id"] if run["reason"] is None else f"run:{run['run_id'] or run.get('run_dir')}"

    def member_cluster(self, run: dict[str, Any], population: str | None, instance: str | None) -> str:
        """The resampling cluster of a run at a registered member: the run, or under
        ``repeats="mean"`` the member itself (its runs are averaged first)."""
        if self.repeats == "mean" and population is not None and instance is not None:
            return f"member:{population}/{instance}"
        return self.cluster(run)

    def refuse_repeats(self, group: Group) -> None:
        """One rule for repeats: two runs of one registered member are refused (naming both)
        unless ``repeats="mean"``."""
        if self.repeats == "mean":
            return
        seen: dict[tuple[str, str], str] = {}
        for run in sorted(group.runs, key=lambda r: (r["run_id"] or r.get("run_dir") or "")):
            key = (run["population_name"], run["instance_id"])
            if key[0] is None or key[1] is None:
                continue
            name = str(run["run_id"] or run.get("run_dir"))
            if key in seen:
                raise LabrecordError(f"runs {seen[key]!r} and {name!r} both ran member {key[1]!r} of population "
                                     f"{key[0]!r}: remove one, or give --repeats mean to average repeated runs per member")
            seen[key] = name

    def episode_open(self, run: dict[str, Any], episode: int | None) -> str | None:
        """Why ``episode`` of a loaded ``run`` is not an evaluated outcome, or None.  A run
        unresolved as a whole (invalid, failed audit, a fault outside episodes) leaves every
        episode open; otherwise each episode stands on its own (sec. 7.4, per episode)."""
        if run["invalid"] or run["run_id"] in self.whole:
            return run["reason"] or "unresolved run"
        if episode is None:
            return run["reason"]
        return self.episode_reasons.get((run["run_id"], episode))

    def checkpoints(self, group: Group, missing: list[tuple[str, str]]) -> dict[str, Members]:
        """J (sec. 7.1): each registered checkpoint member is scored, unresolved (its run or
        episode unresolved, missing, unverified, not delivered, not delivered in time) or —
        Wait/Stop only — outside J; ``coverage.J`` counts each."""
        index = {(u.run_id, u.population, u.instance_id, u.decision): u for u in self.units["checkpoint"]}
        counts: dict[str, int] = defaultdict(int)
        rows: list[tuple[str, Any]] = []
        missing_set = set(missing)
        for population in self.populations_of(group):
            for record in self.registry.of(population, "checkpoint"):
                instance = record["instance_id"]
                for run in self.runs_of(group, population, instance):
                    unit = None if run["invalid"] else index.get((run["run_id"], population, instance, record["decision"]))
                    status = self._checkpoint_status(run, unit)
                    counts[status] += 1
                    if status == choice.NO_PHYSICAL_CHOICE:
                        continue
                    rows.append((self.member_cluster(run, population, instance), unit if status == choice.IN_J else None))
                if (population, instance) in missing_set:
                    counts["missing"] += 1
                    rows.append((f"missing:{population}/{instance}", None))
        if not rows and not counts:
            return {}
        group.coverage["checkpoints"] = len(rows)
        group.coverage["identified_checkpoints"] = sum(1 for _, u in rows if u is not None and u.identified)
        group.coverage["J"] = {"registered": sum(counts.values()), **dict(sorted(counts.items()))}
        return checkpoint_metrics(rows) if rows else {}

    def _checkpoint_status(self, run: dict[str, Any], unit: Any) -> str:
        """``scored`` or why the member is not in J's resolved part (see :mod:`~labrecord.scorers.choice`)."""
        if unit is not None and unit.status == choice.UNVERIFIED:
            return choice.UNVERIFIED
        if unit is None or unit.status == choice.NOT_DELIVERED:
            # never opened: undelivered — unless the run was cut or faulted before it could open
            return "unresolved_run" if run["reason"] is not None else choice.NOT_DELIVERED
        if self.episode_open(run, unit.episode) is not None:
            return "unresolved_run"
        return unit.status

    def registered_decisions(self, group: Group) -> list[str]:
        """The decisions of the group's registered checkpoints (sec. 7.1: "a registered later decision")."""
        return sorted({r["decision"] for p in self.populations_of(group) for r in self.registry.of(p, "checkpoint")})

    def reach(self, group: Group, missing: list[tuple[str, str]]) -> dict[str, Members]:
        """The reach triple of every registered decision (kept, with bounds, when its runs are
        unresolved), of every ``--decision`` and of every decision reached in the group."""
        resolved = {r["run_id"] for r in group.runs if self.resolved(r)}
        rows = {(u.run_id, u.decision): u for u in self.units["reach"] if u.run_id in resolved}
        decisions = self.decisions or sorted({d for (_, d), u in rows.items() if u.reached}
                                             | set(self.registered_decisions(group)))
        clusters = [self.cluster(r) for r in group.runs] + [f"missing:{p}/{i}" for p, i in missing]
        metrics: dict[str, Members] = {}
        for decision in decisions:
            absent = lambda run_id, decision=decision: ReachUnit(run_id, decision, False, False, False)  # noqa: E731
            members = [(c, rows.get((c, decision)) or absent(c) if c in resolved else None) for c in clusters]
            metrics.update(reach_metrics(decision, members))
        return metrics

    def completion(self, group: Group, missing: list[tuple[str, str]]) -> dict[str, Members]:
        episodes: dict[str, list[Any]] = defaultdict(list)
        for u in self.units["episode"]:
            episodes[u.run_id].append(u)
        rows: list[tuple[str, Any]] = []
        for run in group.runs:
            if run["invalid"] or run["run_id"] in self.whole:
                rows.append((self.cluster(run), None))
                continue
            # each episode on its own: a fault or a cut log leaves that episode unresolved
            cluster = self.member_cluster(run, run["population_name"], run["instance_id"])
            rows += [(cluster, None if self.episode_open(run, u.episode) else u) for u in episodes.get(run["run_id"], [])]
        rows += [(f"missing:{p}/{i}", None) for p, i in missing]
        if not rows:
            return {}
        group.coverage["episodes"] = len(rows)
        return completion_metrics(rows)

    def fixed(self, group: Group, missing: list[tuple[str, str]]) -> dict[str, Members]:
        rows = self._registered(group, missing, "fixed_start", self.units["fixed"], "subgoal",
                                lambda run_id, population, instance, key: FixedUnit(run_id, population, instance, key, False))
        # K holds verified starts (sec. 7.2): an unverified one is unresolved, never a failure
        rows = [(c, None if u is not None and u.verified is False else u) for c, u in rows]
        return fixed_metrics(rows) if rows else {}

    def pairs(self, group: Group) -> dict[str, Members]:
        scored = {u.run_id: u for u in self.units["member"]}
        metrics: dict[str, Members] = {}
        refused: list[dict[str, Any]] = []
        for kind, name in (("answer_changing", "P_state"), ("geometric", "P_geom")):
            planned = [p for pop in self.populations_of(group) for p in self.registry.of(pop, "pair") if p["kind"] == kind]
            if not planned:
                continue
            pairs, ids = [], {}
            for pair in planned:
                members = []
                for instance in pair["members"]:
                    runs = sorted(self.runs_of(group, pair["population"], instance), key=lambda r: r["run_id"] or "")
                    run = runs[0] if runs else None
                    resolved = run is not None and self.resolved(run) and run["run_id"] not in self.unverified
                    members.append(scored.get(run["run_id"], MemberUnit(run["run_id"], pair["population"], instance, False, None))
                                   if resolved and run is not None else None)
                cluster = f"pair:{pair['population']}/{pair['pair_id']}"
                ids[cluster] = pair
                pairs.append((cluster, members))
            members_, refused_ = pair_metric(pairs, kind == "answer_changing")
            refused += [{"pair_id": ids[c]["pair_id"], "population": ids[c]["population"], "shared": shared,
                         "reason": f"members share the legal operation {shared[0]} at the scored decision"} for c, shared in refused_]
            metrics[name] = members_
            group.coverage[f"{name}_unresolved_pairs"] = sum(1 for u in members_.units if not u.resolved)
        if refused:
            group.coverage["refused_pairs"] = refused
        return metrics

    def geometry(self, group: Group) -> dict[str, Members]:
        resolved = {r["run_id"] for r in group.runs if self.resolved(r)}
        reports = [u for u in self.units["geometry"] if u.run_id in resolved]
        if not reports:
            return {}
        unresolved = [self.cluster(r) for r in group.runs if not self.resolved(r)]
        unresolved += [f"missing:{p}/{i}" for p, i in self.missing(group)]
        return geometry_metrics(reports, unresolved)

    # -- Oracle pairs ------------------------------------------------------------------
    def branch_run(self, population: str, instance: str, like: Group, mode: str | None, oracle_name: str | None
                   ) -> dict[str, Any] | None:
        """The run of ``instance`` whose identity equals ``like`` except for the intervention
        fields (set to ``mode``/``oracle_name``), None when missing; refuse a same-system run
        that differs in another identity field."""
        target = identity_dict(like.identity)
        fields = [f for f in IDENTITY_FIELDS if f not in INTERVENTION_FIELDS]
        matched = []
        for run in self.all_runs:
            if (run["population_name"], run["instance_id"]) != (population, instance):
                continue
            if run["intervention_mode"] != mode or run["oracle"] != oracle_name:
                continue
            differing = first_difference(target, run, fields)
            if differing is None:
                matched.append(run)
            elif first_difference(target, run, SYSTEM_FIELDS) is None and not run["invalid"]:
                raise LabrecordError(
                    f"cannot pair run {run['run_id']!r} with group of {like.runs[0]['run_id']!r} across different result "
                    f"identities: {differing} differs ({run[differing]!r} vs {target[differing]!r})")
        return min(matched, key=lambda r: (r["run_id"] or "", r["invalid"])) if matched else None

    def late(self, run: dict[str, Any]) -> bool:
        """A support of the run reached the system only after its first choice at the
        supported opportunity: the branch is *not delivered in time* (sec. 6.3)."""
        return any(not u.in_time for u in self.supports.get(run["run_id"], []))

    def branch_resolved(self, run: dict[str, Any] | None) -> bool:
        """A branch run counts when it is resolved, started from a verified handoff (or from
        the registered initialization) and got its support in time."""
        return run is not None and self.resolved(run) and run["run_id"] not in self.unverified and not self.late(run)

    def _sides(self, runs: dict[str, dict[str, Any] | None], outcome: str) -> tuple[dict[str, Any], dict[str, bool]]:
        """Outcome values and resolved flags of the branch runs of a pair or matched set
        (a branch from an unverified checkpoint, or whose support came after the choice, is
        unresolved)."""
        resolved = {k: self.branch_resolved(run) for k, run in runs.items()}
        values = {k: self.outcomes[run["run_id"]][outcome] if resolved[k] else None for k, run in runs.items()}  # type: ignore[index]
        return values, resolved

    def gains(self, group: Group) -> dict[str, Members]:
        if group.field("intervention_mode") in (None, "none"):
            return {}
        metrics: dict[str, Members] = {}
        for population in self.populations_of(group):
            planned = [p for p in self.registry.of(population, "oracle_pair") if self._pair_in_group(p, group)]
            if not planned:
                continue
            branches = [(pair, {"base": self.branch_run(population, pair["base"], group, "none", None),
                                "supported": self.branch_run(population, pair["supported"], group,
                                                             group.field("intervention_mode"), group.field("oracle"))})
                        for pair in planned]
            for outcome in oracle.OUTCOMES:
                if outcome == "correct" and self.replaces_decision(group):
                    # the executed choice is the Oracle's: its "gain" is the substitution share
                    # by construction; own_correct scores the system's original instead
                    continue
                units = [u for pair, runs in branches
                         if (u := contrast_unit(f"oracle_pair:{pair['pair_id']}", outcome, oracle.GAIN, *self._sides(runs, outcome)))
                         is not None]
                if units and (outcome in oracle.BOUNDED or any(u.resolved for u in units)):
                    metrics[f"gain.{outcome}"] = Members(units, "oracle_pair", BOOTSTRAP)
                    group.coverage[f"gain.{outcome}_unresolved_pairs"] = sum(1 for u in units if not u.resolved)
            group.coverage["oracle_pairs"] = len(planned)
            group.coverage["supports_not_delivered_in_time"] = sum(
                1 for _, runs in branches if runs["supported"] is not None and self.late(runs["supported"]))
            metrics.update(self._supports(group, branches))
            metrics.update(self._interactions(group, population, planned))
        return metrics

    @staticmethod
    def replaces_decision(group: Group) -> bool:
        """The group's supports include decision:replace (the choice executed is substituted)."""
        sites = (group.field("intervention_site") or "").split("+")
        modes = (group.field("intervention_mode") or "").split("+")
        return ("decision", "replace") in zip(sites, modes)

    def _supports(self, group: Group, branches: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Members]:
        """Delivery, agreement and substitution share over the supported branches (sec. 6.3)."""
        sites = (group.field("intervention_site") or "").split("+")
        supports = list(zip(sites, group.field("intervention_mode").split("+")))
        rows = []
        for pair, runs in branches:
            run = runs["supported"]
            resolved = run is not None and self.resolved(run) and run["run_id"] not in self.unverified
            rows.append((f"oracle_pair:{pair['pair_id']}", self.supports.get(run["run_id"], []) if resolved else None))  # type: ignore[index]
        return support_metrics(rows, supports)

    def _interactions(self, group: Group, population: str, joint_pairs: list[dict[str, Any]]) -> dict[str, Members]:
        """The interaction contrast over the registered matched sets: a joint ``o1+o2`` pair
        whose base also has registered ``o1`` and ``o2`` pairs."""
        parts = (group.field("oracle") or "").split("+")
        if len(parts) != 2:
            return {}
        singles = {(p["base"], p["oracle"]): p for p in self.registry.of(population, "oracle_pair")}
        mode = group.field("intervention_mode")
        sets = []
        for pair in joint_pairs:
            one, two = singles.get((pair["base"], parts[0])), singles.get((pair["base"], parts[1]))
            if one is None or two is None:
                continue  # not a registered matched set
            sets.append((pair, {"base": self.branch_run(population, pair["base"], group, "none", None),
                                "first": self.branch_run(population, one["supported"], group, one["mode"], parts[0]),
                                "second": self.branch_run(population, two["supported"], group, two["mode"], parts[1]),
                                "joint": self.branch_run(population, pair["supported"], group, mode, group.field("oracle"))}))
        metrics: dict[str, Members] = {}
        for outcome in oracle.OUTCOMES:
            units = [u for pair, runs in sets
                     if (u := contrast_unit(f"set:{population}/{pair['base']}", outcome, oracle.INTERACTION,
                                            *self._sides(runs, outcome))) is not None]
            if units and (outcome in oracle.BOUNDED or any(u.resolved for u in units)):
                metrics[f"interaction.{outcome}"] = Members(units, "set", BOOTSTRAP)
        return metrics

    # -- estimation ----------------------------------------------------------------------
    def score_group(self, group: Group) -> None:
        missing = self.missing(group)
        open_runs = [r for r in group.runs if not self.resolved(r)]
        group.coverage.update({
            "runs": len(group.runs), "valid_runs": len(group.runs) - len(open_runs),
            "invalid_runs": sorted(r["run_id"] or r.get("run_dir") for r in open_runs),  # type: ignore[type-var]
            "missing": [{"population": p, "instance_id": i} for p, i in missing],
            "unresolved_runs": [{"run_id": r["run_id"], "reason": r["reason"]} for r in open_runs],
        })
        self.refuse_repeats(group)
        members = self.members(group)
        if self.repeats == "mean":
            members = {name: m._replace(units=average_within_members(m.units)) for name, m in members.items()}
        group.coverage["audited"] = {"audited": sum(1 for r in group.runs if r["run_id"] in self.audited),
                                     "runs": len(group.runs)}
        estimates = {name: measure(m.units) for name, m in members.items()}
        intervals = self.intervals(group, members, estimates)
        for name, estimate in estimates.items():
            group.metrics[name] = _metric_json(estimate, intervals.get(name))
            if name in intervals and intervals[name] is None and estimate.value is not None and estimate.clusters == 1:
                group.metrics[name]["ci_reason"] = "one cluster: no interval from a single run or pair"
            if estimate.value is None and estimate.registered > estimate.resolved:
                for side, value, counts in (("lower", estimate.lower, estimate.lower_counts),
                                            ("upper", estimate.upper, estimate.upper_counts)):
                    if counts is not None:
                        group.metrics[f"{name}.{side}"] = {"value": value, "num": _clean(counts[0]), "den": _clean(counts[1]),
                                                           "n": estimate.registered, "ci": None}
            group.coverage[name] = {"resolved": estimate.resolved, "registered": estimate.registered}

    def intervals(self, group: Group, members: dict[str, Members], estimates: dict[str, Estimate]) -> dict[str, list[float] | None]:
        """95 % intervals of the fully resolved metrics (see docs/scoring.md): Wilson for a
        rate over runs each contributing one member, else the group's shared cluster bootstrap."""
        if self.resamples <= 0:
            return {}
        out: dict[str, list[float] | None] = {}
        sums = {name: _cluster_sums(m.units) for name, m in members.items() if estimates[name].value is not None}
        resampled = {}
        for name, per_cluster in list(sums.items()):
            if len(per_cluster) == 1:
                out[name] = None  # one cluster carries no information on its own spread
                del sums[name]
        for name, per_cluster in sums.items():
            binary = all(d in (0.0, 1.0) and n in (0.0, d) for n, d in per_cluster.values())
            if members[name].interval == WILSON and binary:
                out[name] = wilson(sum(n for n, _ in per_cluster.values()), sum(d for _, d in per_cluster.values()))
            else:
                resampled[name] = per_cluster
        # one resampling of the clusters per kind, shared by every bootstrapped metric of the group
        universes: dict[str, set[str]] = defaultdict(set)
        for name, per_cluster in resampled.items():
            universes[members[name].clusters].update(per_cluster)
        shared = {kind: SharedBootstrap(sorted(u), rng_for(self.seed, repr(group.identity), kind), self.resamples)
                  for kind, u in universes.items()}
        for name, per_cluster in resampled.items():
            metric = members[name]
            clusters = list(per_cluster)
            ci = shared[metric.clusters].interval(clusters, [per_cluster[c][0] for c in clusters],
                                                  [per_cluster[c][1] for c in clusters])
            shares = [n / d for n, d in per_cluster.values() if d > 0]
            if metric.interval == WILSON and ci is not None and ci[0] == ci[1] and shares and set(shares) <= {0.0, 1.0}:
                # every cluster all-success or all-failure (e.g. all episodes failed): Wilson
                # over the clusters, an integer count of successes
                ci = wilson(sum(1 for x in shares if x == 1.0), len(shares))
            out[name] = ci
        return out


def _cluster_sums(units: Sequence[Unit]) -> dict[str, tuple[float, float]]:
    sums: dict[str, list[float]] = {}
    for u in units:
        if u.resolved:
            entry = sums.setdefault(u.cluster, [0.0, 0.0])
            entry[0] += float(u.num)  # type: ignore[arg-type]
            entry[1] += float(u.den)  # type: ignore[arg-type]
    return {k: (v[0], v[1]) for k, v in sums.items()}


def _clean(x: float) -> float:
    x = float(x)
    return int(x) if x.is_integer() else x  # type: ignore[return-value]


def _metric_json(estimate: Estimate, ci: list[float] | None) -> dict[str, Any]:
    """``{value, num, den, n, ci}``: value and ci null while a member is unresolved (num/den
    are then the resolved members' sums)."""
    return {"value": estimate.value, "num": _clean(estimate.num), "den": _clean(estimate.den), "n": estimate.clusters,
            "ci": ci if estimate.value is not None else None}


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
                 one_group: bool = False, where: Any = None, repeats: str = "refuse") -> dict[str, Any]:
    """Score every group of ``source``; returns ``{"groups": [{identity, metrics, coverage}],
    "unassigned_invalid_runs": [...]}``.

    ``where`` optionally filters runs: a callable taking a run row dict.  ``repeats``:
    ``refuse`` (two runs of one registered member are an error) or ``mean`` (averaged within
    the member, intervals from a bootstrap over members).
    """
    scorer = CorpusScorer(source, seed, resamples, decisions, repeats)
    runs = [r for r in scorer.all_runs if where is None or where(r)]
    result = []
    for group in form_groups(runs, one_group):
        scorer.score_group(group)
        result.append({"identity": identity_dict(group.identity), "metrics": group.metrics, "coverage": group.coverage})
    return {"groups": result, "unassigned_invalid_runs": scorer.unassigned()}


def score_corpus(con_or_path: Any, seed: int = 0, resamples: int = 1000, **options: Any) -> dict[str, Any]:
    """Library entry point: score a DuckDB connection, a corpus file, a runs folder or a
    Parquet snapshot folder (``parquet=True``).  ``options``: ``decisions``, ``one_group``,
    ``where``, ``repeats``, ``parquet``, ``audit`` (replay-audit a runs folder first, as ``labrecord
    score`` does)."""
    con = con_or_path
    audit = options.pop("audit", False)
    if not hasattr(con_or_path, "execute"):
        from labrecord.store import open_source

        con, kind, _ = open_source(con_or_path, parquet=options.pop("parquet", False))
        if audit and kind == "runs":
            audit_corpus(con)
    options.pop("parquet", None)
    return score_source(SqlSource(con), seed=seed, resamples=resamples, **options)


def score_reference(runs_dir: str | os.PathLike[str], seed: int = 0, resamples: int = 1000, **options: Any) -> dict[str, Any]:
    """The same result computed by the pure-Python reference units (for tests)."""
    return score_source(ReferenceSource(load_reference(runs_dir)), seed=seed, resamples=resamples, **options)


def audit_verdict(run_id: str, digest: str, audit: Any) -> dict[str, Any]:
    """The ``audits`` row of one :class:`~labrecord.scorers.audit.RunAudit`: the first
    disagreement (lowest seq, then file order) names seq, check and message."""
    first = min(audit.findings, key=lambda f: (f.seq is None, f.seq or 0), default=None)
    reason = None
    if first is not None:
        where = f"seq {first.seq} " if first.seq is not None else ""
        reason = f"{where}{first.check}: {first.message}"
    return {"run_id": run_id, "content_hash": digest, "ok": audit.ok, "reason": reason,
            "seq": None if first is None else first.seq, "check_name": None if first is None else first.check,
            "findings": len(audit.findings), "audited": audit.audited,
            "scope": audit.scope if audit.audited else None}


def _audit_one(item: tuple[str, str, str]) -> dict[str, Any]:
    """The ``audits`` row of one (run_id, run_dir, content hash): a module-level function,
    so a process pool can run it."""
    from labrecord.scorers.audit import audit_run

    run_id, run_dir, digest = item
    return audit_verdict(run_id, digest, audit_run(run_dir, expect=digest))


def audit_corpus(con: DuckDBPyConnection, advance: Any = None, *, jobs: int | None = None) -> list[dict[str, Any]]:
    """Replay-audit every run of the corpus without a verdict for its current content and
    store the verdicts (``audits`` table); returns them.  A run that disagrees is then an
    unresolved member with the first disagreement as its reason.

    The runs are audited on ``jobs`` processes (default: every usable CPU) when there are
    at least :data:`labrecord.parallel.POOL_THRESHOLD`; each run's audit is independent of
    the others and the verdicts come back in the same order, so the result is the same for
    any ``jobs``."""
    from labrecord import parallel
    from labrecord.store import record_audits, runs_to_audit

    todo = runs_to_audit(con)
    verdicts = []
    for verdict in parallel.map(_audit_one, todo, workers=parallel.pool_workers(len(todo), jobs), chunksize=16):
        verdicts.append(verdict)
        if advance:
            advance(1)
    record_audits(con, verdicts)
    return verdicts
