"""``labrecord score``."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, follow_symlinks_option, output_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source", required=False, type=click.Path(exists=True))
@click.option("--parquet", "parquet_dir", type=click.Path(exists=True, file_okay=False), help="Score a Parquet snapshot folder.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap generator.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(min=0, max=1_000_000), help="Bootstrap resamples (0: no intervals).")
@click.option("--decision", "decisions", multiple=True, help="Registered decision for the reach triple (repeatable; default: every decision reached).")
@click.option("--one-group", is_flag=True, help="Pool all runs into one result; refused when their identities differ.")
@click.option("--system", help="Only runs of this system name.")
@click.option("--out", type=click.Path(dir_okay=False), help="Where to write scores.json (default: beside the source).")
@click.option("--no-audit", is_flag=True, help="Do not replay-audit a runs folder first (its runs then count as unaudited).")
@click.option("--repeats", type=click.Choice(["refuse", "mean"]), default="refuse", show_default=True,
              help="Two runs of one registered member: refuse, or average them within the member (intervals from a "
                   "bootstrap over members).")
@click.option("--contract-param", "contract_params", multiple=True, metavar="FAMILY.THRESHOLD=VALUE",
              help="What-if: re-score the stored runs under a changed contract threshold (repeatable; a runs folder "
                   "only; writes scores.<params>.json).")
@output_options(csv=False,
                json_help='Print {"groups": [{"identity", "metrics", "coverage"}], "unassigned_invalid_runs": [...]}.')
@follow_symlinks_option
def score(source: str | None, parquet_dir: str | None, seed: int, resamples: int, decisions: tuple[str, ...],
          one_group: bool, system: str | None, out: str | None, no_audit: bool, repeats: str,
          contract_params: tuple[str, ...], as_json: bool) -> None:
    """Recompute the benchmark metrics from stored runs, a corpus file or a snapshot.

    SOURCE is a runs folder (ingested into a temporary in-memory corpus and replay-audited),
    a corpus file, or use --parquet DIR.  Prints one table per result identity and writes
    scores.json (at the top of a runs folder, beside a corpus file).

    A registered member whose run is missing, invalid or fails the audit, whose episode was
    interrupted or ended in an evaluator-side fault, or whose checkpoint is unverified or
    was not delivered (in time) is unresolved: its metric prints "provisional [lo, hi],
    u of N unresolved" and the JSON has value null with .lower/.upper siblings.  A run that
    declares no measurement stream is scored from its events and counted as unaudited.

    \b
    Example:
      labrecord score runs/
      labrecord score corpus.duckdb --json --seed 7 --resamples 2000
      labrecord score --parquet snapshot/ --decision select_weight
      labrecord score runs/ --repeats mean     # average repeated runs of a member first
      labrecord score runs/ --contract-param weighing.success_tol_g=0.5
    """
    from labrecord.errors import LabrecordError
    from labrecord.fileio import atomic_write_bytes, dumps_pretty
    from labrecord.cli.common import progress
    from labrecord.scorers.corpus import audit_corpus, score_corpus
    from labrecord.store import open_source, runs_to_audit

    if (source is None) == (parquet_dir is None):
        raise click.UsageError("give either SOURCE or --parquet DIR")
    from labrecord.safeio import check_apart, check_writable
    from labrecord.store.source import input_paths

    given: str = parquet_dir or source  # type: ignore[assignment]  # exactly one is set (checked above)
    if contract_params:
        _score_whatif(given, parquet_dir is not None, contract_params, seed, resamples, decisions, one_group, system,
                      out, no_audit, as_json, repeats)
        return
    target = Path(out) if out else _default_out(Path(given))
    check_apart(target, input_paths(given, parquet=parquet_dir is not None), what="--out")
    if out:
        check_writable(out)
    con, kind, ingested = open_source(given, parquet=parquet_dir is not None)
    for where_, findings in (ingested.skipped.items() if ingested else ()):
        click.echo(f"invalid {where_}: {findings[0]}" + (f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""), err=True)
    if kind == "runs" and not no_audit:
        with progress(len(runs_to_audit(con)), "audit") as advance:
            verdicts = audit_corpus(con, advance)
        failed = [v for v in verdicts if not v["ok"]]
        unaudited = sum(1 for v in verdicts if v["ok"] and not v.get("audited", True))
        if not as_json:
            note = f", {unaudited} declare no measurement stream (scored unaudited)" if unaudited else ""
            click.echo(f"replay audit: {len(verdicts) - len(failed) - unaudited} of {len(verdicts)} run(s) agree{note}", err=True)
    where = (lambda row: row["system_name"] == system) if system else None
    result = score_corpus(con, seed=seed, resamples=resamples, decisions=decisions or None, one_group=one_group, where=where,
                          repeats=repeats)
    if not result["groups"] and not result["unassigned_invalid_runs"]:
        raise LabrecordError(f"{given}: no runs to score")
    from labrecord.scorers.latency import latency_summary

    atomic_write_bytes(target, dumps_pretty(result))
    if as_json:
        echo_json(result)
        _refuse_missing_registries(ingested)
        return
    _print_tables(result)
    # a cost of this machine, not a metric: printed, kept out of scores.json and --json
    _print_latency(latency_summary(con, system=system))
    click.echo(f"wrote {target}", err=True)
    _refuse_missing_registries(ingested)


def _score_whatif(given: str, parquet: bool, texts: tuple[str, ...], seed: int, resamples: int,
                  decisions: tuple[str, ...], one_group: bool, system: str | None, out: str | None, no_audit: bool,
                  as_json: bool, repeats: str = "refuse") -> None:
    """Score the runs re-scored under changed contract thresholds (labrecord.scorers.whatif)."""
    import re
    import tempfile

    from labrecord.errors import LabrecordError
    from labrecord.fileio import atomic_write_bytes, dumps_pretty
    from labrecord.scorers.corpus import score_corpus
    from labrecord.scorers.whatif import label_of, open_rescored, parse_params

    from labrecord.safeio import check_apart, check_writable
    from labrecord.store.source import input_paths

    params = parse_params(texts)
    if parquet or not Path(given).is_dir():
        raise LabrecordError(f"{given}: --contract-param re-scores stored measurements; give a runs folder")
    target = Path(out) if out else Path(given) / f"scores.{re.sub(r'[^A-Za-z0-9._=-]', '_', label_of(params))}.json"
    check_apart(target, input_paths(given), what="--out")
    if out:
        check_writable(out)
    where = (lambda row: row["system_name"] == system) if system else None
    with tempfile.TemporaryDirectory(prefix="labrecord-whatif-") as work:
        con, ingested = open_rescored(given, params, work, audit=not no_audit)
        result = score_corpus(con, seed=seed, resamples=resamples, decisions=decisions or None, one_group=one_group,
                              where=where, repeats=repeats)
    result["contract_params"] = label_of(params)
    atomic_write_bytes(target, dumps_pretty(result))
    if as_json:
        echo_json(result)
        return
    click.echo(f"re-scored under {label_of(params)} (stored measurements replayed; no new simulation)", err=True)
    _print_tables(result)
    click.echo(f"wrote {target}", err=True)
    _refuse_missing_registries(ingested)


def _refuse_missing_registries(ingested: Any) -> None:
    """A registry that did not load takes its members' metrics (B_next, C_id …) with it: exit 1."""
    from labrecord.rundir import POPULATIONS_DIR

    skipped = [where for where in (ingested.skipped if ingested else ()) if Path(where).parent.name == POPULATIONS_DIR]
    if skipped:
        raise click.ClickException(f"population registr{'y' if len(skipped) == 1 else 'ies'} not loaded "
                                   f"({', '.join(skipped)}): metrics over their members are missing")


def _print_latency(summary: list) -> None:
    from labrecord.scorers.latency import LATENCY_HEADER, latency_rows

    if summary:
        echo_table(list(LATENCY_HEADER), latency_rows(summary), title="policy latency per decision, wall time per episode")


def _default_out(source: Path) -> Path:
    return source / "scores.json" if source.is_dir() else source.with_name("scores.json")


def _print_tables(result: dict) -> None:
    from labrecord.scorers.present import audited_text, identity_title, metric_rows, unresolved_lines

    for group in result["groups"]:
        echo_table(["metric", "value (num/den)", "n", "95% CI"], metric_rows(group), title=identity_title(group["identity"]))
        coverage = group["coverage"]
        click.echo(f"runs {coverage['runs']}, resolved {coverage['valid_runs']}, unresolved {coverage['runs'] - coverage['valid_runs']}, "
                   f"missing {len(coverage['missing'])}, {audited_text(coverage)}")
        if "J" in coverage:
            click.echo("checkpoints J: " + ", ".join(f"{k} {v}" for k, v in coverage["J"].items()))
        for line in unresolved_lines(group):
            click.echo(f"  {line}")
    for entry in result["unassigned_invalid_runs"]:
        click.echo(f"invalid run in no group (run.json unreadable) {entry['run_dir']}: {entry['reason']}")
