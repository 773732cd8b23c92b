"""A self-contained HTML page comparing systems: rates with intervals, reach funnel, Oracle gains.

:func:`write_report` scores a runs folder / corpus / snapshot with :func:`score_corpus`
and writes one HTML file whose figures are embedded PNGs (matplotlib, Agg backend,
imported only here).  Sections: incomplete evidence (unresolved and invalid runs, by id
and reason); checkpoint choice, execution and completion rates; trajectory-indexed
decisions (reached only after earlier choices) apart from them; Oracle gains, one panel per
unit, with the bounds of unresolved gains drawn; run wall time and per-decision inference
latency per system; then every metric table.  A metric withheld while members are
unresolved is drawn as its bounds, never as a bar of its resolved part.
"""
from __future__ import annotations

import base64
import html
import io
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.fileio import atomic_write_bytes
from labrecord.scorers.present import (
    audited_text, format_ci, format_provisional, format_value, identity_title, metric_rows, unresolved_lines,
)

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: checkpoint rate metrics shown in the comparison figure, in order, with their level
#: (per-decision rates of complete rollouts have their own section: they depend on reach)
RATE_PANELS: tuple[tuple[str, str], ...] = (
    ("B_next", "choice"), ("C_id", "choice"), ("accuracy_identified", "choice"), ("E_fixed", "execution"),
    ("completion.physical", "completion"), ("completion.valid", "completion"), ("completion.clean", "completion"),
    ("completion.recovered", "completion"),
)
COLORS = ("#3b6ea5", "#e07b39", "#5a9e5a", "#b54a4a", "#8064a2", "#6f6f6f", "#c9a227", "#2a9d8f")


def _label(group: dict[str, Any]) -> str:
    ident = group["identity"]
    # the task leads: one report may hold several families whose systems share a name
    task = f"{ident['task_id']} · " if ident.get("task_id") else ""
    label = f"{task}{ident['system_name']}@{ident['system_revision'] or '-'}"
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


def _provisional(group: dict[str, Any], name: str) -> tuple[float, float] | None:
    """The bounds of a metric withheld while members are unresolved."""
    lower, upper = group["metrics"].get(f"{name}.lower"), group["metrics"].get(f"{name}.upper")
    if group["metrics"].get(name, {}).get("value") is None and lower and upper and lower["value"] is not None:
        return lower["value"], upper["value"]
    return None


def rates_figure(groups: list[dict[str, Any]]) -> Any:
    """Grouped bars: one cluster per checkpoint rate metric, one bar per system, 95 %
    intervals; a provisional metric is an outlined box from its lower to its upper bound."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = _rate_names(groups)
    if not names:
        return None
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
            bounds = _provisional(group, name)
            text = _absent(name) if not m else "n/a" if m.get("value") is None else f"{m['num']:g}/{m['den']:g}"
            if bounds is not None:
                ax.bar(bar.get_x() + bar.get_width() / 2, (bounds[1] - bounds[0]) * 100, bar.get_width(), bottom=bounds[0] * 100,
                       fill=False, hatch="///", edgecolor=COLORS[index % len(COLORS)], linewidth=1.2)
                cover = group["coverage"].get(name, {})
                text = f"{cover.get('registered', 0) - cover.get('resolved', 0)} unres."
                top = bounds[1] - bar.get_height() / 100
            y = (bar.get_height() + top * 100) + 2
            ax.annotate(text, (bar.get_x() + bar.get_width() / 2, y), ha="center", va="bottom", fontsize=7, rotation=90,
                        color="#222" if m else "#888")
    ax.set_xticks(x, [n.replace("completion.", "compl.\n").replace("correct.", "correct\n") for n in names], fontsize=8)
    ax.set_ylabel("rate (%)")
    ax.set_ylim(0, 135)
    ax.set_yticks(range(0, 101, 20))
    ax.set_title("Checkpoint choice, execution and completion (95 % intervals; hatched: provisional bounds)")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=min(4, len(groups)), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    return fig


def funnel_figure(groups: list[dict[str, Any]]) -> Any | None:
    """Per decision: rollouts → reached → correct, as counts per system (resolved runs; the
    unresolved ones are named beside the rollout count, never drawn as failures)."""
    import matplotlib.pyplot as plt
    import numpy as np

    decisions = sorted({n.split(".", 1)[1] for g in groups for n in g["metrics"]
                        if n.startswith("reach.") and not n.endswith((".lower", ".upper"))})
    if not decisions:
        return None
    ncols = min(3, len(decisions))
    nrows = -(-len(decisions) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.8 * ncols, 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(decisions):]:
        ax.set_visible(False)
    for ax, decision in zip(axes.flat, decisions):
        stages = ("runs", "reached", "correct")
        y = np.arange(len(stages))
        height = 0.8 / max(1, len(groups))
        for index, group in enumerate(groups):
            reach = group["metrics"].get(f"reach.{decision}")
            correct = group["metrics"].get(f"correct.{decision}")
            runs = reach["den"] if reach else _rollouts(group)
            if runs is None:
                continue
            cover = group["coverage"].get(f"reach.{decision}", {})
            unresolved = cover.get("registered", 0) - cover.get("resolved", 0)
            # a group without the decision reached it at no eligible opportunity: zero bars, said so
            counts = [runs, reach["num"], correct["num"]] if reach else [runs, 0, 0]
            ax.barh(y + index * height - 0.4 + height / 2, counts, height, color=COLORS[index % len(COLORS)], label=_label(group))
            for stage, count in enumerate(counts):
                share = f" ({100 * count / counts[0]:.0f} %)" if counts[0] else ""
                note = " — no eligible opportunity" if not reach and stage == 1 else ""
                note += f" (+{unresolved} unresolved)" if unresolved and stage == 0 else ""
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
    return next((m["den"] for n, m in group["metrics"].items() if n.startswith("reach.") and not n.endswith((".lower", ".upper"))),
                None)


#: Oracle gain panels: outcome measures sharing a unit share a panel
GAIN_UNITS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rate outcomes: difference of shares (completion, correct at checkpoint)", ("completion", "correct")),
    ("position error e_p: metres (base − supported)", ("e_p",)),
)


def gains_figure(groups: list[dict[str, Any]]) -> Any | None:
    """Mean paired gain of each supported condition over its base, one panel per unit;
    an unresolved gain is drawn as its bounds (outlined range), an unbounded one is named."""
    import matplotlib.pyplot as plt
    import numpy as np

    panels = []
    for title, outcomes in GAIN_UNITS:
        rows = [(g, n, m) for g in groups for n, m in g["metrics"].items()
                if n.startswith(("gain.", "interaction.")) and not n.endswith((".lower", ".upper"))
                and n.split(".", 1)[1] in outcomes]
        if rows:
            panels.append((title, rows))
    if not panels:
        return None
    heights = [0.45 * len(rows) + 1.2 for _, rows in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, sum(heights) + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (title, rows) in zip(axes[:, 0], panels):
        y = np.arange(len(rows))
        values = [m["value"] if m["value"] is not None else 0.0 for _, _, m in rows]
        err = _errorbars([m["value"] for _, _, m in rows], [m["ci"] for _, _, m in rows])[1]
        colors = ["#5a9e5a" if v > 0 else "#b54a4a" if v < 0 else "#6f6f6f" for v in values]
        ax.barh(y, [v if m["value"] is not None else 0.0 for v, (_, _, m) in zip(values, rows)], xerr=err, color=colors,
                capsize=3)
        reach = 0.1
        for row, (group, name, m) in enumerate(rows):
            bounds = _provisional(group, name)
            cover = group["coverage"].get(name, {})
            unresolved = cover.get("registered", 0) - cover.get("resolved", 0)
            if bounds is not None:
                ax.barh(row, bounds[1] - bounds[0], left=bounds[0], height=0.6, fill=False, hatch="///", edgecolor="#555")
                text = f"provisional [{bounds[0]:+.3g}, {bounds[1]:+.3g}], {unresolved} of {cover.get('registered')} unresolved"
                reach = max(reach, abs(bounds[0]), abs(bounds[1]) * 2.2)
                ax.annotate(text, (bounds[1], row), xytext=(4, 0), textcoords="offset points", ha="left", va="center", fontsize=7)
                continue
            value = m["value"]
            text = (f"unavailable, {unresolved} of {cover.get('registered')} unresolved" if value is None
                    else f"{value:+.3g} (n={m['n']})")
            reach = max(reach, abs(value or 0) + err[1][row])
            ax.annotate(text, (0, row), xytext=(4 if (value or 0) <= 0 else -4, 0), textcoords="offset points",
                        ha="left" if (value or 0) <= 0 else "right", va="center", fontsize=7)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_xlim(-reach * 1.3, reach * 1.3)  # symmetric so losses and gains read alike
        ax.set_yticks(y, [f"{_label(g)}: {n}" for g, n, _ in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("paired gain, supported − base (errors reversed: positive = improvement)")
    fig.suptitle("Oracle gains over matched pairs (hatched: bounds while pairs are unresolved)", fontsize=11)
    fig.tight_layout()
    return fig


#: the Oracle panel's table: Δ beside delivery, agreement and substitution (sec. 6.3, 6.4)
ORACLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("gain.correct", "Δ correct"), ("gain.completion", "Δ completion"), ("interaction.correct", "interaction (correct)"),
    ("delivery", "delivered"), ("agreement", "agreement"), ("substitution_share", "substitution share"),
    ("own_correct", "own correctness"),
)


def oracle_table(groups: list[dict[str, Any]]) -> str:
    """Per supported condition: its gains (and interaction contrast, for a joint support)
    beside delivery, recommendation agreement and substitution share.  Agreement is
    "null" under replace (the choice was substituted); an absent column is "—"."""
    rows = []
    for group in groups:
        if group["identity"].get("intervention_mode") in (None, "none") or "delivery" not in group["metrics"]:
            continue
        cells = []
        for name, _ in ORACLE_COLUMNS:
            metric = group["metrics"].get(name)
            if metric is None:
                cells.append("—")
            elif metric["value"] is None and not metric["den"] and name == "agreement":
                cells.append("null (replace)")
            else:
                cells.append(format_provisional(name, group["metrics"], group["coverage"]) or format_value(name, metric))
        ident = group["identity"]
        sites, modes = (ident.get("intervention_site") or "").split("+"), ident["intervention_mode"].split("+")
        label = f"{_label(group)} ({'+'.join(f'{s}:{m}' for s, m in zip(sites, modes))})"
        rows.append("<tr><td>" + html.escape(label) + "</td>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    head = "<tr><th>supported condition</th>" + "".join(f"<th>{html.escape(t)}</th>" for _, t in ORACLE_COLUMNS) + "</tr>"
    return f"<table>{head}{''.join(rows)}</table>"


def decision_table(groups: list[dict[str, Any]]) -> str:
    """Per registered decision and system: N_reach/N_run, N_correct/N_reach, N_correct/N_run."""
    decisions = sorted({n.split(".", 1)[1] for g in groups for n in g["metrics"] if n.startswith("reach.")
                        and not n.endswith((".lower", ".upper"))})
    if not decisions:
        return ""
    head = "<tr><th>decision</th><th>system</th><th>reached / runs</th><th>correct / reached</th><th>correct / runs</th></tr>"
    rows = []
    for decision in decisions:
        for group in groups:
            cells = []
            for prefix in ("reach.", "correct_given_reach.", "correct."):
                name = prefix + decision
                if name not in group["metrics"]:
                    cells.append("not reached")
                    continue
                text = format_provisional(name, group["metrics"], group["coverage"]) or format_value(name, group["metrics"][name])
                ci = format_ci(name, group["metrics"][name])
                cells.append(text if ci == "—" else f"{text} {ci}")
            rows.append(f"<tr><td>{html.escape(decision)}</td><td>{html.escape(_label(group))}</td>"
                        + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


#: run wall time (run.json created_at to scores.json created_at) and the inference latency
#: of the policy query that received each opportunity's evidence (observations.wall)
TIMING_SQL = """
WITH runs_ AS (
    SELECT r.run_id, r.system_name, r.system_revision, r.intervention_mode, r.oracle,
           epoch(try_cast(f.created_at AS TIMESTAMP)) - epoch(try_cast(r.created_at AS TIMESTAMP)) AS wall_s
    FROM runs r LEFT JOIN final_scores f USING (run_id)
), latency AS (
    SELECT o.run_id, o.decision, b.wall AS latency_s
    FROM events o JOIN observations b ON b.run_id = o.run_id AND b.obs_id = o.obs_id
    WHERE o.type = 'opportunity' AND b.wall IS NOT NULL
)
SELECT r.system_name, r.system_revision, r.intervention_mode, r.oracle, l.decision,
       count(DISTINCT r.run_id) AS runs, median(r.wall_s) AS wall_median_s, max(r.wall_s) AS wall_max_s,
       count(l.latency_s) AS decisions, median(l.latency_s) AS latency_median_s, max(l.latency_s) AS latency_max_s
FROM runs_ r LEFT JOIN latency l USING (run_id)
GROUP BY ALL ORDER BY ALL
"""


def timing_table(con: DuckDBPyConnection) -> str:
    """Per system: run wall time and per-decision inference latency (seconds), as recorded."""
    rows = con.execute(TIMING_SQL).fetchall()
    if not rows:
        return ""

    def secs(x: Any) -> str:
        return "—" if x is None else f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"

    body = []
    for system, revision, mode, oracle_name, decision, runs, wall_med, wall_max, decisions, lat_med, lat_max in rows:
        label = f"{system}@{revision or '-'}" + (f" +{oracle_name}" if mode not in (None, "none") else "")
        body.append(f"<tr><td>{html.escape(label)}</td><td>{runs}</td><td>{secs(wall_med)} (max {secs(wall_max)})</td>"
                    f"<td>{html.escape(decision or '—')}</td><td>{decisions}</td><td>{secs(lat_med)} (max {secs(lat_max)})</td></tr>")
    return ("<table><tr><th>system</th><th>runs</th><th>run wall time, median</th><th>decision</th>"
            "<th>opportunities</th><th>inference latency, median</th></tr>" + "".join(body) + "</table>")


def evidence_section(result: dict[str, Any]) -> str:
    """Unresolved members of every group and the invalid runs in no group, by id and reason."""
    items = []
    for group in result["groups"]:
        lines = unresolved_lines(group)
        if lines:
            items.append(f"<li><b>{html.escape(identity_title(group['identity']))}</b><ul>"
                         + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul></li>")
    for entry in result.get("unassigned_invalid_runs", []):
        items.append(f"<li>invalid run in no group (run.json unreadable) {html.escape(entry['run_dir'])}: "
                     f"{html.escape(entry['reason'])}</li>")
    if not items:
        return "<p>Every registered member is resolved: no missing, invalid, unaudited-failing or faulted runs.</p>"
    return ("<p class=note>An unresolved member (missing run, invalid run, failed replay audit, aborted run or "
            "evaluator-side fault) is never counted as a policy failure: each metric it belongs to is withheld and shown "
            "as provisional bounds (Labference sec. 7.4).</p><ul>" + "".join(items) + "</ul>")


def _table(group: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(name)}</td><td>{html.escape(text)}</td><td>{'—' if n is None else n}</td>"
        f"<td>{html.escape(ci)}</td></tr>" for name, text, n, ci in metric_rows(group))
    coverage = group["coverage"]
    missing = ", ".join(f"{m['population']}/{m['instance_id']}" for m in coverage["missing"]) or "none"
    invalid = "; ".join(f"{r['run_id']} ({r['reason']})" for r in coverage.get("unresolved_runs", [])) or "none"
    identity = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>" for k, v in group["identity"].items())
    return (f"<section><h3>{html.escape(identity_title(group['identity']))}</h3>"
            f"<details><summary>result identity</summary><table class=id>{identity}</table></details>"
            f"<table><tr><th>metric</th><th>value (num/den)</th><th>n</th><th>95% CI</th></tr>{rows}</table>"
            f"<p>runs {coverage['runs']}, resolved {coverage['valid_runs']}, {html.escape(audited_text(coverage))}; "
            f"unresolved runs: {html.escape(invalid)}; missing registered instances: {html.escape(missing)}</p></section>")


#: what a reader needs to read each figure right
NOTES = {
    "Checkpoint choice, execution and completion": "<p class=note>Choice rates (B_next, C_id, accuracy among identified) count only eligible "
                       "opportunities, whose legal set holds an operation other than wait/stop: native inactivity leaves "
                       "Wait and Stop unreported, so terminal dwell and violations measure them (Labference sec. 5.3). "
                       "Clean completion requires correct identified choices at all eligible opportunities (sec. 7.2).</p>",
    "Trajectory-indexed decisions": "<p class=note>Decisions of complete rollouts (d1, d2 …) are reached only after "
                                    "earlier choices, so each system meets them in different states and numbers: per decision, "
                                    "rollouts, rollouts that reached an eligible opportunity of it, and rollouts whose first "
                                    "choice there was legal (N_reach/N_run, N_correct/N_reach, N_correct/N_run, sec. 7.1). "
                                    "They are not checkpoint metrics and are kept apart from them.</p>",
    "Oracle gains": "<p class=note>Outcome measures: completion = share of the branch's episodes with valid completion; "
                    "correct = the first native choice at the shared checkpoint (a later self-correction does not count); "
                    "e_p = mean position error in metres, reversed so that positive is improvement. Rates and metres are "
                    "drawn in separate panels. Beside Δ (sec. 6.3): delivered = supported branches whose support reached "
                    "the system; agreement = branches whose first choice equals the recommended operation (decision:assist; "
                    "null under replace); substitution share = branches whose committed operation differed from the "
                    "substituted one (decision:replace); own correctness = branches whose own proposal (the replaced "
                    "original) was legal (decision:replace, sec. 6.2). Under decision:replace Δ correct is not reported: the "
                    "executed choice is the Oracle's.</p>",
}

CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}"
       "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;font-size:13px;text-align:left}"
       "img{max-width:100%}h3{margin-top:1.5em}table.id th{font-weight:normal;color:#555}"
       ".note{color:#555;font-size:13px;max-width:60em}")


def render_report(result: dict[str, Any], title: str, timing: str = "", diff: dict[str, Any] | None = None) -> str:
    """The HTML text for a :func:`score_corpus` result (``timing``: :func:`timing_table`;
    ``diff``: a :func:`labrecord.scorers.diff.diff_paths` result, shown as its own section)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = result["groups"]
    body = [f"<h2>Incomplete evidence</h2>{evidence_section(result)}"]
    sections = [("Checkpoint choice, execution and completion", [rates_figure(groups)], ""),
                ("Trajectory-indexed decisions", [funnel_figure(groups)], decision_table(groups)),
                ("Oracle gains", [gains_figure(groups)], oracle_table(groups))]
    for heading, figs, extra in sections:
        images = "".join(f"<img alt='{heading}' src='data:image/png;base64,{_png(fig)}'>" for fig in figs if fig is not None)
        for fig in figs:
            if fig is not None:
                plt.close(fig)
        if images or extra:
            body.append(f"<h2>{heading}</h2>{images}{NOTES.get(heading, '')}{extra}")
    if timing:
        body.append("<h2>Time per system</h2><p class=note>Run wall time runs from run.json to scores.json; inference "
                    "latency is the policy query that received each opportunity's evidence (physics paused).</p>" + timing)
    if diff is not None:
        from labrecord.scorers.diff_report import diff_section, flips_figure

        fig = flips_figure(diff)
        image = _png(fig) if fig is not None else None
        if fig is not None:
            plt.close(fig)
        body.append(f"<h2>Diff: why two evaluations disagree</h2>{diff_section(diff, image)}")
    body.append("<h2>All metrics</h2>" + "".join(_table(g) for g in groups))
    body.append(latency_section(result.get("latency") or []))
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title><style>{CSS}</style></head>"
            f"<body><h1>{html.escape(title)}</h1><p>{len(groups)} result group(s). Rates carry their counts; "
            "rate intervals are Wilson score intervals over runs, other intervals a cluster bootstrap over runs or matched "
            "pairs.</p>" + "".join(body) + "</body></html>")


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
                 resamples: int = 1000, parquet: bool = False, title: str | None = None, audit: bool = False,
                 diff: dict[str, Any] | None = None) -> Path:
    """Score ``runs_or_db`` (runs folder, corpus file, snapshot with ``parquet=True``, or an
    open connection) and write the HTML report to ``out_path``; returns the path.  ``audit``
    replay-audits a runs folder first (as ``labrecord report`` does); ``diff`` adds the diff
    section (a :func:`labrecord.scorers.diff.diff_paths` result)."""
    from labrecord.errors import LabrecordError
    from labrecord.scorers.corpus import audit_corpus, score_corpus

    from labrecord.scorers.latency import latency_summary

    con: Any = runs_or_db
    if not hasattr(runs_or_db, "execute"):
        from labrecord.store import open_source

        con, kind, _ = open_source(runs_or_db, parquet=parquet)
        if audit and kind == "runs":
            audit_corpus(con)
    result = score_corpus(con, seed=seed, resamples=resamples)
    if not result["groups"]:
        raise LabrecordError(f"{runs_or_db}: no runs to report on")
    result["latency"] = latency_summary(con)
    name = title or f"labrecord report: {runs_or_db if not hasattr(runs_or_db, 'execute') else 'corpus'}"
    out = Path(out_path)
    atomic_write_bytes(out, render_report(result, name, timing_table(con), diff).encode("utf-8"))
    return out
