"""How metric values are shown: rates as percentages with their counts, means as numbers."""
from __future__ import annotations

from typing import Any

#: metric name prefixes whose values are means or differences, not shares
NON_RATES = ("e_p", "e_v", "gain.", "interaction.", "runtime.", "policy_time_per_query")


def is_rate(name: str) -> bool:
    return not name.startswith(NON_RATES)


def _percent(x: float) -> str:
    text = f"{x * 100:.1f}".rstrip("0").rstrip(".")
    return f"{text} %"


def _count(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def format_value(name: str, metric: dict[str, Any]) -> str:
    """``20 % (10/50)`` for rates, ``0.0123 (sum/den)`` for means; ``unavailable`` for null."""
    value = metric.get("value")
    counts = f"({_count(metric['num'])}/{_count(metric['den'])})"
    if value is None:
        return f"unavailable {counts}"
    if name.startswith("runtime.") or name == "policy_time_per_query":
        return f"{value:.2f} s"
    shown = _percent(value) if is_rate(name) else f"{value:.4g}"
    return f"{shown} {counts}" if is_rate(name) else shown


def _shown(name: str, value: float) -> str:
    return _percent(value) if is_rate(name) else f"{value:.4g}"


def format_provisional(name: str, metrics: dict[str, Any], coverage: dict[str, Any]) -> str | None:
    """``provisional [62.5 %, 87.5 %], 2 of 8 unresolved`` for a metric withheld while
    members are unresolved (Labference sec. 7.4); None when the metric is final."""
    metric, cover = metrics.get(name), coverage.get(name)
    if metric is None or metric.get("value") is not None or not isinstance(cover, dict):
        return None
    unresolved, registered = cover["registered"] - cover["resolved"], cover["registered"]
    if unresolved <= 0:
        return None
    lower, upper = metrics.get(f"{name}.lower"), metrics.get(f"{name}.upper")
    if lower is None or upper is None or lower.get("value") is None or upper.get("value") is None:
        return f"unavailable (unbounded), {unresolved} of {registered} unresolved"
    return f"provisional [{_shown(name, lower['value'])}, {_shown(name, upper['value'])}], {unresolved} of {registered} unresolved"


def is_bound(name: str, metrics: dict[str, Any]) -> bool:
    """Whether ``name`` is the ``.lower`` / ``.upper`` bound of another metric in ``metrics``."""
    return name.endswith((".lower", ".upper")) and name.rsplit(".", 1)[0] in metrics


def metric_rows(group: dict[str, Any]) -> list[tuple[str, str, Any, str]]:
    """``(name, value text, n, interval text)`` per metric of a scored group; the
    ``.lower``/``.upper`` siblings are shown inside their metric's provisional text."""
    metrics, coverage = group["metrics"], group["coverage"]
    rows = []
    for name, metric in metrics.items():
        if is_bound(name, metrics):
            continue
        text = format_provisional(name, metrics, coverage) or format_value(name, metric)
        rows.append((name, text, metric.get("n"), format_ci(name, metric)))
    return rows


def unresolved_lines(group: dict[str, Any]) -> list[str]:
    """One line per unresolved run of a group (id and reason) and per missing member."""
    coverage = group["coverage"]
    lines = [f"unresolved run {r['run_id']}: {r['reason']}" for r in coverage.get("unresolved_runs", [])]
    lines += [f"missing registered member {m['population']}/{m['instance_id']}" for m in coverage.get("missing", [])]
    lines += [f"refused pair {p['pair_id']}: {p['reason']}" for p in coverage.get("refused_pairs", [])]
    return lines


def format_ci(name: str, metric: dict[str, Any]) -> str:
    ci = metric.get("ci")
    if not ci or ci[0] is None:
        return "— (one cluster)" if metric.get("ci_reason") else "—"
    if is_rate(name):
        return f"[{_percent(ci[0])}, {_percent(ci[1])}]"
    return f"[{ci[0]:.4g}, {ci[1]:.4g}]"


def identity_title(identity: dict[str, Any]) -> str:
    """A one-line label of a group: system, task, evaluation and support condition."""
    parts = [f"{identity.get('system_name')}@{identity.get('system_revision') or '-'}",
             f"{identity.get('task_id')} v{identity.get('task_version')}", f"eval v{identity.get('evaluation_version')}"]
    if identity.get("intervention_mode") not in (None, "none"):
        parts.append(f"{identity['intervention_mode']}:{identity.get('intervention_site')}:{identity.get('oracle')}")
    return " | ".join(parts)


def audited_text(coverage: dict[str, Any]) -> str:
    """``audited k/N``: runs whose measurements the replay audit checked, of the group's
    runs (an events-only run that declares no measurement stream is scored unaudited)."""
    audited = coverage.get("audited") or {"audited": 0, "runs": coverage.get("runs", 0)}
    return f"audited {audited['audited']}/{audited['runs']}"
