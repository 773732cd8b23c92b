"""Writing imported records as run directories, the same way for every source kind.

A source (:class:`SourceFile`) lists :class:`SourceRecord` entries; :func:`import_records`
turns each into one run through :class:`~labrecord.rundir.RunWriter`:

* ``run.json`` with the ``source`` block and only what the source states (the rest null);
* ``events.jsonl``: one episode, ended ``success`` / ``failure`` when the source records
  the outcome, ``outcome_unknown`` (an unresolved episode, never a failure) when it does not;
* ``measurements.parquet`` when the record's state streams cover the measurement columns
  of the contract named by ``--family`` (``evaluation.measurements`` is ``recorded``);
  otherwise ``evaluation.measurements`` is ``none`` and the run is scored unaudited;
* ``source.hdf5`` (or the kind's own file): the record itself, kept as the source wrote it;
* ``videos/<name>.mp4``: the episode's video files, when the source has them.

Re-importing is idempotent: a run whose ``source.content_hash`` matches is left alone; a
run of the same id holding other content is refused for that record.  The episode set of
the source is registered as a population (``populations/<name>.jsonl``) so that a record
that failed to import stays in the denominators as missing; so do the members of the
source's declared episode set (``SourceFile.expected``) that it holds no record of (the
episodes of a crashed shard): they are listed as ``missing``, never written as failures.
An episode the source marks as errored ends on an evaluator-side fault (a ``validity``
event and ``episode_end.reason`` ``service_fault`` or ``transport_fault``): unresolved.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.models import (
    ActionSpec, EpisodeEnd, EpisodeStart, Evaluation, Instance, Population, RunManifest, Seeds, Source, System,
    Task, Validity,
)
from labrecord.rundir import RUN_FILE, SOURCE_FILE, VIDEOS_DIR, RunWriter, read_manifest, utc_now

#: ``episode_end`` reason of a record whose source does not say whether it succeeded
OUTCOME_UNKNOWN = "outcome_unknown"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class ImportOptions:
    """What the user states about a source that the source itself does not say.

    ``family`` names the task contract whose measurement columns the state streams are
    mapped to; ``control_hz`` the control rate; ``system`` / ``system_kind`` who acted;
    ``start_seed`` the first seed of an evaluation that numbers its episodes' seeds from
    it without recording them (lerobot-eval's ``--seed``).  Anything left None stays
    unknown in the runs.
    """

    family: str | None = None
    control_hz: float | None = None
    system: str | None = None
    system_kind: str | None = None
    start_seed: int | None = None
    #: the task instance the episodes ran on, in the family's ``task.variant`` terms
    #: (docs/contracts.md; an optional ``condition`` goes to ``task.condition``): the
    #: contract replays the measurements against it, so without it none are written
    instance: dict[str, Any] | None = None
    evaluation_version: str = "import/1"
    #: runs written at once
    threads: int = 4
    #: runs staged between two filesystem syncs (:class:`Staging`)
    batch: int = 256


@dataclass
class SourceRecord:
    """One episode of a source, as read (not yet written)."""

    name: str                      # "data/demo_3"
    index: int                     # the episode index the source gives it
    content_hash: str
    attrs: dict[str, Any]
    num_samples: int
    success: bool | None
    seed: int | None = None
    task_id: str | None = None
    action_dim: int | None = None
    #: measurement columns found in the record (name -> float/bool array of num_samples)
    columns: dict[str, Any] = field(default_factory=dict)
    #: writes the record's own data into ``path``, a new file that the run's writer then
    #: places in the run directory as ``copy_name``: ``copy_to(path, run_id)``
    copy_to: Callable[[Path, str], None] | None = None
    copy_name: str = SOURCE_FILE
    #: added to ``task.variant`` (the episode's instruction, ...)
    variant: dict[str, Any] = field(default_factory=dict)
    #: the population member (and run id component) when it is not the record name's last part
    instance_id: str | None = None
    #: an evaluator-side fault the source reports for the episode: (validity kind, source
    #: text); the episode ends on that kind and is unresolved, whatever ``success`` says
    fault: tuple[str, str] | None = None
    #: the episode's runtime on ``runtime_clock`` when the source measured it
    runtime_s: float | None = None
    runtime_clock: str | None = None
    #: video files of the episode: name in ``videos/`` (without .mp4) -> file to copy
    videos: dict[str, Path] = field(default_factory=dict)
    #: ``seeds.policy``, when the source states it
    policy_seed: int | None = None


@dataclass
class Member:
    """A member of the episode set a source declares (whether or not it holds its record)."""

    instance_id: str
    task_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass
class SourceFile:
    """An opened source: its records and what it declares about itself."""

    kind: str
    path: str
    stem: str
    format_version: str | None
    task_id: str | None
    control_hz: float | None
    records: list[SourceRecord | LabrecordError]
    close: Callable[[], None] = lambda: None
    #: source-level attributes (env_args ...), kept in task.variant
    variant: dict[str, Any] = field(default_factory=dict)
    #: the episode set the source declares (its work queue, task x episode x seed), when it
    #: declares one; members without a record are imported as ``missing``
    expected: list[Member] | None = None
    #: the population file name; default ``<kind>-<stem>``
    population: str | None = None

    def __enter__(self) -> SourceFile:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@dataclass
class ImportRow:
    record: str
    run_id: str | None
    status: str  # imported | unchanged | error | missing (a declared member the source holds no record of)
    outcome: str | None = None
    measurements: str | None = None
    message: str | None = None


@dataclass
class ImportSummary:
    kind: str
    source: str
    out: str
    population: str | None
    rows: list[ImportRow] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [row.message for row in self.rows if row.status == "error" and row.message]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {"imported": 0, "unchanged": 0, "error": 0, "missing": 0}
        for row in self.rows:
            out[row.status] = out.get(row.status, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "out": self.out, "population": self.population,
                "counts": self.counts(), "errors": self.errors,
                "runs": [row.__dict__ for row in self.rows]}


def safe_name(text: str) -> str:
    """``text`` as a run id component (letters, digits, ``._-``)."""
    return _UNSAFE.sub("-", text).strip("-.") or "source"


def run_id_of(source: SourceFile, record_name: str) -> str:
    return f"{source.kind}-{safe_name(source.stem)}-{instance_of(record_name)}"[:128]


def population_of(source: SourceFile) -> str:
    return source.population or f"{source.kind}-{safe_name(source.stem)}"


def instance_of(record_name: str) -> str:
    return safe_name(record_name.rpartition("/")[2])


def _key(record: SourceRecord) -> str:
    """The record's name as a population member / run id component."""
    return record.instance_id or record.name


def _manifest(source: SourceFile, record: SourceRecord, options: ImportOptions, run_id: str,
              measured: bool) -> RunManifest:
    task_id = record.task_id or source.task_id or "unknown"
    family = options.family or source.kind
    hz = options.control_hz if options.control_hz is not None else source.control_hz
    condition, stated = split_instance(options.instance or {})
    return RunManifest(
        run_id=run_id,
        created_at=utc_now(),
        task=Task(family=family, task_id=task_id, version="unknown", condition=condition,
                  variant={**source.variant, **record.variant, **stated}),
        system=System(name=options.system or "unknown", kind=options.system_kind,  # type: ignore[arg-type]
                      action_spec=ActionSpec(representation=None, dim=record.action_dim or 0, mode=None,
                                             units="unknown", control_hz=hz)),
        evaluation=Evaluation(version=options.evaluation_version,
                              population=Population(name=population_of(source), instance_id=instance_of(_key(record))),
                              measurements="recorded" if measured else "none"),
        seeds=Seeds(task_state=record.seed, policy=record.policy_seed),
        source=Source(kind=source.kind, path=source.path, format_version=source.format_version,
                      record=record.name, content_hash=record.content_hash, attrs=record.attrs),
    )


def split_instance(instance: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(task.condition, task.variant entries)`` of a stated task instance (``ImportOptions.instance``)."""
    return instance.get("condition", "basic"), {k: v for k, v in instance.items() if k != "condition"}


def _measurement_table(record: SourceRecord, family: str | None, hz: float | None,
                       instance: dict[str, Any] | None) -> tuple[Any, list[str]]:
    """The measurements table, or None and what is missing for it: the required columns
    the record lacks, else the control rate or the task instance the user did not state."""
    from labrecord.measurements import FAMILY_COLUMNS

    if family is None or family not in FAMILY_COLUMNS:
        return None, []
    required = FAMILY_COLUMNS[family]
    missing = sorted(c for c in required if c not in record.columns)
    if not missing and hz is None:
        missing = ["control rate (give --control-hz)"]
    if not missing and instance is None:
        missing = ["task instance (give --instance)"]
    if missing or hz is None or record.num_samples == 0:
        return None, missing
    import numpy as np
    import pyarrow as pa

    step = np.arange(record.num_samples, dtype=np.int64)
    columns: dict[str, Any] = {"step": step, "t": step / float(hz)}
    for name, values in record.columns.items():
        columns[name] = np.asarray(values, dtype=bool if required.get(name) == "bool" else np.float64)
    return pa.table(columns), []


def _existing(run_dir: Path, record: SourceRecord, where: str) -> str | None:
    """The declared measurement stream of the run when ``run_dir`` already holds this record
    (it is left alone), None when it holds nothing usable (an interrupted import is removed
    to be written again); refuses other content."""
    if not os.path.lexists(run_dir):
        return None
    if not (run_dir / RUN_FILE).is_file():
        raise LabrecordError(f"{where}: {run_dir} exists and is not a run directory; remove it or use another --out")
    document = read_manifest(run_dir)
    held = document.manifest.source
    if held is None or held.content_hash != record.content_hash:
        have = "no source" if held is None else held.content_hash
        raise LabrecordError(f"{where}: run {run_dir.name} already holds other content ({have}, this record is "
                             f"{record.content_hash}); remove it or use another --out")
    if document.manifest.status == "complete":
        return document.manifest.evaluation.measurements
    shutil.rmtree(run_dir)  # an import cut short: written again from the source
    return None


def _write_run(source: SourceFile, record: SourceRecord, out: Path, options: ImportOptions,
               staging: Path) -> ImportRow:
    """Stage the run of ``record`` in ``staging`` (status ``imported``), unless ``out``
    already holds it (``unchanged``); :meth:`Staging.place` moves it into ``out``."""
    where = f"{source.path} {record.name}"
    run_id = run_id_of(source, _key(record))
    held = _existing(out / run_id, record, where)
    if held is not None:
        return ImportRow(record.name, run_id, "unchanged", _outcome(record), held)
    hz = options.control_hz if options.control_hz is not None else source.control_hz
    table, missing = _measurement_table(record, options.family, hz, options.instance)
    manifest = _manifest(source, record, options, run_id, table is not None)
    outcome = _outcome(record)
    with RunWriter.create(staging, manifest, durable=False) as run:
        end_t = record.num_samples / hz if hz else 0.0
        complete = record.success is True and record.fault is None
        runtime_s, clock = (end_t, "sim") if hz else (None, None)
        if record.runtime_s is not None:
            runtime_s, clock = record.runtime_s, record.runtime_clock
        run.emit(EpisodeStart, t=0.0, episode=record.index)
        if record.fault is not None:
            run.emit(Validity, t=end_t, kind=record.fault[0], source=record.fault[1])
        run.emit(EpisodeEnd, t=end_t, episode=record.index, reason=outcome,
                 physical_complete=complete, valid_complete=complete,
                 runtime_s=runtime_s, runtime_clock=clock)
        if record.copy_to is not None:
            copy_to = record.copy_to
            run.write_file(record.copy_name, lambda tmp: copy_to(tmp, run_id))
        for name, video in sorted(record.videos.items()):
            run.write_file(f"{VIDEOS_DIR}/{safe_name(name)}.mp4", functools.partial(shutil.copyfile, video))
        if table is not None:
            run.write_measurements(table)
    note = None if table is not None or not missing else "unaudited: no " + ", ".join(missing[:4]) + (
        " ..." if len(missing) > 4 else "")
    return ImportRow(record.name, run_id, "imported", outcome, manifest.evaluation.measurements, note)


class Staging:
    """A hidden folder inside ``out`` where an import assembles runs before they appear.

    Staged runs are written without fsyncs; :meth:`place` makes a whole batch durable
    with one filesystem sync (:func:`~labrecord.fileio.sync_filesystem`), then renames
    each run into ``out`` and fsyncs ``out`` once.  The sync of a batch may run while the
    next batch is staged (:meth:`start_sync`): it waits on the disk, the staging on the
    processor.  So nothing appears in ``out`` before its contents are on disk, and an
    import killed at any point leaves whole runs and at most its staging folder.  The import holds an exclusive ``flock`` on its staging
    folder; opening a new one removes every staging folder left behind whose lock is
    free (its import is gone) and keeps those still held (an import running beside
    this one).  The creation and that sweep happen under a lock on ``out`` itself, so a
    folder just created is never swept before its import has locked it.
    """

    PREFIX, SUFFIX = ".import-", ".staging"

    def __init__(self, out: Path) -> None:
        self.out = out
        try:
            self._open(out)
        except OSError as error:
            raise LabrecordError(f"{out}: cannot stage the import there: {error.strerror or error}") from error

    def _open(self, out: Path) -> None:
        import fcntl
        import tempfile

        out.mkdir(parents=True, exist_ok=True)
        out_fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(out_fd, fcntl.LOCK_EX)
            for leftover in out.glob(f"{self.PREFIX}*{self.SUFFIX}"):
                self._remove_if_abandoned(leftover)
            self.root = Path(tempfile.mkdtemp(prefix=self.PREFIX, suffix=self.SUFFIX, dir=out))
            self._fd = os.open(self.root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(out_fd)  # releases the lock on out

    @staticmethod
    def _remove_if_abandoned(folder: Path) -> None:
        import fcntl

        if folder.is_symlink() or not folder.is_dir():
            return
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another import is staging here
        finally:
            os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)

    def start_sync(self, pool: Any) -> Any:
        """Start the filesystem sync of everything staged so far on the executor ``pool``;
        its future is what :meth:`place` waits on before placing those runs."""
        from labrecord.fileio import sync_filesystem

        return pool.submit(sync_filesystem, self.root)

    def place(self, staged: list[tuple[SourceRecord, ImportRow]], synced: Any = None) -> None:
        """Make the staged runs of ``staged`` (rows ``imported``) durable and move them into
        ``out``; ``synced`` is the future of a sync started after they were all written
        (:meth:`start_sync`), or None to sync here.  A run another import placed first
        with the same content becomes ``unchanged``; one with other content is refused
        (an ``error`` row)."""
        from labrecord.fileio import fsync_dir, sync_filesystem

        staged = [(record, row) for record, row in staged if row.status == "imported" and row.run_id]
        if synced is not None:
            synced.result()  # raises what the sync raised: nothing is placed
        elif staged:
            sync_filesystem(self.root)
        if not staged:
            return
        for record, row in staged:
            assert row.run_id is not None
            source = self.root / row.run_id
            try:
                os.rename(source, self.out / row.run_id)
            except OSError as error:
                # the name was taken since the check before staging (an import beside this one)
                try:
                    held = _existing(self.out / row.run_id, record, f"{row.record}")
                except LabrecordError as refused:
                    row.status, row.message = "error", str(refused)
                else:
                    if held is not None:
                        row.status, row.measurements = "unchanged", held
                    elif not self._retry(source, self.out / row.run_id):
                        row.status, row.message = "error", (
                            f"{self.out / row.run_id}: cannot place the imported run: {error.strerror}")
                shutil.rmtree(source, ignore_errors=True)
        fsync_dir(self.out)

    @staticmethod
    def _retry(source: Path, target: Path) -> bool:
        """Rename again once an unfinished run in the way was removed (:func:`_existing`)."""
        try:
            os.rename(source, target)
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Remove the staging folder (whatever is left in it was not placed) and unlock it."""
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._fd)

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _outcome(record: SourceRecord) -> str:
    if record.fault is not None:
        return record.fault[0]
    if record.success is None:
        return OUTCOME_UNKNOWN
    return "success" if record.success else "failure"


def import_records(source: SourceFile, out: str | os.PathLike[str], options: ImportOptions,
                   progress: Callable[[int], None] | None = None) -> ImportSummary:
    """Write every record of ``source`` under ``out`` and register its episode set."""
    from labrecord.registry import register_population

    out = Path(out)
    summary = ImportSummary(source.kind, source.path, str(out), population_of(source))
    instances: list[Any] = []

    def write(staging: Path, entry: SourceRecord | LabrecordError) -> ImportRow:
        if isinstance(entry, LabrecordError):
            return ImportRow(getattr(entry, "record", "?"), None, "error", message=str(entry))
        try:
            return _write_run(source, entry, out, options, staging)
        except LabrecordError as error:
            return ImportRow(entry.name, None, "error", message=str(error))

    # the runs are independent: a few threads overlap their file creations (the kernel's
    # part of the writing); rows come back in the source's order, a batch at a time
    from concurrent.futures import ThreadPoolExecutor

    held: set[str] = set()
    rows: list[ImportRow] = []
    batch = max(1, options.batch)
    # the staging folder is entered first so it closes last: when a record fails, the
    # threads still writing the rest of its batch finish before the folder is removed
    # (closed first, a late write would create it again and leave it behind)
    with Staging(out) as staging, ThreadPoolExecutor(max_workers=max(1, options.threads)) as pool, \
            ThreadPoolExecutor(max_workers=1) as syncer:
        # batch k is synced while batch k+1 is staged, and placed once both are done
        waiting: tuple[list[tuple[SourceRecord, ImportRow]], Any] | None = None
        for start in range(0, len(source.records), batch):
            entries = source.records[start:start + batch]
            done = list(pool.map(functools.partial(write, staging.root), entries))
            if waiting is not None:
                staging.place(*waiting)
            waiting = ([(e, row) for e, row in zip(entries, done) if not isinstance(e, LabrecordError)],
                       staging.start_sync(syncer))
            rows.extend(done)
            if progress is not None:
                progress(len(entries))
        if waiting is not None:
            staging.place(*waiting)
    for entry, row in zip(source.records, rows):
        summary.rows.append(row)
        if isinstance(entry, LabrecordError):
            instance = instance_of(getattr(entry, "instance_id", None) or row.record)
            task_id = source.task_id
        else:
            instance, task_id = instance_of(_key(entry)), entry.task_id or source.task_id
        held.add(instance)
        if source.expected is None:
            instances.append(Instance(instance_id=instance, task_id=task_id))
    for member in source.expected or ():
        # the declared set, in its own order; a member without a record stays in every
        # denominator as missing
        instance = instance_of(member.instance_id)
        instances.append(Instance(instance_id=instance, task_id=member.task_id, fields=member.fields))
        if instance not in held:
            summary.rows.append(ImportRow(member.instance_id, None, "missing",
                                          message="the source holds no record of this declared episode"))
    if instances:
        register_population(out, population_of(source), instances)
    return summary


class RecordError(LabrecordError):
    """A record of a source that cannot be imported; ``record`` names it (``instance_id``
    the population member, when that is not the record name's last part)."""

    def __init__(self, message: str, record: str, instance_id: str | None = None) -> None:
        super().__init__(message)
        self.record = record
        self.instance_id = instance_id
