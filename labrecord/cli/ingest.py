"""``labrecord ingest``."""
from __future__ import annotations

import sys

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, follow_symlinks_option, output_options, progress


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("runs_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--db", default="corpus.duckdb", show_default=True, type=click.Path(dir_okay=False), help="Corpus file (created if missing).")
@click.option("--batch-size", default=2000, show_default=True, type=click.IntRange(min=1), help="Runs per load transaction.")
@click.option("--strict", is_flag=True, help="Exit 1 when any run or population was skipped.")
@click.option("--no-audit", is_flag=True, help="Skip the replay audit (runs without a verdict count as unaudited).")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Processes validating and auditing the runs (default: every usable CPU; under 200 runs: one).")
@output_options(csv=False, json_help="Print the summary as JSON.")
@follow_symlinks_option
def ingest(runs_dir: str, db: str, batch_size: int, strict: bool, no_audit: bool, jobs: int | None, as_json: bool) -> None:
    """Load run directories (and RUNS_DIR/populations/*.jsonl) into a DuckDB corpus.

    Each run is validated first; a run with errors, or whose folder name differs from its
    run_id, or whose run_id another folder claims too, is not loaded: it keeps one
    invalid_runs row (id, identity, reason) and scores as an unresolved member.  Valid runs
    are loaded in bulk, a batch per transaction, then replay-audited; each verdict is
    stored (audits table) and a run that disagrees scores as unresolved.  Re-ingesting an
    unchanged run changes nothing; a changed run is replaced whole.

    \b
    Example:
      labrecord ingest runs/ --db corpus.duckdb
      labrecord ingest runs/ --db corpus.duckdb --jobs 1      # one process
      labrecord sql "SELECT system_name, count(*) FROM runs GROUP BY 1" --db corpus.duckdb
    """
    from labrecord.scorers.corpus import audit_corpus
    from labrecord.store import connect, ingest_runs, runs_to_audit
    from labrecord.rundir import find_run_dirs
    from pathlib import Path

    from labrecord.safeio import check_apart, symlinks_allowed
    from labrecord.store.source import input_paths

    inputs = input_paths(runs_dir)
    check_apart(db, inputs, what="--db")
    total = len(find_run_dirs(Path(runs_dir)))
    # an existing corpus file may come from someone else: its views may read the runs
    # being ingested and nothing else (links followed on request may lead anywhere)
    con = connect(db, locked=not symlinks_allowed(), allowed=[runs_dir, *inputs])
    verdicts: list[dict] = []
    try:
        with progress(total, "ingest") as advance:
            summary = ingest_runs(runs_dir, con, batch_size=batch_size, advance=advance, jobs=jobs)
        if not no_audit:
            with progress(len(runs_to_audit(con)), "audit") as advance:
                verdicts = audit_corpus(con, advance, jobs=jobs)
    finally:
        con.close()
    summary.db = db
    failed = [v for v in verdicts if not v["ok"]]
    if as_json:
        echo_json({**summary.to_json(), "audited": len(verdicts),
                   "audit_disagreements": [{"run_id": v["run_id"], "reason": v["reason"]} for v in failed]})
    else:
        for where, findings in summary.skipped.items():
            click.echo(f"skipped {where}:")
            for finding in findings:
                click.echo(f"  error: {finding}")
        for verdict in failed:
            click.echo(f"audit disagrees {verdict['run_id']}: {verdict['reason']}")
        if not no_audit:
            click.echo(f"replay audit: {len(verdicts) - len(failed)} of {len(verdicts)} newly audited run(s) agree")
        click.echo(f"{db}: {len(summary.added)} added, {len(summary.replaced)} replaced, "
                   f"{len(summary.unchanged)} unchanged, {len(summary.skipped)} skipped; "
                   f"populations loaded: {', '.join(summary.populations) or 'none'}")
    sys.exit(1 if strict and (summary.skipped or failed) else 0)
