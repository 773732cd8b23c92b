"""Reading and writing run directories (``labrecord.run/1``).

:class:`RunWriter` is the one way producers (recorders, the simulator, tests) create runs:
``run.json`` is written atomically, events get monotone ``seq`` and are flushed at episode
boundaries, and reopening a run whose last log line was cut short reports the line
instead of dropping it.

Crash safety: logs are written in whole lines, and no event reaches the file before every
delivery receipt written before it is durable (the events log syncs the receipts log
first), so a writer killed at any point leaves a valid prefix: complete records, a run
still marked ``running``, at most one cut last line per log.  :meth:`RunWriter.open`
resumes such a run (docs/run-directory.md, "Crash safety").  One writer at a time: a
writer holds an exclusive lock on its run folder until it is closed.  A write that fails
(a full disk) cuts the log back to its last whole write and stops the writer, so nothing
is written twice and the run stays a resumable valid prefix.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from labrecord.errors import LabrecordError, SchemaVersionError, TruncatedLogError
from labrecord.fileio import Line, LineProblem, atomic_path, atomic_write_bytes, dumps, dumps_pretty, iter_lines
from labrecord.models import (
    RUN_SCHEMA, BaseEvent, EpisodeEnd, EpisodeStart, Event, FinalScores, ObservationReceipt,
    OnlineScore, RunManifest, Validity, check_run_id,
)
from labrecord.safeio import (
    MAX_DOCUMENT_BYTES, MAX_LOG_BYTES, MAX_MEASUREMENTS_BYTES, RecordProblem, decode_json, decode_record, link_problem,
    read_bounded, symlinks_allowed,
)

RUN_FILE = "run.json"
EVENTS_FILE = "events.jsonl"
OBSERVATIONS_FILE = "observations.jsonl"
MEASUREMENTS_FILE = "measurements.parquet"
ONLINE_SCORES_FILE = "online_scores.jsonl"
SCORES_FILE = "scores.json"
DEMO_FILE = "demo.hdf5"
#: an imported run's own record, as its source wrote it (``labrecord import``)
SOURCE_FILE = "source.hdf5"
#: an imported episode whose source is a database row (vla-eval): that row and its steps, as JSON
SOURCE_JSON_FILE = "source.json"
VIDEOS_DIR = "videos"
#: population registries live in this folder beside the runs
POPULATIONS_DIR = "populations"
#: files the store loads, in the order their bytes enter a run's content hash
LOADED_FILES = (RUN_FILE, EVENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE, SCORES_FILE, MEASUREMENTS_FILE)

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
    raw = decode_json(data, where)
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
    if not os.path.lexists(path):
        raise LabrecordError(f"{path}: missing run.json")
    return parse_manifest(read_bounded(path, MAX_DOCUMENT_BYTES), str(path))


def iter_events(path: str | os.PathLike[str], data: bytes | None = None) -> Iterator[tuple[int, BaseEvent]]:
    """Yield ``(line_number, event)`` of the log at ``path`` (or of its bytes ``data``,
    already read); the first bad line raises a one-line error."""
    for item in iter_lines(path, read_bounded(path, MAX_LOG_BYTES) if data is None else data):
        if not isinstance(item, Line):
            raise item
        yield item.number, _decode_event(item, path)


def decode_line(item: Line, path: str | os.PathLike[str], decoder: msgspec.json.Decoder[Any]) -> Any:
    """One record of a log through the strict line decoder (:func:`labrecord.safeio.decode_record`,
    the one validation uses); any problem is one :class:`LabrecordError` naming the line."""
    try:
        return decode_record(item.raw, decoder)[0]
    except RecordProblem as error:
        raise LabrecordError(f"{path}:{item.number}: {error}") from error
    except (msgspec.DecodeError, msgspec.ValidationError) as error:
        raise LabrecordError(f"{path}:{item.number}: {error}") from error


def _decode_event(item: Line, path: str | os.PathLike[str]) -> BaseEvent:
    return decode_line(item, path, _event_decoder)  # type: ignore[no-any-return]


def read_events(run_dir: str | os.PathLike[str]) -> list[BaseEvent]:
    return [event for _, event in iter_events(Path(run_dir) / EVENTS_FILE)]


def content_digest(parts: Iterable[tuple[str, Iterable[bytes]]]) -> str:
    """BLAKE2b over ``(file name, bytes)`` of a run's loaded files, in :data:`LOADED_FILES`
    order: the content hash the store keeps beside every run and audit verdict."""
    digest = hashlib.blake2b(digest_size=16)
    for name, chunks in parts:
        digest.update(name.encode() + b"\0")
        for chunk in chunks:
            digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def read_loaded_files(run_dir: Path) -> dict[str, bytes]:
    """The bytes of every loaded file the run has, each read once and within its size
    limit (a link, device or oversized file raises :class:`LabrecordError`)."""
    files = {}
    for name in LOADED_FILES:
        path = run_dir / name
        if os.path.lexists(path):
            limit = {RUN_FILE: MAX_DOCUMENT_BYTES, SCORES_FILE: MAX_DOCUMENT_BYTES,
                     MEASUREMENTS_FILE: MAX_MEASUREMENTS_BYTES}.get(name, MAX_LOG_BYTES)
            files[name] = read_bounded(path, limit)
    return files


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
    # hidden folders are a writer's unfinished creations (run ids never start with a dot)
    return sorted(p for p in root.iterdir() if not p.name.startswith(".") and p.is_dir()
                  and (os.path.lexists(p / RUN_FILE) or os.path.lexists(p / EVENTS_FILE)))


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class _WriteState:
    """Shared by the logs of one writer: the first failed write stops all of them."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.failure: str | None = None

    def check(self) -> None:
        if self.failure is not None:
            raise LabrecordError(f"{self.run_dir}: this writer stopped after a failed write ({self.failure}); "
                                 "nothing more is written — free space and resume the run with RunWriter.open")

    def fail(self, path: Path, error: OSError) -> LabrecordError:
        reason = error.strerror or str(error)
        self.failure = f"{path.name}: {reason}"
        return LabrecordError(f"{path}: write failed ({reason}); the file keeps its whole records up to the last "
                              "complete write, the run stays 'running', and this writer accepts no more writes — "
                              "free space and resume it with RunWriter.open")


class _JsonlAppender:
    """An append-only JSONL file written in whole lines.

    Records collect in memory and reach the file in one ``write`` of complete lines, so a
    killed writer leaves whole lines (at worst one cut line, if the kill lands inside a
    large write).  ``before_flush`` runs before anything is handed to the file: the events
    log uses it to make the receipts durable first.  A write or sync that fails (a full
    disk) cuts the file back to the end of its last complete write, drops what was
    pending and stops every log of the writer (``state``): nothing is written twice and
    the file stays a valid prefix.
    """

    #: pending bytes that trigger a write without waiting for a sync
    FLUSH_BYTES = 1 << 16

    def __init__(self, path: Path, state: _WriteState, before_flush: Callable[[], None] | None = None,
                 *, durable: bool = True) -> None:
        self.path = path
        #: False: :meth:`sync` writes what is pending without an fsync (a staged run)
        self.durable = durable
        self._fd: int | None = None
        self._pending = bytearray()
        self._unsynced = False
        self._before_flush = before_flush
        self._state = state
        #: length of the file up to the end of its last complete write
        self._size = 0

    def write(self, record: Any) -> None:
        self._state.check()
        self._pending += dumps(record) + b"\n"
        if len(self._pending) >= self.FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        self._state.check()
        if not self._pending:
            return
        if self._before_flush is not None:
            self._before_flush()
        data = bytes(self._pending)
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _no_follow(), 0o666)
                self._size = os.fstat(self._fd).st_size
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as error:
            raise self._failed(error) from error
        self._size += len(data)
        self._pending.clear()
        self._unsynced = True

    def _failed(self, error: OSError) -> LabrecordError:
        self._pending.clear()
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass  # at worst one cut last line, which RunWriter.open sets aside
        return self._state.fail(self.path, error)

    def sync(self) -> None:
        self.flush()
        if self._fd is not None and self._unsynced and self.durable:
            try:
                os.fsync(self._fd)
            except OSError as error:
                raise self._failed(error) from error
            self._unsynced = False

    def close(self) -> None:
        if self._state.failure is None:
            self.sync()
        self.release()

    def release(self) -> None:
        """Close the file without writing what is pending."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _no_follow() -> int:
    """``O_NOFOLLOW`` unless symbolic links are allowed (``--follow-symlinks``)."""
    return 0 if symlinks_allowed() else getattr(os, "O_NOFOLLOW", 0)


def _lock(run_dir: Path) -> int:
    """Hold the run folder's lock: an exclusive ``flock`` on the folder itself, never
    waiting (no lock file; the kernel drops it when the writer's process ends).  Returns
    the folder's descriptor, which holds the lock until closed."""
    import fcntl

    try:
        fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _no_follow())
    except OSError as error:
        raise LabrecordError(f"{run_dir}: cannot open the run directory: {error.strerror}") from error
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        os.close(fd)
        raise LabrecordError(f"{run_dir}: another writer has this run open; refused (one writer per run)") from error
    return fd


class _LogEnd(msgspec.Struct):
    """Where an existing events log stops."""

    last_seq: int = -1
    last_t: float = float("-inf")
    open_episode: int | None = None


def _check_log_intact(path: Path) -> _LogEnd:
    """The end of an existing events log; a truncated last line is refused."""
    end = _LogEnd()
    if not path.exists():
        return end
    for item in iter_lines(path, read_bounded(path, MAX_LOG_BYTES)):
        if isinstance(item, (TruncatedLogError, LineProblem)):
            raise item
        event = _decode_event(item, path)
        end.last_seq, end.last_t = event.seq, event.t
        if isinstance(event, EpisodeStart):
            end.open_episode = event.episode
        elif isinstance(event, EpisodeEnd):
            end.open_episode = None
    return end


def set_aside_cut_line(path: Path) -> bytes | None:
    """Move the cut last line of an interrupted log to ``.<name>.cut`` beside it (kept, not dropped).

    Returns the bytes moved, or None when the log ends with a whole line.
    """
    if not path.is_file():
        return None
    data = read_bounded(path, MAX_LOG_BYTES)
    if not data or data.endswith(b"\n"):
        return None
    start = data.rfind(b"\n") + 1
    aside = path.parent / f".{path.name}.cut"
    try:
        fd = os.open(aside, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _no_follow(), 0o666)
    except OSError as error:
        raise LabrecordError(f"{aside}: cannot set the cut last line aside: {error.strerror}") from error
    with os.fdopen(fd, "ab") as fh:
        fh.write(data[start:] + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.truncate(path, start)
    return data[start:]


#: ``episode_end`` reason of an episode cut short by a crash of its writer
INTERRUPTED = "interrupted"


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

    def __init__(self, run_dir: Path, document: RunDocument, last_seq: int = -1, last_t: float = float("-inf"),
                 *, lock: int | None = None, durable: bool = True) -> None:
        self.dir = run_dir
        #: False for a run staged by :meth:`create` with ``durable=False``
        self.durable = durable
        self.document = document
        self._last_seq = last_seq
        self._last_t = last_t
        #: the held lock of the run folder (see :func:`_lock`), taken here when not given; a
        #: staged run takes none (its staging folder is its importer's alone)
        self._lock = lock if lock is not None or not durable else _lock(run_dir)
        self._state = _WriteState(run_dir)
        self._observations = _JsonlAppender(run_dir / OBSERVATIONS_FILE, self._state, durable=durable)
        # an event may name a receipt: receipts are durable before any event reaches the disk
        self._events = _JsonlAppender(run_dir / EVENTS_FILE, self._state, before_flush=self._observations.sync,
                                      durable=durable)
        self._online = _JsonlAppender(run_dir / ONLINE_SCORES_FILE, self._state, durable=durable)
        self.closed = False
        #: cut last lines set aside by :meth:`open` (file name -> bytes)
        self.cut_lines: dict[str, bytes] = {}
        #: the episode a crash left open, closed by :meth:`open` as ``interrupted``
        self.interrupted_episode: int | None = None

    @property
    def manifest(self) -> RunManifest:
        return self.document.manifest

    # -- lifecycle -------------------------------------------------------------------
    @classmethod
    def create(cls, root: str | os.PathLike[str], manifest: RunManifest, extra: Mapping[str, Any] | None = None,
               *, durable: bool = True) -> RunWriter:
        """Create ``root/<run_id>/`` holding ``run.json`` (status ``running``).

        The folder is assembled under a hidden name and renamed into place, so a crash
        never leaves a run folder without its manifest.

        ``durable=False`` stages the run: ``root`` is a hidden staging folder no reader
        looks into, whose caller makes it durable as a whole (one
        :func:`~labrecord.fileio.sync_filesystem`) before renaming the finished run into
        place.  The writer then fsyncs nothing, creates the folder in place, takes no lock
        (the staging folder is held by its caller), writes each whole file straight to its
        name and ``run.json`` once, at :meth:`close`: a staged run is never read before it
        is closed and never resumed (a crash discards the whole staging folder, so there is
        no prefix to keep).
        """
        try:
            check_run_id(manifest.run_id)
        except ValueError as error:
            raise LabrecordError(str(error)) from error
        root = Path(root)
        run_dir = root / manifest.run_id
        if os.path.lexists(run_dir):
            raise LabrecordError(f"{run_dir}: run directory already exists; open it with RunWriter.open")
        if not durable:
            try:
                run_dir.mkdir()
            except OSError as error:
                raise LabrecordError(f"{run_dir}: cannot create the run directory: {error.strerror}") from error
            try:
                return cls(run_dir, RunDocument(manifest, extra), durable=False)
            except BaseException:
                run_dir.rmdir()
                raise
        import shutil

        staging = root / f".{manifest.run_id}.creating-{os.getpid()}"
        lock = None
        try:
            root.mkdir(parents=True, exist_ok=True)
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir()
            lock = _lock(staging)  # held from the start: the folder appears already locked
            atomic_write_bytes(staging / RUN_FILE, RunDocument(manifest, extra).to_bytes())
            os.rename(staging, run_dir)
        except (OSError, LabrecordError) as error:
            if lock is not None:
                os.close(lock)
            shutil.rmtree(staging, ignore_errors=True)
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise LabrecordError(f"{run_dir}: cannot create the run directory: {reason}") from error
        return cls(run_dir, RunDocument(manifest, extra), lock=lock)

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str]) -> RunWriter:
        """Reopen an existing run to append, marking it ``running`` until it is closed.

        A run its writer left ``running`` (killed, crashed) is resumed: a cut last line of
        each log is moved to ``.<log>.cut`` and listed in :attr:`cut_lines`, and an
        episode left open is ended with a ``validity`` fault and ``episode_end`` reason
        ``interrupted`` (so it stays unresolved, never a policy failure).  In a run that
        was closed, a truncated last line is reported instead (nothing is dropped).
        """
        run_dir = Path(run_dir)
        problem = link_problem(run_dir)
        if problem is not None:
            raise LabrecordError(f"{run_dir}: {problem}")
        if not run_dir.is_dir():
            raise LabrecordError(f"{run_dir}: no such run directory")
        lock = _lock(run_dir)  # before anything is read: a second writer changes nothing
        try:
            return cls._resume(run_dir, lock)
        except BaseException:
            os.close(lock)
            raise

    @classmethod
    def _resume(cls, run_dir: Path, lock: int) -> RunWriter:
        document = read_manifest(run_dir)
        interrupted = document.manifest.status == "running"
        cut_lines: dict[str, bytes] = {}
        if interrupted:
            for name in (EVENTS_FILE, OBSERVATIONS_FILE, ONLINE_SCORES_FILE):
                tail = set_aside_cut_line(run_dir / name)
                if tail is not None:
                    cut_lines[name] = tail
        end = _check_log_intact(run_dir / EVENTS_FILE)
        for name in (OBSERVATIONS_FILE, ONLINE_SCORES_FILE):
            if (run_dir / name).exists():
                for item in iter_lines(run_dir / name, read_bounded(run_dir / name, MAX_LOG_BYTES)):
                    if isinstance(item, (TruncatedLogError, LineProblem)):
                        raise item
        writer = cls(run_dir, document, end.last_seq, end.last_t, lock=lock)
        writer.cut_lines = cut_lines
        if document.manifest.status != "running":
            document.manifest.status = "running"  # type: ignore[assignment]
            writer.write_manifest()
        if interrupted and end.open_episode is not None:
            writer.interrupted_episode = end.open_episode
            t = max(end.last_t, 0.0)
            writer.emit(Validity, t=t, kind="service_fault", source="writer interrupted; resumed by RunWriter.open")
            writer.emit(EpisodeEnd, t=t, episode=end.open_episode, reason=INTERRUPTED,
                        physical_complete=False, valid_complete=False)
        return writer

    def _atomic(self, path: Path, write: Callable[[Path], object]) -> None:
        """Write a whole file through :func:`atomic_path`; a failure (a full disk) keeps the
        old file and stops the writer like a failed log write."""
        self._state.check()
        try:
            if self.durable:
                with atomic_path(path) as tmp:
                    write(tmp)
            else:
                write(path)
        except OSError as error:
            raise self._state.fail(path, error) from error

    def write_manifest(self) -> None:
        data = self.document.to_bytes()
        self._atomic(self.dir / RUN_FILE, lambda tmp: tmp.write_bytes(data))

    def sync(self) -> None:
        """Make everything appended so far durable (receipts first, then events)."""
        for log in (self._observations, self._events, self._online):
            log.sync()

    @property
    def failure(self) -> str | None:
        """Why the writer stopped (a failed write), or None."""
        return self._state.failure

    def close(self, status: str = "complete") -> None:
        """Sync the logs, mark the run ``status`` and release its lock.

        After a failed write nothing more is written: the run keeps its valid prefix and
        stays ``running`` (interrupted), to be resumed by :meth:`open`."""
        if self.closed:
            return
        try:
            if self._state.failure is None:
                for log in (self._observations, self._events, self._online):
                    log.close()
                self.document.manifest.status = status  # type: ignore[assignment]
                self.write_manifest()
        finally:
            for log in (self._observations, self._events, self._online):
                log.release()
            if self._lock is not None:
                os.close(self._lock)
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
        self._state.check()
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
        data = dumps_pretty(scores)
        self._atomic(self.dir / SCORES_FILE, lambda tmp: tmp.write_bytes(data))

    def write_measurements(self, table: Any) -> None:
        """Write a ``pyarrow.Table`` of measurements atomically, after the logs it covers."""
        import pyarrow.parquet as pq

        self.sync()
        self._atomic(self.dir / MEASUREMENTS_FILE, lambda tmp: pq.write_table(table, tmp, compression="zstd"))

    def write_file(self, name: str, write: Callable[[Path], object]) -> Path:
        """Write the run's file ``name`` (a path inside the run, its folder created) whole:
        ``write(tmp)`` fills a temporary file that then becomes ``name`` atomically (in a
        staged run, ``write`` is handed ``name`` itself)."""
        path = self.dir / name
        if path.parent != self.dir:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._atomic(path, write)
        return path

    def path(self, name: str) -> Path:
        return self.dir / name
