"""Loading run directories into the corpus in bulk.

Each run is validated first (:func:`labrecord.validation.validate_run`); a run with
errors is skipped and its findings are returned.  The valid runs of a batch are then
loaded with DuckDB's own readers (``read_json`` over the list of logs, ``read_parquet``
with ``union_by_name`` over the measurement files) inside one transaction, so a run is
either wholly present or wholly absent.  Every run carries a content hash: an unchanged
run is not touched again, a changed one is deleted and reloaded in the same transaction.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.models import RunManifest
from labrecord.rundir import (
    EVENTS_FILE, MEASUREMENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, POPULATIONS_DIR, RUN_FILE, SCORES_FILE,
    find_run_dirs,
)
from labrecord.safeio import MAX_BINARY_BYTES, MAX_DOCUMENT_BYTES, MAX_LOG_BYTES, check_file, decode_json, excerpt, read_bounded
from labrecord.store.corpus import connect
from labrecord.store.schema import (
    AUDITS, EVENTS, INVALID_RUNS, OBSERVATIONS, ONLINE_SCORES, POPULATIONS, RUNS, TableSpec, json_columns,
)

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: files whose bytes enter the content hash, in this order (only these are loaded)
LOADED_FILES = (RUN_FILE, EVENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, SCORES_FILE, MEASUREMENTS_FILE)


@dataclass
class IngestSummary:
    """What one ingest did.  ``skipped`` maps a run directory to its error findings."""

    db: str
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    populations: list[str] = field(default_factory=list)
    #: ``invalid_runs`` rows of the run directories that failed (see :func:`invalid_run_row`)
    invalid: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"db": self.db, "added": len(self.added), "replaced": len(self.replaced),
                "unchanged": len(self.unchanged), "skipped": self.skipped, "populations": self.populations,
                "invalid_runs": [{"run_id": r["run_id"], "run_dir": r["run_dir"], "reason": r["reason"]} for r in self.invalid]}


@dataclass(frozen=True)
class _Pending:
    run_id: str
    run_dir: Path
    content_hash: str
    manifest: RunManifest
    raw: dict[str, Any]


def content_hash(run_dir: Path) -> str:
    """BLAKE2b over (name, bytes) of every loaded file that exists.

    A file that may not be read (a link, a device, over the size limit) enters as a marker
    of its problem: validation then names it, and nothing is read into memory whole.
    """
    digest = hashlib.blake2b(digest_size=16)
    for name in LOADED_FILES:
        path = run_dir / name
        if os.path.lexists(path):
            digest.update(name.encode() + b"\0")
            try:
                check_file(path, MAX_BINARY_BYTES)
                with open(path, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
            except (LabrecordError, OSError) as error:
                digest.update(b"unreadable: " + str(error).encode())
            digest.update(b"\0")
    return digest.hexdigest()


def _peek_run_id(run_dir: Path) -> str | None:
    try:
        raw = decode_json(read_bounded(run_dir / RUN_FILE, MAX_DOCUMENT_BYTES), str(run_dir / RUN_FILE))
    except (OSError, LabrecordError):
        return None
    run_id = raw.get("run_id") if isinstance(raw, dict) else None
    return run_id if isinstance(run_id, str) else None


def _validate(run_dir: Path) -> tuple[list[str], Any]:
    from labrecord.validation import validate_run

    report, ctx = validate_run(run_dir)
    return [str(f) for f in report.errors], ctx.document


def _observation_condition(m: RunManifest) -> str:
    channels = "+".join(m.system.observation.channels) or "none"
    return channels + (":depth" if m.system.observation.depth else "")


def _action_convention(m: RunManifest) -> str:
    a = m.system.action_spec
    return f"{a.representation}/{a.mode}/{a.dim}/{a.frame}/{a.units}/{a.gripper}/{a.control_hz:g}hz/chunk{a.max_chunk}"


def manifest_row(manifest: RunManifest, raw: dict[str, Any], run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``runs`` row of a decoded manifest (no content hash, no ingest time)."""
    return run_row(_Pending(manifest.run_id, Path(run_dir), "", manifest, raw), "")


def run_row(p: _Pending, ingested_at: str) -> dict[str, Any]:
    """The ``runs`` row of one manifest; defaults come from the typed model."""
    m = p.manifest
    population = m.evaluation.population
    return {
        "run_id": p.run_id, "content_hash": p.content_hash, "run_dir": str(p.run_dir), "ingested_at": ingested_at,
        "schema": m.schema, "created_at": m.created_at, "status": m.status, "family": m.task.family,
        "task_id": m.task.task_id, "task_version": m.task.version, "condition": m.task.condition,
        "contract_hash": m.task.contract_hash, "system_name": m.system.name, "system_kind": m.system.kind,
        "system_revision": m.system.revision, "observation_condition": _observation_condition(m),
        "action_convention": _action_convention(m), "evaluation_version": m.evaluation.version,
        "population_name": population.name if population else None,
        "instance_id": population.instance_id if population else None,
        "history_protocol": m.evaluation.history_protocol,
        "response_deadline_s": m.evaluation.budget.response_deadline_s, "budget_clock": m.evaluation.budget.clock,
        "intervention_mode": m.intervention.mode, "intervention_site": m.intervention.site,
        "oracle": m.intervention.oracle, "pair_id": m.intervention.pair_id, "branch": m.intervention.branch,
        "seed_task_state": m.seeds.task_state, "seed_layout": m.seeds.layout, "seed_policy": m.seeds.policy,
        "layout_hash": m.assets.layout_hash,
        "manifest": msgspec.json.encode(p.raw).decode(),
    }


def _files(pending: Sequence[_Pending], name: str) -> list[tuple[str, str]]:
    return [(p.run_id, str((p.run_dir / name).resolve())) for p in pending if (p.run_dir / name).is_file()]


def _sql_list(values: Sequence[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _struct_literal(columns: dict[str, str]) -> str:
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "}"


#: field -> (default the writer omits, event types that carry the field)
_EVENT_DEFAULTS = {"track": ("'native'", "'choice'"), "first": ("false", "'choice'"), "attempt": ("1", "'confirm', 'failure'"),
                   "recoverable": ("true", "'failure'"), "irreversible": ("false", "'violation'"),
                   "delivered": ("true", "'intervention'")}


def _with_default(name: str) -> str:
    """Restore a default the writer omitted (``omit_defaults``), only on types that have the field."""
    default, types = _EVENT_DEFAULTS[name]
    return f'CASE WHEN type IN ({types}) THEN coalesce("{name}", {default}) END'


#: episode of every event: the last episode_start at or before it (episode_end keeps its own)
_EPISODE = ("coalesce(last_value(CASE WHEN type = 'episode_start' THEN episode END IGNORE NULLS) "
            "OVER (PARTITION BY run_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), episode)")


def _structure(spec: TableSpec) -> str:
    """The ``json_transform`` structure of a table's JSON keys, typed as the corpus columns."""
    fields = ", ".join(f'"{c.name}": "{c.type.replace(" PRIMARY KEY", "")}"' for c in spec.columns if c.name != "run_id")
    return "{" + fields + "}"


def _load_jsonl(con: DuckDBPyConnection, table: str, files: list[tuple[str, str]], spec: TableSpec) -> None:
    """Bulk-load JSONL files into ``table``.

    The lines are read as raw JSON objects (``read_ndjson_objects``) and then parsed in
    one vectorized ``json_transform`` into the corpus column types: a key that is absent
    becomes null, and no schema detection pass is needed (detection over thousands of
    files would read them twice, and without ``union_by_name`` it silently drops keys it
    did not sample).  Validation has already checked every record against the models.
    """
    if not files:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE _files (run_id VARCHAR, filename VARCHAR)")
    con.executemany("INSERT INTO _files VALUES (?, ?)", files)
    # materialized first: scanning and transforming in one pipeline ran several times slower.
    # Validation passed every line but the cut last line an interrupted writer may leave;
    # ignore_errors turns that one into a NULL row, dropped here.
    con.execute(f"CREATE OR REPLACE TEMP TABLE _raw AS SELECT filename, json FROM read_ndjson_objects("
                f"{_sql_list([f for _, f in files])}, filename=true, ignore_errors=true) WHERE json IS NOT NULL")
    names = [c.name for c in spec.columns if c.name != "run_id"]
    values = [_with_default(n) if table == "events" and n in _EVENT_DEFAULTS else f'"{n}"' for n in names]
    aliased = ", ".join(f'{v} AS "{n}"' for v, n in zip(values, names))
    structure = _structure(spec)
    typed = (f"SELECT f.run_id, {aliased} FROM "
             f"(SELECT filename, unnest(json_transform(json, '{structure}')) FROM _raw) r JOIN _files f USING (filename)")
    columns = ", ".join(f'"{c.name}"' for c in spec.columns)
    if table == "events":
        select = ", ".join(_EPISODE + ' AS "episode"' if c.name == "episode" else f'"{c.name}"' for c in spec.columns)
        con.execute(f"INSERT INTO events ({columns}) SELECT {select} FROM ({typed})")
    else:
        con.execute(f"INSERT INTO {table} ({columns}) {typed}")
    con.execute("DROP TABLE _raw")


def _load_measurements(con: DuckDBPyConnection, files: list[tuple[str, str]]) -> None:
    if not files:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE _files (run_id VARCHAR, filename VARCHAR)")
    con.executemany("INSERT INTO _files VALUES (?, ?)", files)
    source = f"read_parquet({_sql_list([f for _, f in files])}, union_by_name=true, filename=true)"
    have = {row[0] for row in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'measurements'").fetchall()}
    for name, type_, *_ in con.execute(f"DESCRIBE SELECT * EXCLUDE (filename) FROM {source}").fetchall():
        if name not in have and name != "run_id":
            # families carry different columns; the table grows to their union
            con.execute(f'ALTER TABLE measurements ADD COLUMN "{name}" {type_}')
    con.execute(f"INSERT INTO measurements BY NAME SELECT f.run_id, m.* EXCLUDE (filename, run_id) "
                f"FROM (SELECT *, NULL::VARCHAR AS run_id FROM {source}) m JOIN _files f ON f.filename = m.filename")


def _load_scores(con: DuckDBPyConnection, files: list[tuple[str, str]]) -> None:
    if not files:
        return
    con.execute("CREATE OR REPLACE TEMP TABLE _files (run_id VARCHAR, filename VARCHAR)")
    con.executemany("INSERT INTO _files VALUES (?, ?)", files)
    con.execute(
        "INSERT INTO final_scores SELECT f.run_id, j->>'status', coalesce(j->'metrics', '{}'), coalesce(j->'episodes', '[]'), j->>'created_at' "
        f"FROM (SELECT filename, content::JSON AS j FROM read_text({_sql_list([f for _, f in files])})) s "
        "JOIN _files f ON f.filename = s.filename"
    )


_RUN_TABLES = ("events", "observations", "online_scores", "final_scores", "measurements", "runs")


def load_batch(con: DuckDBPyConnection, pending: Sequence[_Pending]) -> None:
    """Replace the listed runs in one transaction; on any error nothing of the batch stays."""
    import pyarrow as pa

    if not pending:
        return
    ingested_at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rows = pa.Table.from_pylist([run_row(p, ingested_at) for p in pending])
    con.execute("BEGIN TRANSACTION")
    try:
        con.register("_run_rows", rows)
        con.execute("CREATE OR REPLACE TEMP TABLE _batch AS SELECT run_id FROM _run_rows")
        for table in _RUN_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM _batch)")
        names = ", ".join(f'"{c.name}"' for c in RUNS.columns)
        values = ", ".join(f'"{c.name}"' if c.name != "manifest" else "manifest::JSON" for c in RUNS.columns)
        con.execute(f"INSERT INTO runs ({names}) SELECT {values} FROM _run_rows")
        con.unregister("_run_rows")
        _load_jsonl(con, "events", _files(pending, EVENTS_FILE), EVENTS)
        _load_jsonl(con, "observations", _files(pending, OBSERVATIONS_FILE), OBSERVATIONS)
        _load_jsonl(con, "online_scores", _files(pending, ONLINE_SCORES_FILE), ONLINE_SCORES)
        _load_scores(con, _files(pending, SCORES_FILE))
        _load_measurements(con, _files(pending, MEASUREMENTS_FILE))
        con.execute("COMMIT")
    except Exception as error:
        con.execute("ROLLBACK")
        where = pending[0].run_dir.parent
        raise LabrecordError(f"{where}: bulk load of {len(pending)} run(s) failed, nothing of the batch was kept: {error}") from error


def ingest_populations(con: DuckDBPyConnection, root: Path, summary: IngestSummary) -> None:
    """Load ``root/populations/*.jsonl``; an invalid registry is skipped with its findings."""
    from labrecord.validation.files import validate_population_file
    from labrecord.validation.findings import Report

    folder = root / POPULATIONS_DIR
    if not folder.is_dir():
        return
    existing = dict(con.execute("SELECT population, any_value(content_hash) FROM populations GROUP BY population").fetchall())
    columns = json_columns(POPULATIONS, ("population", "line", "content_hash"))
    for path in sorted(folder.glob("*.jsonl")):
        report = Report()
        try:
            name, digest = path.stem, hashlib.blake2b(read_bounded(path, MAX_LOG_BYTES), digest_size=16).hexdigest()
        except LabrecordError as error:
            summary.skipped[str(path)] = [str(error)]
            continue
        if existing.get(name) == digest:
            continue
        validate_population_file(path, report)
        if report.errors:
            summary.skipped[str(path)] = [str(f) for f in report.errors]
            continue
        select = ", ".join(f'"{c}"' for c in columns)
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("DELETE FROM populations WHERE population = ?", [name])
            con.execute(
                f"INSERT INTO populations (population, line, {select}, content_hash) "
                f"SELECT ?, row_number() OVER (), {select}, ? FROM read_json({_sql_list([str(path.resolve())])}, "
                f"format='newline_delimited', columns={_struct_literal(columns)})", [name, digest])
            con.execute("COMMIT")
        except Exception as error:
            con.execute("ROLLBACK")
            summary.skipped[str(path)] = [f"{path}: could not load population: {excerpt(str(error))}"]
            continue
        summary.populations.append(name)


#: below this many runs to validate, a process pool costs more than it saves
POOL_THRESHOLD = 200


def _validate_all(run_dirs: list[Path], jobs: int) -> Iterator[tuple[list[str], Any]]:
    """Validation results in order; spread over ``jobs`` processes for large ingests
    (validation decodes every line in Python and dominates the ingest time)."""
    from labrecord import parallel

    workers = jobs if len(run_dirs) >= POOL_THRESHOLD else 1
    return parallel.map(_validate, run_dirs, workers=workers, chunksize=64)


def ingest_runs(runs_dir: str | os.PathLike[str], db: Any = None, *, batch_size: int = 2000,
                advance: Callable[[int], None] | None = None, jobs: int | None = None) -> IngestSummary:
    """Load every run below ``runs_dir`` (and its ``populations/``) into the corpus ``db``.

    ``db`` is a path to a DuckDB file (created if needed), ``None`` for the default
    ``corpus.duckdb``, or an open connection.  ``jobs`` validation processes (default 1;
    a pool only pays off on idle cores).  Returns an :class:`IngestSummary`.
    """
    con = db if hasattr(db, "execute") else connect(db or "corpus.duckdb")
    root = Path(runs_dir)
    summary = IngestSummary(db=str(db) if not hasattr(db, "execute") else "<connection>")
    # populations first, committed before any run: an ingest killed part-way never leaves
    # runs whose denominators are missing
    ingest_populations(con, root, summary)
    existing = dict(con.execute("SELECT run_id, content_hash FROM runs").fetchall())
    candidates: list[tuple[Path, str]] = []
    run_dirs = find_run_dirs(root)
    problems = identity_problems(run_dirs)
    for run_dir in run_dirs:
        run_id, digest = _peek_run_id(run_dir), content_hash(run_dir)
        if run_id is not None and existing.get(run_id) == digest and run_dir not in problems:
            summary.unchanged.append(run_id)
            if advance:
                advance(1)
        else:
            candidates.append((run_dir, digest))
    pending: list[_Pending] = []
    seen: dict[str, Path] = {}
    results = _validate_all([d for d, _ in candidates], jobs or 1)
    for (run_dir, digest), (errors, document) in zip(candidates, results):
        if run_dir in problems:
            errors = [problems[run_dir], *errors]
        _consider(run_dir, digest, errors, document, existing, seen, pending, summary)
        if advance:
            advance(1)
        if len(pending) >= batch_size:
            load_batch(con, pending)
            pending = []
    load_batch(con, pending)
    record_invalid_runs(con, [d for d, _ in candidates], summary.invalid)
    return summary


def _consider(run_dir: Path, digest: str, errors: list[str], document: Any, existing: dict[str, str],
              seen: dict[str, Path], pending: list[_Pending], summary: IngestSummary) -> None:
    if not errors and document is not None and document.manifest.run_id in seen:
        errors = [f"{run_dir / RUN_FILE} run_id: run_id {document.manifest.run_id!r} also used by {seen[document.manifest.run_id]}"]
    if errors or document is None:
        summary.skipped[str(run_dir)] = errors or [f"{run_dir / RUN_FILE}: unreadable manifest"]
        summary.invalid.append(invalid_run_row(run_dir, summary.skipped[str(run_dir)][0], document, digest))
        return
    run_id = document.manifest.run_id
    seen[run_id] = run_dir
    (summary.replaced if run_id in existing else summary.added).append(run_id)
    pending.append(_Pending(run_id, run_dir, digest, document.manifest, document.raw))


# -- Run identity and invalid runs (Labference sec. 7.4) --------------------------------------
# A run directory that cannot be scored keeps one ``invalid_runs`` row (id, readable
# identity, reason), so the scorer counts it as an unresolved member; a run re-ingested in
# an invalid state has its old data replaced by that row.


def identity_problems(run_dirs: Sequence[Path]) -> dict[Path, str]:
    """Run directories refused for their identity: a folder whose name differs from its
    run.json ``run_id``, and every folder of a ``run_id`` claimed more than once (each
    message names all the claiming paths)."""
    claims: dict[str, list[Path]] = {}
    problems: dict[Path, str] = {}
    for run_dir in run_dirs:
        run_id = _peek_run_id(run_dir)
        if run_id is None:
            continue
        claims.setdefault(run_id, []).append(run_dir)
        if run_id != run_dir.name:
            problems[run_dir] = (f"{run_dir / RUN_FILE} run_id: {run_id!r} differs from the folder name "
                                 f"{run_dir.name!r}; nothing is stored under an id its folder does not carry")
    for run_id, dirs in claims.items():
        if len(dirs) > 1:
            paths = " and ".join(str(d) for d in dirs)
            for run_dir in dirs:
                claim = f"{run_dir / RUN_FILE} run_id: {run_id!r} is claimed by {paths}; ambiguous, neither is scored"
                problems[run_dir] = claim + (f" ({problems[run_dir].split(': ', 1)[1]})" if run_dir in problems else "")
    return problems


def invalid_run_row(run_dir: Path, reason: str, document: Any, digest: str, ingested_at: str = "") -> dict[str, Any]:
    """The ``invalid_runs`` row of a refused run directory: its folder id when run.json names
    one, the identity columns when run.json decodes, and the reason."""
    row: dict[str, Any] = {c.name: None for c in INVALID_RUNS.columns}
    readable = document is not None
    if readable:
        full = manifest_row(document.manifest, document.raw, run_dir)
        row.update({k: full[k] for k in row if k in full})
    row.update(run_dir=str(run_dir), run_id=run_dir.name if _peek_run_id(run_dir) is not None else None,
               content_hash=digest, reason=reason, identity_readable=readable, ingested_at=ingested_at)
    return row


def record_invalid_runs(con: DuckDBPyConnection, examined: Sequence[Path], rows: Sequence[dict[str, Any]]) -> None:
    """Replace the ``invalid_runs`` rows of the ``examined`` run directories by ``rows``, and
    drop every earlier table row of the run ids now invalid (never left stale)."""
    import pyarrow as pa

    ingested_at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    con.execute("BEGIN TRANSACTION")
    try:
        examined_dirs = pa.table({"run_dir": [str(d) for d in examined]})
        con.register("_examined", examined_dirs)
        con.execute("DELETE FROM invalid_runs WHERE run_dir IN (SELECT run_dir FROM _examined) "
                    "OR run_id IN (SELECT run_id FROM runs)")
        con.unregister("_examined")
        if rows:
            table = pa.Table.from_pylist([{**r, "ingested_at": r["ingested_at"] or ingested_at} for r in rows])
            con.register("_invalid_rows", table)
            ids = "(SELECT run_id FROM _invalid_rows WHERE run_id IS NOT NULL)"
            for name in (*_RUN_TABLES, AUDITS.name):
                con.execute(f"DELETE FROM {name} WHERE run_id IN {ids}")
            names = ", ".join(f'"{c.name}"' for c in INVALID_RUNS.columns)
            con.execute(f"INSERT OR REPLACE INTO invalid_runs ({names}) SELECT {names} FROM _invalid_rows")
            con.unregister("_invalid_rows")
        con.execute("COMMIT")
    except Exception as error:
        con.execute("ROLLBACK")
        raise LabrecordError(f"could not record {len(rows)} invalid run(s): {error}") from error


def runs_to_audit(con: DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """``(run_id, run_dir, content_hash)`` of every run without a verdict for its current content."""
    return con.execute("SELECT r.run_id, r.run_dir, r.content_hash FROM runs r LEFT JOIN audits a USING (run_id) "
                       "WHERE a.content_hash IS DISTINCT FROM r.content_hash ORDER BY r.run_id").fetchall()


def record_audits(con: DuckDBPyConnection, verdicts: Sequence[dict[str, Any]]) -> None:
    """Store replay-audit verdicts (one ``audits`` row each, replacing an earlier one)."""
    if not verdicts:
        return
    import pyarrow as pa

    audited_at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    names = [c.name for c in AUDITS.columns]
    table = pa.Table.from_pylist([{n: v.get(n, audited_at if n == "audited_at" else None) for n in names} for v in verdicts])
    con.register("_verdicts", table)
    try:
        quoted = ", ".join(f'"{n}"' for n in names)
        con.execute(f"INSERT OR REPLACE INTO audits ({quoted}) SELECT {quoted} FROM _verdicts")
    finally:
        con.unregister("_verdicts")
