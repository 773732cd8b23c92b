"""The batch commit of ``labrecord import``: runs are staged in a hidden folder of ``--out``,
made durable a batch at a time, then renamed into place.

The sources here are built by hand (:func:`source_of`): ``n`` records ``ep0`` ... whose
own data is a few bytes, so each run directory is worked out exactly: ``run.json``,
``events.jsonl`` (episode_start, episode_end) and ``source.json`` holding ``record <k>``.
With ``batch=3`` a source of 10 records is staged as batches 0-2, 3-5, 6-8, 9; batch k is
placed once batch k+1 is staged, so a failure while batch 2 is staged leaves batch 0
(three runs) in ``out/``, batch 1 still staged (never visible), and nothing half-written.
"""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.imports.runs import ImportOptions, SourceFile, SourceRecord, Staging, import_records
from labrecord.rundir import EVENTS_FILE, RUN_FILE, SOURCE_JSON_FILE, find_run_dirs, read_events, read_manifest

ROOT = Path(__file__).resolve().parents[3]


class Boom(KeyboardInterrupt):
    """The import is interrupted (Ctrl-C) while a record is written."""


def source_of(n: int, *, fail_at: int | None = None, delay: float = 0.0, salt: str = "",
              hook: Any = None, io_error_at: int | None = None) -> SourceFile:
    """A source of ``n`` one-step records; writing record ``fail_at`` raises :class:`Boom`,
    writing record ``io_error_at`` fails with EIO."""
    def record(k: int) -> SourceRecord:
        def copy(path: Path, run_id: str) -> None:
            if delay:
                time.sleep(delay)
            if k == fail_at:
                raise Boom()
            if k == io_error_at:
                raise OSError(5, "Input/output error")
            if hook is not None:
                hook(k)
            path.write_bytes(f"record {k}{salt}\n".encode())
        return SourceRecord(name=f"ep{k}", index=k, content_hash=f"sha256:{k}{salt}", attrs={"k": k}, num_samples=1,
                            success=k % 2 == 0, copy_to=copy, copy_name=SOURCE_JSON_FILE)
    return SourceFile(kind="robomimic", path="/data/hand.hdf5", stem="hand", format_version=None, task_id="t",
                      control_hz=10.0, records=[record(k) for k in range(n)])


def placed(out: Path) -> list[str]:
    return [p.name for p in find_run_dirs(out)]


def hidden(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


def assert_whole(out: Path) -> None:
    """Every run in ``out`` is complete: closed manifest, both events, its record's bytes."""
    for run in find_run_dirs(out):
        manifest = read_manifest(run).manifest
        assert manifest.status == "complete", run
        assert [type(e).__name__ for e in read_events(run)] == ["EpisodeStart", "EpisodeEnd"]
        k = manifest.source.attrs["k"]  # type: ignore[union-attr]
        assert (run / SOURCE_JSON_FILE).read_bytes().startswith(f"record {k}".encode())


def test_the_staging_folder_is_removed_only_after_the_writes_of_a_failed_batch_end(tmp_path: Path, monkeypatch) -> None:
    """Record 0 fails at once while records 1 and 2 of its batch are still being written
    (each waits 0.3 s inside its write).  The staging folder must be removed only once
    those writes have ended: a file created while the folder is being removed keeps it
    from being removed, and it stays behind.  Checked at the moment of removal: no write
    is running, and afterwards nothing is left."""
    from labrecord.imports import runs as runs_module

    out = tmp_path / "runs"
    running: list[int] = []
    at_close: list[int] = []

    def slow_siblings(k: int) -> None:
        if k != 0:
            running.append(k)
            time.sleep(0.3)
            running.remove(k)

    close = runs_module.Staging.close

    def watched_close(self) -> None:
        at_close.append(len(running))
        close(self)

    monkeypatch.setattr(runs_module.Staging, "close", watched_close)
    with pytest.raises(Boom):
        import_records(source_of(3, fail_at=0, hook=slow_siblings), out, ImportOptions(batch=3, threads=3))
    assert at_close == [0]
    assert placed(out) == [] and hidden(out) == []


def test_a_failure_in_the_middle_of_a_batch_leaves_only_whole_runs_and_the_next_import_completes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    with pytest.raises(Boom):
        import_records(source_of(10, fail_at=7), out, ImportOptions(batch=3))
    # batch 0 was placed when batch 1 was staged; batch 1 waited for batch 2, which failed
    assert placed(out) == ["robomimic-hand-ep0", "robomimic-hand-ep1", "robomimic-hand-ep2"]
    assert hidden(out) == []  # the staging folder went with the failed import
    assert_whole(out)
    summary = import_records(source_of(10), out, ImportOptions(batch=3))
    assert [row.status for row in summary.rows] == ["unchanged"] * 3 + ["imported"] * 7
    assert len(placed(out)) == 10 and hidden(out) == []
    assert_whole(out)


def test_reimport_is_idempotent_and_keeps_every_byte(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    first = import_records(source_of(5), out, ImportOptions(batch=2))
    assert first.counts()["imported"] == 5
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    again = import_records(source_of(5), out, ImportOptions(batch=2))
    assert again.counts() == {"imported": 0, "unchanged": 5, "error": 0, "missing": 0}
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


def test_a_leftover_staging_folder_is_removed_by_the_next_import(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    leftover = out / ".import-killed.staging" / "robomimic-hand-ep0"
    leftover.mkdir(parents=True)
    (leftover / EVENTS_FILE).write_bytes(b'{"seq":0')  # what a killed import left half-written
    import_records(source_of(2), out, ImportOptions())
    assert hidden(out) == []
    assert placed(out) == ["robomimic-hand-ep0", "robomimic-hand-ep1"]


def test_the_staging_folder_of_a_running_import_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    other = out / ".import-running.staging"
    other.mkdir(parents=True)
    (other / "half").write_bytes(b"still being written")
    fd = os.open(other, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the import beside this one holds it
        import_records(source_of(2), out, ImportOptions())
        assert (other / "half").read_bytes() == b"still being written"
        assert hidden(out) == [".import-running.staging"]
    finally:
        os.close(fd)
    import_records(source_of(2), out, ImportOptions())  # its import is gone: now it is swept
    assert hidden(out) == []


def test_an_import_holds_its_staging_folder_locked(tmp_path: Path) -> None:
    with Staging(tmp_path) as staging:
        fd = os.open(staging.root, os.O_RDONLY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        assert staging.root.name.startswith(".import-") and staging.root.parent == tmp_path
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mask, folder, file", [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)])
def test_imported_runs_honour_the_umask(tmp_path: Path, mask: int, folder: int, file: int) -> None:
    """Folders 0777 & ~umask, files 0666 & ~umask: 0755 / 0644 under 022, 0750 / 0640 under 027."""
    old = os.umask(mask)
    try:
        import_records(source_of(2), tmp_path / "runs", ImportOptions())
    finally:
        os.umask(old)
    runs = find_run_dirs(tmp_path / "runs")
    assert [oct(r.stat().st_mode & 0o777) for r in runs] == [oct(folder)] * 2
    for run in runs:
        assert {p.name: oct(p.stat().st_mode & 0o777) for p in run.iterdir()} == {
            RUN_FILE: oct(file), EVENTS_FILE: oct(file), SOURCE_JSON_FILE: oct(file)}


def test_a_run_another_import_placed_first_is_unchanged(tmp_path: Path) -> None:
    """While record 1 is staged, a second import of the same source places it first: the
    rename into place finds it, with the same content hash, so the row is ``unchanged``."""
    out = tmp_path / "runs"

    def race(k: int) -> None:
        if k == 1:
            import_records(source_of(2), out, ImportOptions())
    summary = import_records(source_of(2, hook=race), out, ImportOptions(threads=1))
    assert [row.status for row in summary.rows] == ["unchanged", "unchanged"]
    assert_whole(out)
    assert hidden(out) == []


def test_a_run_another_import_placed_first_with_other_content_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "runs"

    def race(k: int) -> None:
        if k == 0:
            import_records(source_of(1, salt="-other"), out, ImportOptions())
    summary = import_records(source_of(2, hook=race), out, ImportOptions(threads=1))
    assert [row.status for row in summary.rows] == ["error", "imported"]
    assert "already holds other content (sha256:0-other, this record is sha256:0)" in (summary.rows[0].message or "")
    assert (out / "robomimic-hand-ep0" / SOURCE_JSON_FILE).read_bytes() == b"record 0-other\n"


def test_a_staged_run_is_never_visible_before_its_batch_is_placed(tmp_path: Path) -> None:
    """Seen from inside the writing of record 4 (batch 1 of 3-record batches): batch 0 is
    not placed yet (it waits for batch 1 to be staged), so ``out/`` lists no run at all."""
    out = tmp_path / "runs"
    seen: list[list[str]] = []
    import_records(source_of(6, hook=lambda k: seen.append(placed(out)) if k == 4 else None), out,
                   ImportOptions(batch=3, threads=1))
    assert seen == [[]]
    assert len(placed(out)) == 6


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 9), batch=st.integers(1, 4), fail_at=st.one_of(st.none(), st.integers(0, 8)))
def test_any_failure_leaves_whole_runs_of_whole_batches(tmp_path_factory: pytest.TempPathFactory, n: int, batch: int,
                                                         fail_at: int | None) -> None:
    """Placed runs are exactly the batches before the one before the failing batch (the
    failing batch's predecessor is still waiting to be placed); a second import completes."""
    out = tmp_path_factory.mktemp("prop") / "runs"
    failing = fail_at is not None and fail_at < n
    if failing:
        with pytest.raises(Boom):
            import_records(source_of(n, fail_at=fail_at), out, ImportOptions(batch=batch))
        assert fail_at is not None
        whole_batches = max(0, fail_at // batch - 1)
        assert len(placed(out)) == whole_batches * batch
    else:
        import_records(source_of(n, fail_at=fail_at), out, ImportOptions(batch=batch))
    assert_whole(out)
    summary = import_records(source_of(n), out, ImportOptions(batch=batch))
    assert summary.counts()["imported"] + summary.counts()["unchanged"] == n
    assert len(placed(out)) == n and not hidden(out)


def slow_import(out: str) -> None:
    """Run in a subprocess by the SIGKILL test: 60 records of about 20 ms each, batches of 8."""
    import_records(source_of(60, delay=0.02), Path(out), ImportOptions(batch=8, threads=2))


def test_an_import_killed_with_sigkill_leaves_whole_runs_and_the_next_import_completes(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); " \
           "from tests.labrecord.imports.test_staging import slow_import; slow_import(sys.argv[1])"
    child = subprocess.Popen([sys.executable, "-c", code, str(out)], cwd=ROOT, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if out.is_dir() and len(placed(out)) >= 8:
                break
            time.sleep(0.005)
        assert child.poll() is None, child.stderr.read().decode()[-2000:] if child.stderr else ""
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
        if child.stderr:
            child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    killed_with = placed(out)
    assert 8 <= len(killed_with) < 60, killed_with  # whole runs (a kill may land between two renames)
    assert_whole(out)
    assert hidden(out) != []  # the killed import's staging folder
    summary = import_records(source_of(60), out, ImportOptions(batch=8))
    assert summary.counts()["unchanged"] == len(killed_with)
    assert summary.counts()["imported"] == 60 - len(killed_with)
    assert hidden(out) == [] and len(placed(out)) == 60
    assert_whole(out)
    assert json.loads((out / "robomimic-hand-ep59" / RUN_FILE).read_bytes())["status"] == "complete"


def test_a_failed_write_is_an_error_row_and_its_run_is_not_placed(tmp_path: Path) -> None:
    summary = import_records(source_of(4, io_error_at=2), tmp_path / "runs", ImportOptions(batch=2))
    assert [row.status for row in summary.rows] == ["imported", "imported", "error", "imported"]
    assert "Input/output error" in (summary.rows[2].message or "")
    assert placed(tmp_path / "runs") == ["robomimic-hand-ep0", "robomimic-hand-ep1", "robomimic-hand-ep3"]
    assert hidden(tmp_path / "runs") == []
    assert import_records(source_of(4), tmp_path / "runs", ImportOptions()).counts()["imported"] == 1


def test_a_record_error_is_reported_and_the_others_are_placed(tmp_path: Path) -> None:
    source = source_of(3)
    source.records[1] = LabrecordError("/data/hand.hdf5: data/ep1 has no actions dataset")
    summary = import_records(source, tmp_path / "runs", ImportOptions())
    assert [row.status for row in summary.rows] == ["imported", "error", "imported"]
    assert placed(tmp_path / "runs") == ["robomimic-hand-ep0", "robomimic-hand-ep2"]


def test_an_unfinished_run_placed_in_the_way_while_staging_is_replaced(tmp_path: Path) -> None:
    """While record 0 is staged, a run of the same record left ``running`` (a writer killed
    in the middle) appears in ``out/``: it is removed and the staged run takes its place."""
    out = tmp_path / "runs"

    def interrupted(k: int) -> None:
        if k == 0:
            import_records(source_of(1), out, ImportOptions())
            manifest = json.loads((out / "robomimic-hand-ep0" / RUN_FILE).read_bytes())
            manifest["status"] = "running"
            (out / "robomimic-hand-ep0" / RUN_FILE).write_text(json.dumps(manifest))
    summary = import_records(source_of(1, hook=interrupted), out, ImportOptions())
    assert [row.status for row in summary.rows] == ["imported"]
    assert read_manifest(out / "robomimic-hand-ep0").manifest.status == "complete"
    assert hidden(out) == []


def test_an_out_folder_that_cannot_be_written_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(LabrecordError, match=r"file/runs: cannot stage the import there: Not a directory"):
        import_records(source_of(1), tmp_path / "file" / "runs", ImportOptions())
