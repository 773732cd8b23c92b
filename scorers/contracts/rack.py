"""Placement recall (Labference sec. 4.3, 8.3): place a tube, retrieve it after occlusion.

The rack is a 3×4 grid, slots ``A1``–``C4`` (rows A–C, columns 1–4) in its local frame:
origin at the grid centre on the top face, local x along the columns, row A at +y.  Every
step the tube tip and the gripper are brought into the rack frame, so a moved rack keeps
its local slots (:func:`local_slot`, :func:`rack_transition` for eq. 10,
T'_world,tube = T'_world,rack · T_rack,tube).

* Placement binds the tube to the slot where it *actually* settled: in the rack, released,
  slow, in one slot region for 0.5 s → ``confirm place:tube`` with that slot.
* The occluded transition (``occluded`` true) is environment time: no opportunity opens
  while occluded; its end is a state change, so the next delivered observation opens the
  retrieval opportunity with legal set ``pick(tube, <bound slot>)``.
* Recognizer ``descending-approach/1``: the first sustained (0.2 s) descending approach
  (gripper vertical speed ≤ −0.01 m/s, at most 0.12 m above the rack top) into one slot
  region (within 10 mm of the slot centre) before contact; with the tube in the gripper it
  identifies ``place(tube, slot)``, otherwise ``pick(tube, slot)``.  A carried tube descending
  the same way away from every slot region, the gripper at most 0.12 m above the table
  (table top at world z = 0), identifies ``place(tube, table)``.
* Between the placement and the end of the first occluded transition the legal set is
  ``wait``: the environment moves next.
* Lifting the bound tube out of the rack confirms ``pick:tube``; then ``place(tube, table)``
  is legal.  Success: the tube on the marked table region, released, slow, held 3 s.
* After the retrieval, the tube resting on the table *outside* the marked region,
  released and slow for 0.5 s, is ``failure missed_region`` (recoverable: the obligation
  ``place:table`` stays open).
"""
from __future__ import annotations

import math
from collections import namedtuple
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.models import Operation, Task
from labrecord.scorers.contracts.frames import to_frame
from labrecord.scorers.contracts.base import (
    Columns, ContractEvent, KernelStepper, TaskContract, TaskState, bulk_features, sorted_ops,
)

ROWS, COLS = "ABC", 4
SLOTS = tuple(f"{r}{c}" for r in ROWS for c in range(1, COLS + 1))
TABLE = "table"
TUBE = "tube"
#: approach key of a carried tube descending onto the table (slot keys are 0..23)
TABLE_KEY = 24


@dataclass(frozen=True)
class RackThresholds:
    """Registered thresholds of contract ``rack/1`` (rack geometry included)."""

    pitch_m: float = 0.025
    region_radius_m: float = 0.01
    place_hold_s: float = 0.5
    approach_height_m: float = 0.12
    descend_m_s: float = 0.01
    sustain_s: float = 0.2
    low_motion_m_s: float = 0.01
    dwell_s: float = 3.0


@dataclass(frozen=True)
class RackInstance:
    """Distractor occupancy, the marked table region (world x0, x1, y0, y1), rack poses."""

    distractors: tuple[tuple[str, str], ...] = ()
    table_region: tuple[float, float, float, float] = (0.3, 0.5, -0.3, -0.1)
    condition: str = "basic"
    rack_pose: tuple[float, float, float, float] = (0.5, 0.2, 0.05, 0.0)
    moved_pose: tuple[float, float, float, float] | None = None
    task_seed: int | None = None
    layout_seed: int | None = None

    def variant(self) -> dict[str, Any]:
        return {"distractors": dict(self.distractors), "table_region": list(self.table_region),
                "rack_pose": list(self.rack_pose), "moved_pose": list(self.moved_pose) if self.moved_pose else None,
                "task_seed": self.task_seed, "layout_seed": self.layout_seed}


def slot_center(label: str, pitch_m: float = 0.025) -> tuple[float, float]:
    """Local (x, y) of a slot centre."""
    r, c = ROWS.index(label[0]), int(label[1:]) - 1
    return (c - (COLS - 1) / 2) * pitch_m, (1 - r) * pitch_m


def pose_matrix(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """The 4×4 homogeneous transform of a frame at (x, y, z) turned by ``yaw`` about z."""
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0, x], [s, c, 0, y], [0, 0, 1, z], [0, 0, 0, 1.0]])


def rack_transition(t_world_tube: np.ndarray, t_world_rack: np.ndarray, t_world_rack_new: np.ndarray) -> np.ndarray:
    """Eq. 10: the tube's new world pose after the rack moves, keeping T_rack,tube."""
    t_rack_tube = np.linalg.solve(t_world_rack, t_world_tube)
    return t_world_rack_new @ t_rack_tube


def local_slot(t_world_rack: np.ndarray, point: np.ndarray, th: RackThresholds = RackThresholds()) -> str | None:
    """The slot whose region holds a world ``point`` (3,), in the rack frame, or None."""
    local = np.linalg.solve(t_world_rack, np.append(point, 1.0))
    index = int(_slot_index(local[0:1], local[1:2], th)[0])
    return SLOTS[index] if index >= 0 else None


def _slot_index(lx: np.ndarray, ly: np.ndarray, th: RackThresholds) -> np.ndarray:
    """The slot index (n,) whose region holds each rack-frame point, -1 where none."""
    with np.errstate(invalid="ignore"):
        c = np.floor(lx / th.pitch_m + (COLS - 1) / 2 + 0.5)
        r = np.floor(1 - ly / th.pitch_m + 0.5)
        inside = (c >= 0) & (c < COLS) & (r >= 0) & (r < len(ROWS))
        ex, ey = lx - (c - (COLS - 1) / 2) * th.pitch_m, ly - (1 - r) * th.pitch_m
        near = inside & (np.sqrt(ex * ex + ey * ey) <= th.region_radius_m)
    return np.where(near, r * COLS + c, -1).astype(np.int64)


FEATURE_FIELDS = ("step", "t", "valid", "occluded", "tube_slot", "placed", "lifted", "approach", "success", "held",
                  "stray")
RackFeatures = namedtuple("RackFeatures", FEATURE_FIELDS)  # type: ignore[misc]


@dataclass
class RackState(TaskState):
    bound: int = -1            # the slot the tube actually settled in (-1: not placed)
    transitions: int = 0       # completed occluded environment transitions
    retrieved: bool = False
    occupied: frozenset[int] = field(default_factory=frozenset)


def rack_features(get: Columns, th: RackThresholds, instance: RackInstance,
                  timers: Any) -> dict[str, np.ndarray]:
    """The one feature kernel of the rack contract: field -> (n,) array for n rows.

    ``get(name, dtype=float64)`` reads a column (a :class:`Columns`: nulls nan / False); ``timers`` (a
    :class:`KernelTimers`: fresh over a whole table, carried across the online scorer's blocks) holds the
    place, approach and dwell timers.
    """
    t = get("t")
    x0, y0, z0, yaw = get("rack_x"), get("rack_y"), get("rack_z"), get("rack_yaw")

    def local(px: np.ndarray, py: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return to_frame(px, py, x0, y0, yaw)

    occluded = get("occluded", bool)
    slot = _slot_index(*local(get("tube_x"), get("tube_y")), th)
    contact, grasped = get("tube_contact", bool), get("tube_grasped", bool)
    in_rack = get("tube_in_rack", bool)
    tx, ty = get("tube_x"), get("tube_y")
    x1, x2, y1, y2 = instance.table_region
    with np.errstate(invalid="ignore"):
        slow = get("tube_speed") <= th.low_motion_m_s
        height = get("grip_z") - z0
        g_slot = _slot_index(*local(get("grip_x"), get("grip_y")), th)
        descending = get("grip_vz") <= -th.descend_m_s
        approaching = ~occluded & (g_slot >= 0) & (height >= 0.0) & (height <= th.approach_height_m) & descending
        gz = get("grip_z")
        # a carried tube descending outside every slot region: a put-down on the table
        to_table = ~occluded & grasped & (g_slot < 0) & (gz >= 0.0) & (gz <= th.approach_height_m) & descending
        resting_on_table = get("tube_on_table", bool) & ~contact & slow
        inside = (x1 <= tx) & (tx <= x2) & (y1 <= ty) & (ty <= y2)
        success = resting_on_table & inside
    resting = in_rack & ~contact & slow & (slot >= 0)
    return {"step": get("step", np.int64), "t": t, "valid": np.ones(len(t), dtype=bool),
            "occluded": occluded, "tube_slot": slot,
            "placed": timers.key("placed", np.where(resting & ~occluded, slot, -1), th.place_hold_s),
            "lifted": grasped & ~in_rack,
            "approach": timers.key("approach", np.where(approaching, g_slot + 12 * grasped,
                                                        np.where(to_table, TABLE_KEY, -1)), th.sustain_s),
            "success": success, "held": timers.flag("held", success, th.dwell_s),
            "stray": timers.flag("stray", resting_on_table & ~inside & ~in_rack, th.place_hold_s)}


class RackContract(TaskContract[RackState, RackInstance, Any]):
    family: ClassVar[str] = "rack"
    version: ClassVar[str] = "rack/1"
    #: the terminal dwell judges completion only; placement and approach rules bind samples and
    #: recognize choices the later evidence depends on
    rescorable: ClassVar[frozenset[str]] = frozenset({"dwell_s"})
    recognizer: ClassVar[str] = "descending-approach/1"
    sensor_source: ClassVar[str] = "tube_pose"
    failure_reasons: ClassVar[frozenset[str]] = frozenset({"missed_region"})
    features_type = RackFeatures
    signature = ("valid", "occluded", "placed", "lifted", "approach", "success", "held", "stray")

    @classmethod
    def default_thresholds(cls) -> RackThresholds:
        return RackThresholds()

    def instance_from_task(self, task: Task) -> RackInstance:
        v = task.variant
        distractors = v.get("distractors", {})
        if not isinstance(distractors, dict) or any(s not in SLOTS for s in distractors.values()):
            raise LabrecordError(f"task.variant.distractors: expected {{name: slot A1..C4}}, got {distractors!r}")
        region = v.get("table_region", [0.3, 0.5, -0.3, -0.1])
        if not isinstance(region, list) or len(region) != 4 or not all(isinstance(x, (int, float)) for x in region):
            raise LabrecordError(f"task.variant.table_region: expected [x0, x1, y0, y1], got {region!r}")

        def pose(name: str) -> tuple[float, float, float, float] | None:
            value = v.get(name)
            return tuple(float(x) for x in value) if value else None  # type: ignore[return-value]

        return RackInstance(distractors=tuple(sorted(distractors.items())), table_region=tuple(float(x) for x in region),  # type: ignore[arg-type]
                            condition=task.condition, rack_pose=pose("rack_pose") or (0.5, 0.2, 0.05, 0.0),
                            moved_pose=pose("moved_pose"), task_seed=v.get("task_seed"), layout_seed=v.get("layout_seed"))

    def initial_state(self, instance: RackInstance) -> RackState:
        return RackState(occupied=frozenset(SLOTS.index(s) for _, s in instance.distractors))

    def legal_set(self, state: RackState, goal: RackInstance) -> list[Operation]:
        if state.retrieved:
            return [Operation("place", TUBE, TABLE)]
        if state.bound >= 0 and state.transitions == 0:
            return [Operation("wait")]  # placed: the environment's occluded transition comes first
        if state.bound >= 0:
            return [Operation("pick", TUBE, SLOTS[state.bound])]
        return sorted_ops(Operation("place", TUBE, SLOTS[i]) for i in range(len(SLOTS)) if i not in state.occupied)

    def decision_key(self, state: RackState) -> Any:
        return (state.bound, state.transitions, state.retrieved)

    def evidence_ready(self, state: RackState, f: Any) -> bool:
        return not f.occluded  # occluded frames expose nothing new

    def state_ref(self, state: RackState, f: Any) -> str:
        bound = SLOTS[state.bound] if state.bound >= 0 else "none"
        return f"bound={bound};transitions={state.transitions};retrieved={str(state.retrieved).lower()}"

    def update(self, state: RackState, f: Any, prev: Any, instance: RackInstance) -> list[ContractEvent]:
        events: list[ContractEvent] = []
        if prev is not None and prev.occluded and not f.occluded:
            state.transitions += 1
            state.changes += 1
        if f.placed >= 0 and f.placed != state.bound and not state.retrieved:
            events.append(ContractEvent("confirm", f.t, f.step, {
                "obligation": "place:tube", "op": Operation("place", TUBE, SLOTS[f.placed]), "predicate": "placed",
                "measured": {"slot": SLOTS[f.placed]}, "attempt": state.attempt("place:tube")}))
            state.bound = f.placed
            state.changes += 1
        if f.lifted and state.bound >= 0 and not state.retrieved and state.transitions > 0:
            events.append(ContractEvent("confirm", f.t, f.step, {
                "obligation": "pick:tube", "op": Operation("pick", TUBE, SLOTS[state.bound]), "predicate": "lifted",
                "measured": {"slot": SLOTS[state.bound]}, "attempt": 1}))
            state.retrieved = True
            state.changes += 1
        if f.stray and state.retrieved and (prev is None or not prev.stray):
            key = "place:table"
            events.append(ContractEvent("failure", f.t, f.step, {
                "op": Operation("place", TUBE, TABLE), "reason": "missed_region", "attempt": state.attempt(key),
                "recoverable": True}))
            state.attempts[key] = state.attempt(key)
            state.failures += 1
        return events

    def recognize(self, state: RackState, f: Any, prev: Any, instance: RackInstance) -> Operation | None:
        if f.approach < 0 or (prev is not None and prev.approach == f.approach):
            return None
        if f.approach == TABLE_KEY:
            return Operation("place", TUBE, TABLE)
        slot, carrying = f.approach % 12, f.approach >= 12
        return Operation("place" if carrying else "pick", TUBE, SLOTS[slot])

    def stepper(self, instance: RackInstance) -> KernelStepper:
        return KernelStepper(rack_features, RackFeatures, self.thresholds, instance)

    def features_bulk(self, table: Any, instance: RackInstance) -> dict[str, np.ndarray]:
        return bulk_features(rack_features, table, self.thresholds, instance)


def checkpoint_instances(n: int, rng_task: np.random.Generator, rng_layout: np.random.Generator) -> list[tuple[str, RackInstance]]:
    """Balanced retrieval checkpoints: placement slots cycle over all 12 slots (shuffled
    blocks), each with a rack move drawn from the layout generator.  Returns
    ``(placed slot, instance)``."""
    slots = np.concatenate([rng_task.permutation(len(SLOTS)) for _ in range(n // len(SLOTS) + 1)])[:n]
    out = []
    for index in slots.tolist():
        yaw = float(rng_layout.uniform(-math.pi, math.pi))
        move = (0.5 + float(rng_layout.uniform(-0.05, 0.05)), 0.2 + float(rng_layout.uniform(-0.05, 0.05)), 0.05, yaw)
        out.append((SLOTS[index], RackInstance(condition="extended", moved_pose=move,
                                               task_seed=int(rng_task.integers(2**31 - 1)),
                                               layout_seed=int(rng_layout.integers(2**31 - 1)))))
    return out
