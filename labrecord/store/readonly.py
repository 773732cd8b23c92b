"""The locked DuckDB set-up every command that reads a corpus or a snapshot runs on, and
the statement check of ``labrecord sql``.

:func:`lock` is applied to every connection that opens data labrecord did not just write
itself (a corpus file, a Parquet snapshot, the in-memory corpus a runs folder was ingested
into); :func:`labrecord.store.open_source` and ``connect(db, read_only=True)`` call it, and
so must any new command that reads a corpus (the comparison commands included).  After it:

* external access is off: no view, macro or query of the corpus can read or write a file
  outside it (``read_text``, ``read_csv``, ``glob``, ``ATTACH``, ``COPY … TO``), except
  under the folders named in ``allowed`` (a snapshot's own folder; a snapshot being
  written);
* DuckDB's temporary folder is a new private folder of its own (mode 0700, removed at
  exit), not ``<db>.tmp`` or ``./.tmp`` where others could leave files to read;
* extensions are neither installed nor loaded automatically;
* the configuration is locked: no statement can turn any of this back.

``labrecord sql`` adds a statement check (:func:`read_statements`): every statement is
parsed and anything but a read is refused: ``SELECT`` in all its forms (``WITH``,
``FROM``, ``VALUES``, ``DESCRIBE``, ``SHOW``, ``SUMMARIZE``) and ``EXPLAIN`` of such a read.
This stops ``COPY … TO``, ``EXPORT DATABASE``, ``ATTACH``, ``INSTALL``/``LOAD``,
``CREATE``/``DROP``, ``SET`` and ``PRAGMA``; settings alone do not suffice (``COPY … TO``
may write into an allowed folder), nor does parsing alone (a ``SELECT`` can call
``read_text``).  :func:`run_read_only` bounds a query by a time limit and a row cap.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: statement types that only read
READ_TYPES = ("SELECT",)
READ_FORMS = "SELECT, WITH … SELECT, FROM …, VALUES, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN [ANALYZE] of those"
#: ``EXPLAIN``, ``EXPLAIN ANALYZE`` and their options in parentheses, before the explained statement
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(ANALYZE\s+)?(\((?:[^()'\"]|'[^']*'|\"[^\"]*\")*\)\s*)?", re.IGNORECASE)
#: default bounds of one ``labrecord sql`` query
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_ROWS = 100_000


def first_line(error: BaseException) -> str:
    """The first line of an error's message (DuckDB's messages continue with context lines)."""
    text = str(error)
    return text.splitlines()[0] if text.strip() else type(error).__name__


def _private_temp_dir() -> str:
    folder = tempfile.mkdtemp(prefix="labrecord-duckdb-")  # mode 0700, a new name
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def setting(con: DuckDBPyConnection, name: str) -> Any:
    """The current value of one DuckDB setting of ``con``."""
    return con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0]


def lock(con: DuckDBPyConnection, allowed: Iterable[str | os.PathLike[str]] = ()) -> DuckDBPyConnection:
    """Lock ``con``: external access off except under ``allowed`` folders, a private
    temporary folder, no automatic extensions, configuration locked.  Returns ``con``.

    A connection whose database is already locked (one file opened twice in a process
    shares one DuckDB instance) is checked to have external access off and left as it is.
    """
    import duckdb

    try:
        if setting(con, "lock_configuration"):
            if setting(con, "enable_external_access"):
                raise LabrecordError("a DuckDB connection was locked with external access on; refusing to use it")
            return con
        folders = [str(Path(p).resolve()).rstrip("/") + "/" for p in allowed]
        con.execute(f"SET temp_directory = {_sql_text(_private_temp_dir())}")
        con.execute(f"SET allowed_directories = [{', '.join(_sql_text(f) for f in folders)}]")
        for name in ("enable_external_access", "autoinstall_known_extensions", "autoload_known_extensions"):
            con.execute(f"SET {name} = false")
        con.execute("SET lock_configuration = true")
    except duckdb.Error as error:
        raise LabrecordError(f"cannot lock the DuckDB connection: {first_line(error)}") from error
    return con


def read_statements(query: str) -> list[str]:
    """The statements of ``query``, each checked to be a read; raises naming the first that is not."""
    texts = []
    for number, (kind, text) in enumerate(_statements(query), 1):
        if kind == "EXPLAIN":
            # EXPLAIN ANALYZE runs what it explains: the explained statement must be a read too
            inner = _statements(_EXPLAIN.sub("", text, count=1))
            if len(inner) != 1 or inner[0][0] not in READ_TYPES:
                kind = "EXPLAIN of " + (inner[0][0] if inner else "nothing")
            else:
                kind = "SELECT"
        if kind not in READ_TYPES:
            raise LabrecordError(f"statement {number} is {kind}: labrecord sql only reads ({READ_FORMS}); "
                                 "nothing was run")
        texts.append(text)
    if not texts:
        raise LabrecordError("empty query: give a SELECT statement")
    return texts


def _statements(query: str) -> list[tuple[str, str]]:
    """``(type name, text)`` of each statement DuckDB's parser finds; a parser error is one line."""
    import duckdb

    try:
        return [(s.type.name, s.query) for s in duckdb.extract_statements(query)]
    except (duckdb.Error, RuntimeError, ValueError) as error:
        raise LabrecordError(f"query failed: {first_line(error)}") from error


def run_read_only(con: DuckDBPyConnection, query: str, *, timeout_s: float | None = DEFAULT_TIMEOUT_S,
                  max_rows: int | None = DEFAULT_MAX_ROWS) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run the read statements of ``query``; returns the columns and rows of the last one.

    The whole query is interrupted after ``timeout_s`` seconds, and a result of more than
    ``max_rows`` rows is refused (only ``max_rows + 1`` are ever fetched); ``None`` lifts
    either bound.
    """
    import duckdb

    texts = read_statements(query)
    columns: list[str] = []
    rows: list[tuple[Any, ...]] = []
    expired = threading.Event()

    def interrupt() -> None:
        expired.set()
        con.interrupt()

    timer = threading.Timer(timeout_s, interrupt) if timeout_s is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        for text in texts:
            cursor = con.execute(text)
            columns = [d[0] for d in cursor.description] if cursor.description else []
            if not columns:
                rows = []
            elif max_rows is None:
                rows = cursor.fetchall()
            else:
                rows = cursor.fetchmany(max_rows + 1)
                if len(rows) > max_rows:
                    raise LabrecordError(f"query returned more than {max_rows} rows; add a LIMIT or raise --max-rows")
    except duckdb.Error as error:
        if expired.is_set():
            raise LabrecordError(f"query stopped after the {timeout_s:g} s time limit; "
                                 "simplify it or raise --timeout-s") from error
        raise LabrecordError(f"query failed: {first_line(error)}") from error
    finally:
        if timer is not None:
            timer.cancel()
    return columns, rows
