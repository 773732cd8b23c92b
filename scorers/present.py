"""How metric values are shown: rates as percentages with their counts, means as numbers."""
from __future__ import annotations

from typing import Any

#: metric name prefixes whose values are means or differences, not shares
NON_RATES = ("e_p", "e_v", "gain.", "interaction.")


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
    shown = _percent(value) if is_rate(name) else f"{value:.4g}"
    return f"{shown} {counts}" if is_rate(name) else shown


def format_ci(name: str, metric: dict[str, Any]) -> str:
    ci = metric.get("ci")
    if not ci or ci[0] is None:
        return "—"
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
