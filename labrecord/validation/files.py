"""One validator per file kind of a run directory, found through a dispatch table.

Kinds that need no check are registered explicitly (``_no_check``); a file of no
registered kind is reported as a warning rather than passed over silently.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.measurements import check_measurement_schema
from labrecord.models import FinalScores, ObservationReceipt, OnlineScore, PopulationEntry
from labrecord.rundir import (
    DEMO_FILE, EVENTS_FILE, MEASUREMENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, RUN_FILE,
    SCORES_FILE, VIDEOS_DIR, RunDocument, parse_manifest,
)
from labrecord.validation.events import EventLogSummary, validate_events
from labrecord.validation.findings import Report
from labrecord.validation.jsonl import decode_jsonl

_receipt_decoder = msgspec.json.Decoder(ObservationReceipt)
_online_decoder = msgspec.json.Decoder(OnlineScore)
_population_decoder = msgspec.json.Decoder(PopulationEntry)


class RunContext:
    """What validators of one run share: the manifest and the events summary."""

    def __init__(self) -> None:
        self.document: RunDocument | None = None
        self.events: EventLogSummary | None = None
        self.receipts: dict[str, int] = {}

    @property
    def family(self) -> str | None:
        return self.document.manifest.task.family if self.document else None


def validate_manifest_file(path: Path, report: Report, ctx: RunContext) -> None:
    try:
        ctx.document = parse_manifest(path.read_bytes(), str(path))
    except LabrecordError as error:
        prefix = f"{path}: "
        text = str(error)
        report.error(str(path), None, "", text[len(prefix):] if text.startswith(prefix) else text)
        return
    if ctx.document.manifest.status == "running":
        report.warn(str(path), None, "status", "run is still marked 'running' (interrupted or still being written)")


def validate_events_file(path: Path, report: Report, ctx: RunContext) -> None:
    ctx.events = validate_events(str(path), path.read_bytes(), report)


def validate_observations_file(path: Path, report: Report, ctx: RunContext) -> None:
    last_version = -1
    for line, receipt in decode_jsonl(str(path), path.read_bytes(), _receipt_decoder, report):
        if receipt.obs_id in ctx.receipts:
            report.error(str(path), line, "obs_id", f"obs_id {receipt.obs_id!r} repeats (first on line {ctx.receipts[receipt.obs_id]})")
        ctx.receipts.setdefault(receipt.obs_id, line)
        if receipt.t_delivered < receipt.t_acquired:
            report.error(str(path), line, "t_delivered", f"delivered at {receipt.t_delivered} before acquisition at {receipt.t_acquired}")
        if receipt.evidence_version < last_version:
            report.error(str(path), line, "evidence_version", f"evidence version {receipt.evidence_version} goes back from {last_version}")
        last_version = max(last_version, receipt.evidence_version)


def validate_online_scores_file(path: Path, report: Report, ctx: RunContext) -> None:
    last_t = float("-inf")
    for line, snapshot in decode_jsonl(str(path), path.read_bytes(), _online_decoder, report):
        if snapshot.t < last_t:
            report.error(str(path), line, "t", f"t {snapshot.t} goes back from {last_t}")
        last_t = max(last_t, snapshot.t)


def validate_scores_file(path: Path, report: Report, ctx: RunContext) -> None:
    try:
        scores = msgspec.json.decode(path.read_bytes(), type=FinalScores)
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        report.error(str(path), None, "", str(error))
        return
    if ctx.document is not None and scores.run_id != ctx.document.manifest.run_id:
        report.error(str(path), None, "run_id", f"scores name run {scores.run_id!r}, run.json names {ctx.document.manifest.run_id!r}")


def validate_measurements_file(path: Path, report: Report, ctx: RunContext) -> None:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several types for damaged files
        report.error(str(path), None, "", f"not a readable Parquet file: {error}")
        return
    for column, message in check_measurement_schema(parquet.schema_arrow, ctx.family):
        report.error(str(path), None, column, message)
    if "t" in parquet.schema_arrow.names:
        import pyarrow.compute as pc

        t = parquet.read(columns=["t"]).column("t")
        if len(t) > 1:
            steps_back = pc.sum(pc.less(t.slice(1), t.slice(0, len(t) - 1))).as_py() or 0
            if steps_back:
                report.error(str(path), None, "t", f"t goes back {steps_back} time(s)")


def validate_demo_file(path: Path, report: Report, ctx: RunContext) -> None:
    import h5py

    try:
        with h5py.File(path, "r") as fh:
            if "data" not in fh:
                report.error(str(path), None, "data", "no 'data' group (robomimic layout)")
    except OSError as error:
        report.error(str(path), None, "", f"not a readable HDF5 file: {error}")


def _no_check(path: Path, report: Report, ctx: RunContext) -> None:
    """Registered kinds whose content labrecord does not interpret (videos)."""


Validator = Callable[[Path, Report, RunContext], None]

#: file name inside a run directory -> validator; order is the order of checking
RUN_FILE_VALIDATORS: dict[str, Validator] = {
    RUN_FILE: validate_manifest_file,
    EVENTS_FILE: validate_events_file,
    OBSERVATIONS_FILE: validate_observations_file,
    ONLINE_SCORES_FILE: validate_online_scores_file,
    SCORES_FILE: validate_scores_file,
    MEASUREMENTS_FILE: validate_measurements_file,
    DEMO_FILE: validate_demo_file,
    VIDEOS_DIR: _no_check,
}


def validate_population_file(path: Path, report: Report) -> dict[str, Any]:
    """Validate ``populations/<name>.jsonl``; returns the registered instance ids."""
    registered: set[str] = set()
    references: list[tuple[int, str, str]] = []
    keys: dict[tuple[str, str], int] = {}
    for line, record in decode_jsonl(str(path), path.read_bytes(), _population_decoder, report):
        tag = type(record).__struct_config__.tag
        key_field = "pair_id" if tag in ("pair", "oracle_pair") else "instance_id"
        key = (tag, getattr(record, key_field) + ("/" + record.decision if tag == "checkpoint" else ""))
        if key in keys:
            report.error(str(path), line, f"{tag}.{key_field}", f"{tag} {key[1]!r} registered twice (first on line {keys[key]})")
        keys.setdefault(key, line)
        if tag in ("instance", "checkpoint", "fixed_start"):
            registered.add(record.instance_id)
        elif tag == "pair":
            references += [(line, "pair.members", m) for m in record.members]
            if len(record.members) < 2:
                report.error(str(path), line, "pair.members", f"pair {record.pair_id!r} has {len(record.members)} member(s), needs 2")
        else:
            references += [(line, "oracle_pair.base", record.base), (line, "oracle_pair.supported", record.supported)]
    for line, field, instance in references:
        if instance not in registered:
            report.error(str(path), line, field, f"member {instance!r} is not a registered instance of this population")
    return {"name": path.stem, "instances": registered}
