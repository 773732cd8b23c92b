"""Which demonstrations an export takes: every attempt of every run, and the acceptance rule.

All three exports (LeRobot, robomimic HDF5, Parquet) start here, so they agree on what
was accepted and why.  An *attempt* is one entry of a run's ``demo.hdf5`` manifest; a run
without ``demo.hdf5`` contributes one attempt with no demo, so it stays visible.

The rule is ``success`` (the episode's success flag), ``all`` (every attempt with steps)
or one boolean SQL expression over the attempts table (columns in :data:`ATTEMPT_COLUMNS`),
checked against DuckDB's parse tree (:func:`check_rule`) and evaluated on a locked
connection.  Attempts without steps are never accepted: there is nothing to
train on, but they stay in the export's manifest.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from labrecord.demos import DemoReader, split_names
from labrecord.errors import LabrecordError
from labrecord.models import ActionSpec, RunManifest
from labrecord.rundir import DEMO_FILE, find_run_dirs
from labrecord.safeio import check_apart, check_writable, depth_problem, excerpt

#: columns a SQL acceptance rule may use, with their meaning
ATTEMPT_COLUMNS: dict[str, str] = {
    "run_id": "run directory name",
    "episode": "episode number inside the run",
    "demo": "demo group in the run's demo.hdf5 (NULL when the attempt has no steps)",
    "num_samples": "number of steps",
    "success": "the recorder's success flag",
    "reason": "why the attempt ended (timeout, service_fault …), may be NULL",
    "recovered": "whether the attempt recovered from a failure",
    "status": "run status: complete, aborted, service_fault, running",
    "family": "task family (weighing, centrifuge, rack …)",
    "task_id": "task id",
    "condition": "basic or extended",
    "system": "system name",
    "system_kind": "vla, agent, scripted or human",
    "intervention": "intervention mode: none, assist, replace",
    "branch": "Oracle branch: base, supported or NULL",
}


@dataclass
class AttemptRow:
    """One attempt with the run fields a rule can select on."""

    run_id: str
    episode: int
    demo: str | None
    num_samples: int
    success: bool | None
    reason: str | None
    recovered: bool
    status: str
    family: str
    task_id: str
    condition: str
    system: str
    system_kind: str
    intervention: str
    branch: str | None
    accepted: bool = False
    split: str | None = None
    export_name: str | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RunSource:
    """One run directory and what the export needs from it."""

    dir: Path
    manifest: RunManifest
    demo_path: Path | None
    env_args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Selection:
    """The attempts of a set of runs, with acceptance and split decided."""

    runs_dir: Path
    rule: str
    runs: dict[str, RunSource]
    attempts: list[AttemptRow]

    @property
    def accepted(self) -> list[AttemptRow]:
        return [a for a in self.attempts if a.accepted]

    def action_spec(self) -> ActionSpec:
        first = self.runs[self.accepted[0].run_id]
        return first.manifest.system.action_spec

    def control_hz(self) -> float:
        """The control rate of the accepted runs; refused when their manifest leaves it unknown."""
        hz = self.action_spec().control_hz
        if hz is None:
            raise LabrecordError(f"run {self.accepted[0].run_id!r}: action_spec.control_hz is unknown (null); "
                                 "exports need the control rate (an import can state it with --control-hz)")
        return hz


def _run_rows(source: RunSource) -> list[AttemptRow]:
    m = source.manifest
    common: dict[str, Any] = dict(status=m.status, family=m.task.family, task_id=m.task.task_id, condition=m.task.condition,
                  system=m.system.name, system_kind=m.system.kind, intervention=m.intervention.mode,
                  branch=m.intervention.branch)
    if source.demo_path is None:
        return [AttemptRow(run_id=m.run_id, episode=-1, demo=None, num_samples=0, success=None,
                           reason=None, recovered=False, note=f"no {DEMO_FILE}", **common)]
    with DemoReader(source.demo_path) as reader:
        source.env_args = reader.env_args
        return [AttemptRow(run_id=m.run_id, episode=a.episode, demo=a.demo, num_samples=a.num_samples, success=a.success,
                           reason=a.reason, recovered=a.recovered, **common) for a in reader.manifest()]


def _invalid_row(run_dir: Path, manifest: RunManifest | None, findings: Sequence[str]) -> AttemptRow:
    """The manifest entry of a run the export skips: the same rule as ingest (any validation error)."""
    more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
    identity: dict[str, Any] = dict(status="", family="", task_id="", condition="", system="", system_kind="",
                                    intervention="", branch=None)
    if manifest is not None:
        identity = dict(status=manifest.status, family=manifest.task.family, task_id=manifest.task.task_id,
                        condition=manifest.task.condition, system=manifest.system.name,
                        system_kind=manifest.system.kind, intervention=manifest.intervention.mode,
                        branch=manifest.intervention.branch)
    return AttemptRow(run_id=manifest.run_id if manifest is not None else run_dir.name, episode=-1, demo=None,
                      num_samples=0, success=None, reason=None, recovered=False,
                      note=f"invalid run, skipped: {findings[0]}{more}", **identity)


def collect(runs_dir: str | os.PathLike[str]) -> tuple[dict[str, RunSource], list[AttemptRow]]:
    """Every run under ``runs_dir`` and every attempt recorded in their demo files.

    Each run is validated first, as ingest does: a run with errors contributes no attempt
    to train on, only a manifest row whose note carries its first finding.
    """
    from labrecord.store.ingest import identity_problems
    from labrecord.validation import validate_run

    runs_dir = Path(runs_dir)
    runs: dict[str, RunSource] = {}
    rows: list[AttemptRow] = []
    run_dirs = find_run_dirs(runs_dir)
    # the identity rule of ingest: a folder must carry its run_id, and an id claimed twice is refused
    problems = identity_problems(run_dirs)
    for run_dir in run_dirs:
        report, ctx = validate_run(run_dir)
        manifest = ctx.document.manifest if ctx.document is not None else None
        findings = [str(f) for f in report.errors]
        if run_dir in problems:
            findings.insert(0, problems[run_dir])
        if findings or manifest is None:
            rows.append(_invalid_row(run_dir, manifest, findings or [f"{run_dir / 'run.json'}: unreadable manifest"]))
            continue
        demo = run_dir / DEMO_FILE
        source = RunSource(run_dir, manifest, demo if demo.is_file() else None)
        try:
            attempts = _run_rows(source)
        except (LabrecordError, OSError) as error:
            rows.append(_invalid_row(run_dir, manifest, [f"{demo}: unreadable demonstration: {excerpt(str(error))}"]))
            continue
        runs[manifest.run_id] = source
        rows.extend(attempts)
    return runs, rows


#: expression node classes an acceptance rule may contain (DuckDB parser names)
RULE_CLASSES = frozenset({"COLUMN_REF", "CONSTANT", "COMPARISON", "CONJUNCTION", "BETWEEN", "CASE", "CAST", "TYPE",
                          "OPERATOR", "FUNCTION"})
#: operators among the ``OPERATOR`` nodes: NOT, IS [NOT] NULL, [NOT] IN (a list), COALESCE
RULE_OPERATORS = frozenset({"OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN", "COMPARE_NOT_IN",
                            "OPERATOR_COALESCE"})
#: functions a rule may call: arithmetic, LIKE / ILIKE / ``~`` and a few string and number functions
RULE_FUNCTIONS = frozenset({"+", "-", "*", "/", "//", "%", "~~", "!~~", "~~*", "!~~*", "regexp_matches", "lower", "upper",
                            "length", "strlen", "starts_with", "ends_with", "prefix", "suffix", "contains", "abs",
                            "round", "least", "greatest", "coalesce", "ifnull", "concat", "||"})
_RULE_QUERY = "SELECT _row FROM attempts WHERE ({})"


def check_rule(where: str) -> str:
    """Check that ``where`` is one boolean expression over :data:`ATTEMPT_COLUMNS`, built of
    comparisons, AND/OR/NOT, IS NULL, IN lists, BETWEEN, CASE, casts, constants and
    :data:`RULE_FUNCTIONS`; return the query that applies it.

    The check reads DuckDB's own parse tree (``json_serialize_sql``) of the very query
    that is run, so text that closes the parenthesis early, adds a statement, a
    subquery, a table function or a parameter is refused before anything runs.
    """
    import duckdb

    query = _RULE_QUERY.format(where)

    def refuse(reason: str) -> LabrecordError:
        return LabrecordError(f"--accept {excerpt(where)!r}: {reason}; give one boolean expression over "
                              f"{', '.join(ATTEMPT_COLUMNS)} (or 'success' / 'all')")

    if not where.strip():
        raise refuse("empty rule")
    con = duckdb.connect()
    try:
        try:
            if len(duckdb.extract_statements(query)) != 1:
                raise refuse("more than one statement")
            raw = str(con.execute("SELECT json_serialize_sql(?)", [query]).fetchall()[0][0]).encode()
        except duckdb.Error as error:
            raise refuse(f"not an expression: {str(error).splitlines()[0]}") from error
    finally:
        con.close()
    if depth_problem(raw) is not None:  # the parse tree of a rule this deep is no acceptance rule
        raise refuse("nested too deeply")
    tree = msgspec.json.decode(raw)
    if tree.get("error"):
        raise refuse(f"not an expression: {excerpt(str(tree.get('error_message', '')).splitlines()[0])}")
    statements = tree.get("statements", [])
    node = statements[0].get("node", {}) if len(statements) == 1 else {}
    expected: dict[str, Any] = {"type": "SELECT_NODE", "modifiers": [], "group_expressions": [], "group_sets": [], "having": None,
                "qualify": None, "sample": None}
    select_list = node.get("select_list", [])
    source = node.get("from_table", {})
    if (any(node.get(k) != v for k, v in expected.items()) or node.get("cte_map", {}).get("map")
            or len(select_list) != 1 or select_list[0].get("column_names") != ["_row"]
            or source.get("type") != "BASE_TABLE" or source.get("table_name") != "attempts"):
        raise refuse("not a single expression")
    problem = _rule_problem(node.get("where_clause"))
    if problem is not None:
        raise refuse(problem)
    return query


def _rule_problem(tree: Any) -> str | None:
    """What in a parsed expression a rule may not hold (iteratively: no depth limit to hit)."""
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(item)
            continue
        if not isinstance(item, dict):
            continue
        kind = item.get("class")
        if kind is not None:
            if kind not in RULE_CLASSES:
                return f"{str(kind).lower().replace('_', ' ')} not allowed"
            if kind == "COLUMN_REF":
                names = item.get("column_names", [])
                if len(names) != 1 or names[0] not in ATTEMPT_COLUMNS:
                    return f"unknown column {'.'.join(map(str, names))!r}"
            if kind == "OPERATOR" and item.get("type") not in RULE_OPERATORS:
                return f"operator {str(item.get('type')).lower()} not allowed"
            if kind == "FUNCTION":
                name = str(item.get("function_name", ""))
                if name.lower() not in RULE_FUNCTIONS or item.get("schema") or item.get("catalog"):
                    return f"function {name!r} not allowed"
                if item.get("filter") is not None or item.get("distinct") or item.get("order_bys", {}).get("orders"):
                    return f"aggregate form of {name!r} not allowed"
        stack.extend(item.values())
    return None


def _sql_accept(rows: Sequence[AttemptRow], where: str) -> set[int]:
    import duckdb
    import pyarrow as pa

    from labrecord.store.readonly import lock

    query = check_rule(where)
    columns = list(ATTEMPT_COLUMNS)
    table = pa.table({**{c: [getattr(r, c) for r in rows] for c in columns}, "_row": list(range(len(rows)))})
    con = lock(duckdb.connect())
    try:
        con.register("attempts", table)
        kind = con.execute(f"DESCRIBE SELECT ({where}) AS accepted FROM attempts").fetchall()[0][1]
        if kind not in ("BOOLEAN", '"NULL"'):
            raise LabrecordError(f"--accept {excerpt(where)!r}: a {kind} expression, not a boolean one; "
                                 "compare it with something (e.g. num_samples > 0)")
        result = con.execute(query).fetchall()
    except duckdb.Error as error:
        message = str(error).splitlines()[0]
        raise LabrecordError(f"acceptance rule {excerpt(where)!r} is not a valid boolean expression over "
                             f"({', '.join(columns)}): {message}") from error
    finally:
        con.close()
    return {row for (row,) in result}


def apply_rule(rows: Sequence[AttemptRow], rule: str) -> None:
    """Set ``accepted`` on each row; rejected rows get a ``note`` saying why."""
    if rule == "success":
        chosen = {i for i, r in enumerate(rows) if r.success}
    elif rule == "all":
        chosen = set(range(len(rows)))
    else:
        chosen = _sql_accept(rows, rule) if rows else set()
    for index, row in enumerate(rows):
        if row.demo is None or row.num_samples == 0:
            row.note = row.note or "no steps recorded"
        elif index in chosen:
            row.accepted = True
        else:
            row.note = f"rejected by rule {rule!r}"


def assign_splits(rows: Sequence[AttemptRow], valid_ratio: float, seed: int) -> None:
    """Seeded train/valid assignment of the accepted rows (see :func:`labrecord.demos.split_names`)."""
    accepted = [r for r in rows if r.accepted]
    keys = [f"{r.run_id}/{r.demo}" for r in accepted]
    _, valid = split_names(keys, valid_ratio, seed)
    valid_set = set(valid)
    for row, key in zip(accepted, keys):
        row.split = "valid" if key in valid_set else "train"


def _describe_empty(runs_dir: Path, rows: Sequence[AttemptRow], rule: str) -> str:
    if not rows:
        return f"{runs_dir}: no run directories (with run.json) found; nothing exported"
    runs = len({r.run_id for r in rows})
    no_demo = sum(1 for r in rows if r.note == f"no {DEMO_FILE}")
    empty = sum(1 for r in rows if r.demo is None and r.note != f"no {DEMO_FILE}" and not (r.note or "").startswith("invalid run"))
    failed = sum(1 for r in rows if r.demo is not None and not r.success)
    invalid = [r for r in rows if (r.note or "").startswith("invalid run")]
    skipped = f", {len(invalid)} invalid run(s) skipped, first: {invalid[0].note}" if invalid else ""
    return (f"{runs_dir}: {len(rows)} attempt(s) in {runs} run(s), none accepted by rule {rule!r} "
            f"({failed} unsuccessful, {empty} without steps, {no_demo} run(s) without {DEMO_FILE}{skipped}); "
            "nothing exported")


def _spec_difference(a: ActionSpec, b: ActionSpec) -> list[str]:
    left, right = msgspec.to_builtins(a), msgspec.to_builtins(b)
    return [f"{key} {left.get(key)!r} vs {right.get(key)!r}" for key in sorted(set(left) | set(right))
            if left.get(key) != right.get(key)]


def check_same_action_spec(selection: Selection) -> None:
    """Refuse an export whose accepted runs were recorded under different action specs."""
    accepted_runs = list(dict.fromkeys(a.run_id for a in selection.accepted))
    first = selection.runs[accepted_runs[0]]
    for run_id in accepted_runs[1:]:
        other = selection.runs[run_id]
        differences = _spec_difference(first.manifest.system.action_spec, other.manifest.system.action_spec)
        if differences:
            raise LabrecordError(
                f"runs {first.manifest.run_id!r} ({first.dir / 'run.json'}) and {run_id!r} ({other.dir / 'run.json'}) "
                f"have different action specs ({'; '.join(differences)}); export them separately")


def check_same_obs(selection: Selection) -> dict[str, tuple[tuple[int, ...], Any]]:
    """Observation keys, shapes and dtypes shared by every accepted demo; refuse a mismatch."""
    reference: dict[str, tuple[tuple[int, ...], Any]] | None = None
    reference_name = ""
    for row in selection.accepted:
        source = selection.runs[row.run_id]
        with DemoReader(source.demo_path) as reader:  # type: ignore[arg-type]
            shapes: dict[str, tuple[tuple[int, ...], Any]] = reader.obs_shapes(row.demo)  # type: ignore[arg-type]
            shapes["__actions__"] = (reader.action_shape(row.demo), None)  # type: ignore[arg-type]
        name = f"{row.run_id}/{row.demo}"
        if reference is None:
            reference, reference_name = shapes, name
            continue
        if shapes != reference:
            raise LabrecordError(f"demos {reference_name} and {name} differ in observations or actions: "
                                 f"{_shape_text(reference)} vs {_shape_text(shapes)}")
    assert reference is not None
    reference.pop("__actions__")
    return reference


def _shape_text(shapes: dict[str, tuple[tuple[int, ...], Any]]) -> str:
    return ", ".join(f"{k}{list(s)}" + (f":{d}" if d is not None else "") for k, (s, d) in sorted(shapes.items()))


def select(runs_dir: str | os.PathLike[str], rule: str = "success", *, valid_ratio: float = 0.0,
           seed: int = 0) -> Selection:
    """Collect, accept, split and check; raise a one-line error when nothing is accepted."""
    runs_dir = Path(runs_dir)
    if rule not in ("success", "all"):
        check_rule(rule)  # before the runs are read: a bad rule costs nothing
    runs, rows = collect(runs_dir)
    apply_rule(rows, rule)
    if not any(r.accepted for r in rows):
        raise LabrecordError(_describe_empty(runs_dir, rows, rule))
    assign_splits(rows, valid_ratio, seed)
    selection = Selection(runs_dir, rule, runs, rows)
    check_same_action_spec(selection)
    return selection


def check_output(path: str | os.PathLike[str], overwrite: bool, runs_dir: str | os.PathLike[str]) -> Path:
    """Refuse to replace an existing output unless ``overwrite``, one that cannot be
    written, and, with or without ``overwrite``, one that is, holds or lies inside a run
    folder or the population registries read (:func:`labrecord.safeio.check_apart`; the
    runs folder itself and any folder above it hold them).  Missing folders on the way
    are made when the export writes (``--out datasets/weighing`` in a fresh folder), so
    the nearest one that exists must be writable."""
    from labrecord.store.source import input_paths

    path = check_apart(path, input_paths(runs_dir), what="--out")
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise LabrecordError(f"{path}: {existing} is a file, not a folder")
    check_writable(existing / path.name if existing != path.parent else path)
    if path.exists() and not overwrite:
        kind = "directory" if path.is_dir() else "file"
        raise LabrecordError(f"{path}: output {kind} already exists; pass --overwrite to replace it")
    return path
