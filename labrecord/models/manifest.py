"""``run.json``: what was run and under which conditions (schema ``labrecord.run/1.1``).

Minor version 1.1 turned the run's intervention record into a list of supports
(:class:`Support`, ``intervention.supports``): a joint branch carries two.  A 1.0 record
(one ``{mode, site, oracle}``) is read as a one-element list, so old runs stay readable.
"""
from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from labrecord.models.preflight import Preflight

RUN_SCHEMA = "labrecord.run/1.1"
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
_RUN_ID = re.compile(RUN_ID_PATTERN)


class Model(msgspec.Struct, kw_only=True):
    """Base for the typed records: keyword-only construction, unknown fields ignored on
    decode (``run.json`` keeps them separately, see :mod:`labrecord.rundir`)."""


class ActionSpec(Model, kw_only=True):
    """The action convention.  ``representation``, ``mode`` and ``control_hz`` must be given;
    null says the producer does not know (an imported dataset that never states its action
    space or control rate), which keeps such runs apart from every stated convention."""

    representation: Literal["joint", "eef"] | None
    dim: int
    mode: Literal["absolute", "delta"] | None
    frame: str = "world"
    units: str = "m"
    gripper: str | None = None
    control_hz: float | None
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
    #: ``kind`` null: the source does not say who acted (an imported dataset)
    name: str
    kind: Literal["vla", "agent", "scripted", "human"] | None
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


class HandoffCheck(Model, kw_only=True, omit_defaults=True):
    """How the registered checkpoint ``decision`` of this run was prepared and whether its
    handoff was verified (Labference sec. 6.1, 7.1): ``verified`` false keeps the member out
    of J as *unverified*.  ``file`` names the saved checkpoint (relative to the folder that
    holds the run directory); the replay audit checks that it exists, is intact and says
    verified.  A run without an entry for a decision started from the registered
    initialization itself (no saved state to verify)."""

    decision: str
    verified: bool
    file: str | None = None
    reason: str | None = None


class Evaluation(Model, kw_only=True):
    version: str
    population: Population | None = None
    history_protocol: str = "none"
    budget: Budget = msgspec.field(default_factory=Budget)
    #: ``recorded``: the run carries measurements.parquet and is replay-audited; ``none``: a
    #: harness that logs events only declared no measurement stream — scored from its events
    #: and marked unaudited (a declared stream that is missing or damaged is never excused)
    measurements: Literal["recorded", "none"] = "recorded"
    checkpoints: list[HandoffCheck] = []


SITES: tuple[str, ...] = ("semantic", "decision", "geometry", "skill")
MODES: tuple[str, ...] = ("assist", "replace")


class Support(Model, kw_only=True, omit_defaults=True):
    """One Oracle support of a run (Labference sec. 6.3): bound to one opportunity,
    evidence version and site; what was delivered and what followed.

    ``receipt`` is the ``obs_id`` of the delivered observation that carried the payload
    (assist) or answered the substituted commitment (replace); ``delivered`` is null while
    the supported opportunity was never reached, false when the task contract refused the
    payload's scope (``refused`` says why); ``first_choice`` is the first native choice at
    that opportunity after the delivery.
    """

    site: Literal["semantic", "decision", "geometry", "skill"] | None = None
    mode: Literal["assist", "replace"]
    oracle: str | None = None
    opp: str | None = None
    evidence_version: int | None = None
    payload_id: str | None = None
    payload: Any = None
    original: Any = None
    substituted: Any = None
    receipt: str | None = None
    delivered: bool | None = None
    refused: str | None = None
    first_choice: Any = None


class Intervention(Model, kw_only=True):
    """The run's Oracle condition: its list of :attr:`supports` (empty: none), the matched
    pair and the branch.  ``mode``, ``site`` and ``oracle`` are the condition's identity,
    derived from the supports (joined with ``+`` for a joint support, e.g.
    ``assist+replace``); a 1.0 record that has only them becomes one support.
    """

    mode: str = "none"
    site: str | None = None
    oracle: str | None = None
    pair_id: str | None = None
    branch: Literal["base", "supported"] | None = None
    supports: list[Support] = []

    def __post_init__(self) -> None:
        if not self.supports and self.mode != "none":
            # a 1.0 single-support record
            if self.mode not in MODES or (self.site is not None and self.site not in SITES):
                raise ValueError(f"intervention {self.mode}/{self.site}: expected mode in {'|'.join(MODES)} "
                                 f"and site in {'|'.join(SITES)}")
            self.supports = [Support(mode=self.mode, site=self.site, oracle=self.oracle)]  # type: ignore[arg-type]
        elif self.supports:
            self.mode, self.site, self.oracle = condition_of(self.supports)


def condition_of(supports: list[Support]) -> tuple[str, str | None, str | None]:
    """(mode, site, oracle) of a list of supports: ``+``-joined in list order."""
    if not supports:
        return "none", None, None

    def join(values: list[str | None]) -> str | None:
        return None if all(v is None for v in values) else "+".join(v or "" for v in values)

    return ("+".join(s.mode for s in supports), join([s.site for s in supports]), join([s.oracle for s in supports]))


class Seeds(Model, kw_only=True):
    task_state: int | None = None
    layout: int | None = None
    appearance: int | None = None
    policy: int | None = None


class Assets(Model, kw_only=True):
    """The bench the run was made on: ``scene`` names it, ``revision`` hashes its asset files
    (models, meshes) and ``layout_hash`` the realized layout description."""

    scene: str | None = None
    revision: str | None = None
    layout_hash: str | None = None


class Harness(Model, kw_only=True, omit_defaults=True):
    """How the evaluation harness ran the policy: settings outside the policy's own
    declaration that still change what it saw or what was executed.

    Every field is optional: a run written before this record existed, or imported from a
    source that does not say, leaves it null — *unknown*, never guessed.
    ``actions_per_query`` is how many rows of each returned chunk the harness executed
    before it queried the policy again (at most: a shorter chunk is executed whole); ``chunk_length`` how many rows the policy returned
    per query; ``cameras`` the camera streams rendered for the policy, ``image_size``
    ``[height, width]`` in pixels; ``state_convention`` the layout of the proprioceptive
    state it was sent; ``renderer`` the offscreen rendering backend (``egl``, ``osmesa``,
    ``none`` when nothing was rendered); ``parallel_envs`` how many environments were
    stepped together with this one (a vectorized evaluator batches several).
    """

    actions_per_query: int | None = None
    chunk_length: int | None = None
    cameras: list[str] | None = None
    image_size: list[int] | None = None
    state_convention: str | None = None
    renderer: str | None = None
    parallel_envs: int | None = None


class Physics(Model, kw_only=True):
    engine: str
    physics_hz: float
    control_hz: float


class Source(Model, kw_only=True):
    """Where an imported run came from (``labrecord import``): the source ``kind``
    (robomimic, isaaclab, ...), the ``path`` imported, the ``format_version`` the source
    declares (null when it declares none), the ``record`` within it (``data/demo_3``) and a
    ``content_hash`` (``sha256:...``) of that record's bytes and attributes: importing the
    same record again finds the hash and leaves the run alone.  ``attrs`` keeps the
    record's own attributes as the source wrote them."""

    kind: str
    path: str
    format_version: str | None = None
    record: str
    content_hash: str
    attrs: dict[str, Any] = {}


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
    harness: Harness | None = None
    #: set on imported runs only
    source: Source | None = None
    status: RunStatus = "running"


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is safe as a single path component, else raise ValueError."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or run_id in {".", ".."}:
        raise ValueError(
            f"run_id {run_id!r} is not a safe path component (letters, digits, '.', '_', '-'; "
            "must start with a letter or digit)"
        )
    return run_id
