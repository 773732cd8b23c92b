"""A self-contained HTML page comparing systems: rates with intervals, reach funnel, Oracle gains.

:func:`write_report` scores a runs folder / corpus / snapshot with :func:`score_corpus`
and writes one HTML file whose figures are embedded PNGs (matplotlib, Agg backend,
imported only here), followed by the full metric tables and coverage.
"""
from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import Any

from labrecord.fileio import atomic_write_bytes
from labrecord.scorers.present import format_ci, format_value, identity_title

#: rate metrics shown in the comparison figure, in order, with their level
RATE_PANELS: tuple[tuple[str, str], ...] = (
    ("B_next", "choice"), ("C_id", "choice"), ("correct.", "choice"), ("E_fixed", "execution"),
    ("completion.physical", "completion"), ("completion.valid", "completion"), ("completion.clean", "completion"),
    ("completion.recovered", "completion"),
)
COLORS = ("#3b6ea5", "#e07b39", "#5a9e5a", "#b54a4a", "#8064a2", "#6f6f6f", "#c9a227", "#2a9d8f")


def _label(group: dict[str, Any]) -> str:
    ident = group["identity"]
    label = f"{ident['system_name']}@{ident['system_revision'] or '-'}"
    if ident.get("intervention_mode") not in (None, "none"):
        label += f" +{ident['oracle']}"
    return label


def _rate_names(groups: list[dict[str, Any]]) -> list[str]:
    present = {name for g in groups for name in g["metrics"]}
    names: list[str] = []
    for prefix, _ in RATE_PANELS:
        names += sorted(n for n in present if n == prefix or (prefix.endswith(".") and n.startswith(prefix)))
    return names


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _errorbars(values: list[float | None], cis: list[Any]) -> tuple[list[float], list[list[float]]]:
    heights = [v if v is not None else 0.0 for v in values]
    lows = [max(0.0, h - ci[0]) if ci and v is not None else 0.0 for h, v, ci in zip(heights, values, cis)]
    highs = [max(0.0, ci[1] - h) if ci and v is not None else 0.0 for h, v, ci in zip(heights, values, cis)]
    return heights, [lows, highs]


def _absent(name: str) -> str:
    """Label for a metric a group does not have (per-decision rates: never reached)."""
    return "not reached" if name.startswith(("correct.", "reach.")) else "none"


def rates_figure(groups: list[dict[str, Any]]) -> Any:
    """Grouped bars: one cluster per rate metric, one bar per system, 95 % bootstrap bars."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = _rate_names(groups)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(names) + 2), 4.2))
    width = 0.8 / max(1, len(groups))
    x = np.arange(len(names))
    for index, group in enumerate(groups):
        metrics = [group["metrics"].get(n, {}) for n in names]
        heights, err = _errorbars([m.get("value") for m in metrics], [m.get("ci") for m in metrics])
        bars = ax.bar(x + index * width - 0.4 + width / 2, [h * 100 for h in heights], width,
                      yerr=[[e * 100 for e in err[0]], [e * 100 for e in err[1]]], capsize=3,
                      color=COLORS[index % len(COLORS)], label=_label(group))
        for bar, name, m, top in zip(bars, names, metrics, err[1]):
            # counts sit above the interval so error bars never cover them; an absent
            # metric is named, so an empty slot never reads as a zero rate
            text = _absent(name) if not m else "n/a" if m.get("value") is None else f"{m['num']:g}/{m['den']:g}"
            y = (bar.get_height() + top * 100) + 2
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=7, rotation=90,
                        color="#222" if m else "#888")
    ax.set_xticks(x, [n.replace("completion.", "compl.\n").replace("correct.", "correct\n") for n in names], fontsize=8)
    ax.set_ylabel("rate (%)")
    ax.set_ylim(0, 125)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("Choice, execution and completion rates (95 % bootstrap intervals)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(4, len(groups)), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def funnel_figure(groups: list[dict[str, Any]]) -> Any | None:
    """Per decision: rollouts → reached → correct, as counts per system."""
    import matplotlib.pyplot as plt
    import numpy as np

    decisions = sorted({n.split(".", 1)[1] for g in groups for n in g["metrics"] if n.startswith("reach.")})
    if not decisions:
        return None
    fig, axes = plt.subplots(1, len(decisions), figsize=(4.8 * len(decisions), 3.4), squeeze=False)
    for ax, decision in zip(axes[0], decisions):
        stages = ("runs", "reached", "correct")
        y = np.arange(len(stages))
        height = 0.8 / max(1, len(groups))
        for index, group in enumerate(groups):
            reach = group["metrics"].get(f"reach.{decision}")
            correct = group["metrics"].get(f"correct.{decision}")
            runs = reach["den"] if reach else _rollouts(group)
            if runs is None:
                continue
            # a group without the decision reached it at no eligible opportunity: zero bars, said so
            counts = [runs, reach["num"], correct["num"]] if reach else [runs, 0, 0]
            ax.barh(y + index * height - 0.4 + height / 2, counts, height, color=COLORS[index % len(COLORS)], label=_label(group))
            for stage, count in enumerate(counts):
                share = f" ({100 * count / counts[0]:.0f} %)" if counts[0] else ""
                note = " — no eligible opportunity" if not reach and stage == 1 else ""
                ax.annotate(f"{count:g}{share}{note}", (count, stage + index * height - 0.4 + height / 2), va="center",
                            fontsize=7, xytext=(2, 0), textcoords="offset points")
        ax.set_yticks(y, stages)
        ax.invert_yaxis()
        ax.set_title(f"Reach funnel: {decision}", fontsize=10)
        ax.set_xlabel("rollouts")
        ax.margins(x=0.25)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.tight_layout()
    # below the panels, so it never covers a bar or its count
    fig.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=min(4, len(groups)),
               frameon=False)
    return fig


def _rollouts(group: dict[str, Any]) -> float | None:
    """Rollouts of a group, as the denominator of any of its reach rates."""
    return next((m["den"] for n, m in group["metrics"].items() if n.startswith("reach.")), None)


def gains_figure(groups: list[dict[str, Any]]) -> Any | None:
    """Mean paired gain of each supported condition over its base, with intervals."""
    import matplotlib.pyplot as plt
    import numpy as np

    rows = [(g, n, m) for g in groups for n, m in g["metrics"].items()
            if n.startswith(("gain.", "interaction.")) and not n.endswith((".lower", ".upper"))]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.4))
    y = np.arange(len(rows))
    values = [m["value"] if m["value"] is not None else 0.0 for _, _, m in rows]
    err = _errorbars([m["value"] for _, _, m in rows], [m["ci"] for _, _, m in rows])[1]
    colors = ["#5a9e5a" if v > 0 else "#b54a4a" if v < 0 else "#6f6f6f" for v in values]
    ax.barh(y, values, xerr=err, color=colors, capsize=3)
    ax.axvline(0, color="black", lw=0.8)
    reach = max([abs(v) + e for v, e in zip(values, err[1])] + [0.1]) * 1.25
    ax.set_xlim(-reach, reach)  # symmetric so losses and gains read alike
    for row, (_, _, m) in enumerate(rows):
        text = "unavailable" if m["value"] is None else f"{m['value']:+.3g} (n={m['n']})"
        ax.annotate(text, (0, row), xytext=(4 if (m["value"] or 0) <= 0 else -4, 0), textcoords="offset points",
                    ha="left" if (m["value"] or 0) <= 0 else "right", va="center", fontsize=7)
    ax.set_yticks(y, [f"{_label(g)}: {n}" for g, n, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("paired gain, supported − base (errors reversed: positive = improvement)")
    ax.set_title("Oracle gains over matched pairs")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _table(group: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{html.escape(format_value(name, m))}</td><td>{m['n']}</td>"
        f"<td>{html.escape(format_ci(name, m))}</td></tr>" for name, m in group["metrics"].items())
    coverage = group["coverage"]
    missing = ", ".join(f"{m['population']}/{m['instance_id']}" for m in coverage["missing"]) or "none"
    invalid = ", ".join(coverage["invalid_runs"]) or "none"
    identity = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in group["identity"].items())
    return (f"<section><h3>{html.escape(identity_title(group['identity']))}</h3>"
            f"<details><summary>result identity</summary><table class=id>{identity}</table></details>"
            f"<table><tr><th>metric</th><th>value (num/den)</th><th>n</th><th>95% CI</th></tr>{rows}</table>"
            f"<p>runs {coverage['runs']}, valid {coverage['valid_runs']}; invalid runs: {html.escape(invalid)}; "
            f"missing registered instances: {html.escape(missing)}</p></section>")


#: what a reader needs to read each figure right
NOTES = {
    "Rates by system": "<p class=note>Choice rates (B_next, C_id, correct.&lt;decision&gt;) count only eligible "
                       "opportunities, whose legal set holds an operation other than wait/stop: native inactivity leaves "
                       "Wait and Stop unreported, so terminal dwell and violations measure them (Labference sec. 5.3). "
                       "Clean completion requires correct identified choices at all eligible opportunities (sec. 7.2).</p>",
    "Reach": "<p class=note>Per decision: rollouts, rollouts that reached an eligible opportunity of it, and rollouts "
             "whose first choice there was legal.</p>",
}

CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px;text-align:left}"
       "img{max-width:100%}h3{margin-top:1.5em}table.id th{font-weight:normal;color:#555}"
       ".note{color:#555;font-size:13px;max-width:60em}")


def render_report(result: dict[str, Any], title: str) -> str:
    """The HTML text for a :func:`score_corpus` result."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = result["groups"]
    figures = [("Rates by system", rates_figure(groups)), ("Reach", funnel_figure(groups)), ("Oracle gains", gains_figure(groups))]
    body = []
    for heading, fig in figures:
        if fig is not None:
            body.append(f"<h2>{heading}</h2><img alt='{heading}' src='data:image/png;base64,{_png(fig)}'>"
                        + NOTES.get(heading, ""))
            plt.close(fig)
    body.append("<h2>All metrics</h2>" + "".join(_table(g) for g in groups))
    body.append(latency_section(result.get("latency") or []))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{CSS}</style></head>"
            f"<body><h1>{html.escape(title)}</h1><p>{len(groups)} result group(s). Rates carry their counts; "
            "intervals resample whole episodes or matched pairs.</p>" + "".join(body) + "</body></html>")


def latency_section(summary: list[dict[str, Any]]) -> str:
    """The latency table (:mod:`labrecord.scorers.latency`), or nothing without data."""
    from html import escape

    from labrecord.scorers.latency import LATENCY_HEADER, latency_rows

    if not summary:
        return ""
    head = "".join(f"<th>{escape(h)}</th>" for h in LATENCY_HEADER)
    rows = "".join("<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in latency_rows(summary))
    return f"<h2>Policy latency and episode wall time</h2><table><tr>{head}</tr>{rows}</table>"


def write_report(runs_or_db: str | os.PathLike[str] | Any, out_path: str | os.PathLike[str], *, seed: int = 0,
                 resamples: int = 1000, parquet: bool = False, title: str | None = None) -> Path:
    """Score ``runs_or_db`` (runs folder, corpus file, snapshot with ``parquet=True``, or an
    open connection) and write the HTML report to ``out_path``; returns the path."""
    from labrecord.errors import LabrecordError
    from labrecord.scorers.corpus import score_corpus

    from labrecord.scorers.latency import latency_summary

    con = runs_or_db
    if not hasattr(con, "execute"):
        from labrecord.store import open_source

        con, _, _ = open_source(runs_or_db, parquet=parquet)
    result = score_corpus(con, seed=seed, resamples=resamples)
    if not result["groups"]:
        raise LabrecordError(f"{runs_or_db}: no valid runs to report on")
    result["latency"] = latency_summary(con)
    name = title or f"labrecord report: {runs_or_db if not hasattr(runs_or_db, 'execute') else 'corpus'}"
    out = Path(out_path)
    atomic_write_bytes(out, render_report(result, name).encode("utf-8"))
    return out
