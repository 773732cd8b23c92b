"""The replay audit: rebuild a run's contract events from its measurements and compare.

For each run directory, the task contract of its family replays ``measurements.parquet``
together with the delivered observations (``observations.jsonl``) and rebuilds every
opportunity with its legal set, every physical confirmation and contract failure (a
missed placement, a drop), each recovery of a failure and the violations the contract
derives from measurements (premature, repetition, safety, and early stop at the end of an
episode that did not end on an evaluator-side fault), every recognized native
choice, sensor-validity events, the terminal dwell and the episode's
``physical_complete``.  Each stream is aligned with the recorded ``events.jsonl`` and
every disagreement becomes an :class:`AuditFinding` naming the event (seq and line), the
expected and the recorded value.  Independently of the replay, the audit checks the
evidence-version binding: an opportunity's observation must have been delivered with its
evidence version; choices, interventions, geometry and state reports must carry their
opportunity's version and be bound to the opportunity that is current when they occur;
an intervention is unsupported when ``run.json`` declares no intervention or another site.
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.fileio import Line, iter_lines
from labrecord.measurements import (
    COMMON_COLUMNS, FAMILY_COLUMNS, OPTIONAL_COLUMNS, check_measurement_schema, nonfinite_columns, open_measurements,
)
from labrecord.models import BaseEvent, ObservationReceipt, Opportunity, RunManifest
from labrecord.rundir import (
    EVENTS_FILE, LOADED_FILES, MEASUREMENTS_FILE, OBSERVATIONS_FILE, RUN_FILE, content_digest, decode_line,
    find_run_dirs, iter_events, parse_manifest, read_loaded_files,
)
from labrecord.safeio import MAX_BINARY_BYTES, MAX_LOG_BYTES, MAX_MEASUREMENTS_BYTES, check_file, depth_problem, read_bounded
from labrecord.scorers.contracts import ContractEvent, TaskContract, families, get_contract

#: ``episode_end`` reasons of evaluator-side faults (the episode is not an evaluated outcome)
#: ``outcome_unknown``: an imported episode whose source does not record its outcome
FAULT_END_REASONS = frozenset({"service_fault", "transport_fault", "outcome_unknown"})
#: event types the contract rebuilds (choices only from the contract's own recognizer)
REPLAYED_TYPES = ("opportunity", "confirm", "failure", "recovery", "violation", "choice", "dwell", "validity",
                  "episode_end")
_receipt_decoder = msgspec.json.Decoder(ObservationReceipt)


@dataclass(frozen=True)
class AuditFinding:
    """One disagreement; ``seq``/``line`` name the recorded event (None when missing)."""

    path: str
    seq: int | None
    line: int | None
    check: str
    message: str
    expected: Any = None
    recorded: Any = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        seq = f" seq {self.seq}" if self.seq is not None else ""
        return f"{where}{seq} {self.check}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "seq": self.seq, "line": self.line, "check": self.check, "message": self.message,
                "expected": self.expected, "recorded": self.recorded}


@dataclass
class RunAudit:
    """The audit of one run: what was replayed and every finding."""

    run_dir: str
    run_id: str | None = None
    family: str | None = None
    steps: int = 0
    events_checked: int = 0
    findings: list[AuditFinding] = field(default_factory=list)
    #: False when the run declares no measurement stream: nothing was replayed
    audited: bool = True
    #: ``events``: every replayed event compared with the recorded one; ``outcome``: an
    #: imported run, whose source claims only its episodes' outcomes (only they are compared)
    scope: str = "events"
    #: events the replay rebuilt that the run does not claim (an imported run's), not compared
    derived: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"run_dir": self.run_dir, "run_id": self.run_id, "family": self.family, "steps": self.steps,
                "events_checked": self.events_checked, "ok": self.ok, "audited": self.audited,
                "scope": self.scope, "derived": self.derived,
                "findings": [f.to_json() for f in self.findings]}


def audit_runs(runs_dir: str | os.PathLike[str]) -> list[RunAudit]:
    """Audit every run directory at or directly below ``runs_dir``."""
    return [audit_run(run_dir) for run_dir in find_run_dirs(runs_dir)]


def audit_run(run_dir: str | os.PathLike[str], expect: str | None = None) -> RunAudit:
    """Replay one run through its family's contract and compare with its events.

    Each file is read once and every record goes through the line decoder validation
    uses (:func:`labrecord.safeio.decode_record`), so the audit judges the records the
    store holds.  ``expect``: the content hash the store keeps for the run; when the bytes
    read now hash otherwise, or cannot be read, the one finding has check
    ``unreadable`` (the verdict would not be about the stored run, and is not stored).
    """
    run_dir = Path(run_dir)
    result = RunAudit(str(run_dir))
    try:
        files = read_loaded_files(run_dir)
    except LabrecordError as error:
        result.findings.append(AuditFinding(str(run_dir), None, None, "read" if expect is None else "unreadable",
                                            str(error)))
        return result
    if expect is not None:
        digest = content_digest((name, [files[name]]) for name in LOADED_FILES if name in files)
        if digest != expect:
            result.findings.append(AuditFinding(
                str(run_dir), None, None, "unreadable",
                f"{run_dir}: files changed since they were loaded (or cannot be found there); ingest again"))
            return result
    try:
        _audit(run_dir, files, result)
    except LabrecordError as error:
        result.findings.append(AuditFinding(str(run_dir), None, None, "read", str(error)))
    return result


def _required(files: dict[str, bytes], path: Path, what: str) -> bytes:
    if path.name not in files:
        raise LabrecordError(f"{path}: missing {what}")
    return files[path.name]


def _audit(run_dir: Path, files: dict[str, bytes], result: RunAudit) -> None:
    manifest = parse_manifest(_required(files, run_dir / RUN_FILE, "run.json"), str(run_dir / RUN_FILE)).manifest
    result.run_id, result.family = manifest.run_id, manifest.task.family
    if manifest.evaluation.measurements == "none" and manifest.task.family not in families():
        # events only, of a task no contract here describes (an imported dataset): unaudited
        result.findings.extend(check_handoffs(run_dir, manifest))
        result.audited = False
        return
    contract = get_contract(manifest.task.family)
    events_path = str(run_dir / EVENTS_FILE)
    if manifest.task.contract_hash is not None and manifest.task.contract_hash != contract.contract_hash():
        result.findings.append(AuditFinding(str(run_dir / "run.json"), None, None, "contract_hash",
                                            "run was scored under another contract version",
                                            contract.contract_hash(), manifest.task.contract_hash))
    result.findings.extend(check_handoffs(run_dir, manifest))
    if manifest.evaluation.measurements == "none":
        # events-only records (a harness without a measurement stream, an import): nothing to
        # replay; scored from the events and reported as unaudited.  A stream the manifest
        # declares is never excused by its absence: then the replay below refuses.
        result.audited = False
        return
    try:
        instance = contract.instance_from_task(manifest.task)
    except LabrecordError as error:
        raise LabrecordError(f"{run_dir / 'run.json'}: {error}") from error
    events = list(iter_events(events_path, _required(files, run_dir / EVENTS_FILE, "events.jsonl")))
    receipts = read_receipts(run_dir / OBSERVATIONS_FILE, files.get(OBSERVATIONS_FILE, b""))
    measurements = files.get(MEASUREMENTS_FILE)
    if measurements is None:
        raise LabrecordError(f"{run_dir / MEASUREMENTS_FILE}: missing measurements (the audit replays from them)")
    table = read_measurements(run_dir / MEASUREMENTS_FILE, contract, measurements)
    result.steps = table.num_rows
    first_episode = next((e.episode for _, e in events if e.__struct_config__.tag == "episode_start"), 0)  # type: ignore[attr-defined]
    # an episode that ended on an evaluator-side fault is not judged at its end (no early stop)
    faulted = frozenset(e.episode for _, e in events  # type: ignore[attr-defined]
                        if e.__struct_config__.tag == "episode_end" and e.reason in FAULT_END_REASONS)  # type: ignore[attr-defined]
    expected = replay_run(contract, instance, table, receipts, manifest, default_episode=first_episode,
                          faulted=faulted)
    recorded = [(line, event) for line, event in events if replayed_event(event, contract)]
    if manifest.source is not None:
        expected, recorded = _claimed_outcomes(expected, recorded, faulted, result)
    result.events_checked = len(recorded)
    result.findings.extend(compare_streams(events_path, expected, recorded))
    result.findings.extend(check_bindings(events_path, events, receipts, manifest))


def _claimed_outcomes(expected: list[ContractEvent], recorded: list[tuple[int, BaseEvent]], faulted: frozenset[int],
                      result: RunAudit) -> tuple[list[ContractEvent], list[tuple[int, BaseEvent]]]:
    """What an imported run's source claims, and what the replay says of it.

    A source (a dataset, another harness's results) records no contract events: no
    opportunities, confirmations or choices, only an episode and, where it says so, its
    outcome.  So the replay's other events are not contradicted by their absence; they are
    counted in ``result.derived`` and not compared.  An episode's end is compared only
    where the source states its outcome: an end in ``faulted`` (a fault, or
    ``outcome_unknown``: :data:`FAULT_END_REASONS`) claims nothing, and the replay does
    not supply the outcome the source did not give.
    """
    result.scope = "outcome"
    claimed = {event.episode for _, event in recorded  # type: ignore[attr-defined]
               if event.__struct_config__.tag == "episode_end" and event.episode not in faulted}  # type: ignore[attr-defined]
    kept = [e for e in expected if e.type == "episode_end" and e.fields.get("episode") in claimed]
    result.derived = sum(1 for e in expected if e.type != "episode_end")
    return kept, [(line, event) for line, event in recorded
                  if event.__struct_config__.tag == "episode_end" and event.episode in claimed]  # type: ignore[attr-defined]


def handoff_verified(verification: Any) -> bool:
    """A checkpoint's verification passed: at least one control period re-stepped, every
    measurement column equal, the tracker state equal, a ready handoff (sec. 6.1), and — for
    a served policy re-asked over the window — every re-queried action equal to the recorded one."""
    v = verification
    return bool(v.get("periods", 0) > 0 and v.get("bitwise") and v.get("tracker_equal") and v.get("handoff_ready")
                and v.get("actions_equal") is not False)


def check_handoffs(run_dir: Path, manifest: Any) -> list[AuditFinding]:
    """Every saved checkpoint the manifest names (``evaluation.checkpoints[].file``, relative
    to the folder holding the run) must exist, be intact (its body digest) and record the
    verification the manifest claims — so deleting or editing a checkpoint file leaves the
    run unresolved instead of keeping its members in J."""
    import hashlib

    findings = []
    where = str(run_dir / "run.json")
    for entry in manifest.evaluation.checkpoints:
        if entry.file is None:
            continue
        path = run_dir.parent / entry.file
        problem = _handoff_problem(path, entry, hashlib)
        if problem is not None:
            findings.append(AuditFinding(where, None, None, "checkpoint", f"{path}: {problem}"))
    return findings


def _handoff_problem(path: Path, entry: Any, hashlib: Any) -> str | None:
    if not path.is_file() and not path.is_symlink():
        return f"checkpoint of decision {entry.decision!r} is missing"
    try:
        check_file(path, MAX_BINARY_BYTES)  # a link, a device or an oversized file is refused unread
    except LabrecordError as error:
        return str(error).removeprefix(f"{path}: ")
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    if (too_deep := depth_problem(head)) is not None:
        return f"unreadable checkpoint header: {too_deep}"
    try:
        header = msgspec.json.decode(head)
    except msgspec.DecodeError as error:
        return f"unreadable checkpoint header: {error}"
    if not isinstance(header, dict) or header.get("decision") != entry.decision:
        return f"checkpoint is not of decision {entry.decision!r}"
    if header.get("body_sha256") != hashlib.sha256(body).hexdigest():
        return "checkpoint body does not match its digest"
    verified = handoff_verified(header.get("verification") or {})
    if verified != entry.verified:
        return f"checkpoint verification is {verified}, the manifest says {entry.verified}"
    return None


def read_receipts(path: Path, data: bytes | None = None) -> list[ObservationReceipt]:
    """The delivery receipts of ``path`` (or of its bytes ``data``, already read)."""
    if data is None:
        if not path.exists():
            return []
        data = read_bounded(path, MAX_LOG_BYTES)
    return [decode_line(item, path, _receipt_decoder) if isinstance(item, Line) else _raise(item)
            for item in iter_lines(path, data)]


def _raise(error: Exception) -> Any:
    raise error


def read_measurements(path: Path, contract: TaskContract, data: bytes | None = None) -> Any:
    """The columns the contract replays from (of ``path``, or of its bytes ``data``, already
    read); the footer is checked before any column is decoded, and a schema problem is a
    one-line error."""
    if data is None:
        if not os.path.lexists(path):
            raise LabrecordError(f"{path}: missing measurements (the audit replays from them)")
        data = read_bounded(path, MAX_MEASUREMENTS_BYTES)
    parquet = open_measurements(data, str(path))
    problems = check_measurement_schema(parquet.schema_arrow, contract.family)
    if problems:
        raise LabrecordError(f"{path}: {problems[0][1]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    names = parquet.schema_arrow.names
    optional = [c for c in list(OPTIONAL_COLUMNS.get(contract.family, {})) + ["episode"] if c in names]
    columns = list(COMMON_COLUMNS) + list(FAMILY_COLUMNS[contract.family]) + optional
    try:
        table = parquet.read(columns=columns)
    except Exception as error:  # pyarrow raises several types for damaged pages
        raise LabrecordError(f"{path}: unreadable columns: {error}") from error
    nonfinite = nonfinite_columns(table)
    if nonfinite:
        name, count, first = nonfinite[0]
        raise LabrecordError(f"{path}: column {name!r} holds {count} non-finite value(s) (NaN or infinity), first at row {first}")
    return table


def replay_run(contract: TaskContract, instance: Any, table: Any, receipts: Sequence[ObservationReceipt],
               manifest: RunManifest, *, default_episode: int = 0,
               faulted: frozenset[int] = frozenset()) -> list[ContractEvent]:
    """Expected contract events of a whole run, episode by episode (``episode`` column);
    the episodes in ``faulted`` ended on an evaluator-side fault and get no end-of-episode
    events."""
    import numpy as np

    window_s = manifest.evaluation.budget.response_deadline_s
    if "episode" in table.column_names:
        episode_of = np.asarray(table.column("episode").to_numpy(zero_copy_only=False))
        episodes = list(dict.fromkeys(episode_of.tolist()))
    else:
        episode_of, episodes = None, [default_episode]
    steps = np.asarray(table.column("step").to_numpy(zero_copy_only=False))
    expected: list[ContractEvent] = []
    opened = failures = 0
    for episode in episodes:
        part, part_receipts = table, list(receipts)
        if episode_of is not None:
            rows = np.flatnonzero(episode_of == episode)
            part = table.take(rows)
            in_episode = set(steps[rows].tolist())
            part_receipts = [r for r in receipts if r.step in in_episode]
        events, end = contract.replay(part, part_receipts, instance, window_s=window_s, first_opp=opened,
                                      judge_end=episode not in faulted)
        opened += sum(1 for e in events if e.type == "opportunity")
        # recoveries name failures within their episode: shift to the run's failure order
        events = [ContractEvent(e.type, e.t, e.step, {**e.fields, "of_failure": e.fields["of_failure"] + failures})
                  if "of_failure" in e.fields else e for e in events]
        failures += sum(1 for e in events if e.type == "failure")
        expected.extend(events)
        t_end = float(part.column("t")[-1].as_py()) if part.num_rows else 0.0
        expected.append(ContractEvent("episode_end", t_end, -1, {"episode": episode, **end}))
    return expected


def replayed_event(event: BaseEvent, contract: TaskContract) -> bool:
    kind = event.__struct_config__.tag
    if kind == "choice":
        return event.track == "native" and event.recognizer == contract.recognizer  # type: ignore[attr-defined]
    if kind == "failure":
        return event.reason in contract.failure_reasons  # type: ignore[attr-defined]
    if kind == "violation":
        return event.kind in contract.violation_kinds  # type: ignore[attr-defined]
    if kind == "recovery":
        return contract.derives_recovery
    if kind == "validity":
        return event.kind == "sensor_error"  # type: ignore[attr-defined]
    return kind in REPLAYED_TYPES


# -- comparison --------------------------------------------------------------------------

_KEYS: dict[str, tuple[str, ...]] = {
    "opportunity": ("t", "opp", "decision", "trigger", "legal", "obs_id", "evidence_version", "state_ref"),
    "confirm": ("t", "obligation", "op", "predicate", "attempt"),
    "failure": ("t", "op", "reason", "attempt", "recoverable"),
    "recovery": ("t", "of_failure", "resolved"),
    "violation": ("t", "kind", "irreversible", "op"),
    "choice": ("t", "opp", "op", "first", "evidence_version"),
    "dwell": ("t", "state", "duration_s"),
    "validity": ("t", "kind", "source"),
    "episode_end": ("episode", "physical_complete"),
}


def _canon(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, list):
        return sorted(str(v) for v in value)
    if isinstance(value, msgspec.Struct):
        return str(value)
    return value


def _key_of(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {name: _canon(fields.get(name, 0.0 if name == "duration_s" else None)) for name in _KEYS[kind]}


def _recorded_fields(event: BaseEvent, failure_index: dict[int, int]) -> dict[str, Any]:
    fields = {name: getattr(event, name) for name in event.__struct_fields__}
    if "of_seq" in fields:
        fields["of_failure"] = failure_index.get(fields["of_seq"], f"seq {fields['of_seq']} (no failure)")
    return fields


def compare_streams(path: str, expected: Sequence[ContractEvent],
                    recorded: Sequence[tuple[int, BaseEvent]]) -> list[AuditFinding]:
    """Align expected and recorded events per type and report every difference."""
    findings: list[AuditFinding] = []
    # a recovery names its failure: by index among the run's failures on both sides
    failure_index = {ev.seq: k for k, (_, ev) in enumerate(e for e in recorded if e[1].__struct_config__.tag == "failure")}
    for kind in _KEYS:
        exp = [_key_of(kind, {"t": e.t, **e.fields}) for e in expected if e.type == kind]
        rec_events = [(line, ev) for line, ev in recorded if ev.__struct_config__.tag == kind]
        rec = [_key_of(kind, _recorded_fields(ev, failure_index)) for _, ev in rec_events]
        matcher = difflib.SequenceMatcher(a=[repr(k) for k in exp], b=[repr(k) for k in rec], autojunk=False)
        for tag, a0, a1, b0, b1 in matcher.get_opcodes():
            if tag == "equal":
                continue
            for offset in range(max(a1 - a0, b1 - b0)):
                e = exp[a0 + offset] if a0 + offset < a1 else None
                r_index = b0 + offset if b0 + offset < b1 else None
                r = rec[r_index] if r_index is not None else None
                line, event = rec_events[r_index] if r_index is not None else (None, None)
                findings.append(_difference(path, kind, e, r, line, event))
    findings.sort(key=lambda f: (f.seq is None, f.seq if f.seq is not None else 0))
    return findings


def _difference(path: str, kind: str, expected: dict[str, Any] | None, recorded: dict[str, Any] | None,
                line: int | None, event: BaseEvent | None) -> AuditFinding:
    seq = event.seq if event is not None else None
    if recorded is None:
        assert expected is not None
        message = f"expected {kind} at t={expected.get('t')} is missing"
    elif expected is None:
        message = f"recorded {kind} is not produced by the replay"
    else:
        fields = [name for name in _KEYS[kind] if expected[name] != recorded[name]]
        message = f"{kind} differs in " + ", ".join(f"{name} (expected {expected[name]!r}, recorded {recorded[name]!r})" for name in fields)
    return AuditFinding(path, seq, line, kind, message, expected, recorded)


# -- evidence-version binding ------------------------------------------------------------

def check_bindings(path: str, events: Sequence[tuple[int, BaseEvent]], receipts: Sequence[ObservationReceipt],
                   manifest: RunManifest) -> list[AuditFinding]:
    """Opportunities, interventions and later actions share the right evidence version."""
    findings: list[AuditFinding] = []
    by_obs = {r.obs_id: r for r in receipts}
    opened: dict[str, Opportunity] = {}
    current: Opportunity | None = None
    declared = manifest.intervention

    def add(line: int, event: BaseEvent, check: str, message: str, expected: Any = None, recorded: Any = None) -> None:
        findings.append(AuditFinding(path, event.seq, line, check, message, expected, recorded))

    for line, event in events:
        kind = event.__struct_config__.tag
        if isinstance(event, Opportunity):
            receipt = by_obs.get(event.obs_id) if event.obs_id is not None else None
            if receipt is None:
                add(line, event, "binding", f"opportunity {event.opp!r} names observation {event.obs_id!r}, which was never delivered",
                    None, event.obs_id)
            else:
                if receipt.evidence_version != event.evidence_version:
                    add(line, event, "binding", f"opportunity {event.opp!r} carries evidence version {event.evidence_version}, "
                        f"observation {receipt.obs_id!r} was delivered as {receipt.evidence_version}",
                        receipt.evidence_version, event.evidence_version)
                if receipt.t_delivered > event.t + 1e-9:
                    add(line, event, "binding", f"opportunity {event.opp!r} opened at t={event.t} before its observation "
                        f"was delivered (t={receipt.t_delivered})", receipt.t_delivered, event.t)
            opened[event.opp] = event
            current = event
            continue
        if kind not in ("choice", "intervention", "geometry", "state_report"):
            continue
        opp = opened.get(event.opp)  # type: ignore[attr-defined]
        if opp is None:
            add(line, event, "binding", f"{kind} names opportunity {event.opp!r}, not opened before it", None, event.opp)  # type: ignore[attr-defined]
            continue
        version = getattr(event, "evidence_version", None)
        if version is not None and version != opp.evidence_version:
            add(line, event, "binding", f"{kind} carries evidence version {version}, opportunity {opp.opp!r} has "
                f"{opp.evidence_version}", opp.evidence_version, version)
        if current is not None and opp.opp != current.opp:
            add(line, event, "binding", f"{kind} is bound to opportunity {opp.opp!r}, superseded by {current.opp!r} "
                "(stale evidence)", current.opp, opp.opp)
        if kind == "intervention":
            supports = {(d.mode, d.site) for d in declared.supports}
            if not supports:
                add(line, event, "intervention", "unsupported intervention: run.json declares intervention mode 'none'",
                    "none", event.mode)  # type: ignore[attr-defined]
            elif not any(event.mode == mode and (site is None or event.site == site)  # type: ignore[attr-defined]
                         for mode, site in supports):
                add(line, event, "intervention", f"unsupported intervention: {event.mode}/{event.site} where run.json "  # type: ignore[attr-defined]
                    f"declares {declared.mode}/{declared.site}", f"{declared.mode}/{declared.site}",
                    f"{event.mode}/{event.site}")  # type: ignore[attr-defined]
    return findings
