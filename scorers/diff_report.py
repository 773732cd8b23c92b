"""The diff section of ``labrecord report``: a :func:`~labrecord.scorers.diff.diff_paths`
result as HTML tables and a per-episode flip chart (matplotlib, imported by the caller's
report only)."""
from __future__ import annotations

import html
from typing import Any

from labrecord.scorers.diff import attribution_rows, binary_rows, continuous_rows

#: cell kinds of the flip chart: (label, colour)
CELLS: dict[str, tuple[str, str]] = {
    "both": ("1 in both", "#a8d5a8"),
    "neither": ("0 in both", "#e3e3e3"),
    "a_only": ("A only (lost in B)", "#b54a4a"),
    "b_only": ("B only (gained in B)", "#3b6ea5"),
    "unresolved": ("unresolved pair", "#ffffff"),
}


def _cell(pair: dict[str, Any], outcome: str) -> str | None:
    if not pair["resolved"]:
        return "unresolved"
    if outcome not in pair["a"] or outcome not in pair["b"]:
        return None
    ya, yb = pair["a"][outcome], pair["b"][outcome]
    return "both" if ya and yb else "neither" if not ya and not yb else "a_only" if ya else "b_only"


def flips_figure(result: dict[str, Any]) -> Any | None:
    """One row per binary outcome, one column per paired episode: kept, lost and gained
    outcomes; unresolved pairs hatched (their outcome is not known)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    outcomes = list(result["binary"])
    pairs = result["episodes"]
    if not outcomes or not pairs:
        return None
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.35 * len(pairs) + 3)), 0.45 * len(outcomes) + 2.2))
    for col, pair in enumerate(pairs):
        for row, outcome in enumerate(outcomes):
            kind = _cell(pair, outcome)
            if kind is None:
                continue
            ax.add_patch(Rectangle((col, row), 0.94, 0.9, facecolor=CELLS[kind][1], edgecolor="#999",
                                   hatch="///" if kind == "unresolved" else None, linewidth=0.5))
    ax.set_xlim(0, len(pairs))
    ax.set_ylim(len(outcomes), 0)
    ax.set_yticks([r + 0.45 for r in range(len(outcomes))], outcomes, fontsize=8)
    if len(pairs) <= 40:
        ax.set_xticks([c + 0.47 for c in range(len(pairs))], _short_labels([p["episode"] for p in pairs]), rotation=90,
                      fontsize=7)
    else:
        ax.set_xlabel(f"{len(pairs)} paired episodes (in instance order)")
        ax.set_xticks([])
    heads = {p["episode"].rsplit("/", 1)[0] for p in pairs if "/" in p["episode"]}
    where = f" — {heads.pop()}" if len(heads) == 1 else ""
    ax.set_title(f"Per-episode outcomes, A against B (each column one paired episode{where})", fontsize=10)
    handles = [Patch(facecolor=colour, edgecolor="#999", hatch="///" if kind == "unresolved" else None, label=label)
               for kind, (label, colour) in CELLS.items()]
    # beside the grid, so it never covers a column label
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def _short_labels(labels: list[str]) -> list[str]:
    """Episode labels without what every one shares: the population prefix, and the episode
    number when every run holds one episode (``pop/i003#0`` → ``i003``)."""
    heads = {label.rsplit("/", 1)[0] for label in labels if "/" in label}
    if len(heads) == 1 and all("/" in label for label in labels):
        labels = [label.rsplit("/", 1)[1] for label in labels]
    if all(label.endswith("#0") for label in labels):
        labels = [label[:-2] for label in labels]
    return labels


def _rows_html(header: list[str], rows: list[tuple[Any, ...]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape('—' if v is None else f'{v:.4g}' if isinstance(v, float) else str(v))}</td>"
                                    for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def diff_section(result: dict[str, Any], image: str | None) -> str:
    """The HTML of the diff section; ``image`` is the flip chart as base64 PNG."""
    a, b = result["a"], result["b"]
    verdict = result["explanation"]
    parts = [
        f"<p>A: <code>{html.escape(a['source'])}</code> ({a['episodes']} episodes, {a['unresolved']} unresolved); "
        f"B: <code>{html.escape(b['source'])}</code> ({b['episodes']} episodes, {b['unresolved']} unresolved). "
        f"Compared: {html.escape(', '.join(result['compared']) or 'nothing differs')}; "
        f"{result['pairs']['resolved']} resolved and {result['pairs']['unresolved']} unresolved pairs.</p>",
        f"<p><b>Explanation ({html.escape(verdict['verdict'])}):</b> {html.escape(verdict['text'])}</p>",
    ]
    if image:
        parts.append(f"<img alt='per-episode flips' src='data:image/png;base64,{image}'>")
    parts.append("<p class=note>Episodes are paired by their identity key without the compared settings. Binary "
                 "outcomes: exact McNemar p-value and B − A with Newcombe's hybrid score interval; continuous metrics: "
                 "mean paired difference with a paired bootstrap interval. A pair with an unresolved side is unresolved: "
                 "the difference is then given as bounds and the p-value as its range (Labference sec. 7.4).</p>")
    parts.append(_rows_html(["outcome", "both", "A only", "B only", "neither", "unres.", "A", "B", "B − A [95% CI]",
                             "McNemar p"], binary_rows(result)))
    if result["continuous"]:
        parts.append(_rows_html(["metric", "pairs", "unres.", "A mean", "B mean", "B − A", "95% CI"],
                                continuous_rows(result)))
    if result["attribution"]:
        parts.append(_rows_html(["field", "A", "B", "pairs differing", "flips", "flips by outcome"],
                                attribution_rows(result)))
    lines = [f"unresolved pair {e['episode']}: {e['reason']}" for e in result["unresolved_pairs"]]
    lines += [f"only in {e['side']}: {e['episode']} (run {e['run_id']}): {e['reason']}" for e in result["one_sided"]]
    if lines:
        parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>")
    return "".join(parts)
