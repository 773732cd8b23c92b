"""``labrecord sql``."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_rows, output_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("query", required=False)
@click.option("--db", default="corpus.duckdb", show_default=True, type=click.Path(dir_okay=False), help="Corpus file.")
@click.option("--parquet", "parquet_dir", type=click.Path(exists=True, file_okay=False), help="Query a Parquet snapshot instead of --db.")
@click.option("--schema", "show_schema", is_flag=True, help="List every table and view with its documented columns.")
@output_options
def sql(query: str | None, db: str, parquet_dir: str | None, show_schema: bool, as_json: bool, as_csv: bool) -> None:
    """Run a read-only SQL query over a corpus (tables: runs, events, observations,
    measurements, online_scores, final_scores, populations, rxn_*; views: first_choices, episodes).

    Only reads are run: SELECT (with WITH, FROM-first, VALUES), DESCRIBE, SHOW, SUMMARIZE and
    EXPLAIN of those.  Anything else is refused before it runs (COPY, EXPORT, ATTACH,
    INSTALL, LOAD, CREATE, DROP, INSERT, SET, PRAGMA …), and no query can read or write files
    outside the corpus (read_text, glob and read_csv of other paths are refused).

    \b
    Example:
      labrecord sql --schema --db corpus.duckdb
      labrecord sql "SELECT system_name, avg(correct::INT) FROM first_choices JOIN runs USING (run_id) GROUP BY 1"
      labrecord sql "SELECT * FROM runs" --parquet snapshot/ --csv
    """
    from labrecord.store import schema_rows
    from labrecord.store.readonly import open_read_only, run_read_only

    if not query and not show_schema:
        raise click.UsageError("give a QUERY or --schema")
    con = open_read_only(parquet_dir=parquet_dir) if parquet_dir else open_read_only(db)
    try:
        if show_schema:
            echo_rows(["kind", "relation", "column", "type", "comment"], schema_rows(con), as_json, as_csv)
            return
        columns, rows = run_read_only(con, query)  # type: ignore[arg-type]
    finally:
        con.close()
    echo_rows(columns, rows, as_json, as_csv)
