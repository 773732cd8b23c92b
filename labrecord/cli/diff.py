"""``labrecord diff``."""
from __future__ import annotations

from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, follow_symlinks_option, output_options


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("a")
@click.argument("b")
@click.option("--compare", "compare", multiple=True,
              help="Identity field under comparison (repeatable; default: the settings whose values differ).")
@click.option("--contract-param", "contract_params", multiple=True, metavar="FAMILY.THRESHOLD=VALUE",
              help="Re-score B's stored runs under a changed contract threshold first (repeatable).")
@click.option("--explain", is_flag=True, help="Print the attribution verdict: which setting the outcome flips go with.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the paired bootstrap.")
@click.option("--resamples", default=1000, show_default=True, type=click.IntRange(min=0, max=1_000_000),
              help="Paired bootstrap resamples (0: no intervals for continuous metrics).")
@click.option("--no-audit", is_flag=True, help="Do not replay-audit runs folders first.")
@output_options(csv=False, json_help='Print {"compared", "pairs", "binary", "continuous", "one_sided", "attribution", '
                                     '"explanation", "episodes", ...}.')
@follow_symlinks_option
def diff(a: str, b: str, compare: tuple[str, ...], contract_params: tuple[str, ...], explain: bool, seed: int,
         resamples: int, no_audit: bool, as_json: bool) -> None:
    """Explain why two evaluations disagree, episode by episode.

    A and B are runs folders, corpus files, snapshot folders or SYSTEM@CORPUS.  Episodes
    are paired by their identity key leaving out the settings under comparison; for each
    binary outcome the paired table, the exact McNemar p-value and the paired difference
    B − A with its interval; for each continuous metric the paired difference with a
    paired bootstrap interval; the episodes without a partner and why; and which
    differing setting the outcome flips co-occur with.

    \b
    Example:
      labrecord diff reference@corpus.duckdb fixed-preference@corpus.duckdb
      labrecord diff runs-full/ runs-first-row/ --explain
      labrecord diff runs/ runs/ --contract-param weighing.success_tol_g=0.5
    """
    from labrecord.scorers.diff import diff_paths
    from labrecord.scorers.whatif import parse_params

    params = parse_params(contract_params) if contract_params else None
    result = diff_paths(a, b, audit=not no_audit, params=params, compare=list(compare) or None, seed=seed,
                        resamples=resamples)
    if as_json:
        echo_json(result)
        return
    print_diff(result, explain)


def print_diff(result: dict[str, Any], explain: bool = False) -> None:
    from labrecord.scorers.diff import attribution_rows, binary_rows, continuous_rows

    click.echo(f"A: {result['a']['source']} ({result['a']['episodes']} episodes, {result['a']['unresolved']} unresolved)")
    click.echo(f"B: {result['b']['source']} ({result['b']['episodes']} episodes, {result['b']['unresolved']} unresolved)")
    click.echo(f"compared: {', '.join(result['compared']) or 'nothing differs'}; "
               f"pairs: {result['pairs']['resolved']} resolved, {result['pairs']['unresolved']} unresolved")
    echo_table(["outcome", "both", "A only", "B only", "neither", "unres.", "A", "B", "B − A [95% CI]", "McNemar p"],
               binary_rows(result), title="binary outcomes (paired)")
    if result["continuous"]:
        echo_table(["metric", "pairs", "unres.", "A mean", "B mean", "B − A", "95% CI (paired bootstrap)"],
                   continuous_rows(result), title="continuous metrics (paired)")
    if result["attribution"]:
        echo_table(["field", "A", "B", "pairs differing", "flips", "flips by outcome"], attribution_rows(result),
                   title="attribution")
    for entry in result["unresolved_pairs"]:
        click.echo(f"unresolved pair {entry['episode']}: {entry['reason']}")
    for entry in result["one_sided"]:
        click.echo(f"only in {entry['side']}: {entry['episode']} (run {entry['run_id']}): {entry['reason']}")
    if explain:
        verdict = result["explanation"]
        click.echo(f"explanation ({verdict['verdict']}): {verdict['text']}")
