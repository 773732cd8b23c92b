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
    """A matched Oracle pair: the same instance without and with one support.

    A joint support (two sites) joins its fields with ``+`` in support order, as the
    supported run's ``intervention`` does: mode ``assist+replace``, site
    ``semantic+decision``, oracle ``o1+o2``.
    """

    pair_id: str
    base: str
    supported: str
    mode: str
    oracle: str
    site: str | None = None

    def __post_init__(self) -> None:
        modes, sites = self.mode.split("+"), (self.site or "").split("+")
        if any(m not in ("assist", "replace") for m in modes) or (
                self.site is not None and (len(sites) != len(modes) or any(
                    s not in ("semantic", "decision", "geometry", "skill") for s in sites))):
            raise ValueError(f"oracle_pair {self.pair_id}: mode {self.mode!r} / site {self.site!r}: expected "
                             "assist|replace and semantic|decision|geometry|skill, '+'-joined for a joint support")


PopulationEntry = Union[Instance, Checkpoint, FixedStart, Pair, OraclePair]
POPULATION_TYPES: dict[str, type[PopulationRecord]] = {
    cls.__struct_config__.tag: cls for cls in PopulationEntry.__args__  # type: ignore[attr-defined]
}
