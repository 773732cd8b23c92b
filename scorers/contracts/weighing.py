"""Feedback weighing (Labference sec. 4.2, 8.2): bring a loaded balance to a target.

Standards 10, 20, 50, 100 g (``w10 w20 w50 w100``), one each; an unlabeled sample stays on
the pan.  The display chain turns the pan's measured support force into the reading:

* eq. 8  ``m_raw = 1000/g0 · (F↑ − F↑_empty)``  (N → g, empty-pan calibration);
* eq. 9  ``m̄ += α (m_raw − m̄)``, ``α = 1 − exp(−Δt/τ_f)``, τ_f = 0.25 s; m̄ restarts at
  m_raw on the first valid step of the episode and after a sensor error;
* the display shows ``floor(m̄/q + 1/2)·q`` with quantum q = 0.1 g;
* *stable* when the trailing 1 s of valid samples exists and its filtered range ≤ 0.5 g;
  a sensor error (``sensor_ok`` false or a non-finite force) invalidates the window.

A standard is *supported* when its support path ends at the pan and no robot link touches
it — hand pressure and gripper support never count as supported load.  The supported set
W_t is confirmed at *settled* steps (valid, stable, released, low motion, and the
instantaneous supported set unchanged for the 1 s stability window): each addition
gives ``confirm add:<w>`` (predicate ``supported``), each removal ``confirm remove:<w>``
(predicate ``removed``); a standard grasped off the pan, released over the pan (optional
``{w}_over_pan``; without it every release counts) and not supported at the next settled
step gives ``failure miss`` and the obligation stays open.  Legal corrections
(eq. U(z, g)): add W*∖W_t, remove W_t∖W*; with W_t = W* only stop or wait remain.

Success: valid ∧ |display − target| ≤ 1 g ∧ supported set = W* ∧ released (no robot
contact with any standard, the pan or the sample) ∧ low motion (pan and standards slower
than 0.01 m/s), held continuously 3 s; any disturbance restarts the timer.
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.families import WEIGHING_STANDARDS
from labrecord.models import Operation, Task
from labrecord.models.operation import OperationKind
from labrecord.scorers.contracts.base import (
    Columns, ContractEvent, KernelStepper, KernelTimers, TaskContract, TaskState, bulk_features, sorted_ops,
)
from labrecord.scorers.contracts.windows import range_of, window_left

STANDARDS = WEIGHING_STANDARDS
MASS_G: dict[str, int] = {"w10": 10, "w20": 20, "w50": 50, "w100": 100}
BIT: dict[str, int] = {w: 1 << i for i, w in enumerate(STANDARDS)}
_BITS = np.array([BIT[w] for w in STANDARDS], dtype=np.int64)
_MASSES = np.array([MASS_G[w] for w in STANDARDS], dtype=np.float64)
PAN = "pan"
BASIC_TARGETS_G = (160, 180, 200)
EXTENDED_TARGETS_G = (200, 220, 240)


@dataclass(frozen=True)
class WeighingThresholds:
    """Registered thresholds of contract ``weighing/1``."""

    tau_f_s: float = 0.25
    quantum_g: float = 0.1
    stable_window_s: float = 1.0
    stable_range_g: float = 0.5
    success_tol_g: float = 1.0
    dwell_s: float = 3.0
    low_motion_m_s: float = 0.01
    g0: float = 9.80665
    #: a standard released in free air that falls farther than this has dropped (m)
    drop_height_m: float = 0.03
    #: robot force on the load (beyond sample and supported standards) that is a safety violation (N)
    safety_force_n: float = 5.0
    #: an arm whose joints all turn slower than this is still (rad/s; the ``arm_speed`` column)
    idle_speed_rad_s: float = 0.05
    #: idle this long at the end of an incomplete episode is an early stop (s)
    stop_idle_s: float = 5.0


@dataclass(frozen=True)
class WeighingInstance:
    """One instance: the goal W* and target, the start W_0, the evaluator-side sample mass."""

    target_g: float
    sample_g: float
    goal: frozenset[str]
    start: frozenset[str] = frozenset()
    condition: str = "basic"
    f_empty_n: float = 0.0
    g0: float = 9.80665
    task_seed: int | None = None
    layout_seed: int | None = None

    @property
    def goal_mask(self) -> int:
        return mask_of(self.goal)

    def variant(self) -> dict[str, Any]:
        """The ``run.json`` task.variant fields this contract reads back."""
        return {"target_g": self.target_g, "sample_g": self.sample_g, "goal": names_of(mask_of(self.goal)),
                "start": names_of(mask_of(self.start)), "f_empty_n": self.f_empty_n, "g0": self.g0,
                "task_seed": self.task_seed, "layout_seed": self.layout_seed}


def mask_of(names: Any) -> int:
    return sum(BIT[w] for w in set(names))


def names_of(mask: int) -> list[str]:
    return [w for w in STANDARDS if mask & BIT[w]]


def quantize(m_g: float, quantum_g: float) -> float:
    """The displayed value of a filtered mass (round half up to the quantum)."""
    return math.floor(m_g / quantum_g + 0.5) * quantum_g


class WeighingFeatures(NamedTuple):
    step: int
    t: float
    valid: bool
    m_bar: float          # filtered mass (g), eq. 9
    stable: bool          # 1 s filtered range <= 0.5 g over valid samples
    supported: int        # bit mask of standards supported by the pan alone
    grasped: int          # bit mask of standards held in a bilateral grasp
    over: int             # bit mask of standards over the pan (all, without {w}_over_pan)
    released: bool        # no robot contact with standards, pan or sample
    low_motion: bool
    settled: bool         # valid, stable, released, low motion, support unchanged for 1 s
    success: bool
    held: bool            # success held for the terminal window
    dropped: int          # bit mask of standards fallen > drop height since a release in free air
    pressing: bool        # a robot link presses the load, or pushes the balance, beyond the safety limit
    stopped: bool         # idle (arm still, load released, nothing grasped, reading stable) for stop_idle_s


@dataclass
class WeighingState(TaskState):
    supported: int = 0     # W_t, the confirmed supported set
    pending_add: int = 0   # standards grasped off the pan since the last settled step
    #: standard -> (index of its drop failure among the episode's failures, the failed operation)
    pending_recovery: dict[str, tuple[int, Operation]] = field(default_factory=dict)
    #: standard -> kind of its last confirmed operation (a reversing grasp is a repetition)
    last_kind: dict[str, str] = field(default_factory=dict)


class DisplayFilter:
    """Eq. 9 and the stability flag, carried from block to block of one series.

    m̄ restarts at m_raw on the first valid step and after a sensor error; *stable* needs
    ``stable_window_s`` of valid samples whose filtered range is at most
    ``stable_range_g``.  The filter is a recurrence and always runs row by row in the
    order eq. 9 is written (``m + α·(m_raw − m)``, α from ``math.exp``), so every m̄ is
    the same double on every path.  The window's range is exact max − min, kept between
    blocks as monotone deques of the running max and min.  A short block (the online
    scorer's control period) goes through :meth:`_rows`, one loop with those deques; a
    long one (a whole episode in the audit) computes the range over the block at once
    (:meth:`_window`, sparse tables over the deques' samples and the block's), unless its
    times go back or m̄ is not finite (an overflowing force), where only the row rule
    defines the result.  The tests hold both forms equal for any block edges.
    """

    #: blocks shorter than this take the row loop (cheaper than the array set-up)
    ROWS_BELOW = 256

    def __init__(self, thresholds: WeighingThresholds) -> None:
        self.th = thresholds
        self.m = float("nan")
        self.prev_t: float | None = None
        self.prev_valid = False
        self.run_start = 0.0
        self.hi: deque[tuple[float, float]] = deque()
        self.lo: deque[tuple[float, float]] = deque()
        self._alpha: dict[float, float] = {}

    def alpha(self, d: float) -> float:
        a = self._alpha.get(d)
        if a is None:
            a = self._alpha[d] = 1.0 - math.exp(-d / self.th.tau_f_s)
        return a

    def block(self, t: np.ndarray, raw: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Filtered mass and stability flag (n,) for rows at times ``t`` with raw masses
        ``raw`` (g) and validity ``valid``."""
        n = len(t)
        if n < self.ROWS_BELOW:
            return self._rows(t.tolist(), raw.tolist(), valid.tolist())
        prev_ok = np.concatenate(([self.prev_valid], valid[:-1]))
        restart = valid & ~prev_ok
        m_bar = self._filter(t, raw, valid, restart)
        monotone = (self.prev_t is None or t[0] >= self.prev_t) and bool((t[1:] >= t[:-1]).all())
        if not monotone or not np.isfinite(m_bar[valid]).all():
            return self._rows(t.tolist(), raw.tolist(), valid.tolist())
        stable = self._window(t, m_bar, valid, restart)
        self.m, self.prev_t, self.prev_valid = float(m_bar[-1]), float(t[-1]), bool(valid[-1])
        return m_bar, stable

    def _filter(self, t: np.ndarray, raw: np.ndarray, valid: np.ndarray, restart: np.ndarray) -> np.ndarray:
        """Eq. 9 run by run of valid rows (one comprehension each); invalid rows hold the
        last filtered value (nan before any valid row)."""
        n = len(t)
        m_out = np.empty(n)
        m = self.m
        xl = raw.tolist()
        rows = np.flatnonzero(valid)
        edges = np.flatnonzero(np.diff(rows) != 1) + 1
        for run in np.split(rows, edges) if len(rows) else []:
            first, last = int(run[0]), int(run[-1])
            if restart[first]:
                m = xl[first]
                m_out[first] = m
                first += 1
            if first > last:
                continue
            before = t[first - 1:first] if first > 0 else np.array([self.prev_t], dtype=np.float64)
            d = np.diff(np.concatenate((before, t[first:last + 1])))
            if (d == d[0]).all():
                a = self.alpha(float(d[0]))
                m_out[first:last + 1] = [m := m + a * (x - m) for x in xl[first:last + 1]]
            else:
                steps, which = np.unique(d, return_inverse=True)  # a few distinct steps: math.exp once each
                alphas = np.array([self.alpha(step) for step in steps.tolist()])[which].tolist()
                m_out[first:last + 1] = [m := m + a * (x - m) for a, x in zip(alphas, xl[first:last + 1])]
        held = np.maximum.accumulate(np.where(valid, np.arange(n), -1))
        return np.where(held >= 0, m_out[np.maximum(held, 0)], self.m)

    def _window(self, t: np.ndarray, m: np.ndarray, valid: np.ndarray, restart: np.ndarray) -> np.ndarray:
        """Stability over a block at once.  The samples are those of the carried deques
        (every sample that can still be a window's max or min) and the block's valid rows;
        a row's window holds the samples of its run within ``stable_window_s``."""
        width, limit = self.th.stable_window_s, self.th.stable_range_g
        rows = np.flatnonzero(valid)
        carried = sorted(set(self.hi) | set(self.lo)) if self.prev_valid else []
        k = len(carried)
        st = np.concatenate((np.array([c[0] for c in carried], dtype=np.float64), t[rows]))
        sm = np.concatenate((np.array([c[1] for c in carried], dtype=np.float64), m[rows]))
        # index (into the samples) of each sample's run start; -1: the carried samples' run
        starts = np.concatenate((np.zeros(k, dtype=bool), restart[rows]))
        run0 = np.maximum.accumulate(np.where(starts, np.arange(len(st)), -1))
        run_start_t = np.where(run0 >= 0, st[np.maximum(run0, 0)], self.run_start)
        left = np.maximum(window_left(st, width), np.maximum(run0, 0))
        ok = (st - run_start_t >= width) & (range_of(sm, left) <= limit)
        stable = np.zeros(len(t), dtype=bool)
        stable[rows] = ok[k:]
        self.hi.clear()
        self.lo.clear()
        if len(rows) and rows[-1] == len(t) - 1:
            self.run_start = float(run_start_t[-1])
            # the deques after the last row: the run's samples within the window whose value
            # exceeds (max) or undercuts (min) every later one, in time order
            keep = (st[-1] - st <= width) & (np.arange(len(st)) >= max(int(run0[-1]), 0))
            kt, km = st[keep], sm[keep]
            later_max = np.concatenate((np.maximum.accumulate(km[::-1])[::-1][1:], [-np.inf]))
            later_min = np.concatenate((np.minimum.accumulate(km[::-1])[::-1][1:], [np.inf]))
            self.hi.extend(zip(kt[km > later_max].tolist(), km[km > later_max].tolist()))
            self.lo.extend(zip(kt[km < later_min].tolist(), km[km < later_min].tolist()))
        return stable

    def _rows(self, times: list[float], raw: list[float], valid: list[bool]) -> tuple[np.ndarray, np.ndarray]:
        """Filter and stability flag row by row, the window's max and min in the deques."""
        width, limit = self.th.stable_window_s, self.th.stable_range_g
        hi, lo = self.hi, self.lo
        m, prev_t, prev_valid, run_start = self.m, self.prev_t, self.prev_valid, self.run_start
        cache, alpha = self._alpha, self.alpha
        m_out: list[float] = []
        stable_out: list[bool] = []
        for t, x, ok in zip(times, raw, valid):
            stable = False
            if ok:
                if not prev_valid:
                    m, run_start = x, t
                    hi.clear()
                    lo.clear()
                else:
                    d = t - prev_t  # type: ignore[operator]  # prev_valid: a previous time is set
                    a = cache.get(d)
                    if a is None:
                        a = alpha(d)
                    m = m + a * (x - m)
                sample = (t, m)
                while hi and hi[-1][1] <= m:
                    hi.pop()
                hi.append(sample)
                while lo and lo[-1][1] >= m:
                    lo.pop()
                lo.append(sample)
                while t - hi[0][0] > width:
                    hi.popleft()
                while t - lo[0][0] > width:
                    lo.popleft()
                stable = t - run_start >= width and hi[0][1] - lo[0][1] <= limit
            m_out.append(m)
            stable_out.append(stable)
            prev_t, prev_valid = t, ok
        self.m, self.prev_t, self.prev_valid, self.run_start = m, prev_t, prev_valid, run_start
        return np.array(m_out, dtype=np.float64), np.array(stable_out, dtype=bool)


class DropDetector:
    """Drops of the four standards over consecutive blocks (arrays (4, n)).

    A *free release* is a row where a standard's bilateral grasp ends while it touches
    neither the pan's support path nor the table; its height then is the reference.  The
    standard is *dropped* from the first row it is more than ``drop_height_m`` below that
    reference until its next grasp.  Without ``{w}_z`` and ``{w}_on_table`` columns no
    release counts as free.
    """

    def __init__(self, drop_height_m: float) -> None:
        self.height = drop_height_m
        k = len(STANDARDS)
        self.grasped = np.zeros(k, dtype=bool)
        self.armed = np.zeros(k, dtype=bool)
        self.z_ref = np.full(k, np.nan)
        self.latched = np.zeros(k, dtype=bool)

    def block(self, grasped: np.ndarray, free: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Rows (4, n): grasped and free flags and heights; returns the dropped bit masks (n,)."""
        n = grasped.shape[1]
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        prev = np.concatenate((self.grasped[:, None], grasped[:, :-1]), axis=1)
        rise = grasped & ~prev
        release = ~grasped & prev & free
        if not (rise.any() or release.any() or self.armed.any()):  # the common case online
            self.grasped = grasped[:, -1].copy()
            return np.zeros(n, dtype=np.int64)
        index = np.broadcast_to(np.arange(n), grasped.shape)
        last = np.maximum.accumulate(np.where(rise | release, index, -1), axis=1)
        at = np.maximum(last, 0)
        since_event = last >= 0
        armed = np.where(since_event, np.take_along_axis(release, at, axis=1), self.armed[:, None])
        z_ref = np.where(since_event, np.take_along_axis(z, at, axis=1), self.z_ref[:, None])
        below = armed & (z < z_ref - self.height)  # nan (no position) compares false
        first = np.maximum.accumulate(np.where(below, index, -1), axis=1)
        latched = np.where(since_event, (first >= last) & (first >= 0), self.latched[:, None] | (first >= 0))
        dropped = armed & latched
        self.grasped, self.armed = grasped[:, -1].copy(), armed[:, -1].copy()
        self.z_ref, self.latched = z_ref[:, -1].copy(), latched[:, -1].copy()
        return _BITS @ dropped


def weighing_features(get: Columns, th: WeighingThresholds, instance: WeighingInstance,
                      timers: KernelTimers) -> dict[str, np.ndarray]:
    """The one feature kernel of the weighing contract: field -> (n,) array for n rows.

    ``get`` reads the block's columns (:class:`~labrecord.scorers.contracts.base.Columns`);
    ``timers`` carries the display filter, the drop detector, the settling, dwell and idle
    timers from block to block (a fresh one for a whole table).  Optional columns: an
    unknown or absent ``{w}_over_pan`` counts as over the pan; ``robot_balance_force_n``
    and ``arm_speed`` absent read as unknown (no pressing, never idle); drops are judged
    only where both ``{w}_z`` and ``{w}_on_table`` are present for every standard.
    """
    scale = 1000.0 / instance.g0
    f = instant_features(get, th.low_motion_m_s)
    t = timers.t
    n = len(t)
    raw = scale * (f["force"] - instance.f_empty_n)
    m_bar, stable = timers.carry("display", lambda: DisplayFilter(th)).block(t, raw, f["valid"])
    supported, touched, low = f["supported"], f["touched"], f["low"]
    display = np.floor(m_bar / th.quantum_g + 0.5) * th.quantum_g
    # m_bar is nan before the first valid step: the comparison is false there
    success = (f["valid"] & (np.abs(display - instance.target_g) <= th.success_tol_g)
               & (supported == instance.goal_mask) & ~touched & low)
    # supported >= 0: held >= 0 exactly when the supported set is unchanged for the window
    unchanged = timers.key("settle", supported, th.stable_window_s) >= 0
    out = {"step": get("step", np.int64), "t": t, "valid": f["valid"], "m_bar": m_bar, "stable": stable,
           "supported": supported, "grasped": f["grasped"], "over": f["over"], "released": ~touched,
           "low_motion": low, "settled": stable & ~touched & low & unchanged, "success": success,
           "held": timers.flag("held", success, th.dwell_s)}
    if all(f"{w}_z" in get and f"{w}_on_table" in get for w in STANDARDS):
        free = ~f["on_pan"] & ~np.array([get(f"{w}_on_table", bool) for w in STANDARDS])
        grasped = ((f["grasped"][None, :] >> np.arange(len(STANDARDS))[:, None]) & 1).astype(bool)
        z = np.array([get(f"{w}_z") for w in STANDARDS])
        out["dropped"] = timers.carry("drops", lambda: DropDetector(th.drop_height_m)).block(grasped, free, z)
    else:
        out["dropped"] = np.zeros(n, dtype=np.int64)
    # the load beyond the sample and the supported standards while a robot link touches it
    if touched.any():
        expected = instance.sample_g + (supported[:, None] >> np.arange(len(STANDARDS)) & 1) @ _MASSES
        load = np.where(f["valid"], m_bar, raw)  # an overload is invalid: its raw force still counts
        pressing = touched & (load - expected > th.safety_force_n * scale)
    else:
        pressing = touched
    # or any arm link pushing the balance (base or pan) harder than the limit (nan: unknown)
    with np.errstate(invalid="ignore"):
        out["pressing"] = pressing | (get("robot_balance_force_n") > th.safety_force_n)
        # idle: every arm joint slower than idle_speed_rad_s, no robot contact with the load,
        # nothing grasped and the reading valid and stable (the policy has its evidence and
        # does nothing), for stop_idle_s
        idle = (get("arm_speed") <= th.idle_speed_rad_s) & ~touched & (f["grasped"] == 0) & stable
    out["stopped"] = timers.flag("stopped", idle, th.stop_idle_s)
    return out


def instant_features(get: Columns, low_motion_m_s: float) -> dict[str, np.ndarray]:
    """The per-row (memoryless) weighing features of n rows.

    Returns ``valid``, ``force``, the bit masks ``supported``, ``grasped``, ``over``
    (int64; an unknown or absent ``{w}_over_pan`` counts as over the pan), ``touched`` and
    ``low`` (bool), and ``on_pan`` (4, n) bool.  The standards are stacked to (4, n) so the
    cost per call does not grow with their number; nan speeds compare as not low.
    """
    force = get("pan_force_n")
    contact = np.array([get(f"{w}_contact", bool) for w in STANDARDS])
    on_pan = np.array([get(f"{w}_on_pan", bool) for w in STANDARDS])
    grasped = np.array([get(f"{w}_grasped", bool) for w in STANDARDS])
    speed = np.array([get(f"{w}_speed") for w in STANDARDS])
    over = np.array([get(f"{w}_over_pan", bool, null=True) for w in STANDARDS])
    with np.errstate(invalid="ignore"):
        low = (get("pan_speed") <= low_motion_m_s) & (speed <= low_motion_m_s).all(axis=0)
    return {"valid": get("sensor_ok", bool) & np.isfinite(force), "force": force,
            "supported": _BITS @ (on_pan & ~contact), "grasped": _BITS @ grasped, "over": _BITS @ over,
            "touched": get("hand_pan_contact", bool) | contact.any(axis=0), "low": low, "on_pan": on_pan}


class WeighingContract(TaskContract[WeighingState, WeighingInstance, WeighingFeatures]):
    family: ClassVar[str] = "weighing"
    version: ClassVar[str] = "weighing/1"
    #: success tolerance and terminal dwell judge completion only; the idle rule judges early
    #: stop at the episode's end; the safety force tells a policy's pressing (a violation)
    #: from a sensor fault.  The display filter, quantum, g0 and stability rule fed the
    #: policy's display and the evidence gate; support and drop rules open opportunities
    rescorable: ClassVar[frozenset[str]] = frozenset({"success_tol_g", "dwell_s", "stop_idle_s", "idle_speed_rad_s",
                                                      "safety_force_n"})
    recognizer: ClassVar[str] = "grasp/1"
    sensor_source: ClassVar[str] = "load_cell"
    failure_reasons: ClassVar[frozenset[str]] = frozenset({"miss", "drop"})
    #: the displayed reading and its stability indicator (what the display shows)
    semantic_fields: ClassVar[frozenset[str]] = frozenset({"reading_g", "stable"})
    #: the transfers the reference executor (sim/weighing/executor.py transfer_plan) carries out
    executor_kinds: ClassVar[frozenset[str]] = frozenset({"add", "remove"})
    #: the candidate frames a Geometry Oracle may supply: the four labeled standards the
    #: task authorizes and the pan (the destination); never the sample box or the arm
    geometry_frames: ClassVar[frozenset[str]] = frozenset({*STANDARDS, "pan"})
    violation_kinds: ClassVar[frozenset[str]] = frozenset({"premature", "repetition", "early_stop", "safety"})
    derives_recovery: ClassVar[bool] = True
    features_type = WeighingFeatures
    signature = ("valid", "stable", "supported", "grasped", "released", "low_motion", "settled", "success", "held",
                 "dropped", "pressing")

    @classmethod
    def default_thresholds(cls) -> WeighingThresholds:
        return WeighingThresholds()

    def instance_from_task(self, task: Task) -> WeighingInstance:
        v = task.variant

        def standards(name: str, default: Any = None) -> frozenset[str]:
            value = v.get(name, default)
            if not isinstance(value, list) or any(w not in MASS_G for w in value):
                raise LabrecordError(f"task.variant.{name}: expected a list of {list(STANDARDS)}, got {value!r}")
            return frozenset(value)

        def number(name: str, default: float | None = None) -> float:
            value = v.get(name, default)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise LabrecordError(f"task.variant.{name}: expected a number, got {value!r}")
            return float(value)

        return WeighingInstance(
            target_g=number("target_g"), sample_g=number("sample_g"), goal=standards("goal"),
            start=standards("start", []), condition=task.condition, f_empty_n=number("f_empty_n", 0.0),
            g0=number("g0", self.thresholds.g0), task_seed=v.get("task_seed"), layout_seed=v.get("layout_seed"))

    def initial_state(self, instance: WeighingInstance) -> WeighingState:
        return WeighingState(supported=mask_of(instance.start))

    def legal_set(self, state: WeighingState, goal: WeighingInstance) -> list[Operation]:
        goal_mask = goal.goal_mask
        ops = [Operation("add", w, PAN) for w in names_of(goal_mask & ~state.supported)]
        ops += [Operation("remove", w, PAN) for w in names_of(state.supported & ~goal_mask)]
        if not ops:
            return [Operation("stop"), Operation("wait")]
        return sorted_ops(ops, MASS_G)

    def decision_key(self, state: WeighingState) -> int:
        return state.supported

    def evidence_ready(self, state: WeighingState, f: WeighingFeatures) -> bool:
        return f.valid and f.stable  # a new reading is scorable only once stable

    def state_ref(self, state: WeighingState, f: WeighingFeatures) -> str:
        shown = "+".join(names_of(state.supported)) or "none"
        return f"W={shown};reading={quantize(f.m_bar, self.thresholds.quantum_g):.1f}"

    def sensor_fault(self, f: WeighingFeatures) -> bool:
        """An invalid reading while the robot presses the load is the policy's safety
        violation, not an evaluator-side sensor fault."""
        return not f.pressing

    def update(self, state: WeighingState, f: WeighingFeatures, prev: WeighingFeatures | None,
               instance: WeighingInstance) -> list[ContractEvent]:
        before = prev.grasped if prev is not None else 0
        events: list[ContractEvent] = []
        rising = f.grasped & ~before
        for w in names_of(rising):
            kind: OperationKind = "remove" if state.supported & BIT[w] else "add"
            op = Operation(kind, w, PAN)
            if kind == "add" and not f.stable:
                events.append(ContractEvent("violation", f.t, f.step, {"kind": "premature", "irreversible": False, "op": op}))
            if state.last_kind.get(w) is not None and state.last_kind[w] != kind:
                events.append(ContractEvent("violation", f.t, f.step, {"kind": "repetition", "irreversible": False, "op": op}))
        if f.pressing and (prev is None or not prev.pressing):
            events.append(ContractEvent("violation", f.t, f.step, {"kind": "safety", "irreversible": True, "op": None}))
        for w in names_of(f.dropped & ~(prev.dropped if prev is not None else 0)):
            op = Operation("remove" if state.supported & BIT[w] else "add", w, PAN)
            key = f"{op.kind}:{w}"
            events.append(ContractEvent("failure", f.t, f.step, {
                "op": op, "reason": "drop", "attempt": state.attempt(key), "recoverable": True}))
            state.attempts[key] = state.attempt(key)
            state.pending_recovery[w] = (state.failures, op)
            state.failures += 1
            state.pending_add &= ~BIT[w]  # a drop is not also a miss
        state.pending_add |= rising & ~state.supported
        # released away from the pan (put back): not an attempt on the pan
        state.pending_add &= ~(before & ~f.grasped & ~f.over)
        if not f.settled:
            return events
        reading = round(quantize(f.m_bar, self.thresholds.quantum_g), 1)
        measured = {"reading_g": reading, "supported": names_of(f.supported)}
        for w in names_of(f.supported & ~state.supported):
            events.append(self._confirm(state, f, "add", w, "supported", measured))
            state.last_kind[w] = "add"
        for w in names_of(state.supported & ~f.supported):
            events.append(self._confirm(state, f, "remove", w, "removed", measured))
            state.last_kind[w] = "remove"
        for w in names_of(state.pending_add & ~f.supported):
            key = f"add:{w}"
            events.append(ContractEvent("failure", f.t, f.step, {
                "op": Operation("add", w, PAN), "reason": "miss", "attempt": state.attempt(key), "recoverable": True}))
            state.attempts[key] = state.attempt(key)
            state.failures += 1
        for w, (index, op) in sorted(state.pending_recovery.items()):
            if bool(f.supported & BIT[w]) == (op.kind == "add"):  # the failed operation's outcome holds now
                events.append(ContractEvent("recovery", f.t, f.step, {"of_failure": index, "resolved": True}))
                del state.pending_recovery[w]
        if f.supported != state.supported:
            state.supported = f.supported
            state.changes += 1
        state.pending_add = 0
        return events

    def end_events(self, state: WeighingState, f: WeighingFeatures | None, instance: WeighingInstance) -> list[ContractEvent]:
        """``violation early_stop`` at the last row of an episode that ended incomplete
        with the robot idle for the last ``stop_idle_s`` (it had a stable reading and did
        nothing more: it stopped before the task was done)."""
        if state.complete or f is None or not f.stopped:
            return []
        return [ContractEvent("violation", f.t, f.step, {"kind": "early_stop", "irreversible": False, "op": None})]

    def _confirm(self, state: WeighingState, f: WeighingFeatures, kind: str, w: str, predicate: str,
                 measured: dict[str, Any]) -> ContractEvent:
        key = f"{kind}:{w}"
        return ContractEvent("confirm", f.t, f.step, {
            "obligation": key, "op": Operation(kind, w, PAN), "predicate": predicate,  # type: ignore[arg-type]
            "measured": dict(measured), "attempt": state.attempt(key)})

    def recognize(self, state: WeighingState, f: WeighingFeatures, prev: WeighingFeatures | None,
                  instance: WeighingInstance) -> Operation | None:
        rising = f.grasped & ~(prev.grasped if prev is not None else 0)
        if not rising:
            return None
        w = names_of(rising)[0]
        return Operation("remove" if state.supported & BIT[w] else "add", w, PAN)

    def stepper(self, instance: WeighingInstance) -> KernelStepper:
        return KernelStepper(weighing_features, WeighingFeatures, self.thresholds, instance)

    def features_bulk(self, table: Any, instance: WeighingInstance) -> dict[str, np.ndarray]:
        return bulk_features(weighing_features, table, self.thresholds, instance)


# -- instance generators (task-state and layout seeds kept apart) ------------------------

def _balanced(outer: Sequence[Any], inner: Sequence[Any], n: int, rng: np.random.Generator) -> list[tuple[Any, Any]]:
    """``n`` (outer, inner) strata in blocks of ``len(outer) · len(inner)``: every block
    holds each pair once, and at every prefix the outer values' counts differ by at most
    one, and so do the inner values' (both marginals balanced, not only their product).

    Each block is drawn by a depth-first search over the remaining pairs in ``rng``'s
    order; if it needs too many steps, the block is the pair ``(O[k mod |O|], I[k mod |I|])``
    for shuffled O and I (every pair once when the sizes are coprime, as 3 × 4 and 3 × 10).
    """
    out: list[tuple[Any, Any]] = []
    while len(out) < n:
        out += _balanced_block(list(outer), list(inner), rng)
    return out[:n]


def _balanced_block(outer: list[Any], inner: list[Any], rng: np.random.Generator,
                    budget: int = 20000) -> list[tuple[Any, Any]]:
    pairs = [(o, i) for o in range(len(outer)) for i in range(len(inner))]
    order = [pairs[k] for k in rng.permutation(len(pairs)).tolist()]
    count_o, count_i = [0] * len(outer), [0] * len(inner)
    used = [False] * len(order)
    seq: list[tuple[int, int]] = []
    steps = 0

    def fits(o: int, i: int) -> bool:
        return count_o[o] == min(count_o) and count_i[i] == min(count_i)

    def search() -> bool:
        nonlocal steps
        if len(seq) == len(order):
            return True
        for k, (o, i) in enumerate(order):
            steps += 1
            if steps > budget:
                return False
            if used[k] or not fits(o, i):
                continue
            used[k] = True
            count_o[o] += 1
            count_i[i] += 1
            seq.append((o, i))
            if search():
                return True
            seq.pop()
            used[k] = False
            count_o[o] -= 1
            count_i[i] -= 1
        return False

    if not search():
        perm_o, perm_i = rng.permutation(len(outer)).tolist(), rng.permutation(len(inner)).tolist()
        seq = [(perm_o[k % len(outer)], perm_i[k % len(inner)]) for k in range(len(order))]
    return [(outer[o], inner[i]) for o, i in seq]


def generate_basic(n: int, rng_task: np.random.Generator, rng_layout: np.random.Generator) -> list[WeighingInstance]:
    """Basic instances: all standards on the table, exactly one standard completes the target.

    Every block of 12 holds each target (160/180/200 g) × answer standard pair once; at
    every prefix each target and each answer occur equally often up to one (so every 4
    consecutive instances of a block hold each answer once).  ``sample_g = target − w``.
    """
    layout = rng_layout.integers(0, 2**31 - 1, size=n).tolist()
    task = rng_task.integers(0, 2**31 - 1, size=n).tolist()
    chosen = _balanced(BASIC_TARGETS_G, STANDARDS, n, rng_task)
    return [WeighingInstance(target_g=float(target), sample_g=float(target - MASS_G[w]), goal=frozenset([w]),
                             condition="basic", task_seed=task[i], layout_seed=layout[i])
            for i, (target, w) in enumerate(chosen)]


def goal_subsets() -> list[frozenset[str]]:
    """All goal subsets of two or three standards (10 of them)."""
    return [frozenset(names_of(m)) for m in range(16) if bin(m).count("1") in (2, 3)]


def generate_extended(n: int, rng_task: np.random.Generator, rng_layout: np.random.Generator) -> list[WeighingInstance]:
    """Extended instances: targets 200/220/240 g, goal subset of 2–3 standards, the start
    subset differing from the goal by at least two additions or removals.

    Every block of 30 holds each target × goal-subset pair once, and at every prefix the
    targets and the goal subsets each occur equally often up to one; the start is drawn
    uniformly among the subsets at distance ≥ 2.
    """
    layout = rng_layout.integers(0, 2**31 - 1, size=n).tolist()
    task = rng_task.integers(0, 2**31 - 1, size=n).tolist()
    out = []
    for i, (target, goal) in enumerate(_balanced(EXTENDED_TARGETS_G, goal_subsets(), n, rng_task)):
        starts = [m for m in range(16) if bin(m ^ mask_of(goal)).count("1") >= 2]
        start = starts[int(rng_task.integers(len(starts)))]
        sample = target - sum(MASS_G[w] for w in goal)
        out.append(WeighingInstance(target_g=float(target), sample_g=float(sample), goal=goal,
                                    start=frozenset(names_of(start)), condition="extended",
                                    task_seed=task[i], layout_seed=layout[i]))
    return out
