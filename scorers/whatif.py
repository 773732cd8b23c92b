"""What-if re-scoring: replay stored runs through their task contract with changed thresholds.

``labrecord score runs/ --contract-param weighing.success_tol_g=0.5`` asks how the
stored episodes score under a changed predicate, without simulating again.
:func:`rescore_runs` replays each run's ``measurements.parquet`` and delivery receipts
through its family's contract with the changed thresholds (the same replay as the
audit, :func:`labrecord.scorers.audit.replay_run`) and writes a copy of the run whose
contract-derived events are the replayed ones; every other recorded event (episode
boundaries, Oracle interventions, geometry reports, the recorder's own failures) is kept.
The copy's task version is labelled with the parameter set (``weighing/1
whatif(weighing.success_tol_g=0.5)``) and its ``contract_hash`` is that of the changed contract, so it
scores as a result identity of its own and ``labrecord diff`` pairs it with the original.

Only parameters a contract declares re-scorable (``TaskContract.rescorable``) may change:
the others changed what the policy saw while it acted — the displayed reading and its
stability flag, the confirmations that open a new opportunity and hand new evidence to the
policy — and the recorded actions answer the evidence as it was.  They are refused with
one line naming them.  A re-score judges the recorded horizon: it cannot tell what the
policy would have done after an earlier end.  The recorder stops an episode once its
recorded success holds, so under a stricter predicate that does not complete within the
recording the outcome is undetermined: the run is unresolved (reason ``re-scored outcome
beyond the recording``), never counted as a failure.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.models import EpisodeEnd, EpisodeStart
from labrecord.rundir import (
    EVENTS_FILE, MEASUREMENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, POPULATIONS_DIR, RUN_FILE, SCORES_FILE,
    RunWriter, find_run_dirs, iter_events, read_manifest,
)
from labrecord.scorers.audit import FAULT_END_REASONS, read_measurements, read_receipts, replay_run, replayed_event
from labrecord.scorers.contracts import TaskContract, families, get_contract

#: run.json key recording where a re-scored copy came from and under which parameters
RESCORE_KEY = "rescore"
_PARAM = re.compile(r"^([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)=(.+)$")


def parse_params(texts: Iterable[str]) -> dict[str, dict[str, float]]:
    """``["weighing.success_tol_g=0.5", ...]`` as ``{family: {threshold: value}}``.

    Refuses, in one line, a malformed item, an unknown family or threshold, and every
    threshold its contract does not declare re-scorable (naming them all).
    """
    params: dict[str, dict[str, float]] = {}
    refused: list[str] = []
    for text in texts:
        match = _PARAM.match(text.strip())
        if match is None:
            raise LabrecordError(f"--contract-param {text!r}: expected FAMILY.THRESHOLD=NUMBER, "
                                 "e.g. weighing.success_tol_g=0.5")
        family, name, raw = match.groups()
        if family not in families():
            raise LabrecordError(f"--contract-param {text!r}: no task family {family!r} (known: {', '.join(families())})")
        contract = get_contract(family)
        known = [f.name for f in dataclasses.fields(contract.thresholds)]
        if name not in known:
            raise LabrecordError(f"--contract-param {text!r}: contract {contract.version} has no threshold {name!r} "
                                 f"(thresholds: {', '.join(known)})")
        try:
            value = float(raw)
        except ValueError:
            raise LabrecordError(f"--contract-param {text!r}: {raw!r} is not a number") from None
        if name not in contract.rescorable:
            refused.append(f"{family}.{name}")
        params.setdefault(family, {})[name] = value
    if refused:
        allowed = "; ".join(f"{f}: {', '.join(sorted(get_contract(f).rescorable)) or 'none'}" for f in sorted(params))
        raise LabrecordError(f"cannot re-score {', '.join(refused)} after the fact: changing "
                             f"{'it' if len(refused) == 1 else 'them'} changes what the policy saw while it acted "
                             f"(re-scorable: {allowed})")
    return params


def label_of(params: Mapping[str, Mapping[str, float]]) -> str:
    """``weighing.success_tol_g=0.5,weighing.dwell_s=2`` in sorted order (numbers as written by ``%g``)."""
    return ",".join(f"{family}.{name}={value:g}" for family in sorted(params) for name, value in sorted(params[family].items()))


def changed_contract(family: str, params: Mapping[str, float]) -> TaskContract:
    """The contract of ``family`` with ``params`` replacing its registered thresholds."""
    contract = get_contract(family)
    return type(contract)(dataclasses.replace(contract.thresholds, **params))


def rescore_runs(runs_dir: str | os.PathLike[str], params: Mapping[str, Mapping[str, float]],
                 out_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Write a re-scored copy of every run below ``runs_dir`` into ``out_dir`` (runs of
    other families are copied as ingest reads them, with the population registries), and return
    one ``{run_id, run_dir, rescored, reason}`` per run; ``reason`` says why a run could
    not be replayed (its copy then keeps the recorded events) or why its re-scored outcome
    is undetermined — either way the copy must count as unresolved."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    source = Path(runs_dir)
    if (source / POPULATIONS_DIR).is_dir():
        shutil.copytree(source / POPULATIONS_DIR, out / POPULATIONS_DIR, dirs_exist_ok=True)
    label = label_of(params)
    results = []
    for run_dir in find_run_dirs(source):
        try:
            document = read_manifest(run_dir)
        except LabrecordError:
            _copy_scored_files(run_dir, out / run_dir.name)  # left for ingest to refuse, with its reason
            results.append({"run_id": None, "run_dir": str(out / run_dir.name), "rescored": False, "reason": None})
            continue
        family = document.manifest.task.family
        if family not in params:
            _copy_scored_files(run_dir, out / run_dir.name)
            results.append({"run_id": document.manifest.run_id, "run_dir": str(out / run_dir.name), "rescored": False,
                            "reason": None})
            continue
        results.append(rescore_run(run_dir, family, params[family], label, out))
    return results


def _copy_scored_files(run_dir: Path, dest: Path) -> None:
    """The files ingest reads (not videos or demonstrations), copied unchanged."""
    dest.mkdir(parents=True)
    for name in (RUN_FILE, EVENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, SCORES_FILE, MEASUREMENTS_FILE):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, dest / name)


def rescore_run(run_dir: Path, family: str, params: Mapping[str, float], label: str, out: Path) -> dict[str, Any]:
    """Replay one run under the changed contract and write its labelled copy under ``out``."""
    document = read_manifest(run_dir)
    manifest = document.manifest
    contract = changed_contract(family, params)
    events = list(iter_events(run_dir / EVENTS_FILE))
    reason = None
    try:
        try:
            instance = contract.instance_from_task(manifest.task)
        except LabrecordError as error:
            raise LabrecordError(f"{run_dir / RUN_FILE}: {error}") from error
        table = read_measurements(run_dir / MEASUREMENTS_FILE, contract)
        receipts = read_receipts(run_dir / OBSERVATIONS_FILE)
        first = next((e.episode for _, e in events if isinstance(e, EpisodeStart)), 0)
        faulted = frozenset(e.episode for _, e in events if isinstance(e, EpisodeEnd) and e.reason in FAULT_END_REASONS)
        expected = replay_run(contract, instance, table, receipts, manifest, default_episode=first, faulted=faulted)
    except LabrecordError as error:
        expected, reason = None, f"cannot re-score: {error}"
    raw = dict(document.raw)
    raw[RESCORE_KEY] = {"from_run_dir": str(run_dir), "contract_params": label,
                        "original_task_version": manifest.task.version,
                        "original_contract_hash": manifest.task.contract_hash, "failed": reason}
    relabelled = msgspec.structs.replace(manifest, task=msgspec.structs.replace(
        manifest.task, version=f"{manifest.task.version} whatif({label})", contract_hash=contract.contract_hash()))
    writer = RunWriter.create(out, relabelled, raw)
    try:
        undetermined = _write_events(writer, [e for _, e in events], expected, contract)
    finally:
        writer.close(manifest.status)
    for name in (OBSERVATIONS_FILE, MEASUREMENTS_FILE):
        if (run_dir / name).is_file():
            shutil.copyfile(run_dir / name, writer.dir / name)
    if undetermined:
        reason = "re-scored outcome beyond the recording: " + "; ".join(undetermined)
    return {"run_id": manifest.run_id, "run_dir": str(writer.dir), "rescored": expected is not None, "reason": reason}


def _write_events(writer: RunWriter, recorded: Sequence[Any], expected: Sequence[Any] | None,
                  contract: TaskContract) -> list[str]:
    """The recorded events with the contract-derived ones replaced by ``expected`` (all
    kept as recorded when ``expected`` is None), merged by time: at one instant an episode
    start comes first, then the replayed events, then the other recorded ones; an episode's
    end keeps its reason and takes the replayed completion.  Returns why episodes are
    undetermined under the changed contract (see :func:`_judged_end`)."""
    undetermined: list[str] = []
    if expected is None:
        for event in recorded:
            writer.append(event)
        return undetermined
    ends = {e.fields["episode"]: e for e in expected if e.type == "episode_end"}
    validity_t = [e.t for e in expected if e.type == "validity"]
    # (episode index, t, rank, order): events never cross into another episode, even when
    # one episode ends at the instant the next starts
    merged: list[tuple[int, float, int, int, Any]] = []
    index = 0
    for order, event in enumerate(recorded):
        if isinstance(event, EpisodeEnd) or not replayed_event(event, contract):
            merged.append((index, event.t, 0 if isinstance(event, EpisodeStart) else 2, order, event))
        index += isinstance(event, EpisodeEnd)
    index = 0
    for order, event in enumerate(expected):
        if event.type != "episode_end":
            merged.append((index, event.t, 1, order, event))
        index += event.type == "episode_end"
    merged.sort(key=lambda item: item[:4])
    recorded_failures = [e.seq for e in recorded if e.__struct_config__.tag == "failure" and replayed_event(e, contract)]
    seq_map: dict[int, int] = {}
    failure_seqs: list[int] = []
    start_t: dict[int, float] = {}
    for _, _, rank, _, event in merged:
        if rank == 1:
            event.emit(writer, failure_seqs)
            continue
        if isinstance(event, EpisodeStart):
            start_t[event.episode] = event.t
        if isinstance(event, EpisodeEnd):
            judged = _judged_end(event, ends.get(event.episode), validity_t, start_t.get(event.episode, float("-inf")))
            if judged.reason == BEYOND_HORIZON:
                undetermined.append(f"episode {event.episode} was stopped at its recorded success (t={event.t:g} s); "
                                    "whether it completes under the changed contract lies past the recording")
            event = judged
        changes: dict[str, Any] = {"seq": writer.next_seq}
        of_seq = getattr(event, "of_seq", None)
        if of_seq is not None:
            replayed_index = recorded_failures.index(of_seq) if of_seq in recorded_failures else None
            changes["of_seq"] = (failure_seqs[replayed_index] if replayed_index is not None
                                 and replayed_index < len(failure_seqs) else seq_map.get(of_seq, of_seq))
        seq_map[event.seq] = writer.next_seq
        writer.append(msgspec.structs.replace(event, **changes))
    return undetermined


#: ``episode_end.reason`` of a re-scored episode whose outcome the recording cannot decide
BEYOND_HORIZON = "beyond_recording"


def _judged_end(event: EpisodeEnd, replayed: Any, validity_t: Sequence[float], start: float) -> EpisodeEnd:
    """The recorded end of an episode with the replayed completion: physical completion
    as replayed; valid only when physical, no sensor fault in the episode and not ended
    by an evaluator-side fault; reason success/timeout follows it (others are kept).

    An episode the recorder stopped at its recorded success that does not complete under
    the changed contract is undetermined, not a failure: the recording ends where the old
    predicate was met (a stricter one typically needs a moment longer), so its reason
    becomes :data:`BEYOND_HORIZON` and the run counts as unresolved."""
    if replayed is None:
        return event
    physical = bool(replayed.fields.get("physical_complete"))
    faults = any(start <= t <= event.t for t in validity_t)
    reason = event.reason
    if reason == "success" and not physical:
        reason = BEYOND_HORIZON
    elif reason in ("success", "timeout", None):
        reason = "success" if physical else "timeout"
    valid = physical and not faults and event.reason not in FAULT_END_REASONS
    return msgspec.structs.replace(event, physical_complete=physical, valid_complete=valid, reason=reason)


def whatif_verdicts(con: Any, originals: Mapping[str, dict[str, Any]], results: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``audits`` rows for the re-scored copies loaded in ``con``: a copy inherits its
    original's replay-audit verdict (the replay is only as trustworthy as the recording),
    and a copy that could not be replayed is a failed audit with that reason."""
    hashes = dict(con.execute("SELECT run_id, content_hash FROM runs").fetchall())
    rows = []
    for result in results:
        run_id = result["run_id"]
        if run_id is None or run_id not in hashes:
            continue
        original = originals.get(run_id)
        ok, why = True, None
        if result["reason"] is not None:
            ok, why = False, result["reason"]
        elif original is not None and not original["ok"]:
            ok, why = False, f"original run: {original['reason']}"
        rows.append({"run_id": run_id, "content_hash": hashes[run_id], "ok": ok, "reason": why,
                     "seq": None if ok or original is None else original.get("seq"),
                     "check_name": None if ok else (original or {}).get("check_name") or "rescore",
                     "findings": 0 if ok else max(1, (original or {}).get("findings") or 0),
                     "audited": (original or {}).get("audited", True)})
    return rows


def open_rescored(runs_dir: str | os.PathLike[str], params: Mapping[str, Mapping[str, float]],
                  work_dir: str | os.PathLike[str], audit: bool = True) -> tuple[Any, Any]:
    """Re-score the runs below ``runs_dir`` into ``work_dir`` and load the copies into an
    in-memory corpus; returns ``(connection, ingest summary)``.  With ``audit`` the
    originals are replay-audited and each copy carries its original's verdict."""
    from labrecord.scorers.audit import audit_run
    from labrecord.scorers.corpus import audit_verdict
    from labrecord.store import open_source, record_audits

    results = rescore_runs(runs_dir, params, work_dir)
    originals: dict[str, dict[str, Any]] = {}
    if audit:
        for run_dir in find_run_dirs(runs_dir):
            verdict = audit_run(run_dir)
            if verdict.run_id is not None:
                originals[verdict.run_id] = audit_verdict(verdict.run_id, "", verdict)
    con, _, summary = open_source(work_dir)
    verdicts = whatif_verdicts(con, originals, results)
    record_audits(con, verdicts if audit else [v for v in verdicts if not v["ok"]])
    return con, summary
