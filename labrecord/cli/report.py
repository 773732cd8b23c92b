"""``labrecord report``."""
from __future__ import annotations

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, follow_symlinks_option, output_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("source", type=click.Path(exists=True))
@click.option("--out", default="report.html", show_default=True, type=click.Path(dir_okay=False), help="HTML file to write.")
@click.option("--parquet", is_flag=True, help="SOURCE is a Parquet snapshot folder.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap generator.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(min=0, max=1_000_000), help="Bootstrap resamples.")
@click.option("--no-audit", is_flag=True, help="Do not replay-audit a runs folder first.")
@click.option("--diff", "diff_sides", nargs=2, default=None, metavar="A B",
              help="Add a diff section comparing evaluations A and B (as labrecord diff: runs folders, corpus files "
                   "or SYSTEM@CORPUS) with a chart of per-episode flips.")
@output_options(csv=False, json_help='Print {"report": PATH}.')
@follow_symlinks_option
def report(source: str, out: str, parquet: bool, seed: int, resamples: int, no_audit: bool,
           diff_sides: tuple[str, str] | None, as_json: bool) -> None:
    """Write one self-contained HTML page comparing systems: choice, execution and
    completion rates with intervals, the reach funnel, Oracle gains, and every metric table.

    \b
    Example:
      labrecord report runs/ --out report.html
      labrecord report corpus.duckdb --out report.html --seed 1
      labrecord report runs/ --diff reference@runs/ fixed-preference@runs/ --out report.html
    """
    from labrecord.safeio import check_apart, check_writable
    from labrecord.scorers.report import write_report
    from labrecord.store.source import input_paths

    check_apart(out, input_paths(source, parquet=parquet), what="--out")
    if diff_sides:
        from labrecord.scorers.diff import diff_paths, parse_side

        for side in diff_sides:
            check_apart(out, input_paths(parse_side(side).path), what="--out")
    check_writable(out)
    diff = None
    if diff_sides:
        diff = diff_paths(*diff_sides, audit=not no_audit, seed=seed, resamples=resamples)
    path = write_report(source, out, seed=seed, resamples=resamples, parquet=parquet, audit=not no_audit, diff=diff)
    echo_json({"report": str(path)}) if as_json else click.echo(str(path))
