"""One validator per file kind of a run directory, found through a dispatch table.

Kinds that need no check are registered explicitly (``_no_check``); a file of no
registered kind is reported as a warning rather than passed over silently.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from labrecord.errors import LabrecordError
from labrecord.measurements import check_measurement_schema, nonfinite_columns, open_measurements
from labrecord.models import FinalScores, ObservationReceipt, OnlineScore, PopulationEntry
from labrecord.rundir import (
    DEMO_FILE, EVENTS_FILE, MEASUREMENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, RUN_FILE,
    SCORES_FILE, SOURCE_FILE, SOURCE_JSON_FILE, VIDEOS_DIR, RunDocument, parse_manifest,
)
from labrecord.safeio import (
    MAX_BINARY_BYTES, MAX_DOCUMENT_BYTES, MAX_LOG_BYTES, MAX_MEASUREMENTS_BYTES, STORED_INT_MAX, canonical_json,
    check_file, decode_json, excerpt, read_bounded,
)
from labrecord.validation.events import EventLogSummary, validate_events
from labrecord.validation.findings import Report
from labrecord.validation.jsonl import KeptTexts, decode_jsonl, decode_log

_receipt_decoder = msgspec.json.Decoder(ObservationReceipt)
_online_decoder = msgspec.json.Decoder(OnlineScore)
_population_decoder = msgspec.json.Decoder(PopulationEntry)


class RunContext:
    """What validators of one run share: the manifest and the events summary, and what
    they read, for the store to load without reading any file again.

    ``files`` holds the bytes of each loaded file as read (read once, hashed as read);
    ``records`` the canonical text of every record that passed decoding, per log (and
    of ``scores.json``): a cut or refused line is not among them, so it is never loaded.
    """

    def __init__(self) -> None:
        self.document: RunDocument | None = None
        self.events: EventLogSummary | None = None
        self.receipts: dict[str, int] = {}
        self.files: dict[str, bytes] = {}
        self.records: dict[str, KeptTexts] = {}

    def _keep(self, path: Path, data: bytes) -> KeptTexts:
        self.files[path.name] = data
        return self.records.setdefault(path.name, KeptTexts())

    @property
    def family(self) -> str | None:
        return self.document.manifest.task.family if self.document else None

    @property
    def interrupted(self) -> bool:
        """The writer never closed the run (status ``running``): a crash leaves a valid prefix."""
        return self.document is not None and self.document.manifest.status == "running"


def _read(path: Path, report: Report, limit: int = MAX_LOG_BYTES) -> bytes | None:
    """The file's bytes, or None after reporting why it may not be read (link, device, size)."""
    try:
        return read_bounded(path, limit)
    except LabrecordError as error:
        report.error(str(path), None, "", _without_prefix(str(error), path))
        return None


def _without_prefix(text: str, path: Path) -> str:
    prefix = f"{path}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def validate_manifest_file(path: Path, report: Report, ctx: RunContext) -> None:
    data = _read(path, report, MAX_DOCUMENT_BYTES)
    if data is None:
        return
    ctx.files[path.name] = data
    try:
        ctx.document = parse_manifest(data, str(path))
    except LabrecordError as error:
        report.error(str(path), None, "", _without_prefix(str(error), path))
        return
    if ctx.document.manifest.status == "running":
        report.warn(str(path), None, "status", "run is still marked 'running' (interrupted or still being written)")
    deadline = ctx.document.manifest.evaluation.budget.response_deadline_s
    if deadline is not None and not (math.isfinite(deadline) and deadline > 0):
        report.error(str(path), None, "evaluation.budget.response_deadline_s",
                     f"response deadline {deadline} is not a positive number of seconds")


def validate_events_file(path: Path, report: Report, ctx: RunContext) -> None:
    data = _read(path, report)
    if data is not None:
        ctx.events = validate_events(str(path), data, report, interrupted=ctx.interrupted, keep=ctx._keep(path, data))


def validate_observations_file(path: Path, report: Report, ctx: RunContext) -> None:
    last_version = -1
    data = _read(path, report)
    if data is None:
        return
    records, items = decode_log(str(path), data, _receipt_decoder, report, interrupted=ctx.interrupted,
                                keep=ctx._keep(path, data))
    if records is not None:
        first_lines = screen_receipts(records)
        if first_lines is not None:
            ctx.receipts.update(first_lines)
            return
    for line, receipt in items:
        if receipt.obs_id in ctx.receipts:
            report.error(str(path), line, "obs_id", f"obs_id {receipt.obs_id!r} repeats (first on line {ctx.receipts[receipt.obs_id]})")
        ctx.receipts.setdefault(receipt.obs_id, line)
        if receipt.t_delivered < receipt.t_acquired:
            report.error(str(path), line, "t_delivered", f"delivered at {receipt.t_delivered} before acquisition at {receipt.t_acquired}")
        if receipt.evidence_version < last_version:
            report.error(str(path), line, "evidence_version", f"evidence version {receipt.evidence_version} goes back from {last_version}")
        last_version = max(last_version, receipt.evidence_version)


def screen_receipts(receipts: list[ObservationReceipt]) -> dict[str, int] | None:
    """The rules of :func:`validate_observations_file` over all receipts at once: obs_id
    -> line when none finds anything (ids unique, no delivery before its acquisition, no
    evidence version below -1 or the running maximum), else None.  For example versions
    ``[0, 2, 1]`` give None (the third goes back from 2), and ``[0, 0, 3]`` pass."""
    n = len(receipts)
    lines = dict(zip(map(attrgetter("obs_id"), receipts), range(1, n + 1)))
    if len(lines) != n:
        return None
    acquired = np.fromiter(map(attrgetter("t_acquired"), receipts), np.float64, n)
    delivered = np.fromiter(map(attrgetter("t_delivered"), receipts), np.float64, n)
    try:
        versions = np.fromiter(map(attrgetter("evidence_version"), receipts), np.int64, n)
    except OverflowError:
        return None
    if (delivered < acquired).any() or (n and (versions[0] < -1 or (versions[1:] < versions[:-1]).any())):
        return None
    return lines


def validate_online_scores_file(path: Path, report: Report, ctx: RunContext) -> None:
    last_t = float("-inf")
    data = _read(path, report)
    if data is None:
        return
    for line, snapshot in decode_jsonl(str(path), data, _online_decoder, report, interrupted=ctx.interrupted,
                                       keep=ctx._keep(path, data)):
        if snapshot.t < last_t:
            report.error(str(path), line, "t", f"t {snapshot.t} goes back from {last_t}")
        last_t = max(last_t, snapshot.t)


def validate_scores_file(path: Path, report: Report, ctx: RunContext) -> None:
    data = _read(path, report, MAX_DOCUMENT_BYTES)
    if data is None:
        return
    ctx.files[path.name] = data
    try:
        plain = decode_json(data, str(path))
        scores = msgspec.convert(plain, FinalScores)
    except LabrecordError as error:
        report.error(str(path), None, "", _without_prefix(str(error), path))
        return
    except msgspec.ValidationError as error:
        report.error(str(path), None, "", str(error))
        return
    # the document as decoded (numbers as written), which is what the store keeps
    kept = ctx.records[path.name] = KeptTexts()
    kept.extend([canonical_json(plain)])
    if ctx.document is not None and scores.run_id != ctx.document.manifest.run_id:
        report.error(str(path), None, "run_id", f"scores name run {scores.run_id!r}, run.json names {ctx.document.manifest.run_id!r}")


def validate_measurements_file(path: Path, report: Report, ctx: RunContext) -> None:
    """Read the file once into memory, check its footer before any column (see
    :func:`labrecord.measurements.open_measurements`), then its columns; the store loads
    the same bytes."""
    data = _read(path, report, MAX_MEASUREMENTS_BYTES)
    if data is None:
        return
    ctx.files[path.name] = data
    try:
        parquet = open_measurements(data, str(path))
    except LabrecordError as error:
        report.error(str(path), None, "", _without_prefix(str(error), path))
        return
    for column, message in check_measurement_schema(parquet.schema_arrow, ctx.family):
        report.error(str(path), None, column, message)
    try:
        if "t" in parquet.schema_arrow.names:
            import pyarrow.compute as pc

            t = parquet.read(columns=["t"]).column("t")
            if len(t) > 1:
                steps_back = pc.sum(pc.less(t.slice(1), t.slice(0, len(t) - 1))).as_py() or 0
                if steps_back:
                    report.error(str(path), None, "t", f"t goes back {steps_back} time(s)")
        _check_integers(path, parquet, report)
    except LabrecordError:
        raise
    except Exception as error:  # pyarrow raises several types for damaged pages
        report.error(str(path), None, "", f"unreadable columns: {excerpt(str(error))}")
        return
    _check_finite(path, parquet, report)


def _check_integers(path: Path, parquet: Any, report: Report) -> None:
    """Unsigned 64-bit columns whose values pass the stored 64-bit range are refused (the
    store's integer columns are signed 64-bit, as for JSON records)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    wide = [f.name for f in parquet.schema_arrow if pa.types.is_uint64(f.type)]
    if not wide:
        return
    table = parquet.read(columns=wide)
    for name in wide:
        top = pc.max(table.column(name)).as_py()
        if top is not None and top > STORED_INT_MAX:
            report.error(str(path), None, name, f"column {name!r} holds {top}, outside the stored 64-bit range")


def _check_finite(path: Path, parquet: Any, report: Report) -> None:
    import pyarrow as pa

    floats = [f.name for f in parquet.schema_arrow if pa.types.is_floating(f.type)]
    if not floats:
        return
    try:
        table = parquet.read(columns=floats)
    except Exception as error:  # pyarrow raises several types for damaged pages
        report.error(str(path), None, "", f"unreadable float columns: {excerpt(str(error))}")
        return
    for name, count, first in nonfinite_columns(table):
        report.error(str(path), None, name, f"column {name!r} holds {count} non-finite value(s) (NaN or infinity), "
                                            f"first at row {first}")


def validate_demo_file(path: Path, report: Report, ctx: RunContext) -> None:
    """HDF5 is opened by path (h5py reads what it needs); the store never loads it."""
    import h5py

    try:
        check_file(path, MAX_BINARY_BYTES)
    except LabrecordError as error:
        report.error(str(path), None, "", _without_prefix(str(error), path))
        return
    try:
        with h5py.File(path, "r") as fh:
            if "data" not in fh:
                report.error(str(path), None, "data", "no 'data' group (robomimic layout)")
    except OSError as error:
        report.error(str(path), None, "", f"not a readable HDF5 file: {error}")


def validate_source_json_file(path: Path, report: Report, ctx: RunContext) -> None:
    """An imported record kept as JSON: one object."""
    data = _read(path, report, MAX_DOCUMENT_BYTES)
    if data is None:
        return
    try:
        value = decode_json(data, str(path))
    except LabrecordError as error:
        report.error(str(path), None, "", _without_prefix(str(error), path))
        return
    if not isinstance(value, dict):
        report.error(str(path), None, "", f"is {type(value).__name__}, expected a JSON object")


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
    SOURCE_FILE: validate_demo_file,  # the same layout: a data group of demo groups
    SOURCE_JSON_FILE: validate_source_json_file,
    VIDEOS_DIR: _no_check,
}


def validate_population_file(path: Path, report: Report) -> dict[str, Any]:
    """Validate ``populations/<name>.jsonl``; returns its name, the registered instance
    ids, the bytes read (``data``, None when unreadable) and the canonical text of each
    record (``records``), which is what the store loads."""
    registered: set[str] = set()
    references: list[tuple[int, str, str]] = []
    keys: dict[tuple[str, str], int] = {}
    records = KeptTexts()
    data = _read(path, report)
    for line, record in decode_jsonl(str(path), data or b"", _population_decoder, report,
                                     keep=records) if data is not None else ():
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
    return {"name": path.stem, "instances": registered, "data": data, "records": records}
