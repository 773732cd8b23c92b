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
from dataclasses import dataclass
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.measurements import WEIGHING_STANDARDS
from labrecord.models import Operation, Task
from labrecord.scorers.contracts.base import (
    ContractEvent, HoldTimer, TaskContract, TaskState, bool_of, column, float_of, hold_flags, sorted_ops,
)
from labrecord.scorers.contracts.windows import SlidingRange, range_of, run_starts, window_left

STANDARDS = WEIGHING_STANDARDS
MASS_G: dict[str, int] = {"w10": 10, "w20": 20, "w50": 50, "w100": 100}
BIT: dict[str, int] = {w: 1 << i for i, w in enumerate(STANDARDS)}
_BITS = np.array([BIT[w] for w in STANDARDS], dtype=np.int64)
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


@dataclass
class WeighingState(TaskState):
    supported: int = 0     # W_t, the confirmed supported set
    pending_add: int = 0   # standards grasped off the pan since the last settled step


class WeighingStepper:
    """Features one measurement row at a time (the online path)."""

    def __init__(self, thresholds: WeighingThresholds, instance: WeighingInstance) -> None:
        self.th = thresholds
        self.instance = instance
        self.scale = 1000.0 / instance.g0
        self.goal_mask = instance.goal_mask
        self.m = float("nan")
        self.prev_t: float | None = None
        self.prev_valid = False
        self.run_start = 0.0
        self.window = SlidingRange(thresholds.stable_window_s)
        self.dwell = HoldTimer(thresholds.dwell_s)
        self.mask: int | None = None
        self.mask_since = 0.0
        self._alpha: dict[float, float] = {}

    def alpha(self, dt: float) -> float:
        value = self._alpha.get(dt)
        if value is None:
            value = self._alpha[dt] = 1.0 - math.exp(-dt / self.th.tau_f_s)
        return value

    def push(self, row: Any) -> WeighingFeatures:
        th = self.th
        t, step = float(row["t"]), int(row["step"])
        force = float_of(row, "pan_force_n")
        valid = bool_of(row, "sensor_ok") and math.isfinite(force)
        stable = False
        if valid:
            raw = self.scale * (force - self.instance.f_empty_n)
            if not self.prev_valid:
                self.m, self.run_start = raw, t
                self.window.clear()
            else:
                self.m = self.m + self.alpha(t - self.prev_t) * (raw - self.m)  # type: ignore[operator]
            spread = self.window.push(t, self.m)
            stable = t - self.run_start >= th.stable_window_s and spread <= th.stable_range_g
        self.prev_t, self.prev_valid = t, valid
        supported = grasped = over = 0
        touched = bool_of(row, "hand_pan_contact")
        low = float_of(row, "pan_speed") <= th.low_motion_m_s
        for w in STANDARDS:
            contact = bool_of(row, f"{w}_contact")
            touched = touched or contact
            if bool_of(row, f"{w}_on_pan") and not contact:
                supported |= BIT[w]
            if bool_of(row, f"{w}_grasped"):
                grasped |= BIT[w]
            if row.get(f"{w}_over_pan") in (None, True):  # unknown counts as over the pan
                over |= BIT[w]
            low = low and float_of(row, f"{w}_speed") <= th.low_motion_m_s
        released = not touched
        if supported != self.mask:
            self.mask, self.mask_since = supported, t
        settled = stable and released and low and t - self.mask_since >= th.stable_window_s
        success = (valid and abs(quantize(self.m, th.quantum_g) - self.instance.target_g) <= th.success_tol_g
                   and supported == self.goal_mask and released and low)
        held = self.dwell.push(success, t)
        return WeighingFeatures(step, t, valid, self.m, stable, supported, grasped, over, released, low, settled, success,
                                held)

    def push_block(self, columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Features of a block of consecutive rows (column -> (n,) array), continuing
        from the rows pushed before, with the bulk replay's numpy kernels.

        Returns field -> (n,) array, equal to :meth:`WeighingContract.features_bulk` over
        the whole episode at these rows (and to ``push`` row by row).  Only the eq. 9
        recursion and the trailing stability window run per row, in one tight loop.
        """
        th = self.th

        def get(name: str, dtype: Any) -> np.ndarray:
            return np.asarray(columns[name], dtype=dtype)

        def over_pan(name: str) -> np.ndarray | None:
            if name not in columns:
                return None
            known = np.asarray(columns[name])
            if known.dtype == object:  # None is unknown, counted as over the pan
                return np.array([v is None or bool(v) for v in known.tolist()], dtype=bool)
            return np.asarray(known, dtype=bool)

        f = instant_features(get, over_pan, th.low_motion_m_s)
        t = get("t", np.float64)
        raw = self.scale * (f["force"] - self.instance.f_empty_n)
        m_bar, stable = self._filter(t.tolist(), raw.tolist(), f["valid"].tolist())
        out, since, dwell_start = _timed_features(th, self.instance, get("step", np.int64), t, f, m_bar, stable,
                                                  self.mask, self.mask_since, self.dwell.start)
        if len(t):
            self.mask, self.mask_since = int(out["supported"][-1]), float(since[-1])
            self.dwell.start = float(dwell_start[-1]) if out["success"][-1] else None
        return out

    def _filter(self, times: list[float], raw: list[float], valid: list[bool]) -> tuple[np.ndarray, np.ndarray]:
        """Eq. 9 and the stability flag row by row (lists (n,)), continuing the state;
        the same arithmetic as :meth:`push` and :func:`display_chain`, inlined because it
        runs for every physics step."""
        width, limit, tau = self.th.stable_window_s, self.th.stable_range_g, self.th.tau_f_s
        cache = self._alpha
        hi, lo = self.window.deques()
        m, prev_t, prev_valid, run_start = self.m, self.prev_t, self.prev_valid, self.run_start
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
                    d = t - prev_t
                    a = cache.get(d)
                    if a is None:
                        a = cache[d] = 1.0 - math.exp(-d / tau)
                    m = m + a * (x - m)
                # SlidingRange.push, inlined
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


def instant_features(get: Callable[[str, Any], np.ndarray], over_pan: Callable[[str], np.ndarray | None],
                     low_motion_m_s: float) -> dict[str, np.ndarray]:
    """The per-row (memoryless) weighing features of n rows, shared by the bulk replay
    and the online block path.

    ``get(name, dtype)`` returns column ``name`` as an (n,) array (nulls False / nan);
    ``over_pan(name)`` the ``{w}_over_pan`` column with unknown as True, or None when the
    column is absent (every release then counts as over the pan).  Returns ``valid``,
    ``force`` and the bit masks ``supported``, ``grasped``, ``over`` (int64), ``touched``
    and ``low`` (bool).  The standards are stacked to (4, n) so the cost per call does
    not grow with their number; nan speeds compare as not low.
    """
    force = get("pan_force_n", np.float64)
    contact = np.array([get(f"{w}_contact", bool) for w in STANDARDS])
    on_pan = np.array([get(f"{w}_on_pan", bool) for w in STANDARDS])
    grasped = np.array([get(f"{w}_grasped", bool) for w in STANDARDS])
    speed = np.array([get(f"{w}_speed", np.float64) for w in STANDARDS])
    known = [over_pan(f"{w}_over_pan") for w in STANDARDS]
    over = np.array([np.ones(len(force), dtype=bool) if k is None else k for k in known])
    return {"valid": get("sensor_ok", bool) & np.isfinite(force), "force": force,
            "supported": _BITS @ (on_pan & ~contact), "grasped": _BITS @ grasped, "over": _BITS @ over,
            "touched": get("hand_pan_contact", bool) | contact.any(axis=0),
            "low": (get("pan_speed", np.float64) <= low_motion_m_s) & (speed <= low_motion_m_s).all(axis=0)}


def since_change(values: np.ndarray, t: np.ndarray, last: int | None = None, since: float = 0.0) -> np.ndarray:
    """Time (n,) at which ``values`` last changed; ``last`` / ``since`` continue a series
    (the value just before ``values[0]`` and when it began; None: a new series)."""
    n = len(values)
    if last is not None and not (values != last).any():  # the common case online: no change in the block
        return np.full(n, since)
    changed = np.empty(n, dtype=bool)
    if n:
        changed[0] = last is None or values[0] != last
        changed[1:] = values[1:] != values[:-1]
    index = np.maximum.accumulate(np.where(changed, np.arange(n), -1)) if n else np.zeros(0, dtype=np.int64)
    return np.where(index >= 0, t[np.maximum(index, 0)], since)


def display_chain(t: np.ndarray, force_n: np.ndarray, valid: np.ndarray, f_empty_n: float, g0: float,
                  th: WeighingThresholds) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 8–9 and the stability flag over a whole series.

    Inputs (n,): times, pan support force, validity.  Returns ``(m_bar, stable)`` (n,):
    the filtered mass in grams (held through invalid steps) and the stability flag.
    """
    n = len(t)
    raw = (1000.0 / g0) * (force_n - f_empty_n)
    dt = np.diff(t, prepend=t[:1])
    cache = {d: 1.0 - math.exp(-d / th.tau_f_s) for d in np.unique(dt).tolist()}
    alpha = [cache[d] for d in dt.tolist()]
    restart = valid & ~np.concatenate(([False], valid[:-1]))
    m_bar: list[float] = []
    m = float("nan")
    # eq. 9 is a recursion; a plain loop keeps it bit-identical to the online stepper
    for x, a, ok, fresh in zip(raw.tolist(), alpha, valid.tolist(), restart.tolist()):
        if ok:
            m = x if fresh else m + a * (x - m)
        m_bar.append(m)
    m_arr = np.asarray(m_bar, dtype=np.float64)
    start = run_starts(valid)
    stable = np.zeros(n, dtype=bool)
    if valid.any():
        left = np.maximum(window_left(t, th.stable_window_s), start)
        idx = np.flatnonzero(valid)
        spread = np.full(n, np.inf)
        spread[idx] = range_of(np.where(valid, m_arr, 0.0), np.where(valid, left, np.arange(n)))[idx]
        stable = valid & (t - t[np.maximum(start, 0)] >= th.stable_window_s) & (spread <= th.stable_range_g)
    return m_arr, stable


class WeighingContract(TaskContract):
    family: ClassVar[str] = "weighing"
    version: ClassVar[str] = "weighing/1"
    recognizer: ClassVar[str] = "grasp/1"
    sensor_source: ClassVar[str] = "load_cell"
    failure_reasons: ClassVar[frozenset[str]] = frozenset({"miss"})
    features_type = WeighingFeatures
    signature = ("valid", "stable", "supported", "grasped", "released", "low_motion", "settled", "success", "held")

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

    def update(self, state: WeighingState, f: WeighingFeatures, prev: WeighingFeatures | None,
               instance: WeighingInstance) -> list[ContractEvent]:
        before = prev.grasped if prev is not None else 0
        state.pending_add |= f.grasped & ~before & ~state.supported
        # released away from the pan (put back): not an attempt on the pan
        state.pending_add &= ~(before & ~f.grasped & ~f.over)
        if not f.settled:
            return []
        events: list[ContractEvent] = []
        reading = round(quantize(f.m_bar, self.thresholds.quantum_g), 1)
        measured = {"reading_g": reading, "supported": names_of(f.supported)}
        for w in names_of(f.supported & ~state.supported):
            events.append(self._confirm(state, f, "add", w, "supported", measured))
        for w in names_of(state.supported & ~f.supported):
            events.append(self._confirm(state, f, "remove", w, "removed", measured))
        for w in names_of(state.pending_add & ~f.supported):
            key = f"add:{w}"
            events.append(ContractEvent("failure", f.t, f.step, {
                "op": Operation("add", w, PAN), "reason": "miss", "attempt": state.attempt(key), "recoverable": True}))
            state.attempts[key] = state.attempt(key)
            state.failures += 1
        if f.supported != state.supported:
            state.supported = f.supported
            state.changes += 1
        state.pending_add = 0
        return events

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

    def stepper(self, instance: WeighingInstance) -> WeighingStepper:
        return WeighingStepper(self.thresholds, instance)

    def features_bulk(self, table: Any, instance: WeighingInstance) -> dict[str, np.ndarray]:
        th = self.thresholds
        t = column(table, "t", np.float64)

        def over_pan(name: str) -> np.ndarray | None:
            if name not in table.column_names:
                return None
            import pyarrow as pa

            known = table.column(name).cast(pa.bool_()).fill_null(True)  # unknown counts as over
            return np.asarray(known.to_numpy(zero_copy_only=False), dtype=bool)

        f = instant_features(lambda name, dtype: column(table, name, dtype), over_pan, th.low_motion_m_s)
        m_bar, stable = display_chain(t, f["force"], f["valid"], instance.f_empty_n, instance.g0, th)
        features, _, _ = _timed_features(th, instance, column(table, "step", np.int64), t, f, m_bar, stable, None, 0.0,
                                         None)
        return features


def _timed_features(th: WeighingThresholds, instance: WeighingInstance, step: np.ndarray, t: np.ndarray,
                    f: dict[str, np.ndarray], m_bar: np.ndarray, stable: np.ndarray, mask: int | None,
                    mask_since: float, dwell_start: float | None
                    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Success, the terminal hold and settling from the instantaneous features and the
    display chain; ``mask``, ``mask_since`` and ``dwell_start`` continue a series (the
    stepper's state before row 0; None, 0.0, None for a whole episode).

    Returns ``(features, since, run_start)``: field -> (n,) array, the time the supported
    set last changed and the start time of the current success run (nan when not).
    """
    supported, touched, low = f["supported"], f["touched"], f["low"]
    display = np.floor(m_bar / th.quantum_g + 0.5) * th.quantum_g
    # m_bar is nan before the first valid step: the comparison is false there
    success = (f["valid"] & (np.abs(display - instance.target_g) <= th.success_tol_g)
               & (supported == instance.goal_mask) & ~touched & low)
    run_start, held = hold_flags(success, t, th.dwell_s, dwell_start)
    since = since_change(supported, t, mask, mask_since)
    settled = stable & ~touched & low & (t - since >= th.stable_window_s)
    features = {"step": step, "t": t, "valid": f["valid"], "m_bar": m_bar, "stable": stable, "supported": supported,
            "grasped": f["grasped"], "over": f["over"], "released": ~touched, "low_motion": low,
            "settled": settled, "success": success, "held": held}
    return features, since, run_start


# -- instance generators (task-state and layout seeds kept apart) ------------------------

def _balanced(outer: Sequence[Any], inner: Sequence[Any], n: int, rng: np.random.Generator) -> list[tuple[Any, Any]]:
    """``n`` (outer, inner) strata balanced at every prefix: outer values cycle in
    shuffled blocks, and each outer value cycles through its own shuffled inner values,
    so counts differ by at most one within every outer value and across outer values."""
    queues: dict[Any, list[Any]] = {o: [] for o in outer}
    out: list[tuple[Any, Any]] = []
    while len(out) < n:
        for i in rng.permutation(len(outer)).tolist():
            o = outer[i]
            if not queues[o]:
                queues[o] = [inner[j] for j in rng.permutation(len(inner)).tolist()]
            out.append((o, queues[o].pop()))
    return out[:n]


def generate_basic(n: int, rng_task: np.random.Generator, rng_layout: np.random.Generator) -> list[WeighingInstance]:
    """Basic instances: all standards on the table, exactly one standard completes the target.

    Balanced over target (160/180/200 g) × answer standard strata; ``sample_g = target − w``.
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

    Balanced over target × goal-subset strata; the start is drawn uniformly among the
    subsets at distance ≥ 2.
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
