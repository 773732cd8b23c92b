"""Constructed episode records for tests, examples and benchmarks.

:func:`write_rollout` writes one run directory through :class:`~labrecord.rundir.RunWriter`
from a compact :class:`RolloutSpec` (decisions taken, failures, completion flags …), so
a test can state "10 of 50 episodes chose the right weight" and get real run files.
:func:`write_population` writes ``populations/<name>.jsonl``.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from labrecord.examples import example_manifest
from labrecord.fileio import dumps
from labrecord.models import (
    Choice, Confirm, EpisodeEnd, EpisodeStart, Failure, Geometry, HandoffCheck, Harness, Intervention, InterventionEvent,
    ObservationReceipt,
    Operation, Opportunity, Recovery, Validity, Violation,
)
from labrecord.rundir import RunWriter

RIGHT = Operation("add", "w10", "pan")
WRONG = Operation("add", "w100", "pan")
#: the terminal legal set once the goal is reached (no native-track choice: see scorers.choice)
TERMINAL = [Operation("stop"), Operation("wait")]


@dataclass
class DecisionSpec:
    """One opportunity: ``outcome`` is ``correct``, ``wrong``, ``none`` (no choice) or
    ``late`` (a correct choice after the response window).  ``terminal`` opens it with the
    Wait/Stop-only legal set (a correct choice is then ``stop``).  ``answer`` is the
    standard the legal set holds (members of an answer-changing pair need different ones);
    a wrong choice adds ``w100``, or ``w10`` when ``w100`` is the answer.  ``then`` is a
    second native choice after the first (a self-correction keeps the first as scored).
    ``oracle`` is an Oracle support delivered at the opportunity before the choice: the
    ``intervention`` event's mode, site and payload/original/substituted fields."""

    decision: str = "select_weight"
    outcome: str = "correct"
    terminal: bool = False
    answer: str = "w10"
    then: str | None = None
    oracle: dict[str, Any] | None = None
    #: False: the opportunity names no delivered observation; a delay: the receipt's delivery
    #: comes that many seconds after the opportunity (after a choice at +0.5 s if > 0.5)
    delivered: bool = True
    delivery_delay_s: float = 0.0
    #: the Oracle support is delivered after the first choice instead of before it
    oracle_late: bool = False


@dataclass
class FailureSpec:
    recoverable: bool = True
    resolved: bool | None = True  # None: no recovery event


@dataclass
class GeometrySpec:
    p_hat: list[float | None] | None
    p_ref: list[float]
    v_hat: list[float | None] | None = None
    v_ref: list[float] | None = None


@dataclass
class RolloutSpec:
    run_id: str
    system: str = "pi05"
    kind: str = "vla"
    decisions: Sequence[DecisionSpec] = (DecisionSpec(),)
    physical: bool = False
    valid: bool | None = None  # defaults to physical
    failures: Sequence[FailureSpec] = ()
    violations: Sequence[bool] = ()  # irreversible flags
    geometry: Sequence[GeometrySpec] = ()
    confirms: Sequence[str] = ()
    validity_fault: bool = False
    status: str = "complete"
    population: tuple[str, str] | None = None
    evaluation_version: str = "1"
    intervention: dict[str, Any] = field(default_factory=dict)
    episode: bool = True
    #: ``evaluation.measurements``: ``none`` for an events-only harness (no replay audit)
    measurements: str = "recorded"
    #: ``evaluation.checkpoints`` entries: ``{"decision", "verified", "file"?, "reason"?}``
    handoffs: Sequence[dict[str, Any]] = ()
    #: the episode_end's runtime fields
    runtime_s: float | None = None
    runtime_clock: str | None = None
    policy_s_per_query: float | None = None
    #: False: the log stops before the episode_end (an interrupted episode)
    ended: bool = True
    #: run.json ``harness`` fields (actions_per_query, renderer …); empty: no harness record
    harness: dict[str, Any] = field(default_factory=dict)


def write_rollout(root: str | os.PathLike[str], spec: RolloutSpec) -> Path:
    """Write one run directory for ``spec``; returns its path."""
    manifest = example_manifest(spec.run_id, system=spec.system, kind=spec.kind,
                                evaluation_version=spec.evaluation_version, population=spec.population)
    if spec.intervention:
        manifest.intervention = msgspec.convert(spec.intervention, Intervention)
    if spec.harness:
        manifest.harness = msgspec.convert(spec.harness, Harness)
    manifest.evaluation.measurements = spec.measurements  # type: ignore[assignment]
    manifest.evaluation.checkpoints = [msgspec.convert(h, HandoffCheck) for h in spec.handoffs]
    run = RunWriter.create(root, manifest)
    t = 0.0
    if spec.episode:
        run.emit(EpisodeStart, t=t, episode=0)
    for index, decision in enumerate(spec.decisions):
        t = _decision(run, index, decision, t)
    for failure in spec.failures:
        event = run.emit(Failure, t=t, op=RIGHT, reason="drop", recoverable=failure.recoverable)
        if failure.resolved is not None:
            run.emit(Recovery, t=t + 0.1, of_seq=event.seq, resolved=failure.resolved)
        t += 0.2
    for irreversible in spec.violations:
        # RunWriter.emit takes the event class as ``kind``, so events with a ``kind`` field are appended whole
        run.append(Violation(seq=run.next_seq, t=t, kind="safety" if irreversible else "premature", irreversible=irreversible))
    for subgoal in spec.confirms:
        run.emit(Confirm, t=t, obligation=subgoal, op=RIGHT, predicate="supported")
    for index, g in enumerate(spec.geometry):
        opp = f"g{index}"
        run.emit(Opportunity, t=t, opp=opp, decision="localize", trigger="initial", legal=[RIGHT], evidence_version=1000 + index)
        run.emit(Geometry, t=t, opp=opp, target="socket", p_hat=g.p_hat, p_ref=g.p_ref, v_hat=g.v_hat, v_ref=g.v_ref)
    if spec.validity_fault:
        run.append(Validity(seq=run.next_seq, t=t, kind="service_fault", source="policy-server"))
    if spec.episode and spec.ended:
        valid = spec.physical if spec.valid is None else spec.valid
        run.emit(EpisodeEnd, t=t + 1.0, episode=0, reason="success" if spec.physical else "timeout",
                 physical_complete=spec.physical, valid_complete=valid, runtime_s=spec.runtime_s,
                 runtime_clock=spec.runtime_clock, policy_s_per_query=spec.policy_s_per_query)
    run.close(spec.status)
    return run.dir


def _decision(run: RunWriter, index: int, spec: DecisionSpec, t: float) -> float:
    obs_id = f"obs{index}" if spec.delivered else None
    if obs_id is not None:
        run.observation(ObservationReceipt(obs_id=obs_id, step=index, t_acquired=t, t_delivered=t + spec.delivery_delay_s,
                                           evidence_version=index))
    opp = f"o{index}"
    answer = Operation("add", spec.answer, "pan")
    wrong = WRONG if spec.answer != WRONG.object else RIGHT
    run.emit(Opportunity, t=t, opp=opp, decision=spec.decision, trigger="initial" if index == 0 else "state_change",
             legal=TERMINAL if spec.terminal else [answer], obs_id=obs_id, evidence_version=index, window_s=5.0)
    right = TERMINAL[0] if spec.terminal else answer
    t_opp = t
    if spec.oracle is not None and not spec.oracle_late:
        run.emit(InterventionEvent, t=t, opp=opp, evidence_version=index, obs_id=obs_id, payload_id=f"{opp}/oracle",
                 **spec.oracle)
    if spec.outcome != "none":
        delay = 6.0 if spec.outcome == "late" else 0.5
        run.emit(Choice, t=t + delay, opp=opp, op=wrong if spec.outcome == "wrong" else right, first=True)
        t += delay
    if spec.oracle is not None and spec.oracle_late:
        run.emit(InterventionEvent, t=t, opp=opp, evidence_version=index, obs_id=obs_id, payload_id=f"{opp}/oracle",
                 **spec.oracle)
    t = max(t, t_opp + spec.delivery_delay_s)
    if spec.then is not None:
        run.emit(Choice, t=t + 0.5, opp=opp, op=wrong if spec.then == "wrong" else right, first=False)
        t += 0.5
    return t + 1.0


def write_population(root: str | os.PathLike[str], name: str, records: Sequence[dict[str, Any]]) -> Path:
    """Write ``root/populations/<name>.jsonl`` (one record per line, sorted keys)."""
    folder = Path(root) / "populations"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_bytes(b"".join(dumps(record) + b"\n" for record in records))
    return path


def write_table3(root: str | os.PathLike[str]) -> Path:
    """The episode records behind Table 3 of the Labference paper (feedback weighing).

    π0.5: 50 episodes, 10 correct-weight selections, 8 completions, mean runtime 135.60 s;
    GR00T-N1.5: 50, 9, 4, 86.81 s; the GPT-driven system: 10 trials, 10 correct selections,
    8 completions (its runtime is reported as about 30 min of computation per trial, not
    per episode: left unset).  The paper gives only the means, so every episode carries its
    system's mean runtime, on the wall clock.  The records come from summaries that log
    events only: each run declares no measurement stream, so ``score`` reads them from their
    events and marks them unaudited.
    """
    studies = (("pi05", "vla", 50, 10, 8, 135.60), ("groot-n1.5", "vla", 50, 9, 4, 86.81),
               ("gpt-driven", "agent", 10, 10, 8, None))
    for system, kind, episodes, correct, complete, runtime in studies:
        for index in range(episodes):
            outcome = "correct" if index < correct else "wrong"
            write_rollout(root, RolloutSpec(run_id=f"{system}-{index:03d}", system=system, kind=kind,
                                            decisions=[DecisionSpec("select_weight", outcome)], physical=index < complete,
                                            measurements="none", runtime_s=runtime,
                                            runtime_clock="wall" if runtime is not None else None))
    return Path(root)
