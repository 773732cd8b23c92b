"""``labrecord rxn judge`` and ``labrecord rxn judge-stats`` (registered by ``labrecord/cli/rxn.py``)."""
from __future__ import annotations

from typing import Any

import click

from labrecord.cli.common import CONTEXT_SETTINGS, echo_json, echo_table, progress


@click.command("judge", context_settings=CONTEXT_SETTINGS)
@click.option("--gold", "gold", required=True, type=click.Path(exists=True), help="Gold documents (file or folder).")
@click.option("--pred", "pred", required=True, type=click.Path(exists=True), help="Answers to judge (file or folder).")
@click.option("--model-endpoint", required=True, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1.")
@click.option("--model", required=True, help="Judge model name sent to the endpoint.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for judgment records.")
@click.option("--figures", "figures_dir", default=None, type=click.Path(exists=True, file_okay=False),
              help="Folder of figure images (default: beside the gold documents).")
@click.option("--workers", type=int, default=1, show_default=True, help="Requests in flight at once.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="ray sends the requests from a Ray cluster (pip install 'labrecord[ray]').")
@click.option("--retries", type=int, default=2, show_default=True, help="Extra attempts for a failed or invalid answer.")
@click.option("--timeout-s", type=float, default=300.0, show_default=True, help="Limit for one request.")
@click.option("--api-key-env", default=None, help="Environment variable holding the endpoint's API key.")
@click.option("--json", "as_json", is_flag=True, help="Print the run summary as JSON.")
def judge(gold: str, pred: str, model_endpoint: str, model: str, out_dir: str, figures_dir: str | None, workers: int,
          executor: str, retries: int, timeout_s: float, api_key_env: str | None, as_json: bool) -> None:
    """Ask a multimodal judge to grade each figure's answer under the project's rubric.

    One request per (system, gold figure) holding the figure, the reference and the
    answer's reactions (no trajectories, timing, provenance or model names).  Every
    answer is validated like check-judge; failures are retried, then recorded as failed.
    Writes OUT/<rubric>/<model>/<system>/<figure_id>.json; a re-run skips figures
    already judged validly under the same rubric and model.

    \b
    Example:
      labrecord rxn judge --gold figures/ --pred answers/ --out judgments/ \\
          --model-endpoint http://127.0.0.1:8000/v1 --model judge-vl --workers 4
      labrecord rxn judge-stats judgments/
    """
    from labrecord.chemdata.judge_runner import JudgeConfig, run_judging
    from labrecord.safeio import check_apart

    check_apart(out_dir, [gold, pred, *([figures_dir] if figures_dir else [])], what="--out")

    config = JudgeConfig(endpoint=model_endpoint, model=model, retries=retries, timeout_s=timeout_s,
                         api_key_env=api_key_env)
    with progress(None, "judging") as advance:
        summary = run_judging(gold, pred, out_dir, config, figures_dir=figures_dir, workers=workers,
                              executor=executor, on_figure=lambda _: advance(1))
    if as_json:
        echo_json(summary)
        return
    echo_table(["judged", "skipped", "valid", "failed", "run failures"],
               [[summary["judged"], summary["skipped"], summary["valid"], summary["failed"], summary["run_failures"]]],
               title=f"{summary['judge_model']} ({summary['rubric_version']}) -> {out_dir}")


@click.command("judge-stats", context_settings=CONTEXT_SETTINGS)
@click.argument("path", required=False, type=click.Path(exists=True))
@click.option("--db", default=None, type=click.Path(dir_okay=False),
              help="Corpus: PATH's judgments are stored there; without PATH, read from it.")
@click.option("--system", default=None, help="Only this system.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def judge_stats(path: str | None, db: str | None, system: str | None, as_json: bool) -> None:
    """Judge results per system (Table 7): categories, RP, RR, RF1, Overall, coverage.

    RP, RF1, Overall and the categories are means over figures with a valid judgment;
    RR is the rule-based recall of the reaction scorer over every figure run;
    coverage = valid judgments / figures run.

    \b
    Example:
      labrecord rxn judge-stats judgments/
      labrecord rxn judge-stats judgments/ --db corpus.duckdb
      labrecord rxn judge-stats --db corpus.duckdb --system rxnminer --json
    """
    from labrecord.chemdata.judge_stats import stats_for_path

    if path is None and db is None:
        raise click.UsageError("give PATH, --db, or both")
    if path is not None and db is not None:
        from labrecord.safeio import check_apart

        check_apart(db, [path], what="--db")
    result = stats_for_path(path, db, system)
    if as_json:
        echo_json(result)
    else:
        _table(result)


def _pct(value: float | None) -> str | None:
    return None if value is None else f"{100 * value:.2f}"


def _pair(values: dict[str, Any]) -> str | None:
    if values["strict"] is None:
        return None
    return f"{_pct(values['strict'])} ({_pct(values['nonstereo'])})"


def _table(result: dict[str, Any]) -> None:
    columns = ["system", "judge", "Reactants", "Products", "Conditions", "Yield", "Selectivity", "RP", "RR", "RF1",
               "Overall", "coverage"]
    rows = []
    for g in result["groups"]:
        c = g["categories"]
        cov = g["coverage"]
        rows.append([g["system"], f"{g['judge_model']} {g['rubric_version']}", _pct(c["reactants"]), _pct(c["products"]),
                     _pct(c["conditions"]), _pct(c["yield"]), _pct(c["selectivity"]), _pair(g["rp"]), _pair(g["rr"]),
                     _pair(g["rf1"]), _pct(g["overall"]), f"{cov['valid']}/{cov['run']}"])
    echo_table(columns, rows, title="judge results, % (stereo-blind in parentheses); RR is rule-based")
