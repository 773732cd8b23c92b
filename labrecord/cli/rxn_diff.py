"""``labrecord rxn diff`` (registered by ``labrecord/cli/rxn.py``)."""
from __future__ import annotations

from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, output_options


@click.command("diff", context_settings=CONTEXT_SETTINGS)
@click.argument("a")
@click.argument("b")
@click.option("--gold", required=True, help="Gold documents (file or folder) or GOLDSET@corpus.duckdb.")
@click.option("--profile", default="strict", show_default=True, metavar="NAME",
              help="Profile of the comparison: strict, stereo-blind, inchi, tanimoto:T or roles-lenient.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap's numpy Generator.")
@click.option("--resamples", type=int, default=2000, show_default=True, help="Bootstrap resamples.")
@click.option("--top", type=int, default=5, show_default=True, help="How many most-different figures to list.")
@click.option("--bins", type=int, default=10, show_default=True, help="Confidence bins of the reliability tables.")
@click.option("--report", "report_path", default=None, type=click.Path(dir_okay=False),
              help="Also write an HTML page (reliability diagrams drawn).")
@output_options(csv=False, json_help="Print the comparison as JSON.")
def diff(a: str, b: str, gold: str, profile: str, seed: int, resamples: int, top: int, bins: int,
         report_path: str | None, as_json: bool) -> None:
    """Compare systems A and B figure by figure against one gold set.

    A and B are prediction files or folders, or SYSTEM@corpus.duckdb (a system stored in
    a corpus, opened read-only).  Prints both systems' macro and micro P/R/F1 and coverage
    under the profile, the macro-F1 difference A - B with a paired bootstrap interval
    (figures resampled, one draw for both), the figures where they differ most, the
    agreement of their structure readers per figure region, and reliability tables of
    recorded confidences.

    \b
    Example:
      labrecord rxn diff runs/osra/ runs/two-readers/ --gold gold/
      labrecord rxn diff osra@corpus.duckdb decimer@corpus.duckdb --gold gold@corpus.duckdb --profile stereo-blind
      labrecord rxn diff runs/a/ runs/b/ --gold gold/ --seed 3 --json
    """
    from labrecord.chemdata.compare import diff_systems, parse_source
    from labrecord.safeio import check_apart

    if report_path is not None:  # the report is neither an input nor inside one
        check_apart(report_path, [db or name for name, db in map(parse_source, (a, b, gold))], what="--report")
    result = diff_systems(gold, a, b, profile=profile, seed=seed, resamples=resamples, top=top, bins=bins)
    if report_path is not None:
        from labrecord.chemdata.report import write_diff_report

        write_diff_report(result, report_path)
    if as_json:
        echo_json(result)
        return
    _tables(result)


def _tables(result: dict[str, Any]) -> None:
    from labrecord.cli.rxn import _coverage_text, calibration_tables

    a, b = result["a"], result["b"]
    echo_table(["system", "P macro", "R macro", "F1 macro", "F1 micro", "mol F1 macro", "coverage"],
               [[n, m["macro"]["precision"], m["macro"]["recall"], m["macro"]["f1"], m["micro"]["f1"],
                 m["molecule"]["f1"], _coverage_text(result["coverage"][n])]
                for n, m in result["macro"].items()],
               title=f"{a} (A) vs {b} (B), profile {result['profile']}, {result['figures']} gold figures")
    boot = result["bootstrap"]
    click.echo(f"macro F1 A - B = {boot['difference']:+.4f}, {boot['level']:.0%} paired bootstrap interval "
               f"[{boot['interval'][0]:+.4f}, {boot['interval'][1]:+.4f}] ({boot['resamples']} resamples, "
               f"seed {boot['seed']}; A ahead in {boot['share_above_zero']:.1%} of them)")
    if result["largest"]:
        echo_table(["figure", "F1 A", "F1 B", "A - B", "status A", "status B"],
                   [[r["figure_id"], r["f1_a"], r["f1_b"], r["delta"], r["status_a"], r["status_b"]]
                    for r in result["largest"]], title="figures where they differ most")
    else:
        click.echo("no figure scores differently")
    agreement = result["agreement"]
    if agreement["pairs"]:
        echo_table(["reader A", "reader B", "regions read by both", "same molecule", "share"],
                   [[p["reader_a"], p["reader_b"], p["regions"], p["same"], p["share"]] for p in agreement["pairs"]],
                   title=(f"recognition agreement by figure region ({agreement['regions_only_a']} regions only A read, "
                          f"{agreement['regions_only_b']} only B)"))
    else:
        click.echo("no figure region read by both systems (records name no regions in common)")
    echo_table(["system", "reader", "molecules", "gold molecules", "share"],
               [[system, reader, r["molecules"], r["gold"], r["share"]]
                for system, readers in agreement["readers"].items() for reader, r in readers.items()],
               title="molecules per structure reader (unrecorded: the record names none)")
    for system, table in result["calibration"].items():
        calibration_tables(system, table)
