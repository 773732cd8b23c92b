"""Verified decision checkpoints (Labference sec. 6.1), backend-neutral.

A checkpoint is taken by the step owner at a control boundary where a registered
decision's opportunity has just opened (the observation acquired, not yet answered).  It
holds everything needed to continue from there:

* the physics state from the simulator backend (:class:`StatefulEnvironment`: for MuJoCo
  the ``mjSTATE_INTEGRATION`` vector — time, qpos, qvel, act, warm-start acceleration,
  ctrl, mocap, user data — plus the derived quantities of the last step, so the first
  replayed step sees the same sensor and contact data);
* the contract's tracker and stepper state, the online scorer's counters;
* the policy object (its plan, reset declaration and RNG) and the process RNG states;
* the evidence version, the delivered-history cursor (next event ``seq``, observation
  count, physics step) and the pending observation;
* the handoff state the paper requires at a handoff (occupancy, release, stability).

File format (``<out>/checkpoints/<name>.ckpt``, written atomically): one JSON header line
(:class:`CheckpointHeader`: identity, cursor, handoff, verification, sha256 of the body)
followed by a pickled body.  The body is Python pickle: load only checkpoints this
installation wrote (:func:`read_checkpoint` refuses a body whose digest does not match).

*Verification* restores the checkpoint into the backend and re-steps a stated number of
control periods with the actions recorded after it; every measurement column must equal
the original's bitwise (same machine, same library build), the tracker state after
the replay must equal the original's, and the handoff must be ready (a valid, stable
reading: the evidence the opportunity was opened on).  An unverified checkpoint never starts a branch.
"""
from __future__ import annotations

import copy
import hashlib
import pickle
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import msgspec
import numpy as np

from labrecord.errors import LabrecordError

#: control periods re-stepped by default to verify a checkpoint (1 s at 10 Hz)
VERIFY_PERIODS = 10
#: the stated tolerance for a checkpoint replayed on another machine or library build
#: (relative and absolute, float columns only; boolean and integer columns stay exact)
CROSS_MACHINE_TOLERANCE = 1e-6
CHECKPOINTS_DIR = "checkpoints"
FORMAT = "labrecord.checkpoint/1"


class StatefulEnvironment(Protocol):
    """What a backend supplies to checkpoint a :class:`~labrecord.recorders.loop.Environment`."""

    def get_state(self) -> bytes:
        """The complete physics state needed to continue (opaque to the caller)."""

    def set_state(self, state: bytes) -> None:
        """Restore a state from :meth:`get_state` into this (identically configured) backend."""

    def state_vector(self) -> np.ndarray:
        """The canonical state vector (for MuJoCo: ``mjSTATE_INTEGRATION``), compared bitwise."""

    def state_digest(self) -> str:
        """A digest of the configuration a state belongs to (model parameters, masses)."""


class Verification(msgspec.Struct, kw_only=True):
    periods: int
    bitwise: bool
    tracker_equal: bool
    mismatched_columns: list[str] = []
    first_mismatch_period: int | None = None

    handoff_ready: bool = False
    #: a served policy re-asked over the window (a study of a policy stateless between
    #: queries): the queries made, whether every re-queried action row equals the recorded
    #: one (null: not re-queried), and the first control period where one differs
    requeried: int = 0
    actions_equal: bool | None = None
    first_action_mismatch_period: int | None = None

    @property
    def verified(self) -> bool:
        from labrecord.scorers.audit import handoff_verified

        return handoff_verified(msgspec.to_builtins(self))


class CheckpointHeader(msgspec.Struct, kw_only=True):
    format: str = FORMAT
    run_id: str
    instance_id: str
    decision: str
    opp: str
    evidence_version: int
    t: float
    step: int
    next_seq: int
    observations: int
    policy: str
    policy_episode: int
    engine: str
    config_digest: str
    physics_sha256: str
    body_sha256: str = ""
    handoff: dict[str, Any] = {}
    verification: Verification | None = None

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.verified


@dataclass
class Checkpoint:
    header: CheckpointHeader
    physics: bytes
    #: pickled-as-a-whole Python state: scorer, policy, owner cursor, pending observation, RNGs
    state: dict[str, Any] = field(default_factory=dict)


#: scorer attributes that hold the tracker and its counters (the emit closures are rebound)
_SCORER_FIELDS = ("tracker", "stepper", "counts", "legal", "first_choices", "last", "advanced", "_last_sig",
                  "_failure_seqs")


def capture(owner: Any, observation: Any, *, instance_id: str, engine: str) -> Checkpoint:
    """The checkpoint of ``owner`` at this boundary; ``observation`` is the one just
    acquired (its opportunity open, not yet answered)."""
    env, scorer = owner.env, owner.scorer
    current = scorer.tracker.current
    if current is None:
        raise LabrecordError("checkpoint: no open opportunity at this boundary")
    physics = env.get_state()
    f = scorer.last
    handoff = {}
    if f is not None:
        handoff = {"state_ref": scorer.contract.state_ref(scorer.tracker.state, f),
                   "released": bool(getattr(f, "released", False)), "stable": bool(getattr(f, "stable", False)),
                   "low_motion": bool(getattr(f, "low_motion", False)), "valid": bool(getattr(f, "valid", False)),
                   # the contract's own test that this evidence makes a choice scorable
                   # (weighing: a valid, stable reading; rack: frames not occluded)
                   "ready": bool(scorer.contract.evidence_ready(scorer.tracker.state, f))}
    state = {
        "owner": owner.continuation(),
        "scorer": copy.deepcopy({name: getattr(scorer, name) for name in _SCORER_FIELDS}),
        # a served policy's connection is not state: its client session is (session_state)
        "policy": copy.deepcopy(owner.policy) if not callable(getattr(owner.policy, "session_state", None)) else None,
        "session": owner.policy.session_state() if callable(getattr(owner.policy, "session_state", None)) else None,
        "observation": copy.deepcopy(observation),
        "rng": {"numpy": np.random.get_state(), "python": random.getstate()},
    }
    cursor = owner.cursor
    header = CheckpointHeader(
        run_id=owner.writer.manifest.run_id, instance_id=instance_id, decision=current.decision, opp=current.opp,
        evidence_version=int(current.evidence_version), t=float(env.time), step=int(cursor.step),
        next_seq=int(owner.writer.next_seq), observations=int(cursor.observations), policy=owner.caps.name,
        policy_episode=int(cursor.episode), engine=engine, config_digest=env.state_digest(),
        physics_sha256=hashlib.sha256(np.ascontiguousarray(env.state_vector()).tobytes()).hexdigest(), handoff=handoff)
    return Checkpoint(header, physics, state)


def restore_physics(env: Any, checkpoint: Checkpoint) -> None:
    """Put the checkpoint's physics into ``env`` (refused for another configuration)."""
    digest = env.state_digest()
    if digest != checkpoint.header.config_digest:
        raise LabrecordError(f"checkpoint {checkpoint.header.run_id}/{checkpoint.header.decision}: taken on a bench "
                             f"configured as {checkpoint.header.config_digest}, this one is {digest}")
    env.set_state(checkpoint.physics)


def restored_scorer(scorer: Any, checkpoint: Checkpoint) -> Any:
    """A copy of ``scorer`` carrying the checkpoint's tracker state (events go nowhere)."""
    clone = copy.copy(scorer)
    for name, value in copy.deepcopy(checkpoint.state["scorer"]).items():
        setattr(clone, name, value)
    clone.emit = lambda *a, **k: None
    clone._sink = _Discard()
    return clone


class _Discard:
    def emit(self, *args: Any, **kwargs: Any) -> None:
        return None


def restore_session(policy: Any, checkpoint: Checkpoint) -> None:
    """Continue a served policy's client session from ``checkpoint`` (its chunk state and
    the process RNG states); the next query asks the server for a new chunk."""
    session = checkpoint.state.get("session")
    if session is None:
        raise LabrecordError(f"checkpoint {checkpoint.header.run_id}/{checkpoint.header.decision}: holds no client "
                             "session of a served policy")
    policy.restore_session(session)
    rng = checkpoint.state["rng"]
    np.random.set_state(rng["numpy"])
    random.setstate(rng["python"])


class Requery:
    """Re-asks a served policy over a verification window: the policy (restored to the
    checkpoint's client session), the instruction and the rows executed per query."""

    def __init__(self, policy: Any, instruction: str, actions_per_query: int | None = None) -> None:
        self.policy, self.instruction, self.actions_per_query = policy, instruction, actions_per_query
        self.queries = 0

    def rows(self, observation: Any) -> list[np.ndarray | None]:
        """The rows queued for ``observation`` (none for a reply that broke the interface)."""
        from labrecord.recorders.actions import check_chunk
        from labrecord.recorders.adapters.faults import InterfaceViolation

        self.queries += 1
        try:
            chunk = self.policy.act(observation)
        except InterfaceViolation:
            return []
        applied = check_chunk(chunk.actions, self.policy.capabilities.action_spec).applied
        return list(applied if self.actions_per_query is None else applied[: self.actions_per_query])  # type: ignore[arg-type]

    def observation(self, env: Any, scorer: Any, period: int, step: int) -> Any:
        """The evidence at this boundary of the replay, as the step owner builds it."""
        from labrecord.recorders.policy import Observation, project_observation

        readouts = scorer.readouts()
        env.show(readouts)
        channels = self.policy.capabilities.channels
        images = {camera: env.render(camera) for camera in env.cameras if camera in channels}
        seen_images, seen_state = project_observation(channels, images, {**env.public_state(), **readouts})
        return Observation(obs_id=f"verify{period:03d}", step=step, t=env.time, evidence_version=scorer.evidence_version,
                           instruction=self.instruction, images=seen_images, state=seen_state)


def verify(env: Any, scorer: Any, checkpoint: Checkpoint, actions: list[np.ndarray], blocks: list[dict[str, np.ndarray]],
           tracker_after: Any, steps_per_control: int, tolerance: float = 0.0,
           requery: Requery | None = None) -> Verification:
    """Restore ``checkpoint`` into ``env`` and re-step ``len(actions)`` control periods.

    ``blocks`` are the measurement columns the original run recorded for those periods
    (the command columns excluded), ``tracker_after`` the original tracker state at their
    end.  Every column must be equal bitwise (NaN equal to NaN, same dtype); with
    ``tolerance`` > 0 (a checkpoint moved to another machine: :data:`CROSS_MACHINE_TOLERANCE`)
    float columns may differ by ``tolerance · max(1, |x|)``, every other column still exactly."""
    if len(actions) != len(blocks):
        raise LabrecordError(f"verify: {len(actions)} actions for {len(blocks)} measurement blocks")
    restore_physics(env, checkpoint)
    clone = restored_scorer(scorer, checkpoint)
    mismatched: list[str] = []
    first: int | None = None
    first_action: int | None = None
    queue: list[Any] = []
    last = None
    replayed_step = checkpoint.header.step - 1
    if requery is not None:
        restore_session(requery.policy, checkpoint)
        owner = checkpoint.state["owner"]
        queue, last = list(copy.deepcopy(owner["_queue"])), owner["_last_action"]
    for period, (action, original) in enumerate(zip(actions, blocks)):
        if requery is not None:
            # the boundary as the step owner saw it: the handoff's pending observation first,
            # then the replayed evidence; a new opportunity drops queued rows
            if period == 0:
                observation = copy.deepcopy(checkpoint.state["observation"])
                queue = []
            else:
                observation = requery.observation(env, clone, period, replayed_step)
                if clone.offer(observation):
                    queue = []
            if not queue:
                queue = requery.rows(observation) or [None]
            row = queue.pop(0)
            expected = np.asarray(env.hold_action(last) if row is None else row, dtype=np.float64).ravel()
            if first_action is None and not np.array_equal(expected, np.asarray(action, dtype=np.float64).ravel()):
                first_action = period
            last = action
        env.apply(action)
        env.advance(steps_per_control)
        block = env.end_block()
        if "step" in block and len(block["step"]):
            replayed_step = int(block["step"][-1])
        differ = [name for name, column in original.items() if not _same_column(block.get(name), column, tolerance)]
        if differ and first is None:
            first = period
        mismatched += [name for name in differ if name not in mismatched]
        clone.update(block)
    tracker_equal = _same_state(clone.tracker.state, tracker_after)
    handoff = checkpoint.header.handoff
    return Verification(periods=len(actions), bitwise=not mismatched, tracker_equal=tracker_equal,
                        mismatched_columns=sorted(mismatched), first_mismatch_period=first,
                        handoff_ready=bool(handoff.get("ready")),
                        requeried=requery.queries if requery is not None else 0,
                        actions_equal=None if requery is None else first_action is None,
                        first_action_mismatch_period=first_action)


def _same_column(replayed: np.ndarray | None, original: np.ndarray, tolerance: float) -> bool:
    if replayed is None or replayed.dtype != original.dtype or replayed.shape != original.shape:
        return False
    if original.dtype.kind != "f" or tolerance == 0.0:
        return bool(np.array_equal(replayed, original, equal_nan=original.dtype.kind == "f"))
    return bool(np.allclose(replayed, original, rtol=tolerance, atol=tolerance, equal_nan=True))


def _same_state(a: Any, b: Any) -> bool:
    return pickle.dumps(a) == pickle.dumps(b)


def write_checkpoint(path: str | Path, checkpoint: Checkpoint) -> Path:
    """Atomic write: JSON header line + pickled body (physics, Python state)."""
    from labrecord.fileio import atomic_write_bytes

    body = pickle.dumps({"physics": checkpoint.physics, "state": checkpoint.state}, protocol=pickle.HIGHEST_PROTOCOL)
    header = msgspec.structs.replace(checkpoint.header, body_sha256=hashlib.sha256(body).hexdigest())
    checkpoint.header = header
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, msgspec.json.encode(header) + b"\n" + body)
    return path


def read_header(path: str | Path) -> CheckpointHeader:
    """The header line of a checkpoint file (no body is unpickled)."""
    path = Path(path)
    with open(path, "rb") as fh:
        line = fh.readline()
    try:
        return msgspec.json.decode(line, type=CheckpointHeader)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise LabrecordError(f"{path}: not a labrecord checkpoint header ({error})") from None


def read_checkpoint(path: str | Path) -> Checkpoint:
    """Header and body; the body's sha256 must match the header's."""
    path = Path(path)
    raw = path.read_bytes()
    head, _, body = raw.partition(b"\n")
    header = read_header(path)
    if header.format != FORMAT:
        raise LabrecordError(f"{path}: checkpoint format {header.format!r}, expected {FORMAT!r}")
    if hashlib.sha256(body).hexdigest() != header.body_sha256:
        raise LabrecordError(f"{path}: checkpoint body does not match its recorded sha256; refusing to load it")
    data = pickle.loads(body)  # noqa: S301 - our own file, digest checked above
    return Checkpoint(header, data["physics"], data["state"])
