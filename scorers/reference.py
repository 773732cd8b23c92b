"""A pure-Python view of a runs folder, read straight from the files.

This is the independent side of the property tests: the SQL scorers read the DuckDB
corpus, the ``*_reference`` functions of each scorer module read a :class:`RefCorpus`
built here with the run-directory readers, and both must give the same units.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from labrecord.models import (
    BaseEvent, Choice, EpisodeEnd, EpisodeStart, ObservationReceipt, Operation, Opportunity, PopulationEntry, RunManifest,
    Validity,
)
from labrecord.rundir import read_events
from labrecord.rundir import POPULATIONS_DIR, find_run_dirs
from labrecord.store import content_hash, identity_problems, invalid_run_row, manifest_row
from labrecord.validation import validate_run
from labrecord.scorers.audit import FAULT_END_REASONS, read_receipts

_population_decoder = msgspec.json.Decoder(PopulationEntry)


@dataclass
class RefRun:
    row: dict[str, Any]
    manifest: RunManifest
    events: list[BaseEvent]
    episode_of: dict[int, int | None] = field(default_factory=dict)
    receipts: list[ObservationReceipt] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.row["run_id"]


@dataclass
class RefCorpus:
    runs: list[RefRun]
    populations: list[dict[str, Any]]
    #: ``invalid_runs`` rows of the run directories that were refused (as ingest stores them)
    invalid: list[dict[str, Any]] = field(default_factory=list)


def _episodes(events: list[BaseEvent]) -> dict[int, int | None]:
    current: int | None = None
    out: dict[int, int | None] = {}
    for event in sorted(events, key=lambda e: e.seq):
        if isinstance(event, EpisodeStart):
            current = event.episode
        out[event.seq] = event.episode if current is None and isinstance(event, EpisodeEnd) else current
    return out


def load_reference(runs_dir: str | os.PathLike[str]) -> RefCorpus:
    """Every valid run below ``runs_dir``, the refused ones as ``invalid_runs`` rows (as
    ingest stores them), and the population records."""
    from labrecord.rundir import OBSERVATIONS_FILE

    root = Path(runs_dir)
    runs: list[RefRun] = []
    invalid: list[dict[str, Any]] = []
    run_dirs = find_run_dirs(root)
    problems = identity_problems(run_dirs)
    for run_dir in run_dirs:
        report, ctx = validate_run(run_dir)
        errors = ([problems[run_dir]] if run_dir in problems else []) + [str(f) for f in report.errors]
        if errors or ctx.document is None:
            reason = errors[0] if errors else f"{run_dir / 'run.json'}: unreadable manifest"
            invalid.append(invalid_run_row(run_dir, reason, ctx.document, content_hash(run_dir)))
            continue
        manifest = ctx.document.manifest
        events = read_events(run_dir)
        receipts = read_receipts(run_dir / OBSERVATIONS_FILE)
        runs.append(RefRun(manifest_row(manifest, ctx.document.raw, run_dir), manifest, events, _episodes(events), receipts))
    return RefCorpus(runs, _read_populations(root / POPULATIONS_DIR), invalid)


def _read_populations(folder: Path) -> list[dict[str, Any]]:
    from labrecord.validation.files import validate_population_file
    from labrecord.validation.findings import Report

    records: list[dict[str, Any]] = []
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.jsonl")):
        report = Report()
        validate_population_file(path, report)
        if report.errors:
            continue
        for line in path.read_bytes().splitlines():
            if line.strip():
                record = msgspec.to_builtins(_population_decoder.decode(line))
                record["population"] = path.stem
                records.append(record)
    return records


#: operations an action-only policy leaves unreported (Labference sec. 5.3)
INACTIVE_KINDS = frozenset({"wait", "stop"})


@dataclass(frozen=True)
class RefChoice:
    """The Python twin of one ``first_choices`` row."""

    run_id: str
    episode: int | None
    opp: str
    decision: str
    opp_seq: int
    identified: bool
    correct: bool
    eligible: bool
    legal: tuple[str, ...] = ()
    obs_id: str | None = None
    choice_t: float | None = None


def eligible(legal: list[Operation] | None) -> bool:
    """A native-track choice opportunity: the legal set holds an operation other than
    wait/stop.  Wait/Stop-only opportunities are measured by terminal dwell and
    violations instead, because native inactivity reports neither."""
    return any(op.kind not in INACTIVE_KINDS for op in legal or ())


def first_choices(run: RefRun) -> list[RefChoice]:
    """First native choice per opportunity, judged against the legal set and the deadline
    (every opportunity, eligible or not; the choice metrics keep ``eligible`` ones)."""
    firsts: dict[str, Choice] = {}
    for event in run.events:
        if isinstance(event, Choice) and event.track == "native" and event.first:
            if event.opp not in firsts or event.seq < firsts[event.opp].seq:
                firsts[event.opp] = event
    deadline_default = run.manifest.evaluation.budget.response_deadline_s
    out = []
    for event in run.events:
        if not isinstance(event, Opportunity):
            continue
        choice = firsts.get(event.opp)
        deadline = event.window_s if event.window_s is not None else deadline_default
        identified = choice is not None and (deadline is None or choice.t - event.t <= deadline)
        correct = identified and choice is not None and choice.op in event.legal
        out.append(RefChoice(run.run_id, run.episode_of.get(event.seq), event.opp, event.decision,
                             event.seq, identified, correct, eligible(event.legal), tuple(str(op) for op in event.legal or ()),
                             event.obs_id, choice.t if choice is not None else None))
    return out




def episode_reasons(run: RefRun) -> dict[int, str | None]:
    """Why each recorded episode of ``run`` is unresolved, or None (sec. 7.4, per episode):
    a ``validity`` fault inside it, no ``episode_end`` (an interruption or a cut log), or
    an end on an evaluator-side fault.  The run's other episodes keep their outcomes."""
    ended = {e.episode: e for e in run.events if isinstance(e, EpisodeEnd)}
    faults: dict[int | None, Validity] = {}
    for event in sorted(run.events, key=lambda e: e.seq):
        if isinstance(event, Validity):
            faults.setdefault(run.episode_of.get(event.seq), event)
    out: dict[int, str | None] = {}
    for event in run.events:
        if not isinstance(event, EpisodeStart):
            continue
        fault, end = faults.get(event.episode), ended.get(event.episode)
        if fault is not None:
            out[event.episode] = f"{fault.kind} from {fault.source} at seq {fault.seq}"
        elif end is None:
            out[event.episode] = f"episode {event.episode} has no episode_end (interrupted or cut log)"
        elif end.reason in FAULT_END_REASONS:
            out[event.episode] = f"episode {event.episode} ended on {end.reason}"
        else:
            out[event.episode] = None
    return out


def _loose_fault(run: RefRun) -> Validity | None:
    """The first ``validity`` fault recorded outside any episode."""
    return next((e for e in sorted(run.events, key=lambda e: e.seq)
                 if isinstance(e, Validity) and run.episode_of.get(e.seq) is None), None)


def unresolved_as_a_whole(run: RefRun) -> bool:
    """No episode can be kept: a fault outside any episode, or no episode recorded in a run
    that did not complete."""
    return _loose_fault(run) is not None or (run.manifest.status != "complete" and not episode_reasons(run))


def unresolved_reason(run: RefRun) -> str | None:
    """Why a loaded run is not wholly an evaluated outcome (sec. 7.4), or None: a
    ``validity`` fault outside any episode, else its first unresolved episode
    (:func:`episode_reasons`), else — a run not ``complete`` without a recorded episode —
    its status.  (A fault the policy causes, such as pressing the load cell into overload,
    is recorded by the contract as a safety ``violation``, a measured outcome.)  A run whose
    status is not ``complete`` keeps its completed episodes: only the interrupted one is
    unresolved."""
    fault = _loose_fault(run)
    if fault is not None:
        return _with_status(run, f"{fault.kind} from {fault.source} at seq {fault.seq}")
    episodes = episode_reasons(run)
    reason = next((episodes[k] for k in sorted(episodes) if episodes[k] is not None), None)
    if reason is not None:
        return _with_status(run, reason)
    if run.manifest.status != "complete" and not episodes:
        return f"status {run.manifest.status}"
    return None


def _with_status(run: RefRun, reason: str) -> str:
    status = run.manifest.status
    return reason if status == "complete" else f"status {status}: {reason}"


def eval_valid(run: RefRun) -> bool:
    """A run counts as an evaluated outcome when none of its episodes is unresolved."""
    return unresolved_reason(run) is None
