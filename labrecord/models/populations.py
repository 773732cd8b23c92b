"""Population registries (``populations/<name>.jsonl``), tagged by ``type``.

They are written before evaluation and fix the denominators: a registered instance with
no valid run stays in the denominator as missing.
"""
from __future__ import annotations

from typing import Any, Literal, Union

import msgspec


class PopulationRecord(msgspec.Struct, kw_only=True, tag_field="type"):
    pass


class Instance(PopulationRecord, tag="instance", kw_only=True):
    """A registered task instance (a start state that runs point at)."""

    instance_id: str
    task_id: str | None = None
    condition: str | None = None
    fields: dict[str, Any] = {}


class Checkpoint(PopulationRecord, tag="checkpoint", kw_only=True):
    """A fixed decision checkpoint of J."""

    instance_id: str
    decision: str


class FixedStart(PopulationRecord, tag="fixed_start", kw_only=True):
    """A fixed-subgoal start of K."""

    instance_id: str
    subgoal: str


class Pair(PopulationRecord, tag="pair", kw_only=True):
    """An answer-changing or geometric pair of B."""

    pair_id: str
    members: list[str]
    kind: Literal["answer_changing", "geometric"]


class OraclePair(PopulationRecord, tag="oracle_pair", kw_only=True):
    """A matched Oracle pair: the same instance without and with one support."""

    pair_id: str
    base: str
    supported: str
    mode: Literal["assist", "replace"]
    oracle: str
    site: Literal["semantic", "decision", "geometry", "skill"] | None = None


PopulationEntry = Union[Instance, Checkpoint, FixedStart, Pair, OraclePair]
POPULATION_TYPES: dict[str, type[PopulationRecord]] = {
    cls.__struct_config__.tag: cls for cls in PopulationEntry.__args__  # type: ignore[attr-defined]
}
