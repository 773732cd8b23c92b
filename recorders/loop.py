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

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import EpisodeEnd, EpisodeStart, FinalScores, ObservationReceipt, OnlineScore, Operation
from labrecord.recorders.actions import ChunkCheck, check_chunk
from labrecord.recorders.policy import Capabilities, Observation, Policy, project_observation
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
        """Public state channels (robot, display, object poses) at this instant."""

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
    clipped: int = 0


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


class StepOwner:
    """Runs episodes of one policy in one environment into one run directory."""

    def __init__(self, env: Environment, policy: Policy, scorer: OnlineScorer, writer: RunWriter, *,
                 instruction: str, max_time_s: float, video: bool = True, snapshot_every_s: float = 1.0) -> None:
        self.env, self.policy, self.scorer, self.writer = env, policy, scorer, writer
        self.caps: Capabilities = policy.capabilities
        check_channels(self.caps, tuple(getattr(env, "privileged_channels", ())))
        self.instruction = instruction
        self.max_time_s = max_time_s
        self.steps_per_control = int(round(env.physics_hz / env.control_hz))
        self.snapshot_every_s = snapshot_every_s
        self.videos: dict[str, VideoStream] = {}
        if video:
            for camera in env.cameras:
                frame = env.render(camera)
                self.videos[camera] = VideoStream(writer.path(VIDEOS_DIR) / f"{camera}.mp4", env.control_hz, frame.shape[1], frame.shape[0])
        self.blocks: list[dict[str, np.ndarray]] = []
        self.logs: list[EpisodeLog] = []
        self._step = 0
        self._obs_count = 0

    # -- one episode ------------------------------------------------------------------
    def run_episode(self, episode: int) -> EpisodeLog:
        env, writer = self.env, self.writer
        log = EpisodeLog()
        queue: deque[np.ndarray] = deque()
        self.policy.reset(episode)
        writer.emit(EpisodeStart, t=env.time, episode=episode)
        self.scorer.start(self._emit, env.time)
        last_action = self._initial_action()
        next_snapshot = env.time
        policy_in_control = False  # the first period settles the scene before any query
        # an environment transition (an occluded rack move, Labference sec. 8.3): the
        # policy is neither observed nor queried and the robot holds still meanwhile
        env_in_control = getattr(env, "environment_in_control", lambda: False)
        while True:
            images = self._frames()
            state = env.public_state()
            paused = env_in_control()
            if paused:
                queue.clear()
            elif policy_in_control:
                observation = self._observation(images, state)
                if self.scorer.offer(observation):
                    queue.clear()  # evidence changed: drop commands planned on older evidence
                if not queue:
                    queue.extend(self._query(observation, log))
            # nothing queued (a rejected chunk): hold still in the declared convention
            action = queue.popleft() if queue else self.env.hold_action(last_action)
            self._record_demo(log, state, images, action, policy_in_control and not paused)
            policy_in_control = True
            env.apply(action)
            last_action = action
            env.advance(self.steps_per_control)
            block = env.end_block()
            block.update(self._command_columns(action, len(block["t"])))
            self.blocks.append(block)
            self._step += len(block["t"])
            self.scorer.update(block)
            if env.time >= next_snapshot and self.scorer.changed():
                # a snapshot is synced to disk, so write one only when the live score moved
                writer.online_score(self.scorer.snapshot(env.time))
                next_snapshot = env.time + self.snapshot_every_s
            if self.scorer.finished() is not None or env.time >= self.max_time_s:
                break
        writer.online_score(self.scorer.snapshot(env.time))
        writer.emit(EpisodeEnd, t=env.time, episode=episode, **self.scorer.episode_end())
        self.logs.append(log)
        return log

    def _emit(self, event_type: type, *, t: float, fields: dict[str, Any] | None = None, **more: Any) -> Any:
        """Append an event of ``event_type`` with the next ``seq`` (fields may include ``kind``)."""
        event = event_type(seq=self.writer.next_seq, t=t, **(fields or {}), **more)
        self.writer.append(event)
        return event

    def _initial_action(self) -> np.ndarray:
        return np.asarray(self.env.hold_action(None), dtype=float)

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

    def _query(self, observation: Observation, log: EpisodeLog) -> list[np.ndarray]:
        """Ask the policy (physics paused), check the chunk, write the receipt."""
        wall = time.perf_counter()
        chunk = self.policy.act(observation)
        latency = time.perf_counter() - wall
        check: ChunkCheck = check_chunk(chunk.actions, self.caps.action_spec)
        log.queries += 1
        log.inference_s += latency
        log.rejected += check.rejected is not None
        log.clipped += check.clipped_count
        self.writer.observation(DeliveryReceipt(
            obs_id=observation.obs_id, step=observation.step, t_acquired=observation.t, t_delivered=observation.t,
            evidence_version=observation.evidence_version,
            channels=sorted([*observation.images, *observation.state]), wall=round(latency, 6),
            inference_s=round(latency, 6), chunk_len=len(check.applied), clipped=check.clipped_count,
            rejected=check.rejected,
            requested=check.requested.round(6).tolist() if (check.rejected or check.clipped_count) else [],
        ))
        if chunk.report is not None and self.caps.reports_operations:
            self.scorer.reported(chunk.report, observation.t)
        return list(check.applied)

    def _command_columns(self, action: np.ndarray, rows: int) -> dict[str, np.ndarray]:
        return {f"cmd_{i}": np.full(rows, float(v)) for i, v in enumerate(action)}

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

    def finish(self, status: str = "complete") -> FinalScores:
        """Write measurements and ``scores.json`` (before the simulator closes) and close videos."""
        self.writer.write_measurements(self.measurement_table())
        scores = self.scorer.final(self.writer.manifest.run_id, status)
        for entry, log in zip(scores.episodes, self.logs):
            # inference is a cost of its own: physics was paused while the policy ran
            entry["policy"] = {"queries": log.queries, "inference_s": round(log.inference_s, 6),
                               "rejected_chunks": log.rejected, "clipped_actions": log.clipped}
        self.writer.write_scores(scores)
        for stream in self.videos.values():
            stream.close()
        return scores
