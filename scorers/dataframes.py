"""A corpus as polars DataFrames: the front door for notebooks.

:class:`Corpus` opens a corpus file (``.duckdb``) or a Parquet snapshot folder read-only,
through the same locked connection as ``labrecord sql``
(:func:`labrecord.store.open_source`), and hands back polars frames::

    import labrecord

    with labrecord.Corpus("corpus.duckdb") as corpus:      # or a snapshot folder
        runs = corpus.runs()                              # one row per run
        events = corpus.events(run_id="r1")               # its events in seq order
        episodes = corpus.episodes()                      # completion flags and counts
        scores = corpus.scores(seed=0, resamples=1000)    # one row per group and metric
        corpus.sql("SELECT system_name, count(*) AS runs FROM runs GROUP BY ALL")

The table frames come from DuckDB's Arrow output without a copy through Python rows
(``relation.pl()``); the scores are the numbers of ``labrecord score``, one row each.
polars and duckdb load when a corpus is opened, not when ``labrecord`` is imported.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError
from labrecord.scorers.identity import IDENTITY_FIELDS
from labrecord.scorers.present import is_bound

if TYPE_CHECKING:
    import polars as pl
    from duckdb import DuckDBPyConnection

#: columns of :meth:`Corpus.scores`, in order, with their polars type names
SCORE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("group", "Int64"), *((name, "String") for name in IDENTITY_FIELDS), ("metric", "String"), ("value", "Float64"), ("num", "Float64"), ("den", "Float64"), ("n", "Int64"),
    ("ci_low", "Float64"), ("ci_high", "Float64"), ("lower", "Float64"), ("upper", "Float64"),
    ("resolved", "Int64"), ("registered", "Int64"),
)


class Corpus:
    """A corpus file or a Parquet snapshot folder, opened read-only.

    ``path`` is a ``.duckdb`` file written by ``labrecord ingest`` or a folder written by
    ``labrecord snapshot``.  A path that is neither raises :class:`LabrecordError`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        import duckdb

        from labrecord.store import open_source

        self.path = Path(path)
        self.kind = "parquet" if self.path.is_dir() else "db"
        try:
            self._con: DuckDBPyConnection | None = (
                open_source(self.path, parquet=self.kind == "parquet")[0])
        except duckdb.Error as error:
            # e.g. a folder whose runs/ holds run directories rather than a snapshot's partitions
            raise LabrecordError(f"{self.path}: not a readable labrecord snapshot "
                                 f"({str(error).splitlines()[0]}); a runs folder is ingested first: "
                                 f"labrecord ingest RUNS_DIR --db corpus.duckdb") from error

    # -- connection --------------------------------------------------------------------
    @property
    def con(self) -> DuckDBPyConnection:
        """The read-only DuckDB connection (for queries the methods do not cover)."""
        if self._con is None:
            raise LabrecordError(f"{self.path}: corpus is closed")
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def __enter__(self) -> Corpus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Corpus({str(self.path)!r}, kind={self.kind!r})"

    # -- frames ------------------------------------------------------------------------
    def _frame(self, query: str, params: list[Any] | None = None) -> pl.DataFrame:
        import duckdb

        try:
            return self.con.sql(query, params=params).pl()
        except duckdb.Error as error:
            raise LabrecordError(f"{self.path}: {str(error).splitlines()[0]}") from error

    def runs(self) -> pl.DataFrame:
        """One row per ingested run (table ``runs``), by run id."""
        return self._frame("SELECT * FROM runs ORDER BY run_id")

    def events(self, run_id: str | None = None, type: str | None = None) -> pl.DataFrame:
        """Every recorded event (table ``events``) by run and ``seq``; ``run_id`` and
        ``type`` keep one run or one event type."""
        where, params = [], []
        for column, value in (("run_id", run_id), ("type", type)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return self._frame(f"SELECT * FROM events{clause} ORDER BY run_id, seq", params)

    def episodes(self) -> pl.DataFrame:
        """One row per episode (view ``episodes``): online completion flags and event counts."""
        return self._frame("SELECT * FROM episodes ORDER BY run_id, episode")

    def sql(self, query: str) -> pl.DataFrame:
        """The last statement of ``query`` as a frame; only reads are accepted (the rules of
        ``labrecord sql``)."""
        from labrecord.store.readonly import read_statements

        statements = read_statements(query)
        for text in statements[:-1]:
            self._frame(text)
        return self._frame(statements[-1])

    def scores(self, *, seed: int = 0, resamples: int = 1000, decisions: list[str] | None = None,
               one_group: bool = False, system: str | None = None) -> pl.DataFrame:
        """The metrics of ``labrecord score`` as one row per (result identity, metric).

        ``group`` numbers the result identities in score order, the identity fields follow;
        ``value`` is null while a registered member is unresolved, and ``lower`` / ``upper``
        then give the bounds (Labference sec. 7.4); ``resolved`` / ``registered`` are the
        metric's coverage where it has one.  The options are those of ``labrecord score``.
        """
        import polars as pl

        from labrecord.scorers.corpus import score_corpus

        where = (lambda row: row["system_name"] == system) if system else None
        result = score_corpus(self.con, seed=seed, resamples=resamples, decisions=decisions,
                              one_group=one_group, where=where)
        rows = [row for number, group in enumerate(result["groups"]) for row in score_rows(number, group)]
        schema = {name: getattr(pl, dtype) for name, dtype in SCORE_COLUMNS}
        return pl.DataFrame(rows, schema=schema, orient="row")


def score_rows(number: int, group: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The :data:`SCORE_COLUMNS` rows of one scored group; a metric's ``.lower`` and
    ``.upper`` siblings become its ``lower`` / ``upper`` columns."""
    identity = [group["identity"].get(name) for name in IDENTITY_FIELDS]
    metrics, coverage = group["metrics"], group["coverage"]
    rows = []
    for name, metric in metrics.items():
        if is_bound(name, metrics):
            continue
        ci = metric.get("ci") or (None, None)
        lower, upper = metrics.get(f"{name}.lower"), metrics.get(f"{name}.upper")
        cover = coverage.get(name)
        resolved, registered = (cover.get("resolved"), cover.get("registered")) if isinstance(cover, dict) else (None, None)
        rows.append((number, *identity, name, metric.get("value"), metric.get("num"), metric.get("den"), metric.get("n"),
                     ci[0], ci[1], lower.get("value") if lower else None, upper.get("value") if upper else None,
                     resolved, registered))
    return rows
