"""Centrifuge loading (Labference sec. 4.1, 8.1): an equal-mass tube pair in opposite slots.

The rotor has n = 12 calibrated slots; zero-based local slot j has opposite
``(j + n/2) mod n`` (:func:`opposite`).  Socket mouths and insertion axes are calibrated in
the rotor frame; each step the tube tip and axis are brought into that frame (so a
rotated rotor moves world coordinates but not local slots) and compared with every slot:

* depth = (tip − mouth)·axis, as a fraction of the effective socket depth;
* radial error = distance of the tip from the socket axis line;
* axial error = angle between the tube axis and the socket axis.

A tube is *seated* in slot j when axial error ≤ 10°, depth ≥ 60 % of the effective
depth, radial error ≤ the physical clearance, released (no robot contact), supported by
the rotor and slow, continuously for 0.5 s (``confirm insert:<tube>``, predicate
``seated``).  Released, supported and slow in a slot region without meeting the seating
geometry for 0.5 s gives ``failure shallow`` (depth below 60 %) or ``failure misaligned``
(axis or radial error); a tube still held never confirms (unreleased).  The second
destination follows the *actual* seated slot of the first tube.  Success: both tubes
seated (instantaneous predicate) in opposite slots, held 3 s.

The recognizer (``directed-entry/1``) identifies ``insert(tube, slot<j>)`` when a grasped
tube enters slot j's region (within 12 mm of the axis line, at most 20 mm above the mouth,
axis within 30°) — the first directed attempt, independent of the seating predicate.
"""
from __future__ import annotations

import functools
import math
from collections import namedtuple
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.families import CENTRIFUGE_TUBES
from labrecord.models import Operation, Pair, Task
from labrecord.scorers.contracts.frames import to_frame
from labrecord.scorers.contracts.base import (
    Columns, ContractEvent, KernelStepper, TaskContract, TaskState, bulk_features, sorted_ops,
)

TUBES = CENTRIFUGE_TUBES
PREFIX = {"tube_a": "a", "tube_b": "b"}


def opposite(j: int, n: int = 12) -> int:
    """The slot opposite local slot ``j`` on an ``n``-slot rotor (n even)."""
    if n % 2:
        raise ValueError(f"a rotor with {n} slots has no opposite slots")
    return (j + n // 2) % n


def slot_name(j: int) -> str:
    return f"slot{j}"


@dataclass(frozen=True)
class RotorCalibration:
    """Socket geometry in the rotor frame (origin on the axis at mouth height, z up)."""

    n_slots: int = 12
    socket_radius_m: float = 0.05    # distance of each socket mouth from the rotor axis
    mouth_z_m: float = 0.0
    tilt_deg: float = 30.0           # socket axis from vertical, tip pointing outward
    socket_depth_m: float = 0.04     # effective socket depth

    def slots(self) -> tuple[np.ndarray, np.ndarray]:
        """Mouths (n, 3) and unit insertion axes (n, 3) in the rotor frame."""
        return _slots(self)

    def _compute_slots(self) -> tuple[np.ndarray, np.ndarray]:
        angle = 2.0 * np.pi * np.arange(self.n_slots) / self.n_slots
        tilt = math.radians(self.tilt_deg)
        mouths = np.stack([self.socket_radius_m * np.cos(angle), self.socket_radius_m * np.sin(angle),
                           np.full(self.n_slots, self.mouth_z_m)], axis=1)
        axes = np.stack([math.sin(tilt) * np.cos(angle), math.sin(tilt) * np.sin(angle),
                         np.full(self.n_slots, -math.cos(tilt))], axis=1)
        return mouths, axes


@functools.lru_cache(maxsize=32)
def _slots(calibration: RotorCalibration) -> tuple[np.ndarray, np.ndarray]:
    mouths, axes = calibration._compute_slots()
    mouths.setflags(write=False)
    axes.setflags(write=False)
    return mouths, axes


@dataclass(frozen=True)
class CentrifugeThresholds:
    """Registered thresholds of contract ``centrifuge/1``."""

    max_axial_deg: float = 10.0
    min_depth_frac: float = 0.6
    radial_clearance_m: float = 0.003
    seat_hold_s: float = 0.5
    dwell_s: float = 3.0
    low_motion_m_s: float = 0.01
    region_radius_m: float = 0.012
    aim_height_m: float = 0.02
    aim_axial_deg: float = 30.0


@dataclass(frozen=True)
class CentrifugeInstance:
    """Start occupancy (tube -> local slot), the tube held ready, rotor pose and calibration."""

    start: tuple[tuple[str, int], ...] = ()
    held: str | None = None
    rotor_yaw: float = 0.0
    condition: str = "basic"
    calibration: RotorCalibration = field(default_factory=RotorCalibration)
    task_seed: int | None = None
    layout_seed: int | None = None

    def variant(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"start": dict(self.start), "held": self.held, "rotor_yaw": self.rotor_yaw,
                "calibration": asdict(self.calibration), "task_seed": self.task_seed, "layout_seed": self.layout_seed}


FEATURE_FIELDS = ["step", "t", "valid"] + [f"{p}_{name}" for p in ("a", "b") for name in
                                           ("near", "depth", "aim", "seated", "shallow", "supported")] + ["success", "held"]
CentrifugeFeatures = namedtuple("CentrifugeFeatures", FEATURE_FIELDS)  # type: ignore[misc]


def tube_geometry(cal: RotorCalibration, th: CentrifugeThresholds, rotor: dict[str, np.ndarray],
                  tube: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Tube tip/axis (n,) against every socket, in the rotor frame.

    Returns per step: ``near`` (closest slot whose region holds the tip, else -1),
    ``depth`` (fraction of effective depth at ``near``), ``geom_ok`` (seating geometry) and
    ``aim_ok`` (recognizer geometry).  The one kernel of both paths: the bulk path passes
    whole columns, the step path a block of one row per tube.
    """
    lx, ly = to_frame(tube["x"], tube["y"], rotor["x"], rotor["y"], rotor["yaw"])
    lz = tube["z"] - rotor["z"]
    ax, ay = to_frame(tube["ax"], tube["ay"], 0.0, 0.0, rotor["yaw"])
    az = tube["az"]
    mouths, axes = cal.slots()
    ex = lx[:, None] - mouths[None, :, 0]
    ey = ly[:, None] - mouths[None, :, 1]
    ez = lz[:, None] - mouths[None, :, 2]
    depth = ex * axes[None, :, 0] + ey * axes[None, :, 1] + ez * axes[None, :, 2]
    rx, ry, rz = ex - depth * axes[None, :, 0], ey - depth * axes[None, :, 1], ez - depth * axes[None, :, 2]
    radial = np.sqrt(rx * rx + ry * ry + rz * rz)
    cos_axial = ax[:, None] * axes[None, :, 0] + ay[:, None] * axes[None, :, 1] + az[:, None] * axes[None, :, 2]
    with np.errstate(invalid="ignore"):
        radial = np.where(np.isfinite(radial), radial, np.inf)
        nearest = np.argmin(radial, axis=1)
        rows = np.arange(len(lx))
        r, d, ca = radial[rows, nearest], depth[rows, nearest], cos_axial[rows, nearest]
        in_region = (r <= th.region_radius_m) & (d >= -th.aim_height_m)
        near = np.where(in_region, nearest, -1)
        frac = d / cal.socket_depth_m
        geom_ok = in_region & (ca >= math.cos(math.radians(th.max_axial_deg))) & (frac >= th.min_depth_frac) \
            & (r <= th.radial_clearance_m)
        aim_ok = in_region & (ca >= math.cos(math.radians(th.aim_axial_deg)))
    return {"near": near, "depth": np.where(in_region, frac, np.nan), "geom_ok": geom_ok, "aim_ok": aim_ok}


_POSE = ("x", "y", "z", "ax", "ay", "az")


def _tube_columns(get: Any, tube: str) -> dict[str, np.ndarray]:
    return {k: get(f"{tube}_{k}") for k in _POSE}


def _rotor_columns(get: Any) -> dict[str, np.ndarray]:
    return {"x": get("rotor_x"), "y": get("rotor_y"), "z": get("rotor_z"), "yaw": get("rotor_yaw")}


@dataclass
class CentrifugeState(TaskState):
    seated: dict[str, int] = field(default_factory=dict)   # confirmed occupancy: tube -> slot


def centrifuge_features(get: Columns, th: CentrifugeThresholds, instance: CentrifugeInstance,
                        timers: Any) -> dict[str, np.ndarray]:
    """The one feature kernel of the centrifuge contract: field -> (n,) array for n rows.

    ``get(name, dtype=float64)`` reads a column (a :class:`Columns`: nulls nan / False); ``timers`` (a
    :class:`KernelTimers`: fresh over a whole table, carried across the online scorer's blocks) holds the
    seating, misfit and dwell timers.
    """
    t = get("t")
    out: dict[str, np.ndarray] = {"step": get("step", np.int64), "t": t, "valid": np.ones(len(t), dtype=bool)}
    now = {}
    for tube in TUBES:
        p = PREFIX[tube]
        g = tube_geometry(instance.calibration, th, _rotor_columns(get), _tube_columns(get, tube))
        supported, contact = get(f"{tube}_supported", bool), get(f"{tube}_contact", bool)
        with np.errstate(invalid="ignore"):
            slow = get(f"{tube}_speed") <= th.low_motion_m_s
        resting = supported & ~contact & slow & (g["near"] >= 0)
        seated_now = resting & g["geom_ok"]
        now[tube] = np.where(seated_now, g["near"], -1)
        out[f"{p}_near"], out[f"{p}_depth"] = g["near"], g["depth"]
        out[f"{p}_aim"] = np.where(get(f"{tube}_grasped", bool) & g["aim_ok"], g["near"], -1)
        out[f"{p}_seated"] = timers.key(f"{p}_seated", now[tube], th.seat_hold_s)
        with np.errstate(invalid="ignore"):
            misfit = 2 * g["near"] + np.where(g["depth"] < th.min_depth_frac, 0, 1)
        out[f"{p}_shallow"] = timers.key(f"{p}_shallow", np.where(resting & ~seated_now, misfit, -1), th.seat_hold_s)
        out[f"{p}_supported"] = supported
    a, b = now["tube_a"], now["tube_b"]
    n = instance.calibration.n_slots
    out["success"] = (a >= 0) & (b >= 0) & (b == (a + n // 2) % n)
    out["held"] = timers.flag("held", out["success"], th.dwell_s)
    return out


class CentrifugeContract(TaskContract[CentrifugeState, CentrifugeInstance, Any]):
    family: ClassVar[str] = "centrifuge"
    version: ClassVar[str] = "centrifuge/1"
    #: the final-occupancy dwell judges completion only; insertion predicates confirm progress,
    #: which opens the next opportunity the policy was handed
    rescorable: ClassVar[frozenset[str]] = frozenset({"dwell_s"})
    recognizer: ClassVar[str] = "directed-entry/1"
    sensor_source: ClassVar[str] = "tube_pose"
    failure_reasons: ClassVar[frozenset[str]] = frozenset({"shallow", "misaligned"})
    features_type = CentrifugeFeatures
    signature = tuple(name for name in FEATURE_FIELDS if name not in ("step", "t", "a_depth", "b_depth"))

    @classmethod
    def default_thresholds(cls) -> CentrifugeThresholds:
        return CentrifugeThresholds()

    def instance_from_task(self, task: Task) -> CentrifugeInstance:
        v = task.variant
        try:
            calibration = RotorCalibration(**v.get("calibration", {}))
        except TypeError as error:
            raise LabrecordError(f"task.variant.calibration: {error}") from error
        start = v.get("start", {})
        if not isinstance(start, dict) or any(k not in TUBES or not isinstance(s, int) or not 0 <= s < calibration.n_slots
                                              for k, s in start.items()):
            raise LabrecordError(f"task.variant.start: expected {{tube: slot 0..{calibration.n_slots - 1}}}, got {start!r}")
        held = v.get("held")
        if held is not None and held not in TUBES:
            raise LabrecordError(f"task.variant.held: expected one of {list(TUBES)} or null, got {held!r}")
        return CentrifugeInstance(start=tuple(sorted(start.items())), held=held, rotor_yaw=float(v.get("rotor_yaw", 0.0)),
                                  condition=task.condition, calibration=calibration,
                                  task_seed=v.get("task_seed"), layout_seed=v.get("layout_seed"))

    def initial_state(self, instance: CentrifugeInstance) -> CentrifugeState:
        return CentrifugeState(seated=dict(instance.start))

    def legal_set(self, state: CentrifugeState, goal: CentrifugeInstance) -> list[Operation]:
        n = goal.calibration.n_slots
        free = [tube for tube in TUBES if tube not in state.seated]
        occupied = list(state.seated.values())
        if not occupied:
            ops = [Operation("insert", tube, slot_name(j)) for tube in free for j in range(n)]
        elif len(occupied) == 1:
            ops = [Operation("insert", tube, slot_name(opposite(occupied[0], n))) for tube in free]
        elif occupied[1] == opposite(occupied[0], n):
            return [Operation("stop"), Operation("wait")]
        else:  # both seated but not opposite: either tube must come out again
            ops = [Operation("pick", tube, slot_name(slot)) for tube, slot in state.seated.items()]
        return sorted_ops(ops, {tube: i for i, tube in enumerate(TUBES)})

    def decision_key(self, state: CentrifugeState) -> Any:
        return tuple(sorted(state.seated.items()))

    def state_ref(self, state: CentrifugeState, f: Any) -> str:
        return "occupied=" + (",".join(f"{tube}@{slot_name(s)}" for tube, s in sorted(state.seated.items())) or "none")

    def update(self, state: CentrifugeState, f: Any, prev: Any, instance: CentrifugeInstance) -> list[ContractEvent]:
        events: list[ContractEvent] = []
        for tube in TUBES:
            p = PREFIX[tube]
            seat, current = getattr(f, f"{p}_seated"), state.seated.get(tube)
            if seat >= 0 and seat != current:
                key = f"insert:{tube}"
                events.append(ContractEvent("confirm", f.t, f.step, {
                    "obligation": key, "op": Operation("insert", tube, slot_name(seat)), "predicate": "seated",
                    "measured": {"slot": seat, "depth_frac": round(getattr(f, f"{p}_depth"), 4)},
                    "attempt": state.attempt(key)}))
                state.seated[tube] = seat
                state.changes += 1
            elif seat < 0 and current is not None and not getattr(f, f"{p}_supported"):
                events.append(ContractEvent("confirm", f.t, f.step, {
                    "obligation": f"pick:{tube}", "op": Operation("pick", tube, slot_name(current)),
                    "predicate": "lifted", "measured": {"slot": current}, "attempt": 1}))
                del state.seated[tube]
                state.changes += 1
            misfit = getattr(f, f"{p}_shallow")
            if misfit >= 0 and (prev is None or getattr(prev, f"{p}_shallow") != misfit):
                key = f"insert:{tube}"
                events.append(ContractEvent("failure", f.t, f.step, {
                    "op": Operation("insert", tube, slot_name(misfit // 2)),
                    "reason": "shallow" if misfit % 2 == 0 else "misaligned",
                    "attempt": state.attempt(key), "recoverable": True}))
                state.attempts[key] = state.attempt(key)
                state.failures += 1
        return events

    def recognize(self, state: CentrifugeState, f: Any, prev: Any, instance: CentrifugeInstance) -> Operation | None:
        for tube in TUBES:
            aim = getattr(f, f"{PREFIX[tube]}_aim")
            if aim >= 0 and (prev is None or getattr(prev, f"{PREFIX[tube]}_aim") != aim):
                return Operation("insert", tube, slot_name(aim))
        return None

    def stepper(self, instance: CentrifugeInstance) -> KernelStepper:
        return KernelStepper(centrifuge_features, CentrifugeFeatures, self.thresholds, instance)

    def features_bulk(self, table: Any, instance: CentrifugeInstance) -> dict[str, np.ndarray]:
        return bulk_features(centrifuge_features, table, self.thresholds, instance)


# -- instance and pair generators --------------------------------------------------------

def answer_changing_pairs(n_pairs: int, rng_task: np.random.Generator, rng_layout: np.random.Generator,
                          n_slots: int = 12) -> list[tuple[Pair, CentrifugeInstance, CentrifugeInstance]]:
    """Pairs that hold the second tube ready and vary the first tube's actual slot.

    Members share the layout draw (rotor yaw, layout seed); their first slots differ, so
    the legal destinations of the held tube are disjoint.  First slots are balanced over
    all ``n_slots``.
    """
    out = []
    firsts = np.concatenate([rng_task.permutation(n_slots) for _ in range(n_pairs // n_slots + 1)])[:n_pairs]
    for k, first in enumerate(firsts.tolist()):
        other = (first + 1 + int(rng_task.integers(n_slots - 1))) % n_slots
        yaw, layout_seed = float(rng_layout.uniform(-np.pi, np.pi)), int(rng_layout.integers(2**31 - 1))
        base = CentrifugeInstance(start=(("tube_a", first),), held="tube_b", rotor_yaw=yaw, condition="basic",
                                  task_seed=int(rng_task.integers(2**31 - 1)), layout_seed=layout_seed)
        member = replace(base, start=(("tube_a", other),))
        out.append((Pair(pair_id=f"centrifuge-ac-{k}", members=[f"centrifuge-ac-{k}-0", f"centrifuge-ac-{k}-1"],
                         kind="answer_changing"), base, member))
    return out


def geometric_pairs(n_pairs: int, rng_task: np.random.Generator, rng_layout: np.random.Generator,
                    n_slots: int = 12) -> list[tuple[Pair, CentrifugeInstance, CentrifugeInstance]]:
    """Pairs with the same local occupancy and target whose rotor is rotated: the local
    target is unchanged while its world position and axis move."""
    out = []
    for k in range(n_pairs):
        first = int(rng_task.integers(n_slots))
        yaw = float(rng_layout.uniform(-np.pi, np.pi))
        turn = float(rng_layout.uniform(np.pi / 6, 2 * np.pi - np.pi / 6))
        base = CentrifugeInstance(start=(("tube_a", first),), held="tube_b", rotor_yaw=yaw,
                                  task_seed=int(rng_task.integers(2**31 - 1)), layout_seed=int(rng_layout.integers(2**31 - 1)))
        moved = replace(base, rotor_yaw=math.remainder(yaw + turn, 2 * math.pi))
        out.append((Pair(pair_id=f"centrifuge-geo-{k}", members=[f"centrifuge-geo-{k}-0", f"centrifuge-geo-{k}-1"],
                         kind="geometric"), base, moved))
    return out
