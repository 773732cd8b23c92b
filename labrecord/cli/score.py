"""``labrecord score``."""
from __future__ import annotations

from pathlib import Path

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source", required=False, type=click.Path(exists=True))
@click.option("--parquet", "parquet_dir", type=click.Path(exists=True, file_okay=False), help="Score a Parquet snapshot folder.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap generator.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(min=0), help="Bootstrap resamples (0: no intervals).")
@click.option("--decision", "decisions", multiple=True, help="Registered decision for the reach triple (repeatable; default: every decision reached).")
@click.option("--one-group", is_flag=True, help="Pool all runs into one result; refused when their identities differ.")
@click.option("--system", help="Only runs of this system name.")
@click.option("--out", type=click.Path(dir_okay=False), help="Where to write scores.json (default: beside the source).")
@click.option("--json", "as_json", is_flag=True, help='Print {"groups": [{"identity", "metrics", "coverage"}]}.')
def score(source: str | None, parquet_dir: str | None, seed: int, resamples: int, decisions: tuple[str, ...],
          one_group: bool, system: str | None, out: str | None, as_json: bool) -> None:
    """Recompute the benchmark metrics from stored runs, a corpus file or a snapshot.

    SOURCE is a runs folder (ingested into a temporary in-memory corpus; invalid runs are
    skipped), a corpus file, or use --parquet DIR.  Prints one table per result identity
    and writes scores.json (at the top of a runs folder, beside a corpus file).

    \b
    Example:
      labrecord score runs/
      labrecord score corpus.duckdb --json --seed 7 --resamples 2000
      labrecord score --parquet snapshot/ --decision select_weight
    """
    from labrecord.errors import LabrecordError
    from labrecord.fileio import atomic_write_bytes, dumps_pretty
    from labrecord.scorers.corpus import score_corpus
    from labrecord.store import open_source

    if (source is None) == (parquet_dir is None):
        raise click.UsageError("give either SOURCE or --parquet DIR")
    con, _, ingested = open_source(parquet_dir or source, parquet=parquet_dir is not None)
    for where_, findings in (ingested.skipped.items() if ingested else ()):
        click.echo(f"skipped {where_}: {findings[0]}" + (f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""), err=True)
    where = (lambda row: row["system_name"] == system) if system else None
    result = score_corpus(con, seed=seed, resamples=resamples, decisions=decisions or None, one_group=one_group, where=where)
    if not result["groups"]:
        raise LabrecordError(f"{parquet_dir or source}: no valid runs to score")
    from labrecord.scorers.latency import latency_summary

    target = Path(out) if out else _default_out(Path(parquet_dir or source))
    atomic_write_bytes(target, dumps_pretty(result))
    if as_json:
        echo_json(result)
        return
    _print_tables(result)
    # a cost of this machine, not a metric: printed, kept out of scores.json and --json
    _print_latency(latency_summary(con, system=system))
    click.echo(f"wrote {target}", err=True)


def _print_latency(summary: list) -> None:
    from labrecord.scorers.latency import LATENCY_HEADER, latency_rows

    if summary:
        echo_table(list(LATENCY_HEADER), latency_rows(summary), title="policy latency per decision, wall time per episode")


def _default_out(source: Path) -> Path:
    return source / "scores.json" if source.is_dir() else source.with_name("scores.json")


def _print_tables(result: dict) -> None:
    from labrecord.scorers.present import format_ci, format_value, identity_title

    for group in result["groups"]:
        rows = [(name, format_value(name, m), m["n"], format_ci(name, m)) for name, m in group["metrics"].items()]
        echo_table(["metric", "value (num/den)", "n", "95% CI"], rows, title=identity_title(group["identity"]))
        coverage = group["coverage"]
        line = f"runs {coverage['runs']}, valid {coverage['valid_runs']}"
        if coverage["invalid_runs"]:
            line += f", invalid: {', '.join(coverage['invalid_runs'])}"
        if coverage["missing"]:
            line += ", missing: " + ", ".join(f"{m['population']}/{m['instance_id']}" for m in coverage["missing"])
        click.echo(line)
