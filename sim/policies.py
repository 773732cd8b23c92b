"""Baseline weighing policies behind the common :class:`~labrecord.recorders.policy.Policy` interface.

* ``reference`` reads the display through its observation, works out the required
  standard set from the instruction's target, the stable reading and the visible
  standards on the pan (the four denominations have distinct subset sums), and carries
  out the corrections with the reference executor;
* ``fixed-preference`` always transfers one denomination (the failure mode observed in
  VLAs), whatever the display says;
* ``random`` picks uniformly among the visible add / remove corrections and stopping.

All three use the same ActionSpec (absolute end-effector position + gripper command).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
import itertools
import re
from typing import Any

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import ActionSpec, Operation
from labrecord.recorders.policy import ActionChunk, Capabilities, Observation
from labrecord.sim.executor import HOME, hold_at, on_pan, sample_plan, transfer_plan
from labrecord.sim.scene import STANDARD_GRAMS, STANDARDS

CONTROL_HZ = 10.0
ACTION_SPEC = ActionSpec(representation="eef", dim=4, mode="absolute", frame="world", units="m",
                         gripper="continuous: 0 open, 1 closed", control_hz=CONTROL_HZ, max_chunk=4,
                         low=[-0.35, -0.4, 0.0, 0.0], high=[0.45, 0.4, 0.35, 1.0])
CHANNELS = ("front", "wrist", "display", "robot", "objects")
#: pause after a transfer so the reading reflects the released load before deciding again
SETTLE_S = 1.0
_TARGET = re.compile(r"(\d+(?:\.\d+)?)\s*g\b")


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


class ScriptedWeighingPolicy(ABC):
    """Shared machinery: wait for a stable reading, choose an operation, execute it."""

    name = "scripted"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.capabilities = Capabilities(name=self.name, kind="scripted", action_spec=ACTION_SPEC, channels=CHANNELS,
                                         reports_operations=True, revision="1")
        self.reset(0)

    def reset(self, episode: int) -> None:
        self.episode = episode
        self.plan: np.ndarray | None = None
        self.cursor = 0
        self.wait_until = 0.0
        self.stopped = False
        self.transfers = 0

    @abstractmethod
    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        """The operation this policy commits to in the current state, or None to keep still."""

    def act(self, observation: Observation) -> ActionChunk:
        robot = observation.state["robot"]
        if self.plan is not None and self.cursor < len(self.plan):
            return self._next_rows()
        if self.plan is not None:  # a transfer just ended
            self.plan = None
            self.wait_until = observation.t + SETTLE_S
        display = observation.state.get("display") or {}
        if self.stopped or observation.t < self.wait_until or not display.get("stable"):
            return ActionChunk(hold_at(HOME if self.transfers else robot["eef_pos"]))
        poses = observation.state["objects"]
        standing = {w for w in STANDARDS if on_pan(poses[w])}
        op = self.choose(observation, parse_target(observation.instruction), float(display["reading_g"]), standing)
        if op is None or op.kind in ("stop", "wait"):
            self.stopped = op is None or op.kind == "stop"
            return ActionChunk(hold_at(robot["eef_pos"]), report=op)
        self.plan = sample_plan(np.asarray(robot["eef_pos"]), transfer_plan(op.object, poses, op.kind == "add"), CONTROL_HZ)
        self.cursor = 0
        self.transfers += 1
        chunk = self._next_rows()
        chunk.report = op
        return chunk

    def _next_rows(self) -> ActionChunk:
        assert self.plan is not None
        rows = self.plan[self.cursor:self.cursor + ACTION_SPEC.max_chunk]
        self.cursor += len(rows)
        return ActionChunk(rows)


class ReferencePolicy(ScriptedWeighingPolicy):
    """Removes what must go, then adds what is missing, re-reading after every release."""

    name = "reference"

    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        wanted = required_set(target_g, reading_g, standing)
        if wanted is None:
            return Operation("stop")
        for w in sorted(standing - wanted, key=STANDARD_GRAMS.get):
            return Operation("remove", w, "pan")
        for w in sorted(wanted - standing, key=STANDARD_GRAMS.get):
            return Operation("add", w, "pan")
        return Operation("stop")


class FixedPreferencePolicy(ScriptedWeighingPolicy):
    """Always transfers its one preferred denomination onto the pan, then stops."""

    name = "fixed-preference"

    def __init__(self, seed: int = 0, denomination: str = "w50") -> None:
        if denomination not in STANDARDS:
            raise LabrecordError(f"denomination {denomination!r}: expected one of {', '.join(STANDARDS)}")
        self.denomination = denomination
        super().__init__(seed)

    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        if self.transfers or self.denomination in standing:
            return Operation("stop")
        return Operation("add", self.denomination, "pan")


class RandomPolicy(ScriptedWeighingPolicy):
    """Uniform over the visible corrections and stopping; seeded per episode."""

    name = "random"

    def reset(self, episode: int) -> None:
        super().reset(episode)
        self.rng = np.random.default_rng([self.seed, episode])

    def choose(self, observation: Observation, target_g: float, reading_g: float, standing: set[str]) -> Operation | None:
        options = [Operation("stop")]
        options += [Operation("add", w, "pan") for w in STANDARDS if w not in standing]
        options += [Operation("remove", w, "pan") for w in STANDARDS if w in standing]
        return options[int(self.rng.integers(len(options)))]


POLICIES: dict[str, type[ScriptedWeighingPolicy]] = {
    "reference": ReferencePolicy, "fixed-preference": FixedPreferencePolicy, "random": RandomPolicy,
}


def make_policy(name: str, seed: int = 0, **options: Any) -> ScriptedWeighingPolicy:
    """Build a baseline policy by name (``reference``, ``fixed-preference``, ``random``)."""
    cls = POLICIES.get(name)
    if cls is None:
        raise LabrecordError(f"policy {name!r}: expected one of {', '.join(POLICIES)}")
    return cls(seed, **options)
