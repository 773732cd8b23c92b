"""Loading run directories into the corpus in bulk.

Each run is validated first (:func:`labrecord.validation.validate_run`); a run with
errors is skipped and its findings are returned.  Validation reads every file once and
hands on what it decoded: the canonical text of each record that passed (never a cut or
refused line), the measurement bytes it checked, and the content hash of the bytes it
read.  The valid runs of a batch are loaded from that, in memory, inside one
transaction, so what is stored is exactly what was checked, even if a file changes
while the ingest runs, and a run is either wholly present or wholly absent.  A batch that
fails to load is retried run by run, so only the run at fault is refused (with its
reason); a failure of the machine itself (a full disk) stops the ingest with one error,
keeping every batch committed before it.  Every run carries a content hash: an
unchanged run is not touched again, a changed one is deleted and reloaded in the same
transaction.  Run folders are stored as absolute, resolved paths, so an ingest from
another working directory names the same runs.
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

from labrecord import parallel
from labrecord.errors import LabrecordError
from labrecord.models import RunManifest
from labrecord.rundir import (
    EVENTS_FILE, LOADED_FILES, MEASUREMENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, POPULATIONS_DIR, RUN_FILE,
    SCORES_FILE, content_digest, find_run_dirs,
)
from labrecord.safeio import (
    MAX_BINARY_BYTES, MAX_DOCUMENT_BYTES, check_file, decode_json, excerpt, link_problem, read_bounded,
)
from labrecord.store.corpus import StoreFailure, connect, machine_failure, rollback
from labrecord.store.schema import (
    AUDITS, EVENTS, INVALID_RUNS, OBSERVATIONS, ONLINE_SCORES, POPULATIONS, RUNS, Column, TableSpec, json_columns,
)

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

    from labrecord.validation.jsonl import KeptTexts

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
    #: canonical record texts per loaded log (and scores.json), as validation decoded them
    records: dict[str, KeptTexts] = field(default_factory=dict)
    #: the measurement bytes validation checked, or None
    measurements: bytes | None = None


@dataclass(frozen=True)
class Validated:
    """What validating one run directory hands to the load: its error findings, its
    manifest, the content hash of the bytes read and what was decoded from them."""

    errors: list[str]
    document: Any
    digest: str
    records: dict[str, KeptTexts]
    measurements: bytes | None


def content_hash(run_dir: Path) -> str:
    """BLAKE2b over (name, bytes) of every loaded file that exists, read in chunks.

    A file that may not be read (a link, a device, over the size limit) enters as a marker
    of its problem: validation then names it, and nothing is read into memory whole.  Only
    used to tell an unchanged run without validating it; what is stored with a run is the
    hash of the bytes validation read (:func:`validate_for_load`).
    """
    def chunks(path: Path) -> Iterator[bytes]:
        try:
            check_file(path, MAX_BINARY_BYTES)
            with open(path, "rb") as fh:
                yield from iter(lambda: fh.read(1 << 20), b"")
        except (LabrecordError, OSError) as error:
            yield b"unreadable: " + str(error).encode()

    return content_digest((name, chunks(run_dir / name)) for name in LOADED_FILES if os.path.lexists(run_dir / name))


def _peek_run_id(run_dir: Path) -> str | None:
    try:
        raw = decode_json(read_bounded(run_dir / RUN_FILE, MAX_DOCUMENT_BYTES), str(run_dir / RUN_FILE))
    except (OSError, LabrecordError):
        return None
    run_id = raw.get("run_id") if isinstance(raw, dict) else None
    return run_id if isinstance(run_id, str) else None


def validate_for_load(run_dir: Path) -> Validated:
    """Validate one run directory, reading each file once, and keep what the load needs."""
    from labrecord.validation import validate_run

    report, ctx = validate_run(run_dir)
    parts = []
    for name in LOADED_FILES:
        if name in ctx.files:
            parts.append((name, [ctx.files[name]]))
        elif os.path.lexists(run_dir / name):
            parts.append((name, [b"unreadable"]))
    errors = [str(f) for f in report.errors]
    return Validated(errors, ctx.document, content_digest(parts), ctx.records if not errors else {},
                     ctx.files.get(MEASUREMENTS_FILE) if not errors else None)


def _observation_condition(m: RunManifest) -> str:
    channels = "+".join(m.system.observation.channels) or "none"
    return channels + (":depth" if m.system.observation.depth else "")


def _action_convention(m: RunManifest) -> str:
    a = m.system.action_spec
    # an imported source may leave the representation, mode and rate unknown (null)
    hz = "unknown" if a.control_hz is None else f"{a.control_hz:g}"
    return (f"{a.representation or 'unknown'}/{a.mode or 'unknown'}/{a.dim}/{a.frame}/{a.units}/{a.gripper}/"
            f"{hz}hz/chunk{a.max_chunk}")


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
        "layout_hash": m.assets.layout_hash, "asset_revision": m.assets.revision,
        "measurements_declared": m.evaluation.measurements,
        "manifest": msgspec.json.encode(p.raw).decode(),
    }


def text_column(blocks: Sequence[bytes]) -> Any:
    """One Arrow string array of the newline-terminated texts in ``blocks`` (see
    :class:`~labrecord.validation.jsonl.KeptTexts`), built over their bytes joined once:
    the offsets are the newline positions, so no Python object is made per line.  Each
    value keeps its closing newline, which a JSON reader skips as whitespace."""
    import numpy as np
    import pyarrow as pa

    data = b"".join(blocks)
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x0A)
    offsets = np.zeros(len(ends) + 1, np.int64)
    offsets[1:] = ends + 1
    return pa.Array.from_buffers(pa.large_string(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _lines(pending: Sequence[_Pending], name: str) -> Any:
    """``(run_id, json)`` rows of the decoded records of one file kind, as one Arrow table
    built from the kept bytes (:func:`text_column`)."""
    import numpy as np
    import pyarrow as pa

    kept = [(p.run_id, p.records[name]) for p in pending if name in p.records]
    counts = np.array([len(texts) for _, texts in kept], np.int64)
    run_ids = pa.array([run_id for run_id, _ in kept], pa.string()).take(np.repeat(np.arange(len(kept)), counts))
    texts = text_column([block for _, records in kept for block in records.blocks])
    return pa.table({"run_id": run_ids, "json": texts})


#: field -> (default the writer omits, event types that carry the field)
_EVENT_DEFAULTS = {"track": ("'native'", "choice"), "first": ("false", "choice"), "attempt": ("1", "confirm failure"),
                   "recoverable": ("true", "failure"), "irreversible": ("false", "violation"),
                   "delivered": ("true", "intervention")}


#: episode of every event: the last episode_start at or before it (episode_end keeps its own)
_EPISODE = ("coalesce(last_value(CASE WHEN type = 'episode_start' THEN episode END IGNORE NULLS) "
            "OVER (PARTITION BY run_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW), episode)")


def _structure(columns: Sequence[Column]) -> str:
    """The ``json_transform`` structure of JSON keys, typed as the corpus columns."""
    fields = ", ".join(f'"{c.name}": "{c.type.replace(" PRIMARY KEY", "")}"' for c in columns if c.name != "run_id")
    return "{" + fields + "}"


def _event_columns() -> dict[str, list[Column]]:
    """Event type -> the ``events`` columns its records can carry: the fields of its typed
    record (a canonical text holds no other key), without ``type`` itself."""
    from labrecord.models.events import EVENT_TYPES

    out = {}
    for tag, kind in EVENT_TYPES.items():
        names = {f.encode_name for f in msgspec.structs.fields(kind)}
        out[tag] = [c for c in EVENTS.columns if c.name in names]
    return out


def _event_value(tag: str, name: str) -> str:
    """A column of one event type's rows; a default the writer omitted (``omit_defaults``)
    is restored on the types that carry the field."""
    if name in _EVENT_DEFAULTS:
        default, types = _EVENT_DEFAULTS[name]
        return f'coalesce("{name}", {default})' if tag in types.split() else "NULL"
    return f'"{name}"'


def _load_jsonl(con: DuckDBPyConnection, table: str, lines: Any, spec: TableSpec) -> None:
    """Load the decoded records of one log kind (``(run_id, json)`` rows) into ``table``.

    The texts arrive as one Arrow batch (:func:`_lines`) and are parsed in vectorized
    ``json_transform`` calls into the corpus column types; a key that is absent becomes
    null.  Events are transformed type by type, each into the columns its record type
    has: a text's keys are its record's fields, so every row gets the values the one
    structure of all 49 columns gave it, at a fraction of the cost (the transform costs
    per row and column, and an event type carries a few of them).  The texts are the
    canonical encodings of records validation decoded and checked (no repeated key, no
    integer out of range), so DuckDB reads exactly the values the checks saw.
    """
    if not lines.num_rows:
        return
    con.register("_lines", lines)
    # materialized first: scanning and transforming in one pipeline ran several times slower
    if table == "events":
        con.execute("CREATE OR REPLACE TEMP TABLE _raw AS SELECT run_id, json->>'type' AS type, json FROM _lines")
    else:
        con.execute("CREATE OR REPLACE TEMP TABLE _raw AS SELECT run_id, json FROM _lines")
    con.unregister("_lines")
    columns = ", ".join(f'"{c.name}"' for c in spec.columns)
    if table != "events":
        names = [c.name for c in spec.columns if c.name != "run_id"]
        aliased = ", ".join(f'"{n}"' for n in names)
        con.execute(f"INSERT INTO {table} ({columns}) SELECT run_id, {aliased} FROM "
                    f"(SELECT run_id, unnest(json_transform(json, '{_structure(spec.columns)}')) FROM _raw)")
        con.execute("DROP TABLE _raw")
        return
    present = {row[0] for row in con.execute("SELECT DISTINCT type FROM _raw").fetchall()}
    kinds = _event_columns()
    if present - kinds.keys():
        # validation decodes every kept text into one of the known types
        raise LabrecordError(f"events of unknown type {sorted(map(str, present - kinds.keys()))!r}; refused")
    parts, carried = [], {"run_id", "type"}
    # only the known types are spliced into SQL
    for tag, own in kinds.items():
        if tag not in present:
            continue
        carried.update(c.name for c in own)
        values = ", ".join(f'{_event_value(tag, c.name)} AS "{c.name}"' for c in own)
        parts.append(f"SELECT run_id, '{tag}' AS type, {values} FROM (SELECT run_id, "
                     f"unnest(json_transform(json, '{_structure(own)}')) FROM _raw WHERE type = '{tag}')")
    typed = " UNION ALL BY NAME ".join(parts)
    select = ", ".join(_EPISODE + ' AS "episode"' if c.name == "episode" and "episode" in carried else
                       f'"{c.name}"' if c.name in carried else f'NULL AS "{c.name}"' for c in spec.columns)
    con.execute(f"INSERT INTO events ({columns}) SELECT {select} FROM ({typed})")
    con.execute("DROP TABLE _raw")


#: a measurement column of one of these DuckDB types is stored in a column of the other
#: without change of value; any other difference from the corpus column is refused
_WIDENS = {"TINYINT": {"SMALLINT", "INTEGER", "BIGINT", "DOUBLE"}, "SMALLINT": {"INTEGER", "BIGINT", "DOUBLE"},
           "INTEGER": {"BIGINT", "DOUBLE"}, "UTINYINT": {"SMALLINT", "INTEGER", "BIGINT", "DOUBLE"},
           "USMALLINT": {"INTEGER", "BIGINT", "DOUBLE"}, "UINTEGER": {"BIGINT", "DOUBLE"}, "FLOAT": {"DOUBLE"}}


def quote_identifier(name: str) -> str:
    """``name`` as a DuckDB identifier: a column name read from a file can hold quotes,
    semicolons or anything else, and is never spliced into SQL unquoted."""
    return '"' + name.replace('"', '""') + '"'


def _measurement_table(pending: Sequence[_Pending]) -> Any:
    """The checked measurement bytes of the batch, decoded once, with their run ids."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = []
    for p in pending:
        if p.measurements is None:
            continue
        table = pq.read_table(pa.BufferReader(p.measurements))
        tables.append(table.append_column("run_id", pa.array([p.run_id] * table.num_rows, pa.string())))
    if not tables:
        return None
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as error:
        raise LabrecordError(f"measurement columns disagree in type between runs: {excerpt(str(error), 200)}") from error


def _load_measurements(con: DuckDBPyConnection, pending: Sequence[_Pending]) -> None:
    table = _measurement_table(pending)
    if table is None:
        return
    con.register("_m", table)
    try:
        have = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() "
                                "WHERE table_name = 'measurements' AND NOT internal").fetchall())
        have_folded = {k.casefold(): k for k in have}
        for name, type_, *_ in con.execute("DESCRIBE SELECT * FROM _m").fetchall():
            stored = have_folded.get(name.casefold())
            if stored is None:
                # families carry different columns; the table grows to their union
                con.execute(f"ALTER TABLE measurements ADD COLUMN {quote_identifier(name)} {type_}")
            elif name != "run_id" and type_ != have[stored] and have[stored] not in _WIDENS.get(type_, ()):
                raise LabrecordError(f"measurement column {name!r} is {type_}, but the corpus stores it as "
                                     f"{have[stored]}; refused")
        con.execute("INSERT INTO measurements BY NAME SELECT * FROM _m")
    finally:
        con.unregister("_m")


def _load_scores(con: DuckDBPyConnection, pending: Sequence[_Pending]) -> None:
    lines = _lines(pending, SCORES_FILE)
    if not lines.num_rows:
        return
    con.register("_scores", lines)
    try:
        con.execute(
            "INSERT INTO final_scores SELECT run_id, j->>'status', coalesce(j->'metrics', '{}'), "
            "coalesce(j->'episodes', '[]'), j->>'created_at' FROM (SELECT run_id, json::JSON AS j FROM _scores)")
    finally:
        con.unregister("_scores")


_RUN_TABLES = ("events", "observations", "online_scores", "final_scores", "measurements", "runs")


def load_batch(con: DuckDBPyConnection, pending: Sequence[_Pending]) -> None:
    """Replace the listed runs in one transaction; on any error nothing of the batch stays.

    Raises :class:`StoreFailure` when the machine failed (a full disk), else
    :class:`LabrecordError` naming the batch."""
    import pyarrow as pa

    if not pending:
        return
    ingested_at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    con.execute("BEGIN TRANSACTION")
    try:
        rows = pa.Table.from_pylist([run_row(p, ingested_at) for p in pending])
        con.register("_run_rows", rows)
        con.execute("CREATE OR REPLACE TEMP TABLE _batch AS SELECT run_id FROM _run_rows")
        for table in _RUN_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM _batch)")
        names = ", ".join(f'"{c.name}"' for c in RUNS.columns)
        values = ", ".join(f'"{c.name}"' if c.name != "manifest" else "manifest::JSON" for c in RUNS.columns)
        con.execute(f"INSERT INTO runs ({names}) SELECT {values} FROM _run_rows")
        con.unregister("_run_rows")
        _load_jsonl(con, "events", _lines(pending, EVENTS_FILE), EVENTS)
        _load_jsonl(con, "observations", _lines(pending, OBSERVATIONS_FILE), OBSERVATIONS)
        _load_jsonl(con, "online_scores", _lines(pending, ONLINE_SCORES_FILE), ONLINE_SCORES)
        _load_scores(con, pending)
        _load_measurements(con, pending)
        con.execute("COMMIT")
    except Exception as error:
        rollback(con)
        where = pending[0].run_dir if len(pending) == 1 else pending[0].run_dir.parent
        what = "run" if len(pending) == 1 else f"bulk load of {len(pending)} run(s)"
        if machine_failure(error):
            raise StoreFailure(f"{where}: {what} could not be stored, nothing of it was kept (earlier batches "
                               f"are): {excerpt(str(error), 200)}") from error
        message = str(error) if isinstance(error, LabrecordError) else excerpt(str(error), 200)
        raise LabrecordError(f"{where}: {what} failed to load, nothing of it was kept: {message}") from error


def load_isolated(con: DuckDBPyConnection, pending: Sequence[_Pending], summary: IngestSummary) -> None:
    """:func:`load_batch`, and when the batch fails on its data, each run on its own: only
    the runs that still fail are refused, each with its reason (an ``invalid_runs`` row)."""
    try:
        load_batch(con, pending)
        return
    except StoreFailure:
        raise
    except LabrecordError as error:
        if len(pending) > 1:
            for p in pending:
                load_isolated(con, [p], summary)
            return
        failure = str(error)
    p = pending[0]
    for done in (summary.added, summary.replaced):
        if p.run_id in done:
            done.remove(p.run_id)
    summary.skipped[str(p.run_dir)] = [failure]
    document = _Document(p.manifest, p.raw)
    summary.invalid.append(invalid_run_row(p.run_dir, failure, document, p.content_hash, run_id=p.run_id))


@dataclass(frozen=True)
class _Document:
    manifest: RunManifest
    raw: dict[str, Any]


def ingest_populations(con: DuckDBPyConnection, root: Path, summary: IngestSummary) -> None:
    """Load ``root/populations/*.jsonl``; an invalid registry is skipped with its findings.

    Each registry is read once: validated, hashed and loaded from the same bytes (the
    records validation decoded).  A symbolic link in place of the folder is refused like
    a linked file, unless links are allowed (``--follow-symlinks``)."""
    import pyarrow as pa

    from labrecord.validation.files import validate_population_file
    from labrecord.validation.findings import Report

    folder = root / POPULATIONS_DIR
    problem = link_problem(folder)
    if problem is not None:
        summary.skipped[str(folder)] = [f"{folder}: {problem}"]
        return
    if not folder.is_dir():
        return
    existing = dict(con.execute("SELECT population, any_value(content_hash) FROM populations GROUP BY population").fetchall())
    columns = json_columns(POPULATIONS, ("population", "line", "content_hash"))
    for path in sorted(folder.glob("*.jsonl")):
        report = Report()
        info = validate_population_file(path, report)
        if info["data"] is None or report.errors:
            summary.skipped[str(path)] = [str(f) for f in report.errors]
            continue
        name, digest = path.stem, hashlib.blake2b(info["data"], digest_size=16).hexdigest()
        if existing.get(name) == digest:
            continue
        select = ", ".join(f'"{c}"' for c in columns)
        structure = "{" + ", ".join(f'"{k}": "{v}"' for k, v in columns.items()) + "}"
        texts = info["records"]
        lines = pa.table({"line": pa.array(range(1, len(texts) + 1), pa.int64()), "json": text_column(texts.blocks)})
        con.execute("BEGIN TRANSACTION")
        try:
            con.register("_registry", lines)
            con.execute("DELETE FROM populations WHERE population = ?", [name])
            con.execute(
                f"INSERT INTO populations (population, line, {select}, content_hash) "
                f"SELECT ?, line, {select}, ? FROM (SELECT line, unnest(json_transform(json, '{structure}')) "
                f"FROM _registry)", [name, digest])
            con.unregister("_registry")
            con.execute("COMMIT")
        except Exception as error:
            rollback(con)
            if machine_failure(error):
                raise StoreFailure(f"{path}: could not store the population, nothing of it was kept: "
                                   f"{excerpt(str(error), 200)}") from error
            summary.skipped[str(path)] = [f"{path}: could not load population: {excerpt(str(error))}"]
            continue
        summary.populations.append(name)


def _validate_all(run_dirs: list[Path], jobs: int | None) -> Iterator[Validated]:
    """Validation results in order; spread over processes for large ingests
    (:func:`labrecord.parallel.pool_workers`: validation decodes every line in Python and
    dominates the ingest time; the loads into DuckDB run in this process meanwhile)."""
    workers = parallel.pool_workers(len(run_dirs), jobs)
    return parallel.map(validate_for_load, run_dirs, workers=workers, chunksize=64)


def ingest_runs(runs_dir: str | os.PathLike[str], db: Any = None, *, batch_size: int = 2000,
                advance: Callable[[int], None] | None = None, jobs: int | None = None) -> IngestSummary:
    """Load every run below ``runs_dir`` (and its ``populations/``) into the corpus ``db``.

    ``db`` is a path to a DuckDB file (created if needed), ``None`` for the default
    ``corpus.duckdb``, or an open connection.  ``jobs`` validation processes (default:
    every usable CPU; a pool starts only for :data:`labrecord.parallel.POOL_THRESHOLD`
    runs or more, and the result is the same for any ``jobs``).
    Returns an :class:`IngestSummary`.  A full disk
    (or another failure of the machine) raises one :class:`LabrecordError`; what was
    committed before it stays, nothing half-written does.
    """
    con = db if hasattr(db, "execute") else connect(db or "corpus.duckdb")
    root = Path(runs_dir).resolve()
    summary = IngestSummary(db=str(db) if not hasattr(db, "execute") else "<connection>")
    # populations first, committed before any run: an ingest killed part-way never leaves
    # runs whose denominators are missing
    ingest_populations(con, root, summary)
    existing = dict(con.execute("SELECT run_id, content_hash FROM runs").fetchall())
    candidates: list[tuple[Path, str | None]] = []
    run_dirs = find_run_dirs(root)
    peeked = {run_dir: _peek_run_id(run_dir) for run_dir in run_dirs}
    problems = identity_problems(run_dirs, peeked)
    for run_dir in run_dirs:
        run_id = peeked[run_dir]
        # the hash reads every file: only worth it for a run the corpus already holds
        if run_id is not None and run_dir not in problems and run_id in existing \
                and existing[run_id] == content_hash(run_dir):
            summary.unchanged.append(run_id)
            if advance:
                advance(1)
        else:
            candidates.append((run_dir, run_id))
    pending: list[_Pending] = []
    seen: dict[str, Path] = {}
    results = _validate_all([d for d, _ in candidates], jobs)
    for (run_dir, run_id), validated in zip(candidates, results):
        errors = validated.errors
        if run_dir in problems:
            errors = [problems[run_dir], *errors]
        _consider(run_dir, run_id, errors, validated, existing, seen, pending, summary)
        if advance:
            advance(1)
        if len(pending) >= batch_size:
            load_isolated(con, pending, summary)
            pending = []
    load_isolated(con, pending, summary)
    record_invalid_runs(con, [d for d, _ in candidates], summary.invalid)
    return summary


def _consider(run_dir: Path, peeked: str | None, errors: list[str], validated: Validated, existing: dict[str, str],
              seen: dict[str, Path], pending: list[_Pending], summary: IngestSummary) -> None:
    document = validated.document
    if not errors and document is not None and document.manifest.run_id != run_dir.name:
        # the identity checks read run.json before validation did: it changed in between
        errors = [f"{run_dir / RUN_FILE} run_id: {document.manifest.run_id!r} differs from the folder name "
                  f"{run_dir.name!r} (run.json changed while it was read); nothing is stored under an id its "
                  "folder does not carry"]
    if not errors and document is not None and document.manifest.run_id in seen:
        errors = [f"{run_dir / RUN_FILE} run_id: run_id {document.manifest.run_id!r} also used by {seen[document.manifest.run_id]}"]
    if errors or document is None:
        summary.skipped[str(run_dir)] = errors or [f"{run_dir / RUN_FILE}: unreadable manifest"]
        summary.invalid.append(invalid_run_row(run_dir, summary.skipped[str(run_dir)][0], document, validated.digest,
                                               run_id=run_dir.name if peeked is not None else None))
        return
    run_id = document.manifest.run_id
    seen[run_id] = run_dir
    (summary.replaced if run_id in existing else summary.added).append(run_id)
    pending.append(_Pending(run_id, run_dir, validated.digest, document.manifest, document.raw, validated.records,
                            validated.measurements))


# -- Run identity and invalid runs (Labference sec. 7.4) --------------------------------------
# A run directory that cannot be scored keeps one ``invalid_runs`` row (id, readable
# identity, reason), so the scorer counts it as an unresolved member; a run re-ingested in
# an invalid state has its old data replaced by that row.


def identity_problems(run_dirs: Sequence[Path], peeked: dict[Path, str | None] | None = None) -> dict[Path, str]:
    """Run directories refused for their identity: a folder whose name differs from its
    run.json ``run_id``, and every folder of a ``run_id`` claimed more than once (each
    message names all the claiming paths).  ``peeked``: the run.json ``run_id`` of each
    folder when already read."""
    claims: dict[str, list[Path]] = {}
    problems: dict[Path, str] = {}
    for run_dir in run_dirs:
        run_id = peeked[run_dir] if peeked is not None else _peek_run_id(run_dir)
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


_UNREAD = object()


def invalid_run_row(run_dir: Path, reason: str, document: Any, digest: str, ingested_at: str = "", *,
                    run_id: Any = _UNREAD) -> dict[str, Any]:
    """The ``invalid_runs`` row of a refused run directory: its folder id when run.json names
    one (``run_id``, read from run.json when not given), the identity columns when run.json
    decodes, and the reason."""
    row: dict[str, Any] = {c.name: None for c in INVALID_RUNS.columns}
    readable = document is not None
    if readable:
        full = manifest_row(document.manifest, document.raw, run_dir)
        row.update({k: full[k] for k in row if k in full})
    if run_id is _UNREAD:
        run_id = run_dir.name if _peek_run_id(run_dir) is not None else None
    row.update(run_dir=str(run_dir), run_id=run_id,
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
        rollback(con)
        raise LabrecordError(f"could not record {len(rows)} invalid run(s), nothing of it was kept: "
                             f"{excerpt(str(error), 200)}") from error


def runs_to_audit(con: DuckDBPyConnection) -> list[tuple[str, str, str]]:
    """``(run_id, run_dir, content_hash)`` of every run without a verdict for its current content."""
    return con.execute("SELECT r.run_id, r.run_dir, r.content_hash FROM runs r LEFT JOIN audits a USING (run_id) "
                       "WHERE a.content_hash IS DISTINCT FROM r.content_hash ORDER BY r.run_id").fetchall()


#: audit checks that say the run's files could not be read as they were loaded (moved,
#: unreadable, changed since): such a verdict says nothing of the run and is not stored
UNREAD_CHECKS = ("unreadable",)


def record_audits(con: DuckDBPyConnection, verdicts: Sequence[dict[str, Any]]) -> None:
    """Store replay-audit verdicts (one ``audits`` row each, replacing an earlier one).

    A verdict that failed only because the files could not be read (check
    :data:`UNREAD_CHECKS`) is not stored: the run stays without a verdict, to be audited
    again by the next command that can read it."""
    verdicts = [v for v in verdicts if v.get("check_name") not in UNREAD_CHECKS]
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
    except Exception as error:
        if machine_failure(error):
            raise StoreFailure(f"could not store {len(verdicts)} audit verdict(s): {excerpt(str(error), 200)}") from error
        raise
    finally:
        con.unregister("_verdicts")
