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
    BaseEvent, Choice, EpisodeEnd, EpisodeStart, Operation, Opportunity, PopulationEntry, RunManifest, Validity,
)
from labrecord.rundir import read_events
from labrecord.rundir import POPULATIONS_DIR, find_run_dirs
from labrecord.store.ingest import _Pending, run_row
from labrecord.validation import validate_run

_population_decoder = msgspec.json.Decoder(PopulationEntry)


@dataclass
class RefRun:
    row: dict[str, Any]
    manifest: RunManifest
    events: list[BaseEvent]
    episode_of: dict[int, int | None] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.row["run_id"]


@dataclass
class RefCorpus:
    runs: list[RefRun]
    populations: list[dict[str, Any]]


def _episodes(events: list[BaseEvent]) -> dict[int, int | None]:
    current: int | None = None
    out: dict[int, int | None] = {}
    for event in sorted(events, key=lambda e: e.seq):
        if isinstance(event, EpisodeStart):
            current = event.episode
        out[event.seq] = event.episode if current is None and isinstance(event, EpisodeEnd) else current
    return out


def load_reference(runs_dir: str | os.PathLike[str]) -> RefCorpus:
    """Every valid run below ``runs_dir`` and its population records (invalid ones skipped,
    as ingest does)."""
    root = Path(runs_dir)
    runs: list[RefRun] = []
    seen: set[str] = set()
    for run_dir in find_run_dirs(root):
        report, ctx = validate_run(run_dir)
        if report.errors or ctx.document is None or ctx.document.manifest.run_id in seen:
            continue
        manifest = ctx.document.manifest
        seen.add(manifest.run_id)
        row = run_row(_Pending(manifest.run_id, run_dir, "", manifest, ctx.document.raw), "")
        events = read_events(run_dir)
        runs.append(RefRun(row, manifest, events, _episodes(events)))
    return RefCorpus(runs, _read_populations(root / POPULATIONS_DIR))


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
                             event.seq, identified, correct, eligible(event.legal)))
    return out


def eval_valid(run: RefRun) -> bool:
    """A run counts as an evaluated outcome when it finished and had no validity fault."""
    return run.manifest.status == "complete" and not any(isinstance(e, Validity) for e in run.events)
