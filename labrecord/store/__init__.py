"""The DuckDB corpus: tables, bulk ingest, Parquet snapshots.

Library entry points (the CLI commands are thin wrappers around these)::

    from labrecord.store import connect, ingest_runs, open_source, write_snapshot
    summary = ingest_runs("runs/", "corpus.duckdb")      # -> IngestSummary
    con = connect("corpus.duckdb")                        # DuckDB connection with the schema
"""
from labrecord.store.corpus import connect, open_snapshot, schema_rows, write_snapshot
from labrecord.store.ingest import (
    IngestSummary, content_hash, identity_problems, ingest_runs, invalid_run_row, manifest_row, record_audits, runs_to_audit,
)
from labrecord.store.source import open_source

__all__ = ["IngestSummary", "connect", "content_hash", "identity_problems", "ingest_runs", "invalid_run_row",
           "manifest_row", "open_snapshot", "open_source", "record_audits", "runs_to_audit", "schema_rows", "write_snapshot"]
