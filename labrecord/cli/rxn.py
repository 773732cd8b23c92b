"""``labrecord rxn ingest | score | stats | check-judge`` (and ``extract``, ``render`` from
``labrecord.cli.rxn_extract``, imported on first use)."""
from __future__ import annotations

from typing import Any

import click

from labrecord.cli.lazy import LazyGroup
from labrecord.cli.common import CONTEXT_SETTINGS, echo_csv, echo_json, echo_table, output_options

#: sub-commands living in other modules: name -> (module under labrecord.cli, attribute, one-line help)
EXTENSIONS: dict[str, tuple[str, str, str]] = {
    "extract": ("rxn_extract", "extract", "Extract reaction records from figures (osra, tesseract, R-group engine)."),
    "render": ("rxn_extract", "render", "Draw reaction figures from reaction SMILES, with gold records."),
    "diff": ("rxn_diff", "diff", "Compare two extraction systems figure by figure on one gold set."),
    "judge": ("rxn_judge", "judge", "Grade answers with a multimodal judge endpoint (rubric of RxnMiner B.2)."),
    "judge-stats": ("rxn_judge", "judge_stats", "Judge results per system: categories, RP, RR, RF1, Overall, coverage."),
    "package": ("rxn_package", "package", "Write one Harbor-layout benchmark task per gold figure."),
    "collect": ("rxn_package", "collect", "Gather the answers of a run over task packages as records."),
}


@click.group(cls=LazyGroup, lazy=EXTENSIONS, package="labrecord.cli", context_settings=CONTEXT_SETTINGS)
def rxn() -> None:
    """Reaction records (labrecord.rxn/1): ingest, score, stats, check-judge.

    \b
    Example:
      labrecord rxn ingest gold/ --db corpus.duckdb --gold
      labrecord rxn ingest outputs/ --db corpus.duckdb --system rxnminer
      labrecord rxn score --gold gold --pred rxnminer --db corpus.duckdb
      labrecord rxn score --gold gold/ --pred outputs/ --json
    """


@rxn.command("ingest", context_settings=CONTEXT_SETTINGS)
@click.argument("path", type=click.Path(exists=True))
@click.option("--db", required=True, type=click.Path(dir_okay=False), help="DuckDB corpus file (created if absent).")
@click.option("--system", default=None, help="System name for every document (default: the document's own, else the path name).")
@click.option("--gold", is_flag=True, help="The documents are reference annotations (must all convert).")
@output_options(csv=False, json_help="Print the counts as JSON.")
def ingest_cmd(path: str, db: str, system: str | None, gold: bool, as_json: bool) -> None:
    """Read figure documents in any supported format and store them, canonicalized.

    Accepts our own documents, ChemEAGLE-style figure JSON, OpenChemIE R-group JSON,
    rollout wrappers (answer under "answer") and gold documents (selected_examples).
    Unreadable predictions are stored with status "malformed".

    \b
    Example:
      labrecord rxn ingest gold/ --db corpus.duckdb --gold
      labrecord rxn ingest runs/rxnminer/ --db corpus.duckdb --system rxnminer
    """
    from labrecord.chemdata.adapters import load_documents
    from labrecord.chemdata.store import ingest_documents
    from labrecord.store import connect

    from labrecord.safeio import check_apart

    check_apart(db, [path], what="--db")
    docs = load_documents(path, system=system, gold=gold)
    con = connect(db, locked=True)
    try:
        counts: dict[str, Any] = ingest_documents(con, docs, gold=gold)
    finally:
        con.close()
    statuses: dict[str, int] = {}
    for doc in docs:
        statuses[doc.status] = statuses.get(doc.status, 0) + 1
    counts = {**counts, "systems": sorted({d.system for d in docs}), "status": statuses}
    if as_json:
        echo_json(counts)
    else:
        click.echo(f"{db}: {counts['figures']} figures ({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))}), "
                   f"{counts['reactions']} reactions, {counts['molecules']} molecules, "
                   f"{counts['new_smiles']} new SMILES canonicalized; systems: {', '.join(counts['systems'])}")


@rxn.command("score", context_settings=CONTEXT_SETTINGS)
@click.option("--gold", "gold", required=True, help="Gold documents (file or folder), or a gold set name in --db.")
@click.option("--pred", "preds", required=True, multiple=True,
              help="Predictions (file or folder), or a system name in --db; repeatable with --by system.")
@click.option("--db", default=None, type=click.Path(dir_okay=False),
              help="Corpus to score in (paths given are ingested into it first); default: in memory.")
@click.option("--by", type=click.Choice(["layout", "system"]), default=None, help="Report one row per layout or system.")
@click.option("--profile", "profiles", multiple=True, metavar="NAME",
              help="Scoring profile: strict, stereo-blind, inchi, tanimoto:T, roles-lenient, or all; repeatable.")
@click.option("--answered-only", is_flag=True,
              help="Also show each profile's macro F1 over the answered figures only (labelled; never the headline).")
@click.option("--rows", is_flag=True, help="R-group tables row by row (under the first --profile, default strict).")
@click.option("--calibration", is_flag=True, help="Reliability table of the recorded recognition confidences.")
@click.option("--bins", type=int, default=10, show_default=True, help="Confidence bins of --calibration.")
@click.option("--report", "report_path", default=None, type=click.Path(dir_okay=False),
              help="Also write an HTML page of every section asked for (the reliability diagram drawn).")
@output_options
def score_cmd(gold: str, preds: tuple[str, ...], db: str | None, by: str | None, profiles: tuple[str, ...],
              answered_only: bool, rows: bool, calibration: bool, bins: int, report_path: str | None,
              as_json: bool, as_csv: bool) -> None:
    """Reaction F1 (strict and stereo-blind), macro over the gold figure manifest.

    --json prints {"figures", "coverage", "macro", "molecule", "per_figure"} plus
    "profiles", "rows" and "calibration" when asked for; --csv prints the per-figure rows;
    the default is a summary table.  Every profile is scored over every gold figure;
    coverage says how many the system answered, refused, timed out on or failed.

    \b
    Example:
      labrecord rxn score --gold gold/ --pred outputs/rxnminer/
      labrecord rxn score --gold gold/ --pred outputs/rxnminer/ --profile all --answered-only
      labrecord rxn score --gold gold/ --pred outputs/ --profile tanimoto:0.9 --profile inchi --rows
      labrecord rxn score --gold gold --pred rxnminer --pred chemeagle --db corpus.duckdb --by system
      labrecord rxn score --gold gold/ --pred out.jsonl --by layout --json
    """
    from pathlib import Path

    from labrecord.chemdata.scoring import score_paths
    from labrecord.safeio import check_apart

    given = [p for p in (gold, *preds) if Path(p).exists()]
    if db is not None:
        check_apart(db, given, what="--db")
    if report_path is not None:
        check_apart(report_path, given + ([db] if db else []), what="--report")
    from labrecord.scorers.reaction import expand_profiles

    if answered_only and not profiles:
        profiles = ("strict",)
    results = score_paths(gold, list(preds), db=db, by=by, warn=lambda line: click.echo(f"warning: {line}", err=True),
                          profiles=list(profiles), answered_only=answered_only,
                          rows=(expand_profiles(profiles)[0].name if profiles else "strict") if rows else None,
                          calibration=bins if calibration or report_path else None)
    if report_path is not None:
        from labrecord.chemdata.report import write_score_report

        write_score_report(results, report_path)
    _print_scores(results, by, as_json, as_csv)


#: sections of a system's score computed over all gold figures (never per layout group)
OVERALL_SECTIONS = ("profiles", "rows", "calibration")


def _coverage_text(coverage: dict[str, int]) -> str:
    return (f"{coverage['answered']} answered / {coverage['refused']} refused / {coverage['timed_out']} timed out / "
            f"{coverage['failed']} failed of {coverage['figures']}")


def _coverage_short(coverage: dict[str, int]) -> str:
    return f"{coverage['answered']}/{coverage['refused']}/{coverage['timed_out']}/{coverage['failed']} of {coverage['figures']}"


def _print_scores(results: dict[str, dict[str, Any]], by: str | None, as_json: bool, as_csv: bool) -> None:
    """``results``: system -> summary (with ``groups`` when ``by == "layout"``)."""
    if by is None:
        (summary,) = results.values()
        if as_json:
            echo_json(summary)
        elif as_csv:
            rows = summary["per_figure"]
            echo_csv(list(rows[0]) if rows else [], [list(r.values()) for r in rows])
        else:
            _summary_table(summary, title=next(iter(results)))
            _extra_tables(results)
        return
    groups = [(system, name, s) for system, r in results.items()
              for name, s in (r.get("groups", {}).items() if by == "layout" else [(system, r)])]
    if as_json:
        document: dict[str, Any] = {"by": by, "groups": [{"system": system, "group": name, **s}
                                                         for system, name, s in groups]}
        if by == "layout":  # the sections scored over all gold figures, beside the layout groups
            document["overall"] = {system: {k: r[k] for k in ("coverage", *OVERALL_SECTIONS) if k in r}
                                   for system, r in results.items()}
        echo_json(document)
        return
    columns = ["system", by, "figures", "F1 strict", "F1 nonstereo", "coverage", "P strict", "R strict",
               "mol F1 strict", "mol F1 nonstereo"]
    rows = [[system, name, s["figures"], s["macro"]["strict"]["f1"], s["macro"]["nonstereo"]["f1"],
             _coverage_text(s["coverage"]), s["macro"]["strict"]["precision"], s["macro"]["strict"]["recall"],
             s["molecule"]["strict"]["f1"], s["molecule"]["nonstereo"]["f1"]] for system, name, s in groups]
    if by == "system":
        columns.pop(1)
        rows = [r[:1] + r[2:] for r in rows]
    (echo_csv if as_csv else echo_table)(columns, rows)
    if not as_csv:
        _extra_tables(results)


def _extra_tables(results: dict[str, dict[str, Any]]) -> None:
    """The profile, R-group row and calibration tables of each system, when computed."""
    for system, summary in results.items():
        if "profiles" in summary:
            _profile_table(system, summary)
        if "rows" in summary:
            _rows_tables(system, summary["rows"])
        if "calibration" in summary:
            calibration_tables(system, summary["calibration"])


def _profile_table(system: str, summary: dict[str, Any]) -> None:
    profiles = summary["profiles"]
    answered = any("answered_only" in p for p in profiles.values())
    columns = ["profile", "P macro", "R macro", "F1 macro", "P micro", "R micro", "F1 micro", "mol F1 macro",
               "coverage (answered/refused/timed out/failed)"]
    if answered:
        columns.append("F1 macro, answered only (not the headline)")
    rows = []
    for name, p in profiles.items():
        row = [name, p["macro"]["precision"], p["macro"]["recall"], p["macro"]["f1"], p["micro"]["precision"],
               p["micro"]["recall"], p["micro"]["f1"], p["molecule"]["f1"], _coverage_short(summary["coverage"])]
        if answered:
            kept = p["answered_only"]
            row.append(f"{kept['macro']['f1']:.4f} over {kept['figures']} answered" if kept["figures"] else "—")
        rows.append(row)
    echo_table(columns, rows, title=f"{system}: profiles over all {summary['figures']} gold figures")


def _rows_tables(system: str, rows: dict[str, Any]) -> None:
    if not rows["figures"]:
        click.echo(f"{system}: no gold figure has a template; no R-group rows to score")
        return
    totals = rows["rows"]
    echo_table(["figure", "gold rows", "predicted rows", "matched", "precision", "recall", "status"],
               [[r["figure_id"], r["gold"], r["pred"], r["matched"], r["precision"], r["recall"], r["status"]]
                for r in rows["per_figure"]],
               title=(f"{system}: R-group table rows ({rows['profile']}), {rows['figures']} template figures; "
                      f"rows {totals['matched']}/{totals['gold']} gold, {totals['pred']} predicted; "
                      f"micro P {_num(rows['micro']['precision'])} R {_num(rows['micro']['recall'])}, "
                      f"macro P {_num(rows['macro']['precision'])} R {_num(rows['macro']['recall'])}"))
    for kind in ("missed", "invented"):
        if rows[kind]:
            echo_table(["figure", "row", "reaction"], [[r["figure_id"], r["row"], r["reaction"]] for r in rows[kind]],
                       title=f"rows {kind} ({len(rows[kind])})")


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def calibration_tables(system: str, calibration: dict[str, Any]) -> None:
    """One reliability table per reader of ``system`` (shared with ``rxn diff``)."""
    if not calibration["readers"]:
        click.echo(f"{system}: no molecule carries a recognition confidence "
                   f"({calibration['without_confidence']} without); no reliability table")
        return
    for reader, table in calibration["readers"].items():
        echo_table(["confidence", "readings", "correct", "precision", "95% Wilson", "mean confidence"],
                   [[f"{b['low']:.1f}–{b['high']:.1f}", b["n"], b["correct"], b["precision"],
                     "—" if b["interval"] is None else f"{b['interval'][0]:.3f}–{b['interval'][1]:.3f}",
                     b["mean_confidence"]] for b in table["bins"] if b["n"]],
                   title=(f"{system}, reader {reader}: {table['correct']}/{table['readings']} correct, "
                          f"ECE {table['ece']:.4f}; {calibration['without_confidence']} molecules without confidence"))


def _summary_table(summary: dict[str, Any], title: str) -> None:
    rows = []
    for level in ("macro", "molecule"):
        for variant in ("strict", "nonstereo"):
            m = summary[level][variant]
            rows.append([("reaction" if level == "macro" else "molecule"), variant, m["precision"], m["recall"], m["f1"]])
    statuses: dict[str, int] = {}
    for row in summary["per_figure"]:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    status_text = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    echo_table(["level", "variant", "precision", "recall", "F1"], rows,
               title=f"{title}: {summary['figures']} figures ({status_text}), macro over figures; "
                     f"coverage {_coverage_text(summary['coverage'])}")


@rxn.command("stats", context_settings=CONTEXT_SETTINGS)
@click.argument("path", required=False, type=click.Path(exists=True))
@click.option("--db", default=None, type=click.Path(dir_okay=False), help="Corpus to read (instead of PATH).")
@click.option("--system", default=None, help="Only this system.")
@output_options(csv=False, json_help="Print JSON.")
def stats_cmd(path: str | None, db: str | None, system: str | None, as_json: bool) -> None:
    """Corpus statistics: records per figure, parse rates, provenance shares, field coverage.

    Parse rates measure representational validity only — a parsable SMILES can still be
    the wrong molecule.

    \b
    Example:
      labrecord rxn stats silver/
      labrecord rxn stats --db corpus.duckdb --system rxnminer --json
    """
    from labrecord.chemdata.stats import corpus_stats, stats_for_path

    if (path is None) == (db is None):
        raise click.UsageError("give either PATH or --db")
    if path is None:
        from labrecord.store import connect

        con = connect(db, locked=True)
        try:
            result = corpus_stats(con, system)
        finally:
            con.close()
    else:
        result = stats_for_path(path, system)
    if as_json:
        echo_json(result)
    else:
        _stats_tables(result)


def _stats_tables(result: dict[str, Any]) -> None:
    for system, s in result.items():
        figures = s["figures"]
        echo_table(["figures", "ok", "reactions", "templates", "per figure mean", "median", "max"],
                   [[figures["total"], figures["status"].get("ok", 0), s["reactions"], s["templates"],
                     s["records_per_figure"]["mean"], s["records_per_figure"]["median"], s["records_per_figure"]["max"]]],
                   title=f"{system}")
        echo_table(["records per figure", "figures"], list(s["records_per_figure"]["bands"].items()))
        parse = s["parse"]
        echo_table(["molecule strings", "parsed", "rate", "distinct", "reasons"],
                   [[parse["total"], parse["ok"], parse["rate"], parse["distinct"],
                     ", ".join(f"{k} {v}" for k, v in parse["reasons"].items()) or "—"]])
        echo_table(["provenance", "share"], list(s["provenance"].items()))
        echo_table(["field", "coverage"], list(s["coverage"].items()))


@rxn.command("check-judge", context_settings=CONTEXT_SETTINGS)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@output_options(csv=False, json_help="Print {\"errors\": [...], \"warnings\": [...]}.")
def check_judge_cmd(paths: tuple[str, ...], as_json: bool) -> None:
    """Check LLM-judge outputs (schema llm-reaction-judge-v2) for types and arithmetic.

    Checks types, finite ranges in [0, 1], every gold reaction matched exactly once,
    candidate indices in range, normalized weights, composite and precision arithmetic,
    strict <= nonstereo.  It does not judge chemistry.  Exit 1 when errors are found.

    \b
    Example:
      labrecord rxn check-judge judge/*.json
    """
    import sys

    from labrecord.chemdata.judge import validate_judge_paths

    report = validate_judge_paths(list(paths))
    if as_json:
        echo_json(report.to_json())
    else:
        for finding in report.errors:
            click.echo(f"error: {finding}")
        for finding in report.warnings:
            click.echo(f"warning: {finding}")
        click.echo(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)", err=True)
    sys.exit(0 if report.ok else 1)
