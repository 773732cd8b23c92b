"""HTML pages for ``labrecord rxn score --report`` and ``labrecord rxn diff --report``.

One self-contained file: the tables the commands print, and a reliability diagram per
system and structure reader (precision of the readings in each confidence bin with its
Wilson interval, against the diagonal of perfect calibration), drawn with matplotlib (the
``report`` extra) as an embedded PNG.
"""
from __future__ import annotations

import html
import os
from collections.abc import Sequence
from typing import Any

from labrecord.fileio import atomic_write_bytes

CSS = ("body{font-family:sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
       "td,th{border:1px solid #bbb;padding:.2em .6em;text-align:right}th{background:#eee}"
       "td:first-child,th:first-child{text-align:left}.note{color:#555}")


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}"
    return html.escape("—" if value is None else str(value))


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def reliability_figure(system: str, calibration: dict[str, Any]) -> Any | None:
    """One panel per reader: bin precision (Wilson interval bars) at the bin's mean confidence."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    readers = calibration["readers"]
    if not readers:
        return None
    fig, axes = plt.subplots(1, len(readers), figsize=(4.4 * len(readers), 4.4), squeeze=False)
    for ax, (reader, data) in zip(axes[0], readers.items()):
        filled = [b for b in data["bins"] if b["n"]]
        x = [b["mean_confidence"] for b in filled]
        y = [b["precision"] for b in filled]
        low = [b["precision"] - b["interval"][0] for b in filled]
        high = [b["interval"][1] - b["precision"] for b in filled]
        ax.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1, label="perfect calibration")
        ax.bar([(b["low"] + b["high"]) / 2 for b in filled], y, width=1 / len(data["bins"]) * 0.9, color="#3b6ea5",
               alpha=0.35, label="bin precision")
        ax.errorbar(x, y, yerr=[low, high], fmt="o", color="#3b6ea5", capsize=3, label="95 % Wilson")
        for xi, yi, b in zip(x, y, filled):
            ax.annotate(str(b["n"]), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("recorded confidence")
        ax.set_ylabel("precision of the readings")
        ax.set_title(f"{system} · {reader}  (ECE {data['ece']:.3f}, n={data['readings']})", fontsize=9)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


def calibration_section(system: str, calibration: dict[str, Any]) -> str:
    from labrecord.scorers.report import _png

    if not calibration["readers"]:
        return (f"<p class=note>{html.escape(system)}: no molecule carries a recognition confidence "
                f"({calibration['without_confidence']} without); nothing to draw.</p>")
    import matplotlib.pyplot as plt

    fig = reliability_figure(system, calibration)
    image = f"<img alt='reliability diagram of {html.escape(system)}' src='data:image/png;base64,{_png(fig)}'>"
    plt.close(fig)
    tables = "".join(
        f"<h4>{html.escape(system)}, reader {html.escape(reader)}</h4>" + table(
            ["confidence", "readings", "correct", "precision", "95% Wilson low", "95% Wilson high", "mean confidence"],
            [[f"{b['low']:.1f}–{b['high']:.1f}", b["n"], b["correct"], b["precision"],
              b["interval"][0] if b["interval"] else None, b["interval"][1] if b["interval"] else None,
              b["mean_confidence"]] for b in data["bins"] if b["n"]])
        for reader, data in calibration["readers"].items())
    return image + tables


def _coverage_row(coverage: dict[str, int]) -> list[Any]:
    return [coverage["figures"], coverage["answered"], coverage["refused"], coverage["timed_out"], coverage["failed"]]


def _page(title: str, body: list[str]) -> bytes:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{CSS}"
            f"</style></head><body><h1>{html.escape(title)}</h1>{''.join(body)}</body></html>").encode("utf-8")


COVERAGE_COLUMNS = ["gold figures", "answered", "refused", "timed out", "failed"]


def rows_section(rows: dict[str, Any]) -> str:
    if not rows["figures"]:
        return "<h3>R-group table rows</h3><p class=note>No gold figure has a template.</p>"
    parts = [f"<h3>R-group table rows ({html.escape(rows['profile'])})</h3>" + table(
        ["figure", "gold rows", "predicted rows", "matched", "precision", "recall", "status"],
        [[f["figure_id"], f["gold"], f["pred"], f["matched"], f["precision"], f["recall"], f["status"]]
         for f in rows["per_figure"]])]
    for kind in ("missed", "invented"):
        parts.append(f"<h4>rows {kind} ({len(rows[kind])})</h4>" + table(
            ["figure", "row", "reaction"], [[x["figure_id"], x["row"], x["reaction"]] for x in rows[kind]]))
    return "".join(parts)


def score_page(results: dict[str, dict[str, Any]]) -> bytes:
    body = []
    for system, summary in results.items():
        body.append(f"<h2>{html.escape(system)}</h2><p class=note>Every number is over all {summary['figures']} "
                    "gold figures; a figure without an answer scores 0.</p>")
        body.append(table(COVERAGE_COLUMNS, [_coverage_row(summary["coverage"])]))
        if "profiles" in summary:
            rows = [[name, p["macro"]["precision"], p["macro"]["recall"], p["macro"]["f1"], p["micro"]["precision"],
                     p["micro"]["recall"], p["micro"]["f1"], p["molecule"]["f1"],
                     p["answered_only"]["macro"]["f1"] if "answered_only" in p else None]
                    for name, p in summary["profiles"].items()]
            body.append("<h3>Profiles</h3>" + table(
                ["profile", "P macro", "R macro", "F1 macro", "P micro", "R micro", "F1 micro", "mol F1 macro",
                 "F1 macro, answered only (not the headline)"], rows))
        if "rows" in summary:
            body.append(rows_section(summary["rows"]))
        if "calibration" in summary:
            body.append("<h3>Calibration of recorded confidences</h3>" + calibration_section(system, summary["calibration"]))
    return _page("Reaction scores", body)


def diff_page(result: dict[str, Any]) -> bytes:
    a, b = result["a"], result["b"]
    boot = result["bootstrap"]
    body = [f"<p>Profile <b>{html.escape(result['profile'])}</b>, {result['figures']} gold figures, A = "
            f"{html.escape(a)}, B = {html.escape(b)}.</p>",
            table(["system", "P macro", "R macro", "F1 macro", "F1 micro", "mol F1 macro", *COVERAGE_COLUMNS],
                  [[n, m["macro"]["precision"], m["macro"]["recall"], m["macro"]["f1"], m["micro"]["f1"],
                    m["molecule"]["f1"], *_coverage_row(result["coverage"][n])] for n, m in result["macro"].items()]),
            f"<p>Macro F1 A − B = {boot['difference']:+.4f}; {boot['level']:.0%} paired bootstrap interval "
            f"[{boot['interval'][0]:+.4f}, {boot['interval'][1]:+.4f}] ({boot['resamples']} resamples, seed "
            f"{boot['seed']}).</p>",
            "<h2>Figures where they differ most</h2>" + table(
                ["figure", "F1 A", "F1 B", "A − B", "status A", "status B"],
                [[r["figure_id"], r["f1_a"], r["f1_b"], r["delta"], r["status_a"], r["status_b"]]
                 for r in result["largest"]]),
            "<h2>Recognition agreement by figure region</h2>" + table(
                ["reader A", "reader B", "regions read by both", "same molecule", "share"],
                [[p["reader_a"], p["reader_b"], p["regions"], p["same"], p["share"]]
                 for p in result["agreement"]["pairs"]]),
            "<h3>Molecules per structure reader</h3>" + table(
                ["system", "reader", "molecules", "gold molecules", "share"],
                [[system, reader, r["molecules"], r["gold"], r["share"]]
                 for system, readers in result["agreement"]["readers"].items() for reader, r in readers.items()]),
            "<h2>Per-figure F1</h2>" + table(
                ["figure", "F1 A", "F1 B", "A − B", "status A", "status B"],
                [[r["figure_id"], r["f1_a"], r["f1_b"], r["delta"], r["status_a"], r["status_b"]]
                 for r in result["per_figure"]])]
    for system, calibration in result["calibration"].items():
        body.append(f"<h2>Calibration: {html.escape(system)}</h2>" + calibration_section(system, calibration))
    return _page(f"{a} vs {b}", body)


def write_score_report(results: dict[str, dict[str, Any]], path: str | os.PathLike[str]) -> None:
    atomic_write_bytes(path, score_page(results))


def write_diff_report(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    atomic_write_bytes(path, diff_page(result))
