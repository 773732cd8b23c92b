"""``labrecord snapshot``."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, output_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.option("--db", default="corpus.duckdb", show_default=True, type=click.Path(dir_okay=False), help="Corpus file.")
@click.option("--parquet", "out_dir", required=True, type=click.Path(file_okay=False), help="New folder for the snapshot.")
@output_options(csv=False, json_help="Print rows written per table as JSON.")
def snapshot(db: str, out_dir: str, as_json: bool) -> None:
    """Write a Hive-partitioned Parquet copy of a corpus (runs, events, observations,
    measurements and scores partitioned by family= and system_name=; populations as one file).

    Spark, Trino or DuckDB read it directly; `labrecord score --parquet DIR` scores it.

    \b
    Example:
      labrecord snapshot --db corpus.duckdb --parquet snapshot/
      labrecord score --parquet snapshot/
    """
    from labrecord.safeio import check_apart
    from labrecord.store import write_snapshot
    from labrecord.store.source import input_paths

    check_apart(out_dir, input_paths(db), what="--parquet")
    counts = write_snapshot(db, out_dir)
    if as_json:
        echo_json(counts)
    else:
        click.echo(f"{out_dir}: " + ", ".join(f"{name} {n}" for name, n in counts.items()))
