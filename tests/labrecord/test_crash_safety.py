"""A writer killed at any point leaves a run that validates, ingests and resumes.

The writer runs in a subprocess (tests/labrecord/crash_writer.py) and is killed with
SIGKILL either just before a chosen operation or from a timer (which can land inside a
write).  Whatever the point:

* validation finds no error; a run still marked ``running`` carries the warning that it
  was interrupted;
* every episode whose ``episode_end`` had returned before the kill is in the corpus as
  ended, and the interrupted episode (if any) is there without an end (unresolved);
* :meth:`RunWriter.open` resumes the run: the open episode is ended as ``interrupted``,
  a new episode can be written, and the closed run validates with no warning but the
  missing-measurement one.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.models import EpisodeEnd, EpisodeStart, Validity
from labrecord.rundir import EVENTS_FILE, OBSERVATIONS_FILE, RunWriter, read_events, read_manifest
from labrecord.store import connect, ingest_runs
from labrecord.validation import validate_run

WRITER = Path(__file__).with_name("crash_writer.py")
#: operations the writer performs (see crash_writer.py): 1 + 4 * (1 + 3 * 5 + 1) + 3
OPERATIONS = 1 + 4 * (1 + 3 * 5 + 1) + 3


def scratch(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder in memory when the machine has one: SIGKILL keeps what the kernel holds, so
    tmpfs tests the same thing without waiting for a shared disk's fsyncs."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return Path(tempfile.mkdtemp(prefix=f"labrecord-{name}-", dir=shm))
    return tmp_path_factory.mktemp(name)


@pytest.fixture(autouse=True)
def _clean_shm() -> Iterator[None]:
    before = set(Path("/dev/shm").glob("labrecord-*")) if Path("/dev/shm").is_dir() else set()
    yield
    for folder in (set(Path("/dev/shm").glob("labrecord-*")) if Path("/dev/shm").is_dir() else set()) - before:
        shutil.rmtree(folder, ignore_errors=True)


def kill_writer(root: Path, kill_at: int, kill_after: float) -> None:
    root.mkdir(parents=True, exist_ok=True)
    process = subprocess.run([sys.executable, str(WRITER), str(root), str(kill_at), str(kill_after)],
                             capture_output=True, text=True, timeout=120)
    assert process.returncode in (0, -9), process.stderr


def survived(root: Path) -> set[int]:
    progress = root / "progress"
    return {int(line) for line in progress.read_text().split()} if progress.exists() else set()


def check_after_crash(root: Path) -> None:
    run_dir = root / "crash"
    if not run_dir.exists():
        assert not any(p.name == "crash" for p in root.iterdir())
        return
    report, _ = validate_run(run_dir)
    assert report.ok, [str(f) for f in report.errors]
    status = read_manifest(run_dir).manifest.status
    if status == "running":
        assert any("interrupted" in f.message for f in report.warnings), [str(f) for f in report.warnings]

    con = connect(None)
    summary = ingest_runs(root, con)
    assert summary.added == ["crash"], summary.skipped
    rows = dict(con.execute("SELECT episode, ended FROM episodes WHERE run_id = 'crash'").fetchall())
    ended = {episode for episode, flag in rows.items() if flag}
    assert survived(root) <= ended
    assert len(rows) - len(ended) <= (1 if status == "running" else 0)

    writer = RunWriter.open(run_dir)
    if writer.interrupted_episode is not None:
        assert writer.interrupted_episode not in ended
    last = read_events(run_dir)[-1] if (run_dir / EVENTS_FILE).exists() else None
    t = last.t if last else 0.0
    writer.emit(EpisodeStart, t=t, episode=99)
    writer.emit(EpisodeEnd, t=t + 1, episode=99, reason="success", physical_complete=True, valid_complete=True)
    writer.close()
    report, _ = validate_run(run_dir)
    assert report.ok, [str(f) for f in report.errors]
    assert all("measurements.parquet" in f.path for f in report.warnings), [str(f) for f in report.warnings]
    events = read_events(run_dir)
    assert [e.seq for e in events] == sorted({e.seq for e in events})
    if writer.interrupted_episode is not None:
        ends = [e for e in events if isinstance(e, EpisodeEnd) and e.episode == writer.interrupted_episode]
        assert [e.reason for e in ends] == ["interrupted"]
        assert any(isinstance(e, Validity) for e in events)


@settings(max_examples=10, deadline=None)
@given(kill_at=st.integers(min_value=0, max_value=OPERATIONS))
def test_killed_before_any_operation_leaves_a_valid_resumable_prefix(tmp_path_factory: pytest.TempPathFactory,
                                                                      kill_at: int) -> None:
    root = scratch(tmp_path_factory, "killed-at")
    kill_writer(root, kill_at, -1)
    check_after_crash(root)


@settings(max_examples=6, deadline=None)
@given(kill_after=st.floats(min_value=0.0, max_value=0.4))
def test_killed_at_a_random_moment_leaves_a_valid_resumable_prefix(tmp_path_factory: pytest.TempPathFactory,
                                                                    kill_after: float) -> None:
    root = scratch(tmp_path_factory, "killed-after")
    kill_writer(root, -1, kill_after)
    check_after_crash(root)


def test_every_event_naming_a_receipt_finds_it_on_disk_at_each_kill_point(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The receipt is durable before any event naming it: checked at kill points across the run."""
    base = scratch(tmp_path_factory, "receipts")
    for kill_at in range(2, OPERATIONS, 8):
        root = base / str(kill_at)
        kill_writer(root, kill_at, -1)
        run_dir = root / "crash"
        if not (run_dir / EVENTS_FILE).exists():
            continue
        named = {json.loads(line).get("obs_id") for line in (run_dir / EVENTS_FILE).read_text().splitlines()} - {None}
        receipts = {json.loads(line)["obs_id"] for line in (run_dir / OBSERVATIONS_FILE).read_text().splitlines()} \
            if (run_dir / OBSERVATIONS_FILE).exists() else set()
        assert named <= receipts, (kill_at, named - receipts)
