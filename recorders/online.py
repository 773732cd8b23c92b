"""The online scorer: a task contract's tracker running inside the step owner.

It calls the same contract code as the replay audit (``labrecord.scorers.contracts``):
each block of physics rows (one control period) goes through the stepper's
``push_block`` — the replay's numpy kernels, continued across blocks — or, for a stepper
without one, ``push`` row by row; the tracker advances on the rows where a signature
feature changes — exactly the rows the audit's ``TaskContract.replay`` visits — plus the
rows at which an observation is delivered.  Events therefore agree with the audit by
construction, at a fraction of the per-row cost.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from labrecord.models import Choice, FinalScores, MetricValue, ObservationReceipt, OnlineScore, Operation
from labrecord.recorders.policy import Observation


def rate(num: int, den: int) -> MetricValue:
    """num/den with its denominator; null when nothing was counted."""
    return MetricValue(value=num / den if den else None, num=float(num), den=float(den), n=den)


class ContractScorer:
    """Drives one contract tracker per episode and writes its events through ``emit``."""

    def __init__(self, contract: Any, instance: Any, *, window_s: float | None = None,
                 columns: tuple[str, ...] | None = None) -> None:
        self.contract = contract
        #: the measurement columns the contract reads (others stay out of the per-row dicts)
        self.columns = columns
        self.instance = instance
        self.window_s = window_s
        self._signature = operator.attrgetter(*contract.signature)
        self.counts = {"opportunities": 0, "first_choices": 0, "first_legal": 0, "confirms": 0, "failures": 0,
                       "recoveries": 0, "violations": 0, "sensor_errors": 0, "reports": 0}
        self.legal: dict[str, list[Operation]] = {}
        self.first_choices: list[dict[str, Any]] = []
        self.last: Any = None

    # -- episode ----------------------------------------------------------------------
    def start(self, emit: Callable[..., Any], t: float) -> None:
        self.emit = emit
        self._sink = _EmitAdapter(emit)
        self._failure_seqs: list[int] = []  # seq of each failure written (a recovery names one)
        self.tracker = self.contract.tracker(self.instance, window_s=self.window_s)
        self.stepper = self.contract.stepper(self.instance)
        self.last = None
        self.advanced: Any = None
        self._last_sig: Any = None
        self._closed = False

    def update(self, columns: dict[str, np.ndarray]) -> None:
        """Feed one block of rows (column -> (n,) array) through the contract."""
        push_block = getattr(self.stepper, "push_block", None)
        if push_block is None:
            self._update_rows(columns)
            return
        arrays = push_block(columns)
        n = len(arrays["t"])
        if n == 0:
            return
        # one (n + 1, k) matrix of the signature fields, the previous block's last row on top
        sig = np.column_stack([arrays[name] for name in self.contract.signature])
        if self._last_sig is None:
            change = np.ones(n, dtype=bool)
        else:
            change = (sig != np.vstack((self._last_sig, sig[:-1]))).any(axis=1)
        self._last_sig = sig[-1]
        visit = np.flatnonzero(change).tolist()
        fields, make = self.contract.features_type._fields, self.contract.features_type
        f = None
        for k in visit:
            f = make(*[arrays[name].item(k) for name in fields])
            self._advance(f)
        self.last = f if visit and visit[-1] == n - 1 else make(*[arrays[name].item(n - 1) for name in fields])

    def _update_rows(self, columns: dict[str, np.ndarray]) -> None:
        """Row by row, for contracts whose stepper has no block path."""
        names = [name for name in columns if self.columns is None or name in self.columns]
        push, signature = self.stepper.push, self._signature
        for values in zip(*(columns[name].tolist() for name in names)):
            f = push(dict(zip(names, values)))
            sig = signature(f)
            if sig != self._last_sig:
                self._advance(f)
                self._last_sig = sig
            self.last = f

    def _advance(self, f: Any) -> None:
        for event in self.tracker.advance(f):
            self._count(event)
            event.emit(self._sink, self._failure_seqs)
        self.advanced = f

    def _count(self, event: Any) -> None:
        kind = event.type
        if kind == "opportunity":
            self.counts["opportunities"] += 1
            self.legal[event.fields["opp"]] = list(event.fields["legal"])
        elif kind == "choice" and event.fields["first"]:
            self.counts["first_choices"] += 1
            legal = event.fields["op"] in self.legal.get(event.fields["opp"], [])
            self.counts["first_legal"] += legal
            self.first_choices.append({"opp": event.fields["opp"], "op": str(event.fields["op"]), "legal": legal})
        elif kind == "confirm":
            self.counts["confirms"] += 1
        elif kind == "failure":
            self.counts["failures"] += 1
        elif kind == "recovery":
            self.counts["recoveries"] += 1
        elif kind == "violation":
            self.counts["violations"] += 1
        elif kind == "validity":
            self.counts["sensor_errors"] += 1

    @property
    def evidence_version(self) -> int:
        """Grows whenever the decision-relevant state changes (a confirmed change or a failure)."""
        state = self.tracker.state
        return int(state.changes + state.failures)

    def offer(self, observation: Observation) -> bool:
        """Evidence at a control boundary; True when it opens a new opportunity.

        Called before deciding whether to deliver: a pending opportunity preempts the
        queued commands, so the observation is then delivered (and receipted) for sure.
        """
        if self.last is None:
            return False
        if self.advanced is not self.last:  # observe() needs the tracker at this row
            self._advance(self.last)
        receipt = ObservationReceipt(obs_id=observation.obs_id, step=observation.step, t_acquired=observation.t,
                                     t_delivered=observation.t, evidence_version=observation.evidence_version)
        opened = self.tracker.observe(receipt)
        if opened is None:
            return False
        self._count(opened)
        opened.emit(self._sink)
        return True

    def reported(self, op: Operation, t: float) -> None:
        """A reported operation joins the report track of the current opportunity."""
        current = self.tracker.current
        if current is None:
            return
        self.counts["reports"] += 1
        self.emit(Choice, t=t, opp=current.opp, op=op, track="report", first=False,
                  evidence_version=current.evidence_version)

    def changed(self) -> bool:
        """Whether the live score moved since the last call (snapshots are written then)."""
        key = tuple(self.counts.values()) + (self.tracker.state.complete, self.tracker.state.changes)
        moved = key != getattr(self, "_snapshot_key", None)
        self._snapshot_key = key
        return moved

    def finished(self) -> str | None:
        return "success" if self.tracker.state.complete else None

    # -- reports ----------------------------------------------------------------------
    def display(self) -> dict[str, Any]:
        """The public readout from the contract's display chain (eq. 8–9, quantum)."""
        from labrecord.scorers.contracts.weighing import quantize

        f = self.last
        if f is None or not f.valid or not np.isfinite(f.m_bar):
            return {"reading_g": None, "stable": False, "text": "----"}
        shown = round(quantize(f.m_bar, self.contract.thresholds.quantum_g), 1)
        return {"reading_g": shown, "stable": bool(f.stable), "text": f"{shown:.1f}"}

    def metrics(self) -> dict[str, MetricValue]:
        c = self.counts
        return {
            "first_choice_legal": rate(c["first_legal"], c["first_choices"]),
            "identified": rate(c["first_choices"], c["opportunities"]),
            "physical_complete": rate(int(self.tracker.state.complete), 1),
        }

    def snapshot(self, t: float) -> OnlineScore:
        state = self.tracker.state
        return OnlineScore(t=t, seq=0, metrics=self.metrics(), state={
            "changes": state.changes, "failures": state.failures, "complete": state.complete,
            "opportunity": self.tracker.current.opp if self.tracker.current else None, **self.display()})

    def close(self, fault: bool = False) -> None:
        """The episode is over: the contract's end-of-episode events, judged at its last
        row (once), unless it ended on an evaluator-side ``fault``."""
        if getattr(self, "_closed", False):
            return
        self._closed = True
        if self.last is not None and self.advanced is not self.last:
            self._advance(self.last)
        for event in self.tracker.finish(not fault):
            self._count(event)
            event.emit(self._sink, self._failure_seqs)

    def episode_end(self) -> dict[str, Any]:
        end = self.tracker.end()
        complete = bool(end["physical_complete"])
        return {"reason": "success" if complete else "timeout", "physical_complete": complete,
                "valid_complete": complete and self.counts["sensor_errors"] == 0}

    def final(self, run_id: str, status: str) -> FinalScores:
        episode = {"counts": dict(self.counts), "first_choices": self.first_choices, **self.episode_end()}
        from labrecord.rundir import utc_now

        return FinalScores(run_id=run_id, status=status, metrics=self.metrics(), episodes=[episode], created_at=utc_now())


class _EmitAdapter:
    """Lets ``ContractEvent.emit(run)`` write through the step owner's ``emit``.

    Events are built here by type rather than through ``emit(kind, **fields)``: a
    ``validity`` event has its own ``kind`` field, which would collide with that
    parameter name.
    """

    def __init__(self, emit: Callable[..., Any]) -> None:
        self._emit = emit

    def emit(self, event_type: type, *, t: float, **fields: Any) -> Any:
        return self._emit(event_type, t=t, fields=fields)
