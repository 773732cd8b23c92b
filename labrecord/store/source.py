"""Opening whatever a command was given: a corpus file, a runs folder or a Parquet snapshot."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError
from labrecord.store.corpus import connect, open_snapshot
from labrecord.store.ingest import ingest_runs

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection


def open_source(source: str | os.PathLike[str], *, parquet: bool = False) -> tuple[DuckDBPyConnection, str, Any]:
    """Open whatever a command was given: a corpus file, a runs folder or a snapshot.

    Returns ``(connection, kind, summary)`` with kind ``db``, ``runs`` or ``parquet``.  A
    runs folder is ingested into an in-memory corpus first; ``summary`` is then its
    :class:`~labrecord.store.ingest.IngestSummary` (skipped runs and their findings),
    else ``None``.
    """
    path = Path(source)
    if parquet:
        return open_snapshot(path), "parquet", None
    if path.is_file():
        return connect(path, read_only=True), "db", None
    if path.is_dir():
        if (path / "runs").is_dir() and any((path / "runs").glob("family=*")):
            return open_snapshot(path), "parquet", None
        con = connect(None)
        return con, "runs", ingest_runs(path, con)
    raise LabrecordError(f"{path}: no such corpus file or runs folder")
