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
