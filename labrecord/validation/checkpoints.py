"""Checkpoints and delivery timing (Labference sec. 6.3, 7.1).

* A registered ``checkpoint`` must be a physical-choice checkpoint: a run at it whose
  opportunities of the decision hold only Wait/Stop shows no choice an action-only policy
  can make (sec. 5.3; Wait and Stop are scored on the explicit-report track).
  :func:`check_checkpoint_registrations` refuses such a registration (an error).
* Evidence and support must arrive before the choice they are credited for.  A first
  native choice earlier than the delivery of its opportunity's observation, or an
  Oracle ``intervention`` delivered after the first native choice at its opportunity, is
  reported by :func:`check_delivery_timing` (a warning: the run stays valid, and the scorer
  counts that member as *not delivered in time*, unresolved).
"""
from __future__ import annotations

from pathlib import Path

import msgspec

from labrecord.errors import LabrecordError
from labrecord.models import Choice, InterventionEvent, Opportunity, PopulationEntry
from labrecord.models.populations import Checkpoint
from labrecord.rundir import EVENTS_FILE, OBSERVATIONS_FILE, POPULATIONS_DIR, find_run_dirs, read_events, read_manifest
from labrecord.safeio import depth_problem
from labrecord.validation.findings import Report

_decoder = msgspec.json.Decoder(PopulationEntry)
INACTIVE = ("wait", "stop")


def _events(run_dir: Path) -> list | None:
    try:
        return sorted(read_events(run_dir), key=lambda e: e.seq)
    except LabrecordError:
        return None  # the run's own findings report the broken log


def _deliveries(run_dir: Path) -> dict[str, float]:
    path = run_dir / OBSERVATIONS_FILE
    out: dict[str, float] = {}
    if not path.is_file():
        return out
    for raw in path.read_bytes().splitlines():
        if depth_problem(raw) is not None:
            continue  # reported by the observations check (too deep to decode safely)
        try:
            receipt = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            continue  # reported by the observations check
        if isinstance(receipt, dict) and isinstance(receipt.get("t_delivered"), (int, float)):
            out.setdefault(str(receipt.get("obs_id")), float(receipt["t_delivered"]))
    return out


def check_delivery_timing(run_dir: Path, report: Report) -> None:
    """Warn for each choice made before its evidence or its support was delivered."""
    events = _events(run_dir)
    if events is None:
        return
    delivered = _deliveries(run_dir)
    opportunities = {e.opp: e for e in events if isinstance(e, Opportunity)}
    firsts: dict[str, Choice] = {}
    for e in events:
        if isinstance(e, Choice) and e.first and e.track == "native":
            firsts.setdefault(e.opp, e)
    path = str(run_dir / EVENTS_FILE)
    for opp, choice in sorted(firsts.items(), key=lambda kv: kv[1].seq):
        opened = opportunities.get(opp)
        if opened is None or opened.obs_id is None or opened.obs_id not in delivered:
            continue
        if choice.t < delivered[opened.obs_id]:
            report.warn(path, None, "choice.t", f"seq {choice.seq}: first choice at t={choice.t:g} precedes the delivery of "
                        f"observation {opened.obs_id!r} at t={delivered[opened.obs_id]:g}: opportunity {opp!r} not delivered in time")
    for e in events:
        if isinstance(e, InterventionEvent) and e.delivered and e.opp in firsts and firsts[e.opp].seq < e.seq:
            report.warn(path, None, "intervention.seq", f"seq {e.seq}: {e.site}:{e.mode} support delivered after the first "
                        f"choice at opportunity {e.opp!r} (seq {firsts[e.opp].seq}): not delivered in time")


def check_checkpoint_registrations(folder: Path, report: Report) -> None:
    """Refuse a registered checkpoint whose decision holds only Wait/Stop in a run at it."""
    registry = Path(folder) / POPULATIONS_DIR
    if not registry.is_dir():
        return
    checkpoints: dict[tuple[str, str], list[tuple[Path, int, str]]] = {}
    for path in sorted(registry.glob("*.jsonl")):
        try:
            for number, line in enumerate(path.read_bytes().splitlines(), 1):
                if depth_problem(line) is not None:
                    continue  # the registry's own validation reports it
                record = _decoder.decode(line) if line.strip() else None
                if isinstance(record, Checkpoint):
                    checkpoints.setdefault((path.stem, record.instance_id), []).append((path, number, record.decision))
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue  # the registry's own validation reports it
    if not checkpoints:
        return
    for run_dir in find_run_dirs(folder):
        try:
            population = read_manifest(run_dir).manifest.evaluation.population
        except LabrecordError:
            continue
        if population is None or (population.name, population.instance_id) not in checkpoints:
            continue
        events = _events(run_dir) or []
        for path, number, decision in checkpoints[(population.name, population.instance_id)]:
            legal = [e.legal or [] for e in events if isinstance(e, Opportunity) and e.decision == decision]
            if legal and not any(op.kind not in INACTIVE for ops in legal for op in ops):
                report.error(str(path), number, "checkpoint.decision",
                             f"checkpoint {population.instance_id}/{decision}: run {run_dir.name} opens it with only "
                             "Wait/Stop legal — not a physical-choice checkpoint (score Wait/Stop on the explicit-report track)")


def check_folder(folder: Path, report: Report) -> None:
    """Both checks over every run below ``folder``."""
    for run_dir in find_run_dirs(folder):
        check_delivery_timing(run_dir, report)
    check_checkpoint_registrations(folder, report)
