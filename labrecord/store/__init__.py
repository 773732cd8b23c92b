"""The DuckDB corpus: tables, bulk ingest, Parquet snapshots.

Library entry points (the CLI commands are thin wrappers around these)::

    from labrecord.store import connect, ingest_runs, open_source, write_snapshot
    summary = ingest_runs("runs/", "corpus.duckdb")      # -> IngestSummary
    con = connect("corpus.duckdb")                        # DuckDB connection with the schema
"""
from labrecord.store.corpus import connect, open_snapshot, schema_rows, write_snapshot
from labrecord.store.ingest import IngestSummary, content_hash, ingest_runs
from labrecord.store.source import open_source

__all__ = ["IngestSummary", "connect", "content_hash", "ingest_runs", "open_snapshot", "open_source",
           "schema_rows", "write_snapshot"]
