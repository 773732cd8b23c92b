"""The step owner of the timed closed loop (Labference sec. 5.2).

One :class:`StepOwner` drives one episode: at each control boundary it gathers the
registered observations, queries the policy when its action queue is empty (physics is
paused meanwhile; the inference latency is recorded as its own cost), checks the returned
chunk against the declared ActionSpec, holds each applied action over the physics steps
of one control period, and hands the measurements of those steps to the online scorer.
A new evidence handoff (an opportunity opened by the scorer) drops the commands queued
at an earlier planning boundary.

Simulator backends implement :class:`Environment`; task families implement
:class:`OnlineScorer` on top of their task contract.  Everything is written through the
:class:`~labrecord.rundir.RunWriter` the caller opened.
"""
from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import (
    EpisodeEnd, EpisodeStart, Failure, FinalScores, ObservationReceipt, OnlineScore, Operation, Validity,
)
from labrecord.recorders.actions import ChunkCheck, check_chunk
from labrecord.recorders.adapters.faults import InterfaceViolation, PolicyServiceFault
from labrecord.recorders.policy import ActionChunk, Capabilities, Observation, Policy, project_observation
from labrecord.recorders.video import VideoStream
from labrecord.rundir import VIDEOS_DIR, RunWriter


class DeliveryReceipt(ObservationReceipt, kw_only=True):
    """A delivery receipt plus the cost and action check of the query it answered.

    ``inference_s`` is wall time inside ``policy.act`` (physics paused); ``requested`` and
    ``applied`` are the chunk before and after the ActionSpec check.
    """

    inference_s: float
    chunk_len: int
    clipped: int = 0
    rejected: str | None = None
    requested: list[list[float]] = []
    tool: str | None = None
    interface_field: str | None = None
    exchange: dict[str, Any] = {}


class Environment(Protocol):
    """A simulator seen by the step owner."""

    physics_hz: float
    control_hz: float
    cameras: tuple[str, ...]

    @property
    def time(self) -> float: ...

    def apply(self, action: np.ndarray) -> None:
        """Set the command held until the next control boundary."""

    def advance(self, steps: int) -> None:
        """Advance ``steps`` physics steps, recording the raw measurements of each."""

    def end_block(self) -> dict[str, np.ndarray]:
        """Measurement columns (one row per physics step) since the previous call."""

    def public_state(self) -> dict[str, Any]:
        """State channels at this instant: proprioception (``robot``) and the evaluator
        state a declared privileged channel may read (``display_reading``, ``object_poses``)."""

    def render(self, camera: str) -> np.ndarray:
        """An (H, W, 3) uint8 frame of a registered camera."""

    def hold_action(self, last: np.ndarray | None) -> np.ndarray:
        """The action row that keeps the robot still (gripper as in ``last``; None: open)."""

    # optional: ``environment_in_control() -> bool``, true while the environment runs a
    # transition of its own (no observation, no policy query; control_mask false)


class OnlineScorer(Protocol):
    """A task contract running live: it turns measurement blocks into events."""

    def start(self, emit: Callable[..., Any], t: float) -> None: ...

    def update(self, columns: dict[str, np.ndarray]) -> None:
        """Advance the task state over one block of physics steps, emitting events."""

    @property
    def evidence_version(self) -> int:
        """Version of the decision-relevant evidence at this instant (non-decreasing)."""

    def offer(self, observation: Observation) -> bool:
        """Evidence at a control boundary; True when it opens a new opportunity (then it
        must be delivered and the queued commands dropped)."""

    def reported(self, op: Operation, t: float) -> None:
        """An operation the policy reported (report track)."""

    def changed(self) -> bool:
        """Whether the live score moved since the last call."""

    def finished(self) -> str | None:
        """The end reason once the episode is over (``success`` …), else None."""

    def snapshot(self, t: float) -> OnlineScore: ...

    def final(self, run_id: str, status: str) -> FinalScores: ...

    def episode_end(self) -> dict[str, Any]:
        """Fields of the ``episode_end`` event: reason, physical_complete, valid_complete."""

    # optional: ``close(fault: bool)``, called once before ``episode_end``: the events the
    # contract judges at the episode's end (none after an evaluator-side fault)


#: ``failure`` reason of a reply that broke the declared interface (the policy's own failure)
INTERFACE_FAILURE = "interface"


class ToolHost(Protocol):
    """Carries out an agent's tool call inside the step owner (see
    :class:`labrecord.recorders.tools.AgentTools`)."""

    def handle(self, owner: StepOwner, tool: Any, observation: Observation) -> None: ...


class SkillRun(Protocol):
    """A reference-executor skill in progress: the next action row for the measured
    state, or None once the operation is carried out."""

    def next_row(self, state: dict[str, Any]) -> np.ndarray | None: ...


@dataclass
class EpisodeLog:
    """What one episode produced besides the run files (for the demonstration)."""

    obs: list[dict[str, Any]] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    timestamps: list[tuple[float, float]] = field(default_factory=list)
    control_mask: list[bool] = field(default_factory=list)
    images: dict[str, list[np.ndarray]] = field(default_factory=dict)
    queries: int = 0
    inference_s: float = 0.0
    rejected: int = 0
    late: int = 0
    clipped: int = 0
    wall_s: float = 0.0
    interface_failures: int = 0
    tool_calls: int = 0
    faults: list[str] = field(default_factory=list)


#: proprioception fields of the ``robot`` channel -> robomimic observation keys
PROPRIO_KEYS = {"joint_pos": "robot0_joint_pos", "joint_vel": "robot0_joint_vel", "gripper_qpos": "robot0_gripper_qpos",
                "eef_pos": "robot0_eef_pos", "eef_quat": "robot0_eef_quat"}


def flatten_state(state: dict[str, Any]) -> dict[str, np.ndarray]:
    """Low-dimensional demonstration observation keys from the state channels.

    Proprioception (the ``robot`` channel) under robomimic names (:data:`PROPRIO_KEYS`);
    evaluator state under other keys (:func:`privileged_keys` lists them): the display
    as ``display_reading_g`` / ``display_stable``, object poses as ``object``.
    """
    out: dict[str, np.ndarray] = {}
    robot = state.get("robot", {})
    for field_name, key in PROPRIO_KEYS.items():
        if field_name in robot:
            out[key] = np.asarray(robot[field_name], dtype=np.float32)
    display = state.get("display_reading")
    if display:
        out["display_reading_g"] = np.asarray([np.nan if display["reading_g"] is None else display["reading_g"]],
                                              dtype=np.float32)
        out["display_stable"] = np.asarray([display["stable"]], dtype=np.float32)
    objects = state.get("object_poses")
    if objects:
        out["object"] = np.asarray([v for name in sorted(objects) for v in objects[name]], dtype=np.float32)
    return out


def privileged_keys(keys: Any) -> list[str]:
    """The demonstration observation keys that hold evaluator state (not proprioception or images)."""
    native = set(PROPRIO_KEYS.values())
    return sorted(k for k in keys if k not in native and not k.endswith("_image"))


def check_channels(caps: Capabilities, privileged: tuple[str, ...]) -> None:
    """Refuse evaluator-state channels to anything but a scripted system.

    Native observations are camera images, proprioception, the instruction and authorized
    history.  A privileged channel (the numeric display reading, object poses) reaches a
    policy only when a *scripted* system declares it — the declaration is then part of
    its observation condition, so its scores never pool with native systems.  Semantic
    support for other systems goes through a registered Oracle intervention instead.
    """
    declared = sorted(set(caps.channels) & set(privileged))
    if declared and caps.kind != "scripted":
        raise LabrecordError(f"system {caps.name!r} ({caps.kind}) declares evaluator-state channel(s) "
                             f"{', '.join(declared)}; only scripted systems may read them")


_NO_ROWS = ChunkCheck(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, dtype=bool))


class StepOwner:
    """Runs episodes of one policy in one environment into one run directory."""

    def __init__(self, env: Environment, policy: Policy, scorer: OnlineScorer, writer: RunWriter, *,
                 instruction: str, max_time_s: float, video: bool = True, snapshot_every_s: float = 1.0,
                 tools: ToolHost | None = None, deadline_s: float | None = None, deadline_clock: str = "sim",
                 actions_per_query: int | None = None) -> None:
        self.env, self.policy, self.scorer, self.writer = env, policy, scorer, writer
        #: rows of each accepted chunk executed before the policy is queried again (None: all);
        #: an evaluator that executes only the first row of each chunk sets 1
        self.actions_per_query = actions_per_query
        self.caps: Capabilities = policy.capabilities
        check_channels(self.caps, tuple(getattr(env, "privileged_channels", ())))
        self.instruction = instruction
        self.max_time_s = max_time_s
        if deadline_clock not in ("sim", "wall"):
            raise LabrecordError(f"deadline clock {deadline_clock!r}: expected sim or wall")
        #: response deadline (s) from an observation's delivery; on the wall clock a chunk
        #: returned later is not executed (physics pauses during inference, so only the
        #: wall clock sees a slow policy); on both clocks the opportunity carries it as its
        #: window, and a choice after it is not identified
        self.deadline_s, self.deadline_clock = deadline_s, deadline_clock
        self.steps_per_control = int(round(env.physics_hz / env.control_hz))
        self.snapshot_every_s = snapshot_every_s
        self.videos: dict[str, VideoStream] = {}
        if video:
            for camera in env.cameras:
                frame = env.render(camera)
                self.videos[camera] = VideoStream(writer.path(VIDEOS_DIR) / f"{camera}.mp4", env.control_hz, frame.shape[1], frame.shape[0])
        #: answers agent tool calls (None: the system is offered no tools); see :class:`ToolHost`
        self.tools: ToolHost | None = tools
        self.status = "complete"
        #: simulated time at the current episode's start (its runtime is measured from there)
        self._episode_t0 = 0.0
        self.blocks: list[dict[str, np.ndarray]] = []
        self.logs: list[EpisodeLog] = []
        self._step = 0
        self._obs_count = 0

    # -- one episode ------------------------------------------------------------------
    def run_episode(self, episode: int) -> EpisodeLog:
        """One episode with this owner's policy: the push-mode calls below, in order."""
        self.begin(episode)
        while True:
            observation = self.observe()
            if observation is not None and self.wants_action:
                try:
                    self._query(observation, self._log)
                except PolicyServiceFault as fault:
                    self.fault(fault)
                    break
            if self.step():
                break
        return self.end()

    # -- push mode: a caller outside the owner supplies the actions ----------------------
    # ``begin`` → per control boundary ``observe`` (+ ``push`` when ``wants_action``) →
    # ``step`` until it returns True → ``end``.  The owner keeps physics stepping, timing,
    # the checks and every record; ``run_episode`` is this sequence with ``policy.act``.
    def begin(self, episode: int) -> None:
        """Reset the policy session, open the episode and the contract's tracker."""
        self.policy.reset(episode)
        self._log = EpisodeLog()
        self._queue: deque[np.ndarray | None] = deque()  # None: hold still for one period
        self._skill: Any = None
        self._episode = episode
        self._started = time.perf_counter()
        self._end_reason: str | None = None
        self.writer.emit(EpisodeStart, t=self.env.time, episode=episode)
        self._episode_t0 = self.env.time
        self.scorer.start(self._emit, self.env.time)
        self._last_action = self._initial_action()
        self._next_snapshot = self.env.time
        self._in_control = False  # the first period settles the scene before any query
        self._now: tuple[dict[str, np.ndarray], dict[str, Any]] | None = None

    def observe(self) -> Observation | None:
        """Acquire this boundary's frames and state; the policy's projection of them, or
        None while the policy is not in control (the settling period).  A new opportunity
        drops the queued commands and a running skill, so :attr:`wants_action` is then
        True and the caller must :meth:`push` an answer to this observation."""
        images, state = self._acquire()
        if self._environment_in_control():
            # an environment transition (an occluded rack move, Labference sec. 8.3): the
            # policy is neither observed nor queried and the robot holds still meanwhile
            self._queue.clear()
            self._skill = None
            return None
        if not self._in_control:
            return None
        observation = self._observation(images, state)
        if self.scorer.offer(observation):
            # evidence changed: drop commands (and a running skill) planned on older evidence;
            # the observation is then delivered with a receipt at this boundary
            self._queue.clear()
            self._skill = None
        return observation

    @property
    def wants_action(self) -> bool:
        """Whether nothing is queued (nor a skill running) for the next control period."""
        return not self._queue and self._skill is None

    def push(self, observation: Observation, chunk: ActionChunk, latency_s: float = 0.0) -> None:
        """A chunk answering ``observation``: checked, receipted and queued (tool calls are
        carried out as the module docstring of :mod:`labrecord.recorders.adapters.agent` says)."""
        self._accept(observation, chunk, latency_s, self._log)

    def push_violation(self, observation: Observation, violation: InterfaceViolation, latency_s: float = 0.0) -> None:
        """A reply that broke the declared interface: see :meth:`_violation`."""
        self._violation(observation, violation, latency_s, self._log)

    def present(self) -> Observation:
        """The policy's projection of the state at this instant, without delivering it (no
        receipt, not offered to the scorer): what a Gymnasium caller sees after the end."""
        images, state = self._acquire()
        return self._observation(images, state)

    def hold(self, periods: int) -> None:
        """Hold still for ``periods`` control periods (an explicit wait; simulated time passes)."""
        self._queue.extend([None] * periods)

    def run_skill(self, skill: SkillRun) -> None:
        """Let a reference-executor skill drive the robot until it is done (no queries meanwhile)."""
        self._skill = skill

    def emit(self, event_type: type, *, t: float, fields: dict[str, Any] | None = None) -> Any:
        """Append an event with the next ``seq`` (for tool calls answered outside the scorer)."""
        return self._emit(event_type, t=t, fields=fields)

    def step(self) -> bool:
        """Execute one control period; True when the episode is over (success or time)."""
        env = self.env
        images, state = self._acquire()
        self._now = None
        row = self._queue.popleft() if self._queue else None
        if row is None and self._skill is not None:
            row = self._skill.next_row(state)
            if row is None:
                self._skill = None
        # nothing queued (a rejected chunk, a wait): hold still in the declared convention
        action = row if row is not None else env.hold_action(self._last_action)
        self._record_demo(self._log, state, images, action, self._in_control and not self._environment_in_control())
        self._in_control = True
        env.apply(action)
        self._last_action = action
        env.advance(self.steps_per_control)
        block = env.end_block()
        block.update(self._command_columns(action, len(block["t"])))
        self.blocks.append(block)
        self._step += len(block["t"])
        self.scorer.update(block)
        if env.time >= self._next_snapshot and self.scorer.changed():
            # a snapshot is synced to disk, so write one only when the live score moved
            self.writer.online_score(self.scorer.snapshot(env.time))
            self._next_snapshot = env.time + self.snapshot_every_s
        return self.scorer.finished() is not None or env.time >= self.max_time_s

    def _environment_in_control(self) -> bool:
        """Whether the environment, not the policy, drives this period (``control_mask`` false)."""
        in_control = getattr(self.env, "environment_in_control", None)
        return bool(in_control()) if callable(in_control) else False

    def fault(self, fault: PolicyServiceFault) -> None:
        """The policy service failed: a ``validity`` event; the episode ends unresolved."""
        self._emit(Validity, t=self.env.time, fields={"kind": fault.kind, "source": fault.source})
        self._log.faults.append(str(fault))
        self._end_reason = "service_fault"
        self.status = "service_fault"

    def end(self) -> EpisodeLog:
        """Close the episode: the last live snapshot and ``episode_end``."""
        env, writer = self.env, self.writer
        close = getattr(self.scorer, "close", None)  # optional: events judged at the episode's end
        if callable(close):
            close(fault=self._end_reason is not None)
        writer.online_score(self.scorer.snapshot(env.time))
        end = self.scorer.episode_end()
        if self._end_reason is not None:
            end = {**end, "reason": self._end_reason, "valid_complete": False}
        # the runtime on the simulated clock (physics pauses during inference, so it leaves
        # out model computation), and the wall time of the policy per query beside it
        log = self._log
        end = {**end, "runtime_s": round(env.time - self._episode_t0, 6), "runtime_clock": "sim",
               "policy_s_per_query": round(log.inference_s / log.queries, 6) if log.queries else None}
        writer.emit(EpisodeEnd, t=env.time, episode=self._episode, **end)
        self._log.wall_s = time.perf_counter() - self._started
        self.logs.append(self._log)
        return self._log

    def _emit(self, event_type: type, *, t: float, fields: dict[str, Any] | None = None, **more: Any) -> Any:
        """Append an event of ``event_type`` with the next ``seq`` (fields may include ``kind``)."""
        event = event_type(seq=self.writer.next_seq, t=t, **(fields or {}), **more)
        self.writer.append(event)
        return event

    def _initial_action(self) -> np.ndarray:
        return np.asarray(self.env.hold_action(None), dtype=float)

    def _acquire(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Frames (written to the videos) and state at this boundary, acquired once."""
        if self._now is None:
            self._now = (self._frames(), self.env.public_state())
        return self._now

    def _frames(self) -> dict[str, np.ndarray]:
        frames: dict[str, np.ndarray] = {}
        wanted = set(self.caps.channels) | set(self.videos)
        for camera in self.env.cameras:
            if camera in wanted:
                frames[camera] = self.env.render(camera)
        for camera, stream in self.videos.items():
            stream.write(frames[camera])
        return frames

    def _observation(self, images: dict[str, np.ndarray], state: dict[str, Any]) -> Observation:
        """The policy's projection of the evidence acquired after the last physics row."""
        seen_images, seen_state = project_observation(self.caps.channels, images, state)
        self._obs_count += 1
        return Observation(obs_id=f"obs{self._obs_count:05d}", step=self._step - 1, t=self.env.time,
                           evidence_version=self.scorer.evidence_version, instruction=self.instruction,
                           images=seen_images, state=seen_state)

    def _query(self, observation: Observation, log: EpisodeLog) -> None:
        """Ask the policy (physics paused), check the chunk, write the receipt."""
        wall = time.perf_counter()
        try:
            chunk = self.policy.act(observation)
        except InterfaceViolation as violation:
            self._violation(observation, violation, time.perf_counter() - wall, log)
            return
        latency = time.perf_counter() - wall
        self._accept(observation, chunk, latency, log)

    def _accept(self, observation: Observation, chunk: ActionChunk, latency: float, log: EpisodeLog) -> None:
        tool = chunk.tool
        if tool is not None and self.tools is None:
            self._violation(observation, InterfaceViolation(self.caps.name, "type", type(tool).__name__,
                                                            "actions (this system was offered no tools)"), latency, log)
            return
        check: ChunkCheck = check_chunk(chunk.actions, self.caps.action_spec) if tool is None else _NO_ROWS
        late = self.deadline_clock == "wall" and self.deadline_s is not None and latency > self.deadline_s
        if late:  # physics paused while the policy thought: only the wall clock sees it, and nothing late is carried out
            check = ChunkCheck(check.requested, check.applied[:0], check.clipped[:0],
                               f"late: answered {latency:.3f} s after delivery, deadline {self.deadline_s:g} s (wall)")
            tool = None
        log.queries += 1
        log.inference_s += latency
        log.rejected += check.rejected is not None
        log.late += check.rejected is not None and check.rejected.startswith("late")
        log.clipped += check.clipped_count
        self.writer.observation(DeliveryReceipt(
            obs_id=observation.obs_id, step=observation.step, t_acquired=observation.t, t_delivered=observation.t,
            evidence_version=observation.evidence_version,
            channels=sorted([*observation.images, *observation.state]), wall=round(latency, 6),
            inference_s=round(latency, 6), chunk_len=len(check.applied), clipped=check.clipped_count,
            rejected=check.rejected,
            requested=check.requested.round(6).tolist() if (check.rejected or check.clipped_count) else [],
            tool=type(tool).__name__ if tool is not None else None, exchange=self._exchange(),
        ))
        if chunk.report is not None and self.caps.reports_operations and not late:
            self.scorer.reported(chunk.report, observation.t)
        if tool is not None:
            log.tool_calls += 1
            assert self.tools is not None  # refused above when no tools were offered
            self.tools.handle(self, tool, observation)
            return
        rows = check.applied if self.actions_per_query is None else check.applied[: self.actions_per_query]
        self._queue.extend(rows)

    def _violation(self, observation: Observation, violation: InterfaceViolation, latency: float, log: EpisodeLog) -> None:
        """A reply that broke the declared interface: the policy's own failure (a measured
        outcome, never a validity fault) — a receipt naming the field, a ``failure`` event
        with reason ``interface``; nothing is applied and the robot holds still until the
        next query at the next control boundary."""
        log.queries += 1
        log.inference_s += latency
        log.interface_failures += 1
        self.writer.observation(DeliveryReceipt(
            obs_id=observation.obs_id, step=observation.step, t_acquired=observation.t, t_delivered=observation.t,
            evidence_version=observation.evidence_version,
            channels=sorted([*observation.images, *observation.state]), wall=round(latency, 6),
            inference_s=round(latency, 6), chunk_len=0, rejected=f"interface: {violation}",
            interface_field=violation.field, exchange=self._exchange()))
        self._emit(Failure, t=self.env.time, fields={"reason": INTERFACE_FAILURE, "recoverable": True})

    def _exchange(self) -> dict[str, Any]:
        """What the adapter sent and received for the last query (request keys, transformed
        input shapes, round trip), when it keeps such a summary."""
        summary = getattr(self.policy, "exchange", None)
        return summary() if callable(summary) else {}

    def _command_columns(self, action: np.ndarray, rows: int) -> dict[str, np.ndarray]:
        """``cmd_i``: the action row held over the block, one (rows,) column per entry
        (rows of one (dim, rows) array)."""
        values = np.asarray(action, dtype=np.float64).ravel()
        held = np.empty((len(values), rows))
        held[:] = values[:, None]
        return dict(zip(_command_names(len(values)), held))

    def _record_demo(self, log: EpisodeLog, state: dict[str, Any], images: dict[str, np.ndarray], action: np.ndarray,
                     policy_in_control: bool) -> None:
        log.obs.append(flatten_state(state))
        log.actions.append(np.asarray(action, dtype=np.float32))
        log.timestamps.append((self.env.time, self.env.time))
        log.control_mask.append(policy_in_control)
        for camera, frame in images.items():
            log.images.setdefault(camera, []).append(frame)

    # -- closing ------------------------------------------------------------------------
    def measurement_table(self) -> Any:
        """All recorded blocks as one ``pyarrow.Table`` (columnar, one row per physics step)."""
        import pyarrow as pa

        names = list(self.blocks[0]) if self.blocks else ["step", "t"]
        columns = {name: np.concatenate([b[name] for b in self.blocks]) if self.blocks else np.zeros(0) for name in names}
        return pa.table(columns)

    def finish(self, status: str | None = None) -> FinalScores:
        """Write measurements and ``scores.json`` (before the simulator closes) and close videos."""
        self.writer.write_measurements(self.measurement_table())
        scores = self.scorer.final(self.writer.manifest.run_id, status or self.status)
        for entry, log in zip(scores.episodes, self.logs):
            # inference is a cost of its own: physics was paused while the policy ran
            entry["policy"] = {"queries": log.queries, "inference_s": round(log.inference_s, 6),
                               "rejected_chunks": log.rejected, "late_chunks": log.late, "clipped_actions": log.clipped,
                               "episode_wall_s": round(log.wall_s, 6), "interface_failures": log.interface_failures,
                               "tool_calls": log.tool_calls, "faults": log.faults}
        self.writer.write_scores(scores)
        for stream in self.videos.values():
            stream.close()
        return scores


@functools.lru_cache(maxsize=8)
def _command_names(dim: int) -> tuple[str, ...]:
    return tuple(f"cmd_{i}" for i in range(dim))
