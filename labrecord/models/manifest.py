"""``run.json``: what was run and under which conditions (schema ``labrecord.run/1``)."""
from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from labrecord.models.preflight import Preflight

RUN_SCHEMA = "labrecord.run/1"
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_RUN_ID = re.compile(RUN_ID_PATTERN)


class Model(msgspec.Struct, kw_only=True):
    """Base for the typed records: keyword-only construction, unknown fields ignored on
    decode (``run.json`` keeps them separately, see :mod:`labrecord.rundir`)."""


class ActionSpec(Model, kw_only=True):
    representation: Literal["joint", "eef"]
    dim: int
    mode: Literal["absolute", "delta"]
    frame: str = "world"
    units: str = "m"
    gripper: str | None = None
    control_hz: float
    max_chunk: int = 1
    low: list[float] | None = None
    high: list[float] | None = None


class ObservationSpec(Model, kw_only=True):
    channels: list[str] = []
    depth: bool = False


class Task(Model, kw_only=True):
    family: str
    task_id: str
    version: str
    condition: Literal["basic", "extended"] = "basic"
    variant: dict[str, Any] = {}
    contract_hash: str | None = None


class System(Model, kw_only=True):
    name: str
    kind: Literal["vla", "agent", "scripted", "human"]
    revision: str = ""
    action_spec: ActionSpec
    observation: ObservationSpec = msgspec.field(default_factory=ObservationSpec)
    memory: str | None = None
    tools: list[str] = []
    preflight: Preflight | None = None


class Population(Model, kw_only=True):
    name: str
    instance_id: str


class Budget(Model, kw_only=True):
    response_deadline_s: float | None = None
    clock: Literal["sim", "wall"] = "sim"
    max_steps: int | None = None


class Evaluation(Model, kw_only=True):
    version: str
    population: Population | None = None
    history_protocol: str = "none"
    budget: Budget = msgspec.field(default_factory=Budget)


class Intervention(Model, kw_only=True):
    mode: Literal["none", "assist", "replace"] = "none"
    site: Literal["semantic", "decision", "geometry", "skill"] | None = None
    oracle: str | None = None
    pair_id: str | None = None
    branch: Literal["base", "supported"] | None = None


class Seeds(Model, kw_only=True):
    task_state: int | None = None
    layout: int | None = None
    appearance: int | None = None
    policy: int | None = None


class Assets(Model, kw_only=True):
    scene: str | None = None
    layout_hash: str | None = None


class Physics(Model, kw_only=True):
    engine: str
    physics_hz: float
    control_hz: float


RunStatus = Literal["running", "complete", "aborted", "service_fault"]


class RunManifest(Model, kw_only=True):
    """The typed view of ``run.json``.  ``status`` is ``running`` while a writer holds the
    run open; a run left ``running`` was interrupted."""

    schema: str = RUN_SCHEMA
    run_id: str
    created_at: str
    task: Task
    system: System
    evaluation: Evaluation
    intervention: Intervention = msgspec.field(default_factory=Intervention)
    seeds: Seeds = msgspec.field(default_factory=Seeds)
    assets: Assets = msgspec.field(default_factory=Assets)
    physics: Physics | None = None
    status: RunStatus = "running"


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is safe as a single path component, else raise ValueError."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or run_id in {".", ".."}:
        raise ValueError(
            f"run_id {run_id!r} is not a safe path component (letters, digits, '.', '_', '-'; "
            "must start with a letter or digit)"
        )
    return run_id
