"""Checking a returned action chunk against the policy's declared ActionSpec.

The step owner never applies an action the spec does not allow: a chunk of the wrong
shape, with non-finite values, or longer than ``max_chunk`` is rejected (nothing from it
is applied; the previous command is held), and values outside ``[low, high]`` are
clipped.  Both outcomes are logged, requested next to applied.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labrecord.models import ActionSpec


@dataclass
class ChunkCheck:
    """``applied`` (k, dim) rows to execute; ``clipped`` (k,) rows changed by clipping;
    ``rejected`` names why the whole chunk was refused (then ``applied`` is empty)."""

    requested: np.ndarray
    applied: np.ndarray
    clipped: np.ndarray
    rejected: str | None = None

    @property
    def clipped_count(self) -> int:
        return int(self.clipped.sum())


def check_chunk(actions: object, spec: ActionSpec) -> ChunkCheck:
    """Validate ``actions`` against ``spec``; see the module docstring for the rules."""
    try:
        requested = np.asarray(actions, dtype=float)
    except (TypeError, ValueError):
        return _reject(np.zeros((0, spec.dim)), spec, f"not numeric: {type(actions).__name__}")
    if requested.ndim == 1:
        requested = requested[None, :]
    if requested.ndim != 2 or requested.shape[1] != spec.dim:
        return _reject(requested, spec, f"shape {tuple(requested.shape)} does not match (k, {spec.dim})")
    if len(requested) == 0:
        return _reject(requested, spec, "empty chunk")
    if len(requested) > spec.max_chunk:
        return _reject(requested, spec, f"chunk of {len(requested)} exceeds max_chunk {spec.max_chunk}")
    if not np.isfinite(requested).all():
        return _reject(requested, spec, "non-finite value")
    low = np.asarray(spec.low, dtype=float) if spec.low is not None else np.full(spec.dim, -np.inf)
    high = np.asarray(spec.high, dtype=float) if spec.high is not None else np.full(spec.dim, np.inf)
    applied = np.clip(requested, low, high)
    return ChunkCheck(requested, applied, (applied != requested).any(axis=1))


def _reject(requested: np.ndarray, spec: ActionSpec, reason: str) -> ChunkCheck:
    return ChunkCheck(requested, np.zeros((0, spec.dim)), np.zeros(0, dtype=bool), reason)
