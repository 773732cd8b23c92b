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
    measurements, online_scores, final_scores, populations; views: first_choices, episodes).

    \b
    Example:
      labrecord sql --schema --db corpus.duckdb
      labrecord sql "SELECT system_name, avg(correct::INT) FROM first_choices JOIN runs USING (run_id) GROUP BY 1"
      labrecord sql "SELECT * FROM runs" --parquet snapshot/ --csv
    """
    from labrecord.errors import LabrecordError
    from labrecord.store import connect, open_snapshot, schema_rows

    con = open_snapshot(parquet_dir) if parquet_dir else connect(db, read_only=True)
    if show_schema:
        echo_rows(["kind", "relation", "column", "type", "comment"], schema_rows(con), as_json, as_csv)
        return
    if not query:
        raise click.UsageError("give a QUERY or --schema")
    import duckdb

    try:
        cursor = con.execute(query)
        columns = [d[0] for d in cursor.description] if cursor.description else []
        rows = cursor.fetchall() if columns else []
    except duckdb.Error as error:
        raise LabrecordError(f"query failed: {str(error).splitlines()[0]}") from error
    echo_rows(columns, rows, as_json, as_csv)
