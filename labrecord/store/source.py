"""Opening whatever a command was given: a corpus file, a runs folder or a Parquet snapshot.

:func:`open_source` is the one entry of every command that reads stored runs (``score``,
``report``, ``sql``, ``snapshot`` and any command comparing corpora): whatever it returns
is locked (:func:`labrecord.store.readonly.lock`), so nothing inside a foreign corpus or
snapshot reaches files outside it.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError
from labrecord.store.corpus import connect, open_snapshot
from labrecord.store.ingest import ingest_runs
from labrecord.store.readonly import lock

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection


def open_source(source: str | os.PathLike[str], *, parquet: bool = False) -> tuple[DuckDBPyConnection, str, Any]:
    """Open whatever a command was given: a corpus file, a runs folder or a snapshot.

    Returns ``(connection, kind, summary)`` with kind ``db``, ``runs`` or ``parquet``.  A
    runs folder is ingested into an in-memory corpus first; ``summary`` is then its
    :class:`~labrecord.store.ingest.IngestSummary` (skipped runs and their findings),
    else ``None``.  The connection is locked in every case (a runs folder's corpus once
    the ingest has read its files).
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
        summary = ingest_runs(path, con)
        return lock(con), "runs", summary
    raise LabrecordError(f"{path}: no such corpus file or runs folder")


def input_paths(source: str | os.PathLike[str], *, parquet: bool = False) -> list[Path]:
    """What :func:`open_source` reads from ``source``, for
    :func:`labrecord.safeio.check_apart`: a corpus file (and its write-ahead log), the
    entries of a snapshot folder, or the run folders and population registries of a runs
    folder.  A runs folder itself is not an input: ``scores.json`` may sit at its top."""
    from labrecord.rundir import POPULATIONS_DIR, find_run_dirs

    path = Path(source)
    if path.is_file() or not path.exists():
        return [path, path.with_name(path.name + ".wal")]
    if parquet or ((path / "runs").is_dir() and any((path / "runs").glob("family=*"))):
        return sorted(child for child in path.iterdir() if child.name != "scores.json")
    return [*find_run_dirs(path), path / POPULATIONS_DIR]
