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

    docs = load_documents(path, system=system, gold=gold)
    con = connect(db)
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
@output_options
def score_cmd(gold: str, preds: tuple[str, ...], db: str | None, by: str | None, as_json: bool, as_csv: bool) -> None:
    """Reaction F1 (strict and stereo-blind), macro over the gold figure manifest.

    --json prints {"figures", "macro", "molecule", "per_figure"}; --csv prints the
    per-figure rows; the default is a summary table.

    \b
    Example:
      labrecord rxn score --gold gold/ --pred outputs/rxnminer/
      labrecord rxn score --gold gold --pred rxnminer --pred chemeagle --db corpus.duckdb --by system
      labrecord rxn score --gold gold/ --pred out.jsonl --by layout --json
    """
    from labrecord.chemdata.scoring import score_paths

    results = score_paths(gold, list(preds), db=db, by=by, warn=lambda line: click.echo(f"warning: {line}", err=True))
    _print_scores(results, by, as_json, as_csv)


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
        return
    groups = [(system, name, s) for system, r in results.items()
              for name, s in (r.get("groups", {}).items() if by == "layout" else [(system, r)])]
    if as_json:
        echo_json({"by": by, "groups": [{"system": system, "group": name, **s} for system, name, s in groups]})
        return
    columns = ["system", by, "figures", "F1 strict", "F1 nonstereo", "P strict", "R strict",
               "mol F1 strict", "mol F1 nonstereo"]
    rows = [[system, name, s["figures"], s["macro"]["strict"]["f1"], s["macro"]["nonstereo"]["f1"],
             s["macro"]["strict"]["precision"], s["macro"]["strict"]["recall"],
             s["molecule"]["strict"]["f1"], s["molecule"]["nonstereo"]["f1"]] for system, name, s in groups]
    if by == "system":
        columns.pop(1)
        rows = [r[:1] + r[2:] for r in rows]
    (echo_csv if as_csv else echo_table)(columns, rows)


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
               title=f"{title}: {summary['figures']} figures ({status_text}), macro over figures")


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

        con = connect(db)
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
