"""The smaller per-run records: delivery receipts, score snapshots, final scores."""
from __future__ import annotations

from typing import Any

import msgspec


class ObservationReceipt(msgspec.Struct, kw_only=True):
    """Which evidence reached the policy and when (``observations.jsonl``)."""

    obs_id: str
    step: int
    t_acquired: float
    t_delivered: float
    evidence_version: int
    channels: list[str] = []
    wall: float | None = None


class MetricValue(msgspec.Struct, kw_only=True):
    """A rate with its honest denominator; ``value`` is null when ``den`` is zero."""

    value: float | None
    num: float
    den: float
    n: int | None = None
    ci: list[float | None] | None = None


class OnlineScore(msgspec.Struct, kw_only=True):
    """A live score snapshot (``online_scores.jsonl``)."""

    t: float
    seq: int
    metrics: dict[str, MetricValue] = {}
    state: dict[str, Any] = {}


class FinalScores(msgspec.Struct, kw_only=True):
    """``scores.json``: the report written before the simulator closes."""

    run_id: str
    status: str
    metrics: dict[str, MetricValue] = {}
    episodes: list[dict[str, Any]] = []
    created_at: str | None = None
