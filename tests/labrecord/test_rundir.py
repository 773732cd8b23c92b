"""RunWriter: atomic manifest, monotone seq, truncated logs reported, versions refused."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError, SchemaVersionError, TruncatedLogError
from labrecord.examples import example_manifest, write_example_run
from labrecord.models import Choice, EpisodeEnd, EpisodeStart, Operation, Opportunity
from labrecord.rundir import RunWriter, read_events, read_manifest


def test_writer_assigns_monotone_seq_and_closes_complete(tmp_path: Path) -> None:
    with RunWriter.create(tmp_path, example_manifest("r1")) as run:
        first = run.emit(EpisodeStart, t=0.0, episode=0)
        second = run.emit(EpisodeEnd, t=1.0, episode=0, reason="timeout", physical_complete=False, valid_complete=False)
    assert (first.seq, second.seq) == (0, 1)
    assert read_manifest(tmp_path / "r1").manifest.status == "complete"
    assert read_events(tmp_path / "r1") == [first, second]


def test_writer_marks_run_aborted_when_an_exception_escapes(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        with RunWriter.create(tmp_path, example_manifest("r1")) as run:
            run.emit(EpisodeStart, t=0.0, episode=0)
            raise RuntimeError("simulator crashed")
    assert read_manifest(tmp_path / "r1").manifest.status == "aborted"


def test_writer_refuses_seq_going_back_and_time_going_back(tmp_path: Path) -> None:
    run = RunWriter.create(tmp_path, example_manifest("r1"))
    run.emit(EpisodeStart, t=1.0, episode=0)
    with pytest.raises(LabrecordError, match="seq 0 does not follow 0"):
        run.append(EpisodeStart(seq=0, t=2.0, episode=1))
    with pytest.raises(LabrecordError, match="t 0.5 goes back from 1.0"):
        run.emit(EpisodeEnd, t=0.5, episode=0, reason="x", physical_complete=False, valid_complete=False)


@pytest.mark.parametrize("run_id", ["../../etc", "..", ".hidden", "a/b", "", "x" * 200, "run id"])
def test_hostile_run_id_is_refused_before_touching_disk(tmp_path: Path, run_id: str) -> None:
    with pytest.raises(LabrecordError, match="not a safe path component"):
        RunWriter.create(tmp_path / "runs", example_manifest(run_id))
    assert not (tmp_path / "runs").exists()
    assert not (tmp_path / "etc").exists()


def test_reopen_appends_after_last_seq(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    last = read_events(run_dir)[-1]
    run = RunWriter.open(run_dir)
    event = run.emit(EpisodeStart, t=last.t + 1, episode=1)
    assert event.seq == last.seq + 1


def test_reopen_reports_truncated_last_line_with_its_number(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    events = run_dir / "events.jsonl"
    n_lines = len(events.read_bytes().splitlines())
    with open(events, "ab") as fh:
        fh.write(b'{"type": "choice", "seq": 99, "t": 9')
    with pytest.raises(TruncatedLogError, match=rf"events.jsonl:{n_lines + 1}: truncated last line"):
        RunWriter.open(run_dir)
    assert events.read_bytes().endswith(b'"t": 9'), "nothing is dropped"


def test_unknown_fields_survive_a_read_write_round_trip(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    raw = json.loads((run_dir / "run.json").read_text())
    raw["lab_notes"] = {"operator": "A. Ng"}
    raw["task"]["rig_serial"] = "SN-42"
    (run_dir / "run.json").write_text(json.dumps(raw))
    run = RunWriter.open(run_dir)
    run.close("complete")
    again = json.loads((run_dir / "run.json").read_text())
    assert again["lab_notes"] == {"operator": "A. Ng"}
    assert again["task"]["rig_serial"] == "SN-42"
    assert again["task"]["family"] == "weighing"


def test_newer_major_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    raw = json.loads((run_dir / "run.json").read_text())
    raw["schema"] = "labrecord.run/2"
    (run_dir / "run.json").write_text(json.dumps(raw))
    with pytest.raises(SchemaVersionError, match=r"labrecord\.run/2 is newer than labrecord\.run/1"):
        read_manifest(run_dir)


def test_newer_minor_schema_is_read(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    raw = json.loads((run_dir / "run.json").read_text())
    raw["schema"] = "labrecord.run/1.3"
    (run_dir / "run.json").write_text(json.dumps(raw))
    assert read_manifest(run_dir).manifest.run_id == "r1"


def test_manifest_bytes_are_deterministic(tmp_path: Path) -> None:
    a = write_example_run(tmp_path / "a", "r1")
    b = write_example_run(tmp_path / "b", "r1")
    for name in ("run.json", "events.jsonl", "observations.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


@given(st.lists(st.tuples(st.floats(0, 10), st.sampled_from(["o1", "o2"])), min_size=1, max_size=20))
def test_written_events_read_back_equal(tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[float, str]]) -> None:
    root = tmp_path_factory.mktemp("runs")
    written = []
    with RunWriter.create(root, example_manifest("r1")) as run:
        t = 0.0
        for index, (dt, opp) in enumerate(steps):
            t += dt
            written.append(run.emit(Opportunity, t=t, opp=f"{opp}-{index}", decision="d", trigger="initial",
                                    legal=[Operation("wait")], evidence_version=index))
            written.append(run.emit(Choice, t=t, opp=f"{opp}-{index}", op=Operation("wait"), first=True))
    assert read_events(root / "r1") == written


# -- writer safety: one writer per run, a failed write stops the writer cleanly ----------------

import errno  # noqa: E402
import os  # noqa: E402

import labrecord.rundir as rundir_module  # noqa: E402
from labrecord.models import ObservationReceipt  # noqa: E402
from labrecord.validation import validate_run  # noqa: E402


def _episode(run: RunWriter, episode: int, t: float) -> None:
    run.emit(EpisodeStart, t=t, episode=episode)
    run.emit(EpisodeEnd, t=t + 1, episode=episode, reason="success", physical_complete=True, valid_complete=True)


def test_a_second_writer_of_one_run_is_refused(tmp_path: Path) -> None:
    """Two writers of one run made colliding sequence numbers (and the whole run was refused)."""
    first = RunWriter.create(tmp_path, example_manifest("r"))
    with pytest.raises(LabrecordError, match="another writer has this run open; refused"):
        RunWriter.open(tmp_path / "r")
    _episode(first, 0, 0.0)
    first.close()
    second = RunWriter.open(tmp_path / "r")
    with pytest.raises(LabrecordError, match="another writer has this run open"):
        RunWriter.open(tmp_path / "r")
    _episode(second, 1, 5.0)
    second.close()
    assert [e.seq for e in read_events(tmp_path / "r")] == [0, 1, 2, 3]
    assert sorted(os.listdir(tmp_path / "r")) == ["events.jsonl", "run.json"]  # no lock file left behind


class _Disk:
    """``os.write``/``os.fsync`` of the writer on a disk that fills: writes pass until
    ``room`` bytes are used, then one partial write, then ENOSPC; ``free()`` makes room."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, room: int) -> None:
        self.room = room
        self.real_write = os.write
        monkeypatch.setattr(rundir_module.os, "write", self.write)

    def write(self, fd: int, data: bytes) -> int:
        if self.room <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        n = self.real_write(fd, bytes(data[: self.room]))
        self.room -= n
        return n

    def free(self) -> None:
        self.room = 1 << 30


def test_a_full_disk_leaves_a_valid_prefix_and_no_data_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Disk full mid-write, space freed, writer closed: the old writer wrote its pending
    lines a second time after the cut one (a broken log) and lost the completed episode."""
    run = RunWriter.create(tmp_path, example_manifest("r"))
    _episode(run, 0, 0.0)  # complete and synced
    size = (tmp_path / "r" / "events.jsonl").stat().st_size
    disk = _Disk(monkeypatch, room=30)
    with pytest.raises(LabrecordError, match="write failed \\(No space left on device\\); the file keeps its whole "
                                             "records"):
        run.emit(EpisodeStart, t=3.0, episode=1)  # synced at once: 30 bytes fit, then ENOSPC
    disk.free()
    with pytest.raises(LabrecordError, match="this writer stopped after a failed write"):
        run.emit(EpisodeStart, t=5.0, episode=2)
    with pytest.raises(LabrecordError, match="stopped after a failed write"):
        run.observation(ObservationReceipt(obs_id="x", step=0, t_acquired=0.0, t_delivered=0.0, evidence_version=0))
    run.close()
    assert run.failure is not None and "No space left on device" in run.failure
    log = (tmp_path / "r" / "events.jsonl").read_bytes()
    assert log.endswith(b"\n") and len(log) == size  # cut back to the last whole write
    events = read_events(tmp_path / "r")
    assert [type(e).__name__ for e in events] == ["EpisodeStart", "EpisodeEnd"]
    report, _ = validate_run(tmp_path / "r")
    assert report.ok and read_manifest(tmp_path / "r").manifest.status == "running"
    resumed = RunWriter.open(tmp_path / "r")
    assert resumed.interrupted_episode is None and resumed.next_seq == 2
    resumed.close()


def test_a_failed_write_is_cut_back_to_whole_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partial write of a flush (a large pending block) is cut off again: the log stays
    whole lines, each line once, and the episode ended before it is kept."""
    run = RunWriter.create(tmp_path, example_manifest("r"))
    _episode(run, 0, 0.0)
    run.emit(EpisodeStart, t=3.0, episode=1)
    before = (tmp_path / "r" / "events.jsonl").read_bytes()
    disk = _Disk(monkeypatch, room=100)
    with pytest.raises(LabrecordError, match="No space left"):
        for k in range(5000):  # past FLUSH_BYTES: one large write, cut at 100 bytes
            run.emit(Opportunity, t=3.0, opp=f"o{k}", decision="d", legal=[], evidence_version=0, trigger="initial")
    disk.free()
    run.close()
    assert (tmp_path / "r" / "events.jsonl").read_bytes() == before
    resumed = RunWriter.open(tmp_path / "r")
    assert resumed.interrupted_episode == 1
    resumed.close()
    events = read_events(tmp_path / "r")
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(isinstance(e, EpisodeEnd) and e.reason == "success" for e in events) == 1


def test_a_failed_sync_stops_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = RunWriter.create(tmp_path, example_manifest("r"))

    def no_sync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(rundir_module.os, "fsync", no_sync)
    with pytest.raises(LabrecordError, match="write failed \\(Input/output error\\)"):
        run.emit(EpisodeStart, t=0.0, episode=0)
    monkeypatch.undo()
    with pytest.raises(LabrecordError, match="stopped after a failed write"):
        run.emit(EpisodeStart, t=0.0, episode=0)
    run.close()
    assert validate_run(tmp_path / "r")[0].ok


def test_a_full_disk_while_writing_the_manifest_keeps_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import labrecord.fileio as fileio

    run = RunWriter.create(tmp_path, example_manifest("r"))
    _episode(run, 0, 0.0)

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio, "_fsync_file", full)
    with pytest.raises(LabrecordError, match="run.json: write failed \\(No space left on device\\)"):
        run.close()
    monkeypatch.undo()
    assert read_manifest(tmp_path / "r").manifest.status == "running"
    assert [p.name for p in (tmp_path / "r").iterdir() if p.name.startswith(".")] == []
    assert validate_run(tmp_path / "r")[0].ok
    RunWriter.open(tmp_path / "r").close()  # the lock was released


def test_a_staged_run_syncs_nothing_takes_no_lock_and_writes_run_json_at_close(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl
    import os

    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    run = RunWriter.create(tmp_path, example_manifest("staged"), durable=False)
    assert not (run.dir / "run.json").exists()  # written once, at close
    fd = os.open(run.dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: the staging folder is its caller's
    finally:
        os.close(fd)
    run.emit(EpisodeStart, t=0.0, episode=0)
    run.emit(EpisodeEnd, t=1.0, episode=0, reason="success", physical_complete=True, valid_complete=True)
    run.write_file("videos/a.mp4", lambda path: path.write_bytes(b"mp4"))
    run.close()
    assert calls == []
    assert read_manifest(run.dir).manifest.status == "complete"
    assert [type(e).__name__ for e in read_events(run.dir)] == ["EpisodeStart", "EpisodeEnd"]
    assert (run.dir / "videos" / "a.mp4").read_bytes() == b"mp4"
    assert sorted(p.name for p in run.dir.iterdir()) == ["events.jsonl", "run.json", "videos"]


def test_a_staged_run_has_the_same_bytes_as_a_durable_one(tmp_path: Path) -> None:
    for root, durable in ((tmp_path / "durable", True), (tmp_path / "staged", False)):
        root.mkdir()
        with RunWriter.create(root, example_manifest("same"), durable=durable) as run:
            run.emit(EpisodeStart, t=0.0, episode=0)
            run.emit(EpisodeEnd, t=1.0, episode=0, reason="failure", physical_complete=False, valid_complete=False)
    for name in ("run.json", "events.jsonl"):
        assert (tmp_path / "durable" / "same" / name).read_bytes() == (tmp_path / "staged" / "same" / name).read_bytes()
