"""Answer-changing pairs must change the answer (Labference sec. 7.3).

The members of an ``answer_changing`` pair must have disjoint legal sets at the scored
decision — the registered checkpoint decision of the member's instance, else its run's
first opportunity whose legal set holds an operation other than wait/stop.  A pair whose
members share a legal operation tests no adaptation; :func:`check_answer_changing_pairs`
reports it (naming the pair and the shared operation) and the scorer leaves it out of
P_state's N.
"""
from __future__ import annotations

from pathlib import Path

import msgspec

from labrecord.errors import LabrecordError
from labrecord.models import Opportunity, PopulationEntry
from labrecord.models.populations import Checkpoint, Pair
from labrecord.rundir import POPULATIONS_DIR, find_run_dirs, read_events, read_manifest
from labrecord.safeio import MAX_LOG_BYTES, depth_problem, link_problem, read_bounded
from labrecord.validation.findings import Report

_decoder = msgspec.json.Decoder(PopulationEntry)


def _scored_legal(run_dir: Path, decision: str | None) -> tuple[str, set[str]] | None:
    """``(decision, legal set)`` of the run's scored opportunity, None when unreadable or absent."""
    try:
        events = read_events(run_dir)
    except LabrecordError:
        return None  # the run's own findings report the broken log
    for event in sorted(events, key=lambda e: e.seq):
        if isinstance(event, Opportunity) and (decision is None or event.decision == decision):
            legal = {str(op) for op in event.legal or ()}
            if any(op.kind not in ("wait", "stop") for op in event.legal or ()):
                return event.decision, legal
    return None


def check_answer_changing_pairs(folder: Path, report: Report) -> None:
    """Report every answer-changing pair of ``folder/populations`` whose members' runs share
    a legal operation at the scored decision."""
    registry = Path(folder) / POPULATIONS_DIR
    if link_problem(registry) is not None or not registry.is_dir():
        return  # a refused link is reported by the folder's own validation
    runs: dict[tuple[str, str], list[Path]] = {}
    for run_dir in find_run_dirs(folder):
        try:
            population = read_manifest(run_dir).manifest.evaluation.population
        except LabrecordError:
            continue
        if population is not None:
            runs.setdefault((population.name, population.instance_id), []).append(run_dir)
    for path in sorted(registry.glob("*.jsonl")):
        try:
            data = read_bounded(path, MAX_LOG_BYTES)
            if any(depth_problem(line) for line in data.splitlines()):
                continue  # the registry's own validation reports it (too deep to decode safely)
            records = [(n, _decoder.decode(line)) for n, line in enumerate(data.splitlines(), 1) if line.strip()]
        except (msgspec.DecodeError, msgspec.ValidationError, LabrecordError):
            continue  # the registry's own validation reports it
        checkpoints: dict[str, str] = {}
        for _, r in records:
            if isinstance(r, Checkpoint):
                checkpoints[r.instance_id] = min(checkpoints.get(r.instance_id, r.decision), r.decision)
        for line, r in records:
            if not isinstance(r, Pair) or r.kind != "answer_changing":
                continue
            scored = {}
            for member in r.members:
                dirs = sorted(runs.get((path.stem, member), []), key=lambda d: d.name)
                found = _scored_legal(dirs[0], checkpoints.get(member)) if dirs else None
                if found is not None:
                    scored[member] = found
            if len(scored) < 2:
                continue
            shared = sorted(set.intersection(*(legal for _, legal in scored.values())))
            if shared:
                members = " and ".join(repr(m) for m in scored)
                decision = next(iter(scored.values()))[0]
                report.error(str(path), line, "members",
                             f"pair {r.pair_id!r} is not answer-changing: members {members} share the legal operation "
                             f"{shared[0]} at decision {decision!r} (their legal sets must be disjoint)")
