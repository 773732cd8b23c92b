"""Baseline weighing policies behind the common :class:`~labrecord.recorders.policy.Policy` interface.

* ``reference`` reads the display through its observation, works out the required
  standard set from the instruction's target, the stable reading and the visible
  standards on the pan (the four denominations have distinct subset sums), and carries
  out the corrections with the reference executor;
* ``fixed-preference`` always transfers one denomination (the failure mode observed in
  VLAs), whatever the display says;
* ``random`` picks uniformly among the visible add / remove corrections and stopping.

* ``clumsy`` is ``reference`` that opens its grasp on the first standard it carries
  in free air above the table, then picks it up again and carries on;
* ``noisy-localizer`` is ``reference`` whose executor plans with its own estimate of the
  standards' positions, off by a seeded error (:class:`NoisyLocalizerPolicy`), so it
  sometimes closes its fingers beside the standard it chose.

Oracle supports (Labference sec. 6.2) reach a system only through an input it declares
in ``oracle_inputs`` (its capability preflight, read by :func:`labrecord.sim.study.compatibility`):
every one takes ``decision:replace`` through its commit hook and ``skill:replace`` through
its executor hook (a reference executor carries out the operation it selected); ``reference`` and ``clumsy``
also read ``semantic:assist`` (the Oracle's displayed reading and stability stand in for
their display channel) and ``decision:assist`` (a recommended operation that is one of the
corrections they see is taken); ``random`` reads ``decision:assist`` (it takes the
recommendation or its own draw, evenly); ``fixed-preference`` reads no Oracle context, so
its assist supports are "not compatible".  ``reference``, ``clumsy`` and
``noisy-localizer`` expose their localization (the frames their executor plans with,
:meth:`ScriptedWeighingPolicy.localize`): they read ``geometry:assist`` (the delivered
candidate frames replace their own) and take ``geometry:replace`` through the geometry
hook; ``random`` and ``fixed-preference`` declare no localization interface.  The Oracle context arrives as
``observation.state["oracle"]`` (:data:`ORACLE`), apart from the declared channels.

All of them act through the LIBERO-style end-effector delta convention
(:func:`labrecord.sim.control.action_spec`), one row per query, computed from the
measured tool pose in the ``robot`` channel.  They are *scripted systems that declare
the privileged channels* ``display_reading`` and ``object_poses`` (evaluator state):
that declaration is part of the system's observation condition, so their scores never
pool with native (image + proprioception) systems.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
import dataclasses
from collections.abc import Callable, Mapping
import itertools
import re
from typing import Any, TypeVar

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import ActionSpec, Operation
from labrecord.recorders.policy import ActionChunk, Capabilities, Observation
from labrecord.sim.control import action_spec, matrix_to_rotvec
from labrecord.sim.executor import HOME, on_pan, sample_plan, transfer_plan
from labrecord.sim.fanout import check_choice
from labrecord.sim.scene import STANDARD_GRAMS, STANDARDS

CONTROL_HZ = 10.0
ACTION_SPEC: ActionSpec = action_spec("eef_delta", CONTROL_HZ)
#: the channels these policies read: proprioception (native) and the two declared
#: privileged channels; they read no camera, so none is rendered for them (videos aside)
CHANNELS = ("robot", "display_reading", "object_poses")
#: how far above its grasp the clumsy policy lets its first standard go (m; the drop rule needs > 0.03)
DROP_LIFT_M = 0.07
#: largest rotation per action row the scripted policies command (rad)
TURN_STEP = 0.3
#: standard deviation (m) of each table-plane axis of the noisy-localizer's position error
LOCALIZATION_SIGMA_M = 0.012
#: pause after a transfer so the reading reflects the released load before deciding again
SETTLE_S = 1.0
_TARGET = re.compile(r"(\d+(?:\.\d+)?)\s*g\b")
#: the observation key of the Oracle context (a registered intervention, not a channel)
ORACLE = "oracle"
P = TypeVar("P")


def parse_target(instruction: str) -> float:
    """The target mass in grams stated in the instruction ('... to 180 g ...')."""
    match = _TARGET.search(instruction)
    if match is None:
        raise LabrecordError(f"instruction {instruction!r}: no target mass in grams")
    return float(match.group(1))


def required_set(target_g: float, reading_g: float, on_pan_now: set[str], tolerance_g: float = 2.0) -> set[str] | None:
    """The standard subset whose sum brings ``reading_g`` to ``target_g``.

    sample = reading − Σ(on pan); the answer is the subset S with Σ S = target − sample
    (unique, the denominations have distinct subset sums); None when no subset is within
    ``tolerance_g``.
    """
    need = target_g - (reading_g - sum(STANDARD_GRAMS[w] for w in on_pan_now))
    best = min((set(c) for r in range(len(STANDARDS) + 1) for c in itertools.combinations(STANDARDS, r)),
               key=lambda s: abs(sum(STANDARD_GRAMS[w] for w in s) - need))
    return best if abs(sum(STANDARD_GRAMS[w] for w in best) - need) <= tolerance_g else None


class ScriptedPolicy:
    """What every scripted baseline (weighing, centrifuge, rack) shares: its capabilities
    (``channels`` declared, operations reported), a sampled plan of tool targets played one
    row per query, the ``rest`` target it holds while idle, and stopping for good."""

    name = "scripted"
    #: the channels the policy declares
    channels: tuple[str, ...] = CHANNELS
    #: observation time before which a fresh episode makes no choice (s)
    first_wait_s = 0.0

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.capabilities = Capabilities(name=self.name, kind="scripted", action_spec=ACTION_SPEC, channels=self.channels,
                                         reports_operations=True, revision="1")
        self.reset(0)

    def reset(self, episode: int) -> None:
        self.episode = episode
        self.plan: np.ndarray | None = None
        self.cursor = 0
        self.wait_until = self.first_wait_s
        self.stopped = False
        self.rest: np.ndarray | None = None  # None: stay where it is

    def _plan_done(self, t: float, settle_s: float, rest: np.ndarray) -> None:
        """The plan just ran out: drop it, pause ``settle_s`` before choosing again, rest at ``rest``."""
        self.plan = None
        self.wait_until = t + settle_s
        self.rest = rest

    def _hold(self, robot: dict[str, Any]) -> ActionChunk:
        """A row toward the rest target."""
        return ActionChunk(self._toward(robot, self.rest))

    def _decline(self, robot: dict[str, Any], op: Operation | None) -> ActionChunk:
        """Hold on a choice of no operation (None, ``stop`` or ``wait``), reporting it; None and
        ``stop`` end the episode's choices."""
        self.stopped = op is None or op.kind == "stop"
        return ActionChunk(self._toward(robot, self.rest), report=op)

    def _begin(self, robot: dict[str, Any], op: Operation) -> ActionChunk:
        """The first row of the plan just made for ``op``, reporting ``op``."""
        chunk = self._next_row(robot)
        chunk.report = op
        return chunk

    def _next_row(self, robot: dict[str, Any]) -> ActionChunk:
        assert self.plan is not None
        row = self.plan[self.cursor]
        self.cursor += 1
        return ActionChunk(self._toward(robot, row))

    def _toward(self, robot: dict[str, Any], target: np.ndarray | None) -> np.ndarray:
        return delta_toward(robot, target)


class ScriptedWeighingPolicy(ScriptedPolicy, ABC):
    """Shared machinery: wait for a stable reading, choose an operation, execute it."""

    #: the commit hook (a decision-site *replace* support): called with every operation this
    #: policy commits to and the observation it chose on; returns the operation carried out
    commit_hook: Callable[[Operation, Observation], Operation] | None = None
    #: the executor hook (a skill-site *replace* support): called with the operation this
    #: policy carries out, the object poses and the observation; returns the waypoints a
    #: reference executor runs instead of the policy's own, or None to keep its own
    executor_hook: Callable[[Operation, dict[str, list[float]], Observation], list[Any] | None] | None = None
    #: the geometry hook (a geometry-site *replace* support): called with the operation this
    #: policy carries out, its own localization of the frames (name -> position) and the
    #: observation; returns the localization its executor uses (the selected target's
    #: frame corrected).  Called only by systems declaring ``("geometry", "replace")``.
    geometry_hook: Callable[[Operation, dict[str, list[float]], Observation], dict[str, list[float]]] | None = None
    #: the standard geometry of a fixed start (E_fixed, Labference sec. 7.2): called like the
    #: geometry hook, for every system — a fixed start gives each system the same correct
    #: operation *and* the same reference frames, so only the physical execution differs
    reference_geometry: Callable[[Operation, dict[str, list[float]], Observation], dict[str, list[float]]] | None = None
    #: the Oracle supports (site, mode) this system consumes (its capability preflight)
    oracle_inputs: frozenset[tuple[str, str]] = frozenset({("decision", "replace"), ("skill", "replace")})

    #: plan rows returned per query (the chunk length); rows after the first are planned
    #: open-loop from the previous plan target (see :meth:`use_chunks`)
    chunk_length = 1

    def use_chunks(self, rows: int) -> None:
        """Return up to ``rows`` plan rows per query, the first toward its target from the
        measured pose and the rest open-loop (:func:`delta_between`), as a chunking policy
        does; the action spec then accepts chunks of ``rows``."""
        if rows < 1:
            raise LabrecordError(f"chunk length {rows}: expected at least 1 row")
        self.chunk_length = rows
        self.capabilities = dataclasses.replace(self.capabilities,
                                                action_spec=action_spec("eef_delta", CONTROL_HZ, max_chunk=rows))

    def reset(self, episode: int) -> None:
        super().reset(episode)
        self.transfers = 0

    def _next_row(self, robot: dict[str, Any]) -> ActionChunk:
        if self.chunk_length == 1:
            return super()._next_row(robot)
        assert self.plan is not None
        rows = [self._toward(robot, self.plan[self.cursor])]
        for k in range(self.cursor + 1, min(self.cursor + self.chunk_length, len(self.plan))):
            rows.append(delta_between(self.plan[k - 1], self.plan[k]))
        self.cursor += len(rows)
        return ActionChunk(np.vstack(rows))

    @abstractmethod
    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        """The operation this policy commits to in the current state, or None to keep still."""

    def act(self, observation: Observation) -> ActionChunk:
        robot = observation.state["robot"]
        if self.plan is not None and self.cursor < len(self.plan):
            return self._next_row(robot)
        if self.plan is not None:  # a transfer just ended
            self._plan_done(observation.t, SETTLE_S, np.asarray([*HOME, 0.0, 0.0]))
        oracle = observation.state.get(ORACLE) or {}
        display = observation.state.get("display_reading") or {}
        if ("semantic", "assist") in self.oracle_inputs and "semantic" in oracle:
            display = oracle["semantic"]
        if self.stopped or observation.t < self.wait_until or not display.get("stable"):
            return self._hold(robot)
        poses = observation.state["object_poses"]
        standing = {w for w in STANDARDS if on_pan(poses[w])}
        op = self.choose(observation, parse_target(observation.instruction), float(display["reading_g"]), standing)
        if ("decision", "assist") in self.oracle_inputs and "decision" in oracle:
            op = self.consider(op, oracle["decision"]["recommended"], standing)
        if op is not None and self.commit_hook is not None:
            op = self.commit_hook(op, observation)
        if op is None or op.kind in ("stop", "wait"):
            return self._decline(robot, op)
        waypoints = self.executor_hook(op, poses, observation) if self.executor_hook is not None else None
        if waypoints is None:
            waypoints = self.plan_for(op, self.frames_for(op, poses, oracle, observation))
        self.plan = sample_plan(np.append(robot["eef_pos"], 0.0), waypoints, CONTROL_HZ)
        self.cursor = 0
        self.transfers += 1
        return self._begin(robot, op)

    def consider(self, own: Operation | None, recommended: Operation, standing: set[str]) -> Operation | None:
        """The operation chosen with a delivered recommendation (decision:assist): the
        system still chooses.  Only systems declaring ``("decision", "assist")`` are asked."""
        return own

    def localize(self, poses: dict[str, list[float]]) -> dict[str, list[float]]:
        """This system's own localization of the frames its executor reads (the declared
        ``object_poses`` channel as it is, for every system but ``noisy-localizer``)."""
        return poses

    def frames_for(self, op: Operation, poses: dict[str, list[float]], oracle: dict[str, Any],
                   observation: Observation) -> dict[str, list[float]]:
        """The frames the executor plans ``op`` with: the system's own localization, the
        delivered candidate frames in their place (geometry:assist), then the geometry hook
        (geometry:replace) — each only for a system that declares it — and, at a fixed
        start, the reference frame of the supplied subgoal's target."""
        frames = self.localize(poses)
        if ("geometry", "assist") in self.oracle_inputs and "geometry" in oracle:
            frames = {**frames, **{k: v for k, v in oracle["geometry"]["frames"].items() if k in frames}}
        if ("geometry", "replace") in self.oracle_inputs and self.geometry_hook is not None:
            frames = self.geometry_hook(op, frames, observation)
        if self.reference_geometry is not None:
            frames = self.reference_geometry(op, frames, observation)
        return frames

    def plan_for(self, op: Operation, poses: dict[str, list[float]]) -> list[Any]:
        """The executor's waypoints for ``op``."""
        return transfer_plan(op.object, poses, op.kind == "add")


def delta_toward(robot: dict[str, Any], target: np.ndarray | None) -> np.ndarray:
    """The (1, 7) end-effector delta moving the measured tool pose toward ``[x, y, z, yaw,
    grip]`` (None: stay where it is, gripper open)."""
    if target is None:
        return np.zeros((1, ACTION_SPEC.dim))
    return delta_to(robot, target[:3], down_rotation(float(target[3])), target[4])


def delta_to(robot: dict[str, Any], position: Any, rotation: np.ndarray, grip: Any) -> np.ndarray:
    """The (1, 7) end-effector delta moving the measured tool pose toward ``position`` (3,)
    and the tool ``rotation`` (3, 3) with gripper command ``grip``: the step clipped to
    5 cm per axis, the turn to :data:`TURN_STEP`."""
    here = np.asarray(robot["eef_pos"], dtype=float)
    return _clipped_row(np.asarray(position) - here, matrix_to_rotvec(rotation @ quat_matrix(robot["eef_quat"]).T), grip)


def delta_between(start: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The (1, 7) end-effector delta from plan target ``start`` to plan target ``target``
    (both ``[x, y, z, yaw, grip]``), as :func:`delta_to` would give once the tool reached
    ``start``: the open-loop row of a chunk planned ahead of the measured pose."""
    offset = np.asarray(target[:3], dtype=float) - np.asarray(start[:3], dtype=float)
    return _clipped_row(offset, matrix_to_rotvec(down_rotation(float(target[3])) @ down_rotation(float(start[3])).T),
                        target[4])


def _clipped_row(offset: np.ndarray, turn: np.ndarray, grip: Any) -> np.ndarray:
    """One action row: the offset clipped to 5 cm per axis, the turn to :data:`TURN_STEP`."""
    step = np.clip(offset, -0.05, 0.05)
    norm = float(np.linalg.norm(turn))
    if norm > TURN_STEP:
        turn = turn * (TURN_STEP / norm)
    return np.concatenate([step, turn, [grip]])[None, :]


def down_rotation(yaw: float) -> np.ndarray:
    """Tool frame pointing down (z = −world z) turned by ``yaw`` about the vertical."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, s, 0.0], [s, -c, 0.0], [0.0, 0.0, -1.0]])


def quat_matrix(xyzw: list[float]) -> np.ndarray:
    """Rotation matrix of a unit quaternion given as (x, y, z, w)."""
    x, y, z, w = xyzw
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


class ReferencePolicy(ScriptedWeighingPolicy):
    """Removes what must go, then adds what is missing, re-reading after every release."""

    name = "reference"
    oracle_inputs = frozenset({("decision", "replace"), ("skill", "replace"), ("decision", "assist"),
                               ("semantic", "assist"), ("geometry", "assist"), ("geometry", "replace")})

    def consider(self, own: Operation | None, recommended: Operation, standing: set[str]) -> Operation | None:
        """Take the recommendation when it is a correction this policy can see (add a standard
        not on the pan, remove one on it), else keep its own choice."""
        visible = (recommended.kind == "add" and recommended.object not in standing) or (
            recommended.kind == "remove" and recommended.object in standing)
        return recommended if visible else own

    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        wanted = required_set(target_g, reading_g, standing)
        if wanted is None:
            return Operation("stop")
        for w in sorted(standing - wanted, key=STANDARD_GRAMS.get):
            return Operation("remove", w, "pan")
        for w in sorted(wanted - standing, key=STANDARD_GRAMS.get):
            return Operation("add", w, "pan")
        return Operation("stop")


class ClumsyPolicy(ReferencePolicy):
    """The reference policy that drops the first standard it carries: it lifts it
    :data:`DROP_LIFT_M` above where it grasped it and opens the gripper in free air above
    the table, then picks it up again and carries on as the reference does."""

    name = "clumsy"

    def plan_for(self, op: Operation, poses: dict[str, list[float]]) -> list[Any]:
        if self.transfers == 0 and op.kind == "add":
            return transfer_plan(op.object, poses, True, drop_lift=DROP_LIFT_M)
        return super().plan_for(op, poses)


class NoisyLocalizerPolicy(ReferencePolicy):
    """The reference policy whose executor plans with its own localization of the
    standards, which is off by a stated, seeded error.

    Error model: at every transfer it plans, each standard's estimated position is its
    position in the ``object_poses`` channel plus an offset in the table plane whose x and
    y are drawn independently from N(0, :data:`LOCALIZATION_SIGMA_M`²) (heights are
    exact: the table and pan surfaces are known); one draw per standard per transfer, in
    :data:`STANDARDS` order, from the generator seeded ``[seed, episode]`` at reset.  The
    choice of operation is the reference's (the error touches only where it reaches).
    A standard estimated more than about the gripper's clearance away from its centre is
    missed: the fingers close beside it (a ``miss``), and the next transfer draws anew.
    It reads the candidate frames of ``geometry:assist`` in place of its estimate and
    exposes its estimate through the geometry hook (``geometry:replace``).
    """

    name = "noisy-localizer"

    def reset(self, episode: int) -> None:
        super().reset(episode)
        self.localization_rng = np.random.default_rng([self.seed, episode])

    def localize(self, poses: dict[str, list[float]]) -> dict[str, list[float]]:
        offsets = self.localization_rng.normal(0.0, LOCALIZATION_SIGMA_M, (len(STANDARDS), 2))
        frames = dict(poses)
        for name, (dx, dy) in zip(STANDARDS, offsets):
            x, y, z = poses[name]
            frames[name] = [round(float(x + dx), 5), round(float(y + dy), 5), z]
        return frames


class FixedPreferencePolicy(ScriptedWeighingPolicy):
    """Always transfers its one preferred denomination onto the pan, then stops."""

    name = "fixed-preference"

    def __init__(self, seed: int = 0, denomination: str = "w50") -> None:
        check_choice("denomination", denomination, STANDARDS)
        self.denomination = denomination
        super().__init__(seed)

    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        if self.transfers or self.denomination in standing:
            return Operation("stop")
        return Operation("add", self.denomination, "pan")


class RandomPolicy(ScriptedWeighingPolicy):
    """Uniform over the visible corrections and stopping; seeded per episode."""

    name = "random"
    oracle_inputs = frozenset({("decision", "replace"), ("skill", "replace"), ("decision", "assist")})

    def consider(self, own: Operation | None, recommended: Operation, standing: set[str]) -> Operation | None:
        """The recommendation or its own draw, evenly (one more draw of its generator)."""
        return recommended if self.rng.integers(2) == 0 else own

    def reset(self, episode: int) -> None:
        super().reset(episode)
        self.rng = np.random.default_rng([self.seed, episode])

    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        options = [Operation("stop")]
        options += [Operation("add", w, "pan") for w in STANDARDS if w not in standing]
        options += [Operation("remove", w, "pan") for w in STANDARDS if w in standing]
        return options[int(self.rng.integers(len(options)))]


POLICIES: dict[str, type[ScriptedWeighingPolicy]] = {
    "reference": ReferencePolicy, "clumsy": ClumsyPolicy, "fixed-preference": FixedPreferencePolicy,
    "random": RandomPolicy, "noisy-localizer": NoisyLocalizerPolicy,
}


def make_policy(name: str, seed: int = 0, **options: Any) -> ScriptedWeighingPolicy:
    """Build a baseline policy by name (``reference``, ``clumsy``, ``fixed-preference``, ``random``)."""
    return build_policy(POLICIES, name, seed, **options)


def build_policy(policies: Mapping[str, Callable[..., P]], name: str, seed: int, **options: Any) -> P:
    """The policy ``name`` of a family's table ``policies``, built with ``seed`` and ``options``."""
    check_choice("policy", name, policies)
    return policies[name](seed, **options)

