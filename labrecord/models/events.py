"""``events.jsonl``: one typed event per line, tagged by ``type``.

Every event carries ``seq`` (strictly increasing within a run), ``t`` (simulation
seconds) and optionally ``wall`` (wall-clock seconds).  The union :data:`Event` decodes a
line straight into the right class; an unknown ``type`` is a decode error.
"""
from __future__ import annotations

from typing import Any, Literal, Union

import msgspec

from labrecord.models.operation import Operation


class BaseEvent(msgspec.Struct, kw_only=True, tag_field="type", omit_defaults=True):
    seq: int
    t: float
    wall: float | None = None


class EpisodeStart(BaseEvent, tag="episode_start", kw_only=True):
    episode: int


class EpisodeEnd(BaseEvent, tag="episode_end", kw_only=True):
    episode: int
    reason: str
    physical_complete: bool
    valid_complete: bool
    #: the episode's runtime in seconds on ``runtime_clock`` (sim: simulated time; wall: wall
    #: clock, inference and waiting included), and the policy's mean compute time per query
    runtime_s: float | None = None
    runtime_clock: Literal["sim", "wall"] | None = None
    policy_s_per_query: float | None = None


class Opportunity(BaseEvent, tag="opportunity", kw_only=True):
    """A scorable choice opened after new evidence reached the policy."""

    opp: str
    decision: str
    trigger: Literal["initial", "state_change", "failed_attempt"]
    legal: list[Operation]
    obs_id: str | None = None
    evidence_version: int
    window_s: float | None = None
    state_ref: str | None = None


class Choice(BaseEvent, tag="choice", kw_only=True):
    """The first identifiable choice of an opportunity (``first``) or a later revision."""

    opp: str
    op: Operation
    track: Literal["native", "report"] = "native"
    recognizer: str | None = None
    first: bool = False
    evidence_version: int | None = None


class Confirm(BaseEvent, tag="confirm", kw_only=True):
    """Physical confirmation of progress (released, supported, stable …)."""

    obligation: str
    op: Operation | None = None
    predicate: str
    measured: dict[str, Any] = {}
    attempt: int = 1


class Failure(BaseEvent, tag="failure", kw_only=True):
    op: Operation | None = None
    reason: str
    attempt: int = 1
    recoverable: bool = True


class Violation(BaseEvent, tag="violation", kw_only=True):
    kind: Literal["premature", "repetition", "early_stop", "safety"]
    irreversible: bool = False
    op: Operation | None = None


class Recovery(BaseEvent, tag="recovery", kw_only=True):
    of_seq: int
    resolved: bool


class InterventionEvent(BaseEvent, tag="intervention", kw_only=True):
    """Oracle support bound to one opportunity and one evidence version.

    ``payload`` is the content delivered under *assist* (a displayed reading and stability,
    a recommended operation); ``original``/``substituted`` the output replaced under
    *replace*; ``obs_id`` the delivered observation that carried it (the receipt).
    """

    opp: str
    evidence_version: int
    mode: Literal["assist", "replace"]
    site: Literal["semantic", "decision", "geometry", "skill"]
    payload_id: str | None = None
    payload: Any = None
    original: Any = None
    substituted: Any = None
    obs_id: str | None = None
    delivered: bool = True


class Geometry(BaseEvent, tag="geometry", kw_only=True):
    """A geometry report; a null or zero prediction is kept and scored invalid."""

    opp: str
    target: str
    p_hat: list[float | None] | None = None
    v_hat: list[float | None] | None = None
    p_ref: list[float]
    v_ref: list[float] | None = None
    evidence_version: int | None = None


class StateReport(BaseEvent, tag="state_report", kw_only=True):
    opp: str
    fields: dict[str, Any] = {}
    reference: dict[str, Any] = {}
    evidence_version: int | None = None


class Dwell(BaseEvent, tag="dwell", kw_only=True):
    state: Literal["start", "reset", "complete"]
    duration_s: float = 0.0


class Validity(BaseEvent, tag="validity", kw_only=True):
    kind: Literal["sensor_error", "service_fault", "transport_fault"]
    source: str


Event = Union[
    EpisodeStart, EpisodeEnd, Opportunity, Choice, Confirm, Failure, Violation,
    Recovery, InterventionEvent, Geometry, StateReport, Dwell, Validity,
]

EVENT_TYPES: dict[str, type[BaseEvent]] = {
    cls.__struct_config__.tag: cls for cls in Event.__args__  # type: ignore[attr-defined]
}

#: event types whose ``opp`` must name an opportunity opened earlier in the run
OPP_BOUND_TYPES = ("choice", "intervention", "geometry", "state_report")
