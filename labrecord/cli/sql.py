"""``labrecord sql``."""
from __future__ import annotations

from pathlib import Path

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_rows, output_options
from labrecord.errors import LabrecordError
from labrecord.store.readonly import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT_S


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("query", required=False)
@click.option("--db", default="corpus.duckdb", show_default=True, type=click.Path(dir_okay=False), help="Corpus file.")
@click.option("--parquet", "parquet_dir", type=click.Path(exists=True, file_okay=False), help="Query a Parquet snapshot instead of --db.")
@click.option("--schema", "show_schema", is_flag=True, help="List every table and view with its documented columns.")
@click.option("--timeout-s", default=DEFAULT_TIMEOUT_S, show_default=True, type=click.FloatRange(min=0, min_open=True),
              help="Stop the query after this many seconds.")
@click.option("--max-rows", default=DEFAULT_MAX_ROWS, show_default=True, type=click.IntRange(min=1),
              help="Refuse a result of more rows (add a LIMIT, or raise this).")
@output_options
def sql(query: str | None, db: str, parquet_dir: str | None, show_schema: bool, timeout_s: float, max_rows: int,
        as_json: bool, as_csv: bool) -> None:
    """Run a read-only SQL query over a corpus (tables: runs, events, observations,
    measurements, online_scores, final_scores, populations, rxn_*; views: first_choices, episodes).

    Only reads are run: SELECT (with WITH, FROM-first, VALUES), DESCRIBE, SHOW, SUMMARIZE and
    EXPLAIN of those.  Anything else is refused before it runs (COPY, EXPORT, ATTACH,
    INSTALL, LOAD, CREATE, DROP, INSERT, SET, PRAGMA …), and no query can read or write files
    outside the corpus (read_text, glob and read_csv of other paths are refused).  A query
    runs for at most --timeout-s seconds and may return at most --max-rows rows.

    \b
    Example:
      labrecord sql --schema --db corpus.duckdb
      labrecord sql "SELECT system_name, avg(correct::INT) FROM first_choices JOIN runs USING (run_id) GROUP BY 1"
      labrecord sql "SELECT * FROM runs" --parquet snapshot/ --csv
      labrecord sql "SELECT * FROM events" --max-rows 1000000 --timeout-s 600
    """
    from labrecord.store import open_source, schema_rows
    from labrecord.store.readonly import run_read_only

    if not query and not show_schema:
        raise click.UsageError("give a QUERY or --schema")
    if parquet_dir is None and not Path(db).is_file():
        raise LabrecordError(f"{db}: no such corpus file (create it with 'labrecord ingest RUNS_DIR --db {db}')")
    con, _, _ = open_source(parquet_dir, parquet=True) if parquet_dir else open_source(db)
    try:
        if show_schema:
            echo_rows(["kind", "relation", "column", "type", "comment"], schema_rows(con), as_json, as_csv)
            return
        columns, rows = run_read_only(con, query, timeout_s=timeout_s, max_rows=max_rows)  # type: ignore[arg-type]
    finally:
        con.close()
    echo_rows(columns, rows, as_json, as_csv)
