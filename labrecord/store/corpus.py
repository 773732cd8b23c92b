"""Opening a corpus (a DuckDB file or in memory) and its Parquet snapshots.

:func:`connect` is the one way to open a corpus: it creates or migrates every registered
table (:mod:`labrecord.store.schema`), run and reaction tables alike (or, for an in-memory
corpus of reaction records, the reaction tables alone).
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from labrecord.errors import LabrecordError
from labrecord.fileio import atomic_path
from labrecord.store.readonly import first_line, lock, setting
from labrecord.store.schema import TABLES, TableSpec, create_schema, create_views, missing_columns, missing_tables, stale_views

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: tables written to a snapshot partitioned by task family and system
PARTITIONED = ("runs", "events", "observations", "online_scores", "final_scores", "measurements")


def connect(db_path: str | os.PathLike[str] | None = None, *, read_only: bool = False, locked: bool = False,
            allowed: Iterable[str | os.PathLike[str]] = (), tables: Sequence[TableSpec] | None = None) -> DuckDBPyConnection:
    """Open (creating if needed) a corpus file with every registered table; ``None`` gives
    an in-memory corpus.

    ``read_only`` opens an existing file without changing it: tables an older release did
    not write and stale views are shadowed by connection-local (temporary) ones.  A
    read-only connection is always locked (:func:`labrecord.store.readonly.lock`: its
    views and macros cannot reach files outside it and ``allowed``); ``locked`` locks a
    writable one too, for commands that store only what Python hands them (the reaction
    commands).  Ingesting runs needs DuckDB's file readers, so its connection is not.

    ``tables`` (writable connections) creates those registered tables alone, without the
    views: ``tables=RXN_TABLES`` is the in-memory corpus of a reaction command that stores
    nothing, opened in a fraction of the time the whole schema's comments take.
    """
    import duckdb

    if read_only:
        if db_path is None or not Path(db_path).is_file():
            raise LabrecordError(f"{db_path}: no such corpus file (create it with 'labrecord ingest RUNS_DIR --db {db_path}')")
        try:
            con = duckdb.connect(str(db_path), read_only=True)
        except duckdb.Error as error:
            raise LabrecordError(f"{db_path}: not a readable DuckDB corpus: {first_line(error)}") from error
        lock(con, allowed)
        try:
            for spec in missing_tables(con):
                con.execute(spec.ddl(temp=True))
            _shadow_missing_columns(con)
            if stale_views(con):
                create_views(con, temp=True)
            return con
        except duckdb.Error as error:
            con.close()
            raise LabrecordError(f"{db_path}: not a readable DuckDB corpus: {first_line(error)}") from error
    try:
        con = duckdb.connect(":memory:" if db_path is None else str(db_path))
    except duckdb.Error as error:  # locked by another process, not a DuckDB file, …
        raise LabrecordError(f"{db_path}: cannot open DuckDB corpus: {first_line(error)}") from error
    if locked:
        lock(con, allowed)
    try:
        create_schema(con, tables)
    except duckdb.Error as error:
        con.close()
        raise LabrecordError(f"{db_path}: cannot use DuckDB corpus: {first_line(error)}") from error
    return con


def _shadow_missing_columns(con: DuckDBPyConnection) -> None:
    """A read-only corpus of an older release: each table lacking registered columns is
    shadowed by a connection-local view that adds them as nulls (the file is not changed)."""
    missing = missing_columns(con)
    if not missing:
        return
    catalog = con.execute("SELECT current_database()").fetchall()[0][0].replace('"', '""')
    for name in sorted({spec.name for spec, _ in missing}):
        extra = ", ".join(f'NULL::{c.type.replace(" PRIMARY KEY", "")} AS "{c.name}"' for spec, c in missing if spec.name == name)
        con.execute(f'CREATE TEMP VIEW {name} AS SELECT *, {extra} FROM "{catalog}".main.{name}')


#: DuckDB error kinds that say the machine failed (disk, memory), not the data
_MACHINE_ERRORS = ("IOException", "OutOfMemoryException", "FatalException", "InternalException")
#: words of a DuckDB error of another kind (a commit that could not write its log) that
#: still name the machine
_MACHINE_WORDS = ("No space left", "Disk quota", "Failed to commit", "Could not write file", "out of memory",
                  "database has been invalidated", "Read-only file system")


class StoreFailure(LabrecordError):
    """The store could not take a write for a reason of the machine (a full disk, no memory)."""


def machine_failure(error: BaseException) -> bool:
    """Whether ``error`` comes from the machine (a full disk, no memory) rather than the data."""
    if isinstance(error, (OSError, MemoryError, StoreFailure)) or type(error).__name__ in _MACHINE_ERRORS:
        return True
    text = str(error)
    return "duckdb" in type(error).__module__ and any(word in text for word in _MACHINE_WORDS)


def rollback(con: DuckDBPyConnection) -> None:
    """Roll back the open transaction; a connection the failure already closed is left as it is."""
    try:
        con.execute("ROLLBACK")
    except Exception:  # noqa: BLE001 - the failure being reported is the one that matters
        pass


def open_snapshot(parquet_dir: str | os.PathLike[str]) -> DuckDBPyConnection:
    """An in-memory connection whose tables are views over a Parquet snapshot.

    The scorers run on it unchanged: every table name of the corpus is a view with the
    same columns (the Hive partition columns ``family``/``system_name`` are dropped again
    where they are not the table's own columns).  The connection is locked to the
    snapshot's folder (:func:`labrecord.store.readonly.lock`), and a symbolic link inside
    the folder is refused unless links are allowed (``--follow-symlinks``): a link could
    otherwise lead DuckDB's readers outside it.
    """
    import duckdb

    root = Path(parquet_dir)
    if not (root / "runs").is_dir():
        raise LabrecordError(f"{root}: not a labrecord Parquet snapshot (no runs/ folder)")
    _refuse_links(root)
    con = lock(duckdb.connect(":memory:"), [root])
    try:
        for table in TABLES:
            if table.name not in PARTITIONED and not (root / f"{table.name}.parquet").is_file():
                con.execute(table.ddl())  # a snapshot of an older release: the table is empty
                continue
            source = _snapshot_source(root, table.name)
            present = _snapshot_columns(con, source, table.name)
            # a snapshot of an older release lacks the columns added since: they read as null
            absent = [f'NULL::{c.type.replace(" PRIMARY KEY", "")} AS "{c.name}"' for c in table.columns if c.name not in present]
            names = ", ".join([f'"{c}"' for c in present] + absent)
            con.execute(f"CREATE VIEW {table.name} AS SELECT {names} FROM {source}")
        create_views(con)
    except duckdb.Error as error:
        con.close()
        # e.g. a folder whose runs/ holds run directories rather than a snapshot's partitions
        raise LabrecordError(f"{root}: not a readable labrecord snapshot ({first_line(error)}); a runs folder is "
                             "ingested first: labrecord ingest RUNS_DIR --db corpus.duckdb") from error
    return con


def _refuse_links(root: Path) -> None:
    from labrecord.safeio import link_problem

    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            problem = link_problem(Path(folder) / name)
            if problem is not None:
                raise LabrecordError(f"{Path(folder) / name}: {problem}")


def _snapshot_source(root: Path, name: str) -> str:
    path = str((root / name).resolve()).replace("'", "''")
    if name in PARTITIONED:
        if not any((root / name).rglob("*.parquet")):
            return f"(SELECT * FROM '{str(root.resolve())}/_empty/{name}.parquet')"
        return (f"read_parquet('{path}/**/*.parquet', hive_partitioning=true, union_by_name=true, "
                "hive_types={'family': VARCHAR, 'system_name': VARCHAR})")
    if not (root / f"{name}.parquet").is_file():
        # a snapshot written before this table existed: an empty relation with its columns
        spec = next(t for t in TABLES if t.name == name)
        columns = ", ".join(f'NULL::{c.type.replace(" PRIMARY KEY", "")} AS "{c.name}"' for c in spec.columns)
        return f"(SELECT {columns} WHERE false)"
    return f"read_parquet('{path}.parquet')"


def _snapshot_columns(con: DuckDBPyConnection, source: str, table: str) -> list[str]:
    columns = [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    own = {c.name for spec in TABLES if spec.name == table for c in spec.columns}
    # partition columns come back from the folder names; keep them only where they belong
    return [c for c in columns if c not in ("family", "system_name") or c in own]


def write_snapshot(con: DuckDBPyConnection | str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> dict[str, int]:
    """Write every corpus table as Parquet under ``out_dir``; run tables Hive-partitioned by
    ``family`` and ``system_name``.  Returns rows written per table.

    ``con`` is an open connection, or the path of a corpus file: that file is then opened
    read-only and locked, with only the new snapshot's temporary folder writable (what
    ``labrecord snapshot`` does, so a view in a foreign corpus cannot read local files
    into the snapshot).  A locked connection (``connect(db, read_only=True)``) writes the
    tables in its private temporary folder, the one place it may write, and they are
    moved into place from there.
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise LabrecordError(f"{out}: snapshot folder exists and is not empty; choose a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    # written beside ``out`` and renamed into place: a crash (or a full disk) leaves no half snapshot
    try:
        _write_snapshot(con, out, counts)
    except Exception as error:
        cause = error.__cause__ if isinstance(error, LabrecordError) and error.__cause__ is not None else error
        if machine_failure(cause) and not isinstance(cause, StoreFailure):
            raise StoreFailure(f"{out}: snapshot could not be written, nothing of it was kept: {first_line(cause)}") from error
        raise
    return counts


def _write_snapshot(con: DuckDBPyConnection | str | os.PathLike[str], out: Path, counts: dict[str, int]) -> None:
    with atomic_path(out, folder=True) as tmp:
        if isinstance(con, (str, os.PathLike)):
            opened = connect(con, read_only=True, allowed=[tmp])
            try:
                _write_tables(opened, tmp, counts)
            finally:
                opened.close()
        elif setting(con, "lock_configuration"):
            # a locked connection may write only in its own private temporary folder:
            # the tables are written there, then moved beside ``out``
            staging = Path(tempfile.mkdtemp(prefix="snapshot-", dir=setting(con, "temp_directory")))
            try:
                _write_tables(con, staging, counts)
                for child in staging.iterdir():
                    shutil.move(str(child), str(tmp / child.name))
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        else:
            _write_tables(con, tmp, counts)


def _write_tables(con: DuckDBPyConnection, tmp: Path, counts: dict[str, int]) -> None:
    import duckdb

    (tmp / "_empty").mkdir()
    root = str(tmp.resolve()).replace("'", "''")
    for table in TABLES:
        try:
            counts[table.name] = con.execute(f"SELECT count(*) FROM {table.name}").fetchall()[0][0]
            target = f"{root}/{table.name}"
            if table.name in PARTITIONED:
                # empty tables still leave a typed file so the snapshot reopens with all columns
                con.execute(f"COPY (SELECT * FROM {table.name} LIMIT 0) TO '{root}/_empty/{table.name}.parquet' (FORMAT parquet)")
                if counts[table.name] == 0:
                    continue
                select = "SELECT * FROM runs" if table.name == "runs" else (
                    f"SELECT t.*, r.family, r.system_name FROM {table.name} t JOIN runs r USING (run_id)")
                con.execute(f"COPY ({select}) TO '{target}' (FORMAT parquet, PARTITION_BY (family, system_name), OVERWRITE_OR_IGNORE)")
            else:
                con.execute(f"COPY {table.name} TO '{target}.parquet' (FORMAT parquet)")
        except duckdb.Error as error:
            raise LabrecordError(f"table {table.name}: cannot write to the snapshot: {first_line(error)}") from error


def schema_rows(con: DuckDBPyConnection) -> list[tuple[str, str, str, str, str]]:
    """``(kind, relation, column, type, comment)`` for every user table and view present."""
    return con.execute(
        "SELECT CASE WHEN v.view_name IS NULL THEN 'table' ELSE 'view' END, c.table_name, c.column_name, c.data_type, "
        "coalesce(c.comment, '') FROM duckdb_columns() c "
        "LEFT JOIN duckdb_views() v ON v.view_name = c.table_name AND v.schema_name = c.schema_name "
        "WHERE NOT c.internal AND c.schema_name = 'main' AND c.table_name NOT LIKE '\\_%' ESCAPE '\\' "
        "ORDER BY c.table_name, c.column_index"
    ).fetchall()
