"""``labrecord sql``: queries that can only read the corpus.

Two locks, each enough for most attacks and together for all of them:

* every statement is parsed (DuckDB's own statement extraction gives its type) and
  anything but a read is refused: ``SELECT`` in all its forms (``WITH``, ``FROM``,
  ``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``) and ``EXPLAIN`` of such a read.
  This stops ``COPY … TO``, ``EXPORT DATABASE``, ``ATTACH``, ``INSTALL``/``LOAD``,
  ``CREATE``/``DROP``, ``SET`` and ``PRAGMA``;
* the connection is opened with external access off (a corpus file) or limited to the
  snapshot folder (``--parquet``), and its configuration locked, so a read cannot reach
  other files either: ``read_text('/etc/passwd')`` and ``glob('/root/*')`` fail.

Settings alone do not suffice (with ``allowed_directories`` set to the snapshot,
``COPY … TO`` can still write into it), nor does parsing alone (a ``SELECT`` can call
``read_text``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: statement types that only read
READ_TYPES = ("SELECT",)
READ_FORMS = "SELECT, WITH … SELECT, FROM …, VALUES, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN [ANALYZE] of those"
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(ANALYZE\s+)?", re.IGNORECASE)


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def read_statements(query: str) -> list[str]:
    """The statements of ``query``, each checked to be a read; raises naming the first that is not."""
    import duckdb

    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as error:
        raise LabrecordError(f"query failed: {_first_line(error)}") from error
    if not statements:
        raise LabrecordError("empty query: give a SELECT statement")
    texts = []
    for number, statement in enumerate(statements, 1):
        kind = statement.type.name
        text = statement.query
        if kind == "EXPLAIN":
            # EXPLAIN ANALYZE runs what it explains: the explained statement must be a read too
            inner = duckdb.extract_statements(_EXPLAIN.sub("", text, count=1))
            if len(inner) != 1 or inner[0].type.name not in READ_TYPES:
                kind = "EXPLAIN of " + (inner[0].type.name if inner else "nothing")
            else:
                kind = "SELECT"
        if kind not in READ_TYPES:
            raise LabrecordError(f"statement {number} is {kind}: labrecord sql only reads ({READ_FORMS}); "
                                 "nothing was run")
        texts.append(text)
    return texts


def open_read_only(db: str | os.PathLike[str] | None = None, parquet_dir: str | os.PathLike[str] | None = None) -> DuckDBPyConnection:
    """A connection to a corpus file or a Parquet snapshot that cannot touch other files."""
    import duckdb

    if parquet_dir is not None:
        from labrecord.store.corpus import open_snapshot

        con = open_snapshot(parquet_dir)
        root = str(Path(parquet_dir).resolve()).replace("'", "''")
        con.execute(f"SET allowed_directories = ['{root}/']")
        for name, value in _LOCKED.items():
            con.execute(f"SET {name} = {str(value).lower()}")
        return con
    if db is None or not Path(db).is_file():
        raise LabrecordError(f"{db}: no such corpus file (create it with 'labrecord ingest RUNS_DIR --db {db}')")
    try:
        # settings at open time: a file's database instance is shared within a process
        con = duckdb.connect(str(db), read_only=True, config=dict(_LOCKED))
    except duckdb.Error as error:
        raise LabrecordError(f"{db}: not a readable DuckDB corpus: {_first_line(error)}") from error
    _refresh_views(con)
    return con


#: connection settings of a read-only query, in this order (the lock comes last)
_LOCKED = {"enable_external_access": False, "autoinstall_known_extensions": False,
           "autoload_known_extensions": False, "lock_configuration": True}


def _refresh_views(con: DuckDBPyConnection) -> None:
    """Connection-local run views over an older corpus; none for a corpus without runs (reactions only)."""
    from labrecord.store.schema import create_views, stale_views

    tables = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()}
    if {"runs", "events"} <= tables and stale_views(con):
        create_views(con, temp=True)


def run_read_only(con: DuckDBPyConnection, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run the read statements of ``query``; returns the columns and rows of the last one."""
    import duckdb

    columns: list[str] = []
    rows: list[tuple[Any, ...]] = []
    for text in read_statements(query):
        try:
            cursor = con.execute(text)
            columns = [d[0] for d in cursor.description] if cursor.description else []
            rows = cursor.fetchall() if columns else []
        except duckdb.Error as error:
            raise LabrecordError(f"query failed: {_first_line(error)}") from error
    return columns, rows
