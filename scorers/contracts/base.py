"""The task-contract interface and the tracker that turns measurements into events.

A :class:`TaskContract` gives, for one task family (Labference sec. 3.2): the task state
z, the goal g, the legal next-operation set ``legal_set(state, goal)`` = U(z, g), the
state update ``update(state, evidence, dt)`` = F(z, e, Δt) of eq. 1, the physical
predicates with registered, versioned thresholds, and the waiting / terminal rules.

Measurements become *step features* (one ``NamedTuple`` per physics step) in two ways
that give identical values: ``stepper(instance).push_block(columns)`` block by block, or
``push(row)`` one row at a time (the online scorer inside a recorder), and
``features_bulk(table, instance)`` over a whole ``measurements.parquet`` table (the replay
audit); both run the family's one feature kernel (below).  Every timer (stability
windows, the 0.5 s seating hold, the 3 s terminal dwell) is part of the features, so the
event rules in :class:`Tracker` only look at *changes* of a feature signature; the
audit therefore visits only the steps where a signature field changes.

How a recorder drives a contract so that online and offline results coincide::

    contract = get_contract(manifest.task.family)
    instance = contract.instance_from_task(manifest.task)
    tracker = contract.tracker(instance, window_s=budget.response_deadline_s)
    for each physics step:                      # after mj_step, measurements read
        row = {"step": k, "t": t, ...family columns...}
        rows.append(row)
        for event in tracker.step(row):          # validity, confirm, failure, recovery, violation, choice, dwell
            event.emit(run, failure_seqs)        # failure_seqs: a list per episode (binds recoveries)
        if an observation was acquired at this step and delivered to the policy:
            run.observation(receipt)
            opened = tracker.observe(receipt)    # opportunity or None (same evidence)
            if opened: opened.emit(run)
    for event in tracker.finish():               # events judged at the episode's end (early stop)
        event.emit(run, failure_seqs)            # (tracker.finish(False) after an evaluator-side fault)
    end = tracker.end()                          # {"physical_complete": ...}
    run.emit(EpisodeEnd, t=t, episode=0, reason=..., valid_complete=...,
             physical_complete=end["physical_complete"])
    run.write_measurements(streams.rows_table(rows))   # every row's columns (from_pylist keeps the first row's only)

A recorder holding one control period of rows as column arrays may instead call the
stepper's ``push_block(columns)`` and ``tracker.advance`` the rows where a signature field
changes, as ``labrecord.recorders.online`` does.

One kernel design for every family: the step features are one function
``kernel(cols, thresholds, instance, timers)`` over the columns of n rows
(:data:`FeatureKernel`).  ``cols`` (:class:`Columns`) reads a column with its nulls filled
and tells by ``name in cols`` whether an optional column is present; ``timers``
(:class:`KernelTimers`) carries every piece of state from one block of rows to the next
(hold timers by name, and any other per-series state by ``carry``).  ``features_bulk``
runs the kernel once over a whole table from a fresh state (:func:`bulk_features`), the
online stepper (:class:`KernelStepper`) over consecutive blocks with its state carried,
and ``push(row)`` is a block of one row: there is no second implementation to keep in step.

Interventions and reports are emitted by the recorder itself, bound to
``tracker.current`` (opportunity id and evidence version).  ``observe`` must be called
after ``step`` of the row whose ``step`` equals ``receipt.step`` and before the next
``step``; opportunity ids (``o0``, ``o1`` …) and decision ids (``d<n>``, n = confirmed
state changes so far) come from the tracker.
"""
from __future__ import annotations

import hashlib
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np

from labrecord.errors import LabrecordError
from labrecord.fileio import dumps
from labrecord.models import EVENT_TYPES, ObservationReceipt, Operation, Task


@dataclass(frozen=True)
class ContractEvent:
    """An event the contract derives: ``type`` and ``fields`` as in ``events.jsonl``."""

    type: str
    t: float
    step: int
    fields: dict[str, Any]

    def emit(self, run: Any, failure_seqs: list[int] | None = None) -> Any:
        """Append to a :class:`~labrecord.rundir.RunWriter` (which assigns ``seq``).

        A ``recovery`` names its failure by ``of_failure``, the failure's index among the
        episode's failure events; ``failure_seqs`` (one list per episode, filled here with
        the ``seq`` of every failure written) turns it into the recorded ``of_seq``.
        """
        fields = self.fields
        if "of_failure" in fields:
            if failure_seqs is None or fields["of_failure"] >= len(failure_seqs):
                raise LabrecordError(f"recovery at t={self.t}: failure #{fields['of_failure']} was not written")
            fields = {k: v for k, v in fields.items() if k != "of_failure"}
            fields["of_seq"] = failure_seqs[self.fields["of_failure"]]
        event = run.emit(EVENT_TYPES[self.type], t=self.t, **fields)
        if self.type == "failure" and failure_seqs is not None:
            failure_seqs.append(getattr(event, "seq", None))  # type: ignore[arg-type]  # None from a sink that returns no event
        return event


@dataclass
class OpenOpportunity:
    opp: str
    decision: str
    evidence_version: int
    key: Any
    chosen: bool = False


@dataclass
class TaskState:
    """Fields every family's state z carries; families subclass it."""

    changes: int = 0        # confirmed state changes so far (names decisions d<n>)
    failures: int = 0       # observable failed attempts so far
    dwell_start: float | None = None
    complete: bool = False
    attempts: dict[str, int] = field(default_factory=dict)

    def attempt(self, key: str) -> int:
        return self.attempts.get(key, 0) + 1


def hold_flags(flag: np.ndarray, t: np.ndarray, duration: float,
               start: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For a boolean series ``flag`` (n,) at times ``t`` (n,): ``(run_start_t, held)``.

    ``run_start_t[k]`` is the time the current uninterrupted run of true values began
    (nan where ``flag`` is false); ``held[k] = flag[k] and t[k] - run_start_t[k] >= duration``.
    ``start`` continues a series: the start time of a run still true just before
    ``flag[0]`` (None: none).
    """
    n = len(flag)
    if not flag.any():  # the common case online: nothing to hold
        return np.full(n, np.nan), np.zeros(n, dtype=bool)
    index = np.arange(n)
    starts = flag & ~np.concatenate(([start is not None], flag[:-1]))
    last_start = np.maximum.accumulate(np.where(starts, index, -1))
    carried = np.nan if start is None else start
    run_start = np.where(flag, np.where(last_start >= 0, t[np.maximum(last_start, 0)], carried), np.nan)
    with np.errstate(invalid="ignore"):
        held = flag & (t - run_start >= duration)
    return run_start, held


#: a family's state z, its instance (goal, start, calibration) and its step features
StateT = TypeVar("StateT", bound=TaskState)
InstanceT = TypeVar("InstanceT")
FeaturesT = TypeVar("FeaturesT")


class TaskContract(ABC, Generic[StateT, InstanceT, FeaturesT]):
    """One task family's contract; subclasses fill the family-specific parts.

    A family names its types once, ``class WeighingContract(TaskContract[WeighingState,
    WeighingInstance, WeighingFeatures])``, and its methods take them in place of the
    generic ``TaskState`` / instance / features.
    """

    family: ClassVar[str]
    version: ClassVar[str]
    recognizer: ClassVar[str]
    #: the family's step features, a ``NamedTuple`` class (``_fields`` in order)
    features_type: ClassVar[Any]
    #: feature fields whose change can produce an event (the rest are values)
    signature: ClassVar[tuple[str, ...]]
    #: ``source`` of the validity events for sensor errors
    sensor_source: ClassVar[str] = "sensor"
    #: ``failure`` reasons the contract derives (others are the recorder's own)
    failure_reasons: ClassVar[frozenset[str]] = frozenset()
    #: the facts a Semantic Oracle may supply (certified by the authorized observations,
    #: Labference sec. 6.2); evaluator-side quantities (hidden masses, targets) never are
    semantic_fields: ClassVar[frozenset[str]] = frozenset()
    #: the operation kinds a validated reference executor carries out (Skill replacement)
    executor_kinds: ClassVar[frozenset[str]] = frozenset()
    #: the frames a Geometry Oracle may supply: the objects the task authorizes as
    #: candidate targets and destinations (sec. 6.2); no other object's pose ever is
    geometry_frames: ClassVar[frozenset[str]] = frozenset()
    #: thresholds a stored run may be re-scored under after the fact (labrecord.scorers.whatif):
    #: those that judge the outcome without changing what the policy saw while it acted
    rescorable: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, thresholds: Any = None) -> None:
        self.thresholds = thresholds if thresholds is not None else self.default_thresholds()

    # -- Oracle payloads ---------------------------------------------------------------
    def payload_scope(self, site: str, payload: Any, legal: Sequence[Operation]) -> str | None:
        """Why ``payload`` is outside the scope of a ``site`` support at an opportunity whose
        legal set is ``legal``, or None when it may be delivered (sec. 6.3: the task-owned
        validator checks content scope before delivery).

        * decision: one operation of the legal set, symbolic identifiers only;
        * semantic: a mapping of this contract's :attr:`semantic_fields` only;
        * skill: the operation the system selected (legal or not: a wrong but feasible one
          is executed too), of a kind in :attr:`executor_kinds`;
        * geometry: a mapping of frame name -> position ``[x, y, z]`` (finite, metres, the
          registered metric frame), the names among this contract's :attr:`geometry_frames`.

        >>> from labrecord.scorers.contracts.weighing import WeighingContract
        >>> c = WeighingContract()
        >>> c.payload_scope("decision", Operation("add", "w50", "pan"), [Operation("add", "w20", "pan")])
        'decision payload add(w50, pan) is not in the legal set [add(w20, pan)]'
        >>> c.payload_scope("semantic", {"reading_g": 130.2, "sample_g": 110.0}, [])
        "semantic payload field 'sample_g' is not an authorized fact (allowed: reading_g, stable)"
        >>> c.payload_scope("geometry", {"sample": [0.0, 0.0, 0.07]}, [])
        "geometry payload frame 'sample' is not an authorized candidate (allowed: pan, w10, w100, w20, w50)"
        """
        if site == "decision":
            if not isinstance(payload, Operation):
                return f"decision payload {payload!r} is not an operation"
            if payload not in legal:
                return f"decision payload {payload} is not in the legal set [{', '.join(map(str, legal))}]"
            return None
        if site == "semantic":
            if not isinstance(payload, Mapping) or not payload:
                return f"semantic payload {payload!r} is not a mapping of facts"
            for name in payload:
                if name not in self.semantic_fields:
                    return (f"semantic payload field {name!r} is not an authorized fact "
                            f"(allowed: {', '.join(sorted(self.semantic_fields)) or 'none'})")
            return None
        if site == "skill":
            if not isinstance(payload, Operation) or payload.kind not in self.executor_kinds:
                return (f"skill payload {payload}: the reference executor carries out only "
                        f"{', '.join(sorted(self.executor_kinds)) or 'nothing'} here")
            return None
        if site == "geometry":
            return self._geometry_scope(payload)
        return f"{site} payloads have no scope rule in contract {self.version}"

    def _geometry_scope(self, payload: Any) -> str | None:
        if not isinstance(payload, Mapping) or not payload:
            return f"geometry payload {payload!r} is not a mapping of frames"
        for name, position in payload.items():
            if name not in self.geometry_frames:
                return (f"geometry payload frame {name!r} is not an authorized candidate "
                        f"(allowed: {', '.join(sorted(self.geometry_frames)) or 'none'})")
            if (not isinstance(position, Sequence) or isinstance(position, str) or len(position) != 3
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                               for v in position)):
                return f"geometry payload frame {name!r}: {position!r} is not a finite position [x, y, z]"
        return None

    # -- identity --------------------------------------------------------------------
    @classmethod
    @abstractmethod
    def default_thresholds(cls) -> Any:
        """The registered thresholds of this contract version (a frozen dataclass)."""

    def registry(self) -> dict[str, Any]:
        return {"family": self.family, "version": self.version, "recognizer": self.recognizer,
                "thresholds": asdict(self.thresholds)}

    def contract_hash(self) -> str:
        """``sha256:`` of the registered thresholds and version (goes to task.contract_hash)."""
        return "sha256:" + hashlib.sha256(dumps(self.registry())).hexdigest()[:16]

    # -- instances and state ---------------------------------------------------------
    @abstractmethod
    def instance_from_task(self, task: Task) -> InstanceT:
        """Read the instance (goal, start, calibration) from ``run.json`` task.variant."""

    @abstractmethod
    def initial_state(self, instance: InstanceT) -> StateT:
        """z_0: the initialized context; policy credit begins after it."""

    @abstractmethod
    def legal_set(self, state: StateT, goal: InstanceT) -> list[Operation]:
        """U(z, g), sorted deterministically."""

    @abstractmethod
    def decision_key(self, state: StateT) -> Any:
        """What must change for a delivered observation to open a new opportunity."""

    @abstractmethod
    def state_ref(self, state: StateT, f: FeaturesT) -> str:
        """A short description of the reference state an opportunity is scored against."""

    #: ``violation`` kinds the contract derives from measurements
    violation_kinds: ClassVar[frozenset[str]] = frozenset()
    #: whether the contract derives ``recovery`` events
    derives_recovery: ClassVar[bool] = False

    def sensor_fault(self, f: FeaturesT) -> bool:
        """Whether an invalid step is an evaluator-side sensor fault (a ``validity`` event);
        a contract returns False where the policy caused it (then a violation says so)."""
        return True

    def evidence_ready(self, state: StateT, f: FeaturesT) -> bool:
        """Whether evidence acquired at features ``f`` makes the pending choice scorable."""
        return True

    @abstractmethod
    def update(self, state: StateT, f: FeaturesT, prev: FeaturesT | None, instance: InstanceT) -> list[ContractEvent]:
        """Eq. 1: apply the measured outcome ``f`` (Δt is inside the feature timers) to
        ``state`` in place; returns the confirm / failure events it implies."""

    def end_events(self, state: StateT, f: FeaturesT | None, instance: InstanceT) -> list[ContractEvent]:
        """Events judged at the end of an episode from its last row's features ``f`` (None:
        no row), e.g. an early stop; none by default."""
        return []

    @abstractmethod
    def recognize(self, state: StateT, f: FeaturesT, prev: FeaturesT | None, instance: InstanceT) -> Operation | None:
        """The operation a behaviour at ``f`` identifies (the versioned recognizer), or None."""

    # -- features --------------------------------------------------------------------
    @abstractmethod
    def stepper(self, instance: InstanceT) -> Any:
        """An object with ``push(row) -> features`` for one physics step at a time."""

    @abstractmethod
    def features_bulk(self, table: Any, instance: InstanceT) -> dict[str, np.ndarray]:
        """Features of every row of a measurements table: field -> array (n,)."""

    # -- drivers ---------------------------------------------------------------------
    def tracker(self, instance: InstanceT, *, window_s: float | None = None, first_opp: int = 0) -> Tracker:
        return Tracker(self, instance, window_s=window_s, first_opp=first_opp)

    def replay(self, table: Any, receipts: Sequence[ObservationReceipt], instance: InstanceT, *,
               window_s: float | None = None, first_opp: int = 0,
               judge_end: bool = True) -> tuple[list[ContractEvent], dict[str, Any]]:
        """Rebuild every contract event of one episode from a measurements table.

        Visits only the rows where a signature feature changes or an observation was
        acquired, and the last row; then the end-of-episode events (:meth:`end_events`,
        unless ``judge_end`` is false: the episode ended on an evaluator-side fault).
        Returns ``(events, end)`` where ``end`` is :meth:`Tracker.end`.
        """
        tracker = self.tracker(instance, window_s=window_s, first_opp=first_opp)
        if table.num_rows == 0:
            if receipts:
                raise LabrecordError(f"observation {receipts[0].obs_id!r}: step {receipts[0].step} is not a measurement row")
            return tracker.finish(judge_end), tracker.end()
        arrays = self.features_bulk(table, instance)
        n = len(arrays["t"])
        steps = arrays["step"]
        change = np.zeros(n, dtype=bool)
        if n:
            change[0] = change[-1] = True  # visiting a row changes nothing unless its signature does
        for name in self.signature:
            values = arrays[name]
            change[1:] |= values[1:] != values[:-1]
        receipt_rows: dict[int, list[ObservationReceipt]] = {}
        if receipts:
            order = np.argsort(steps, kind="stable")
            wanted = np.array([r.step for r in receipts], dtype=np.int64)
            pos = np.minimum(np.searchsorted(steps, wanted, sorter=order), max(n - 1, 0))
            rows = order[pos] if n else pos
            for receipt, row in zip(receipts, rows.tolist()):
                if n == 0 or steps[row] != receipt.step:
                    raise LabrecordError(f"observation {receipt.obs_id!r}: step {receipt.step} is not a measurement row")
                receipt_rows.setdefault(row, []).append(receipt)
            change[rows] = True
        visit = np.flatnonzero(change)
        # python scalars at the visited rows only, column by column
        columns = [arrays[name][visit].tolist() for name in self.features_type._fields]
        events: list[ContractEvent] = []
        make = self.features_type
        for k, row_values in zip(visit.tolist(), zip(*columns)):
            events.extend(tracker.advance(make(*row_values)))
            for receipt in receipt_rows.get(k, ()):
                opened = tracker.observe(receipt)
                if opened is not None:
                    events.append(opened)
        events.extend(tracker.finish(judge_end))
        return events, tracker.end()


class Tracker:
    """The online scorer of one episode: features in, contract events out.

    Event rules (identical online and in the audit):

    * ``validity`` sensor_error when a step's ``valid`` feature falls;
    * ``confirm`` / ``failure`` from :meth:`TaskContract.update`;
    * ``choice``: the recognizer's operation, bound to the current opportunity; the first
      per opportunity has ``first=true``, later ones are revisions;
    * ``dwell``: ``start`` when the success predicate rises, ``reset`` when it falls before
      completion, ``complete`` when it has held the terminal window (then latched);
    * ``opportunity`` (from :meth:`observe`): when an observation acquired at a step whose
      evidence is ready shows a decision key different from the current opportunity's.
    """

    def __init__(self, contract: TaskContract[Any, Any, Any], instance: Any, *, window_s: float | None = None, first_opp: int = 0) -> None:
        self.contract = contract
        self.instance = instance
        self.state = contract.initial_state(instance)
        self.window_s = window_s
        self._stepper: Any = None
        self._prev: Any = None
        self._next_opp = first_opp
        self.current: OpenOpportunity | None = None

    def step(self, row: Mapping[str, Any]) -> list[ContractEvent]:
        """Feed one measurement row (column -> value); returns the events it produces."""
        if self._stepper is None:
            self._stepper = self.contract.stepper(self.instance)
        return self.advance(self._stepper.push(row))

    def advance(self, f: Any) -> list[ContractEvent]:
        """Apply one step's features; only signature changes can produce events."""
        prev = self._prev
        events: list[ContractEvent] = []
        if not f.valid and (prev is None or prev.valid) and self.contract.sensor_fault(f):
            events.append(ContractEvent("validity", f.t, f.step, {"kind": "sensor_error", "source": self.contract.sensor_source}))
        events.extend(self.contract.update(self.state, f, prev, self.instance))
        op = self.contract.recognize(self.state, f, prev, self.instance)
        if op is not None and self.current is not None:
            opp = self.current
            events.append(ContractEvent("choice", f.t, f.step, {
                "opp": opp.opp, "op": op, "track": "native", "recognizer": self.contract.recognizer,
                "first": not opp.chosen, "evidence_version": opp.evidence_version}))
            opp.chosen = True
        events.extend(self._dwell(f, prev))
        self._prev = f
        return events

    def _dwell(self, f: Any, prev: Any) -> list[ContractEvent]:
        state = self.state
        if state.complete:
            return []
        if f.success and state.dwell_start is None:
            state.dwell_start = f.t
            out = [ContractEvent("dwell", f.t, f.step, {"state": "start"})]
            if f.held:  # a zero-length terminal window completes at once
                out += self._complete(f)
            return out
        if f.success and f.held and (prev is None or not prev.held):
            return self._complete(f)
        if not f.success and state.dwell_start is not None:
            duration = f.t - state.dwell_start
            state.dwell_start = None
            return [ContractEvent("dwell", f.t, f.step, {"state": "reset", "duration_s": duration})]
        return []

    def _complete(self, f: Any) -> list[ContractEvent]:
        self.state.complete = True
        assert self.state.dwell_start is not None
        return [ContractEvent("dwell", f.t, f.step, {"state": "complete", "duration_s": f.t - self.state.dwell_start})]

    def observe(self, receipt: ObservationReceipt) -> ContractEvent | None:
        """An observation reached the policy: open an opportunity or keep the current one."""
        f = self._prev
        if f is None:
            raise LabrecordError(f"observation {receipt.obs_id!r}: delivered before any measurement step")
        if f.step != receipt.step:
            raise LabrecordError(f"observation {receipt.obs_id!r}: acquired at step {receipt.step}, tracker is at step {f.step}")
        contract, state = self.contract, self.state
        if state.complete or not contract.evidence_ready(state, f):
            return None
        key = (contract.decision_key(state), state.failures)
        current = self.current
        if current is not None and current.key == key:
            return None  # unchanged evidence keeps the pending opportunity
        if current is None:
            trigger = "initial"
        elif current.key[0] == key[0]:
            trigger = "failed_attempt"
        else:
            trigger = "state_change"
        opp = OpenOpportunity(f"o{self._next_opp}", f"d{state.changes}", receipt.evidence_version, key)
        self._next_opp += 1
        self.current = opp
        fields: dict[str, Any] = {
            "opp": opp.opp, "decision": opp.decision, "trigger": trigger,
            "legal": contract.legal_set(state, self.instance), "obs_id": receipt.obs_id,
            "evidence_version": receipt.evidence_version, "state_ref": contract.state_ref(state, f)}
        if self.window_s is not None:
            fields["window_s"] = self.window_s
        return ContractEvent("opportunity", f.t, f.step, fields)

    def finish(self, judge: bool = True) -> list[ContractEvent]:
        """The contract's end-of-episode events at the last row advanced (once the last
        row of the episode has been advanced); none when ``judge`` is false."""
        return self.contract.end_events(self.state, self._prev, self.instance) if judge else []

    @property
    def opportunities_opened(self) -> int:
        return self._next_opp

    def end(self) -> dict[str, Any]:
        """What the episode end must record: ``physical_complete``."""
        return {"physical_complete": self.state.complete}


def sorted_ops(ops: Iterable[Operation], order: Mapping[str, int] | None = None) -> list[Operation]:
    """Operations in a deterministic order (kind, then object rank or name, then dest)."""
    rank = order or {}

    def natural(text: str | None) -> tuple[Any, ...]:
        parts = re.split(r"(\d+)", text or "")
        return tuple(int(p) if p.isdigit() else p for p in parts)

    return sorted(set(ops), key=lambda op: (op.kind, rank.get(op.object or "", 0), op.object or "", natural(op.dest)))


def hold_key(key: np.ndarray, t: np.ndarray, duration: float, last: int | None = None,
             since: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """For an integer series ``key`` (n,; -1 = off) at times ``t``: ``(held, started)``.

    ``started[k]`` is the time the current unbroken run of equal values began and
    ``held[k]`` the key where a non-negative value has held ``duration`` s (else -1).
    ``last`` / ``since`` continue a series: the value just before ``key[0]`` and the time
    its run began (None: a new series)."""
    n = len(key)
    if n == 0:
        return key.copy(), np.zeros(0)
    if last is not None and not (key != last).any():  # the common case online: no change in the block
        started = np.full(n, since)
        return np.where((key >= 0) & (t - since >= duration), key, -1), started
    changed = np.empty(n, dtype=bool)
    changed[0] = last is None or key[0] != last
    changed[1:] = key[1:] != key[:-1]
    index = np.maximum.accumulate(np.where(changed, np.arange(n), -1))
    started = np.where(index >= 0, t[np.maximum(index, 0)], since)
    return np.where((key >= 0) & (t - started >= duration), key, -1), started


class Columns:
    """The measurement columns of n rows a feature kernel reads: ``cols(name, dtype,
    null=None)`` is column ``name`` as an (n,) array (a null becomes ``null``, by default
    nan for numbers and False for flags; an absent column reads as all null), and ``name in cols`` tells whether the column is present at all (an optional
    column whose absence means something other than unknown values)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __contains__(self, name: object) -> bool:
        raise NotImplementedError

    def __call__(self, name: str, dtype: Any = np.float64, null: Any = None) -> np.ndarray:
        raise NotImplementedError

    def _absent(self, dtype: Any, null: Any) -> np.ndarray:
        if null is None:
            null = False if dtype is bool else np.nan
        return np.full(self.n, null, dtype=dtype)


class TableColumns(Columns):
    """The columns of a ``pyarrow.Table`` (the replay audit's whole episode)."""

    def __init__(self, table: Any) -> None:
        super().__init__(table.num_rows)
        self.table = table
        self.names = frozenset(table.column_names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __call__(self, name: str, dtype: Any = np.float64, null: Any = None) -> np.ndarray:
        if name not in self.names:
            return self._absent(dtype, null)
        array = self.table.column(name)
        if null is not None or dtype is bool:
            array = array.fill_null(null if null is not None else False)
        return np.asarray(array.to_numpy(zero_copy_only=False), dtype=dtype)


class BlockColumns(Columns):
    """The columns of a block of rows, name -> sequence of n values (the online scorer)."""

    def __init__(self, columns: Mapping[str, Any]) -> None:
        super().__init__(len(columns["t"]))
        self.columns = columns

    def __contains__(self, name: object) -> bool:
        return self.columns.get(name) is not None  # type: ignore[call-overload]

    def __call__(self, name: str, dtype: Any = np.float64, null: Any = None) -> np.ndarray:
        values = self.columns.get(name)
        if values is None:
            return self._absent(dtype, null)
        if isinstance(values, np.ndarray) and values.dtype != object:  # the recorder's blocks
            return values if values.dtype == dtype else values.astype(dtype)
        known = np.asarray(values)
        if known.dtype == object:  # None is unknown
            fill = null if null is not None else (False if dtype is bool else np.nan)
            return np.array([fill if v is None else v for v in known.tolist()], dtype=dtype)
        return known.astype(dtype, copy=False)


class KernelTimers:
    """The state a feature kernel carries from one block of rows to the next: the hold
    timers :meth:`key` (:func:`hold_key`) and :meth:`flag` (:func:`hold_flags`) by name,
    and any other per-series state by :meth:`carry`.  A fresh instance starts a series, so
    the bulk path (one block: the whole table) and the online path (consecutive blocks of
    one stepper) run the same code."""

    def __init__(self) -> None:
        self.t: np.ndarray = np.zeros(0)
        self._keys: dict[str, tuple[int | None, float]] = {}
        self._flags: dict[str, float | None] = {}
        self._carried: dict[str, Any] = {}

    def key(self, name: str, key: np.ndarray, duration: float) -> np.ndarray:
        last, since = self._keys.get(name, (None, 0.0))
        held, started = hold_key(key, self.t, duration, last, since)
        if len(key):
            self._keys[name] = (int(key[-1]), float(started[-1]))
        return held

    def flag(self, name: str, flag: np.ndarray, duration: float) -> np.ndarray:
        run_start, held = hold_flags(flag, self.t, duration, self._flags.get(name))
        if len(flag):
            self._flags[name] = float(run_start[-1]) if flag[-1] else None
        return held

    def carry(self, name: str, make: Callable[[], Any]) -> Any:
        """The object ``make()`` returned for ``name`` in this series (made on first use)."""
        state = self._carried.get(name)
        if state is None:
            state = self._carried[name] = make()
        return state


#: a family's one feature kernel: ``kernel(cols, thresholds, instance, timers)`` -> field -> (n,) array,
#: ``cols`` a :class:`Columns`, ``timers`` a :class:`KernelTimers`
FeatureKernel = Callable[[Columns, Any, Any, KernelTimers], dict[str, np.ndarray]]


def bulk_features(kernel: FeatureKernel, table: Any, thresholds: Any, instance: Any) -> dict[str, np.ndarray]:
    """``kernel`` over a whole measurements table (the replay audit): one block from a
    fresh series."""
    cols = TableColumns(table)
    timers = KernelTimers()
    timers.t = cols("t")
    return kernel(cols, thresholds, instance, timers)


class KernelStepper:
    """Every family's stepper: ``kernel`` over consecutive blocks of rows (the online
    scorer), its :class:`KernelTimers` carried from block to block.  :meth:`push_block`
    gives the same arrays as :func:`bulk_features` over the concatenated blocks, and
    :meth:`push` is a block of one row (no scalar twin to keep in step)."""

    def __init__(self, kernel: FeatureKernel, features_type: Any, thresholds: Any, instance: Any) -> None:
        self.kernel, self.features_type = kernel, features_type
        self.thresholds, self.instance = thresholds, instance
        self.timers = KernelTimers()

    def push_block(self, columns: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Features of a block of consecutive rows (column -> (n,) sequence), continuing
        from the rows pushed before.  Returns field -> (n,) array."""
        cols = BlockColumns(columns)
        self.timers.t = cols("t")
        return self.kernel(cols, self.thresholds, self.instance, self.timers)

    def push(self, row: Mapping[str, Any]) -> Any:
        f = self.push_block({name: [value] for name, value in row.items()})
        return self.features_type(*[f[name].item(0) for name in self.features_type._fields])
