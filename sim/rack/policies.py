"""Scripted placement-recall policies: place the sample, remember where it settled, retrieve it.

The policies declare the evaluator-state channel ``object_poses`` — the rack frame and the
bottom tips of all tubes, *unlabeled* (same-cap tubes look alike) — besides cameras and
proprioception.  Which tube is the sample therefore comes only from the policy's own
placement history: after releasing it, the policy records the local slot (rack frame)
where the new tube actually settled.  The environment's occluded transition pauses the
policy; it notices the pause as a gap in observation time and then retrieves:

* ``reference`` — places into the first free slot of B2 B3 A2 A3 C2 C3 B1 B4 A1 A4 C1 C4,
  retrieves from the remembered local slot located in the rack's *current* frame, and
  puts the sample on the marked table region;
* ``fixed-preference`` — places into its preferred slot (default A1; the next free one in
  A1…C4 order when taken) and always retrieves from that preferred slot;
* ``random`` — places into a uniformly drawn free slot and retrieves from a uniformly
  drawn occupied one;
* ``clumsy`` — the reference choices, but it lets the sample go beside the marked region
  (the contract's ``missed_region`` failure), then picks it up again and sets it inside.

Each retrieval is reported twice on the record: the recalled slot as a state report and
the retrieval as a reported operation; the native first choice comes from the contract's
approach recognizer and the execution from the measured lift.
"""
from __future__ import annotations

import math
from typing import Any

from labrecord.models import Operation
from labrecord.recorders.policy import ActionChunk, Observation
from labrecord.sim.bench.policies import HOME, build_policy
from labrecord.sim.bench.tube_policies import GRASP_FROM_TIP, SAFE_Z, Step, TubePolicy, lift_upright
from labrecord.sim.fanout import check_choice

#: gripper command while "open" among neighbouring tubes: 14 mm per finger
OPEN = 0.65
#: a gap this long between observations means the environment held control
PAUSE_S = 1.0
PLACE_ORDER = ("B2", "B3", "A2", "A3", "C2", "C3", "B1", "B4", "A1", "A4", "C1", "C4")
#: where the clumsy policy lets the sample go: on the table beside the marked region
MISS_SPOT = (0.36, -0.12)


def tips(poses: dict[str, Any]) -> list[list[float]]:
    """The observed tube tips (unlabeled)."""
    return [poses[k] for k in sorted(poses) if k.startswith("seen") and not math.isnan(poses[k][0])]


def rack_local(poses: dict[str, Any], point: list[float]) -> tuple[float, float]:
    x, y, _, yaw = poses["rack"]
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = point[0] - x, point[1] - y
    return c * dx + s * dy, -s * dx + c * dy


def slot_of(poses: dict[str, Any], tip: list[float]) -> str | None:
    """The slot label whose hole holds a tube tip (within 10 mm of its centre, below the rim)."""
    from labrecord.scorers.contracts.rack import SLOTS, slot_center

    if tip[2] > poses["rack"][2] - 0.01:
        return None
    lx, ly = rack_local(poses, tip)
    for label in SLOTS:
        cx, cy = slot_center(label)
        if math.hypot(lx - cx, ly - cy) <= 0.01:
            return label
    return None


def slot_world(poses: dict[str, Any], label: str) -> tuple[float, float, float]:
    """World point of a slot's floor centre in the observed rack pose."""
    from labrecord.scorers.contracts.rack import slot_center

    x, y, z, yaw = poses["rack"]
    lx, ly = slot_center(label)
    c, s = math.cos(yaw), math.sin(yaw)
    return x + c * lx - s * ly, y + s * lx + c * ly, z - 0.03


def grasp_yaw(rack_yaw: float) -> float:
    """Fingers closing along the rack's diagonal (neighbours 35 mm away), in (−π/2, π/2]."""
    yaw = rack_yaw + math.pi / 4
    return math.remainder(yaw, math.pi) if abs(math.remainder(yaw, math.pi)) != math.pi / 2 else math.pi / 2


class ScriptedRackPolicy(TubePolicy):
    """Shared machinery: place, remember, wait out the transition, retrieve, set down."""

    memory = "placement history (episode)"

    def reset(self, episode: int) -> None:
        super().reset(episode)
        self.start_occupied: set[str] | None = None
        self.placed: str | None = None       # history: the local slot where the sample settled
        self.phase = "place"                 # place -> wait -> retrieve -> set_down -> done
        self.last_t: float | None = None
        self.paused = False                  # the environment has held control since the start
        self.misses = 0

    def act(self, observation: Observation) -> ActionChunk:
        poses = observation.state["object_poses"]
        if self.start_occupied is None:
            self.start_occupied = {s for s in (slot_of(poses, tip) for tip in tips(poses)) if s}
        self.paused = self.paused or (self.last_t is not None and observation.t - self.last_t > PAUSE_S)
        self.last_t = observation.t
        finished = self.plan is not None and self.cursor >= len(self.plan) and not self.phases
        if finished and self.phase == "placing":  # released and withdrawn: remember where the new tube is
            occupied = {s for s in (slot_of(poses, tip) for tip in tips(poses)) if s}
            new = sorted(occupied - (self.start_occupied or set()))
            self.placed = new[0] if new else None
            self.phase = "wait"
        if self.paused and self.phase == "wait":
            self.phase = "retrieve"
            self.wait_until = observation.t + 0.5
        idle = self.plan is None and not self.phases and observation.t >= self.wait_until
        if idle and self.phase == "wait":  # the environment's turn: keep still
            return self._hold(observation.state["robot"])
        return super().act(observation)

    # -- choices ----------------------------------------------------------------------
    def place_slot(self, free: list[str]) -> str:
        return next(s for s in PLACE_ORDER if s in free)

    def retrieve_slot(self, occupied: list[str]) -> str:
        assert self.placed is not None
        return self.placed

    def choose(self, poses: dict[str, Any]) -> Operation | None:
        from labrecord.scorers.contracts.rack import SLOTS

        occupied = [s for s in (slot_of(poses, tip) for tip in tips(poses)) if s]
        if self.phase == "place":
            self.phase = "placing"
            return Operation("place", "tube", self.place_slot([s for s in SLOTS if s not in occupied]))
        if self.phase == "retrieve":
            self.phase = "set_down"
            if not occupied or self.placed is None:
                return Operation("stop")
            return Operation("pick", "tube", self.retrieve_slot(occupied))
        if self.phase == "set_down":
            loose = self.loose_tube(poses)
            if loose is None:
                self.phase = "done"
                return Operation("stop")
            return Operation("place", "tube", "table")
        return Operation("stop")

    def loose_tube(self, poses: dict[str, Any]) -> list[float] | None:
        """A tube lying or standing on the table outside the marked region (not in the rack)."""
        from labrecord.sim.rack.scene import REGION, STAND

        x0, x1, y0, y1 = REGION
        for tip in tips(poses):
            on_table = tip[2] < 0.01
            in_stand = math.hypot(tip[0] - STAND[0], tip[1] - STAND[1]) < 0.01
            if on_table and not in_stand and not (x0 <= tip[0] <= x1 and y0 <= tip[1] <= y1):
                return tip
        return None

    def phases_for(self, op: Operation, poses: dict[str, Any]) -> list[Any]:
        from labrecord.sim.rack.scene import STAND

        if op.kind == "place" and op.dest != "table":
            label = str(op.dest)
            return [lambda r, p: self.lift_from((*STAND, 0.0), grasp_yaw(p["rack"][3])),
                    lambda r, p: self.put_down(slot_world(p, label), grasp_yaw(p["rack"][3]))]
        if op.kind == "pick":
            label = str(op.dest)
            yaw = grasp_yaw(poses["rack"][3])
            return [lambda r, p: self.lift_from(slot_world(p, label), yaw), lambda r, p: self.set_down(p, yaw)]
        loose = self.loose_tube(poses)
        assert loose is not None
        return [lambda r, p: self.lift_from(tuple(loose), 0.0), lambda r, p: self.set_down(p, 0.0)]

    # -- execution --------------------------------------------------------------------
    def lift_from(self, tip: tuple[float, ...], yaw: float) -> list[Step]:
        """Descend over a tube standing with its tip at ``tip`` (fingers opened only to
        :data:`OPEN` among its neighbours, a slower descent), close, lift it to SAFE_Z."""
        return lift_upright(tip, yaw, open_grip=OPEN, descend_speed=0.1)

    def put_down(self, floor: tuple[float, float, float], yaw: float) -> list[Step]:
        """Carry the held tube over ``floor``, lower its tip to 3 mm above it, let go, withdraw."""
        over = (floor[0], floor[1], floor[2] + GRASP_FROM_TIP + 0.003)
        out = [Step((floor[0], floor[1], SAFE_Z), 1.0, yaw, speed=0.2, hold=0.2),
               Step(over, 1.0, yaw, speed=0.08, hold=0.3),
               Step(over, OPEN, yaw, hold=0.5),
               Step((floor[0], floor[1], SAFE_Z), OPEN, yaw, speed=0.12)]
        return out + [Step(HOME, 0.0)]

    def set_down(self, poses: dict[str, Any], yaw: float) -> list[Step]:
        from labrecord.sim.rack.scene import REGION

        x0, x1, y0, y1 = REGION
        spot = ((x0 + x1) / 2, (y0 + y1) / 2)
        if self.misses < self.allowed_misses:
            self.misses += 1
            spot = MISS_SPOT
        return self.put_down((spot[0], spot[1], 0.0), yaw)

    allowed_misses = 0


class ReferencePolicy(ScriptedRackPolicy):
    name = "reference"


class FixedPreferencePolicy(ScriptedRackPolicy):
    """Places into its preferred slot (or the next free one) and always retrieves from it."""

    name = "fixed-preference"

    def __init__(self, seed: int = 0, slot: str = "A1") -> None:
        from labrecord.scorers.contracts.rack import SLOTS

        check_choice("slot", slot, SLOTS)
        self.slot = slot
        super().__init__(seed)

    def place_slot(self, free: list[str]) -> str:
        from labrecord.scorers.contracts.rack import SLOTS

        start = SLOTS.index(self.slot)
        return next(SLOTS[(start + k) % len(SLOTS)] for k in range(len(SLOTS)) if SLOTS[(start + k) % len(SLOTS)] in free)

    def retrieve_slot(self, occupied: list[str]) -> str:
        return self.slot


class RandomPolicy(ScriptedRackPolicy):
    name = "random"

    def place_slot(self, free: list[str]) -> str:
        return free[int(self.rng.integers(len(free)))]

    def retrieve_slot(self, occupied: list[str]) -> str:
        return sorted(occupied)[int(self.rng.integers(len(occupied)))]


class ClumsyPolicy(ScriptedRackPolicy):
    """Reference choices; sets the sample down beside the marked region once, then fixes it."""

    name = "clumsy"
    allowed_misses = 1


POLICIES: dict[str, type[ScriptedRackPolicy]] = {
    "reference": ReferencePolicy, "fixed-preference": FixedPreferencePolicy, "random": RandomPolicy, "clumsy": ClumsyPolicy,
}


def make_policy(name: str, seed: int = 0, **options: Any) -> ScriptedRackPolicy:
    """Build a rack baseline by name (``reference``, ``fixed-preference``, ``random``, ``clumsy``)."""
    return build_policy(POLICIES, name, seed, **options)


__all__ = ["POLICIES", "make_policy"]
