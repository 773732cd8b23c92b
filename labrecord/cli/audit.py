"""``labrecord audit``."""
from __future__ import annotations

import sys

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, follow_symlinks_option, output_options, progress


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("runs_dir", type=click.Path())
@output_options(csv=False, json_help="Print one JSON record per run with its findings.")
@follow_symlinks_option
def audit(runs_dir: str, as_json: bool) -> None:
    """Replay each run's measurements through its task contract and compare with its events.

    Rebuilds opportunities and legal sets, physical confirmations, recognized choices and
    the terminal dwell from measurements.parquet and observations.jsonl, and checks the
    evidence-version binding of opportunities, interventions and later actions.  Every
    disagreement names the event (seq), the expected and the recorded value.  An imported
    run (``labrecord import``) claims only its episodes' outcomes: the replay checks the
    outcome the source states against the contract's physical completion and counts the
    other events it rebuilds without comparing them.

    Exit status: 0 every run agrees, 1 any disagreement.

    \b
    Example:
      labrecord audit runs/
      labrecord audit runs/r0001 --json
    """
    from labrecord.rundir import find_run_dirs
    from labrecord.scorers.audit import audit_run

    run_dirs = find_run_dirs(runs_dir)
    results = []
    with progress(len(run_dirs), "auditing") as advance:
        for run_dir in run_dirs:
            results.append(audit_run(run_dir))
            advance(1)
    failed = [r for r in results if not r.ok]
    if as_json:
        echo_json([r.to_json() for r in results])
    else:
        rows = [(r.run_id or r.run_dir, f.seq, f.check, f.message) for r in failed for f in r.findings]
        if rows:
            echo_table(["run", "seq", "check", "finding"], rows, title="audit findings")
        steps = sum(r.steps for r in results)
        click.echo(f"{len(results)} run(s), {steps} physics steps replayed, {len(failed)} with disagreements", err=True)
        outcome_only = [r for r in results if r.audited and r.scope == "outcome"]
        if outcome_only:
            click.echo(f"{len(outcome_only)} imported run(s) checked on the outcome their source states only "
                       f"({sum(r.derived for r in outcome_only)} rebuilt events they do not claim, not compared)", err=True)
    sys.exit(1 if failed else 0)
