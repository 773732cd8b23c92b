"""Reading and writing run directories (``labrecord.run/1``).

:class:`RunWriter` is the one way producers (recorders, the simulator, tests) create runs:
``run.json`` is written atomically, events get monotone ``seq`` and are flushed at episode
boundaries, and reopening a run whose last log line was cut short reports the line
instead of dropping it.
"""
from __future__ import annotations

import datetime as _dt
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypeVar

import msgspec

from labrecord.errors import LabrecordError, SchemaVersionError, TruncatedLogError
from labrecord.fileio import Line, LineProblem, atomic_path, atomic_write_bytes, dumps, dumps_pretty, iter_lines
from labrecord.models import (
    RUN_SCHEMA, BaseEvent, EpisodeEnd, EpisodeStart, Event, FinalScores, ObservationReceipt,
    OnlineScore, RunManifest, check_run_id,
)

RUN_FILE = "run.json"
EVENTS_FILE = "events.jsonl"
OBSERVATIONS_FILE = "observations.jsonl"
MEASUREMENTS_FILE = "measurements.parquet"
ONLINE_SCORES_FILE = "online_scores.jsonl"
SCORES_FILE = "scores.json"
DEMO_FILE = "demo.hdf5"
VIDEOS_DIR = "videos"
#: population registries live in this folder beside the runs
POPULATIONS_DIR = "populations"

SUPPORTED_MAJOR = 1
_SCHEMA = re.compile(r"^labrecord\.run/(\d+)(?:\.(\d+))?$")

E = TypeVar("E", bound=BaseEvent)
_event_decoder = msgspec.json.Decoder(Event)


def check_schema_version(schema: Any, where: str) -> None:
    """Refuse a run schema whose major version is newer than this labrecord reads."""
    match = _SCHEMA.match(schema) if isinstance(schema, str) else None
    if match is None:
        raise SchemaVersionError(f"{where}: schema {schema!r} is not a labrecord run schema (expected {RUN_SCHEMA!r})")
    major = int(match.group(1))
    if major > SUPPORTED_MAJOR:
        raise SchemaVersionError(
            f"{where}: schema {schema} is newer than {RUN_SCHEMA}, the newest this labrecord reads; "
            "upgrade labrecord (pip install -U labrecord)"
        )
    if major < SUPPORTED_MAJOR:
        raise SchemaVersionError(f"{where}: schema {schema} is older than {RUN_SCHEMA} and has no migration")


def _merge_known(raw: Any, known: Any) -> Any:
    """Overlay the typed fields on the raw document so unknown fields survive a round trip."""
    if isinstance(raw, dict) and isinstance(known, dict):
        merged = dict(raw)
        for key, value in known.items():
            merged[key] = _merge_known(raw.get(key), value)
        return merged
    return known


class RunDocument:
    """A typed ``run.json`` plus the raw document it came from (for unknown fields)."""

    def __init__(self, manifest: RunManifest, raw: Mapping[str, Any] | None = None) -> None:
        self.manifest = manifest
        self.raw: dict[str, Any] = dict(raw or {})

    def to_builtins(self) -> dict[str, Any]:
        return _merge_known(self.raw, msgspec.to_builtins(self.manifest))

    def to_bytes(self) -> bytes:
        return dumps_pretty(self.to_builtins())


def parse_manifest(data: bytes, where: str) -> RunDocument:
    """Decode ``run.json`` bytes; raises :class:`LabrecordError` naming ``where``."""
    if not data.strip():
        raise LabrecordError(f"{where}: empty file")
    try:
        raw = msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise LabrecordError(f"{where}: invalid JSON: {error}") from error
    if not isinstance(raw, dict):
        raise LabrecordError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    check_schema_version(raw.get("schema"), where)
    try:
        manifest = msgspec.convert(raw, RunManifest)
    except msgspec.ValidationError as error:
        raise LabrecordError(f"{where}: {error}") from error
    try:
        check_run_id(manifest.run_id)
    except ValueError as error:
        raise LabrecordError(f"{where}: {error}") from error
    return RunDocument(manifest, raw)


def read_manifest(run_dir: str | os.PathLike[str]) -> RunDocument:
    path = Path(run_dir) / RUN_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError as error:
        raise LabrecordError(f"{path}: missing run.json") from error
    return parse_manifest(data, str(path))


def iter_events(path: str | os.PathLike[str]) -> Iterator[tuple[int, BaseEvent]]:
    """Yield ``(line_number, event)``; the first bad line raises a one-line error."""
    for item in iter_lines(path):
        if not isinstance(item, Line):
            raise item
        try:
            yield item.number, _event_decoder.decode(item.raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise LabrecordError(f"{path}:{item.number}: {error}") from error


def read_events(run_dir: str | os.PathLike[str]) -> list[BaseEvent]:
    return [event for _, event in iter_events(Path(run_dir) / EVENTS_FILE)]


def is_run_dir(path: Path) -> bool:
    return (path / RUN_FILE).is_file()


def find_run_dirs(root: str | os.PathLike[str]) -> list[Path]:
    """Run directories at ``root`` (itself a run) or directly below it, sorted by name.

    A folder with an events log but no run.json counts too, so a broken run is reported
    by whoever reads it instead of being passed over.
    """
    root = Path(root)
    if is_run_dir(root):
        return [root]
    if not root.is_dir():
        raise LabrecordError(f"{root}: no such directory")
    return sorted(p for p in root.iterdir() if p.is_dir() and (is_run_dir(p) or (p / EVENTS_FILE).is_file()))


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _JsonlAppender:
    """An append-only JSONL file; every record ends with a newline."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: IO[bytes] | None = None

    def write(self, record: Any) -> None:
        if self._fh is None:
            self._fh = open(self.path, "ab")
        self._fh.write(dumps(record) + b"\n")

    def sync(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self.sync()
            self._fh.close()
            self._fh = None


def _check_log_intact(path: Path) -> tuple[int, float]:
    """Return (last seq, last t) of an existing events log; refuse a truncated last line."""
    last_seq, last_t = -1, float("-inf")
    if not path.exists():
        return last_seq, last_t
    for item in iter_lines(path):
        if isinstance(item, (TruncatedLogError, LineProblem)):
            raise item
        try:
            event = _event_decoder.decode(item.raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            raise LabrecordError(f"{path}:{item.number}: {error}") from error
        last_seq, last_t = event.seq, event.t
    return last_seq, last_t


class RunWriter:
    """Creates or reopens one run directory and appends its records.

    Example::

        with RunWriter.create("runs", manifest) as run:
            run.emit(EpisodeStart, t=0.0, episode=0)
            run.emit(Choice, t=0.4, opp="o1", op=Operation("add", "w50", "pan"), first=True)
            run.emit(EpisodeEnd, t=9.0, episode=0, reason="success",
                     physical_complete=True, valid_complete=True)
        # leaving the block marks the run complete (aborted if an exception escaped)
    """

    def __init__(self, run_dir: Path, document: RunDocument, last_seq: int = -1, last_t: float = float("-inf")) -> None:
        self.dir = run_dir
        self.document = document
        self._last_seq = last_seq
        self._last_t = last_t
        self._events = _JsonlAppender(run_dir / EVENTS_FILE)
        self._observations = _JsonlAppender(run_dir / OBSERVATIONS_FILE)
        self._online = _JsonlAppender(run_dir / ONLINE_SCORES_FILE)
        self.closed = False

    @property
    def manifest(self) -> RunManifest:
        return self.document.manifest

    # -- lifecycle -------------------------------------------------------------------
    @classmethod
    def create(cls, root: str | os.PathLike[str], manifest: RunManifest, extra: Mapping[str, Any] | None = None) -> RunWriter:
        """Create ``root/<run_id>/`` and write ``run.json`` (status ``running``)."""
        try:
            check_run_id(manifest.run_id)
        except ValueError as error:
            raise LabrecordError(str(error)) from error
        run_dir = Path(root) / manifest.run_id
        if run_dir.exists():
            raise LabrecordError(f"{run_dir}: run directory already exists; open it with RunWriter.open")
        run_dir.mkdir(parents=True)
        writer = cls(run_dir, RunDocument(manifest, extra))
        writer.write_manifest()
        return writer

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str]) -> RunWriter:
        """Reopen an existing run to append; a truncated last events line is reported."""
        run_dir = Path(run_dir)
        document = read_manifest(run_dir)
        last_seq, last_t = _check_log_intact(run_dir / EVENTS_FILE)
        for name in (OBSERVATIONS_FILE, ONLINE_SCORES_FILE):
            if (run_dir / name).exists():
                for item in iter_lines(run_dir / name):
                    if isinstance(item, (TruncatedLogError, LineProblem)):
                        raise item
        return cls(run_dir, document, last_seq, last_t)

    def write_manifest(self) -> None:
        atomic_write_bytes(self.dir / RUN_FILE, self.document.to_bytes())

    def close(self, status: str = "complete") -> None:
        if self.closed:
            return
        for log in (self._events, self._observations, self._online):
            log.close()
        self.document.manifest.status = status  # type: ignore[assignment]
        self.write_manifest()
        self.closed = True

    def __enter__(self) -> RunWriter:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self.closed:
            self.close("complete" if exc_type is None else "aborted")

    # -- events ----------------------------------------------------------------------
    @property
    def next_seq(self) -> int:
        return self._last_seq + 1

    def emit(self, event_type: type[E], /, *, t: float, **fields: Any) -> E:
        """Build an event of ``event_type`` with the next ``seq`` and append it.

        ``event_type`` is positional-only so events with a ``kind`` field (violation,
        validity) can pass it as a keyword.
        """
        event = event_type(seq=self.next_seq, t=t, **fields)
        self.append(event)
        return event

    def append(self, event: BaseEvent) -> None:
        """Append a fully formed event; ``seq`` must grow and ``t`` must not go back."""
        if self.closed:
            raise LabrecordError(f"{self.dir}: run is closed")
        if event.seq <= self._last_seq:
            raise LabrecordError(f"{self.dir / EVENTS_FILE}: seq {event.seq} does not follow {self._last_seq}")
        if event.t < self._last_t:
            raise LabrecordError(f"{self.dir / EVENTS_FILE}: t {event.t} goes back from {self._last_t} at seq {event.seq}")
        self._events.write(event)
        self._last_seq, self._last_t = event.seq, event.t
        if isinstance(event, (EpisodeStart, EpisodeEnd)):
            self._events.sync()

    # -- other records ---------------------------------------------------------------
    def observation(self, receipt: ObservationReceipt) -> None:
        self._observations.write(receipt)

    def online_score(self, snapshot: OnlineScore) -> None:
        self._online.write(snapshot)
        self._online.sync()

    def write_scores(self, scores: FinalScores) -> None:
        atomic_write_bytes(self.dir / SCORES_FILE, dumps_pretty(scores))

    def write_measurements(self, table: Any) -> None:
        """Write a ``pyarrow.Table`` of measurements atomically."""
        import pyarrow.parquet as pq

        with atomic_path(self.dir / MEASUREMENTS_FILE) as tmp:
            pq.write_table(table, tmp, compression="zstd")

    def path(self, name: str) -> Path:
        return self.dir / name
