"""Should-fail cases for each validation rule, matched on the message."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.errors import LabrecordError
from labrecord.examples import write_example_run
from labrecord.validation import Report, validate_paths


def findings(report: Report, severity: str = "errors") -> list[str]:
    return [str(f) for f in getattr(report, severity)]


def assert_finding(report: Report, pattern: str, severity: str = "errors") -> None:
    found = findings(report, severity)
    assert any(re.search(pattern, text) for text in found), f"no finding matches {pattern!r}: {found}"


def events_path(tmp_path: Path) -> Path:
    return write_example_run(tmp_path, "r1") / "events.jsonl"


def rewrite_events(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def load_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_example_runs_are_valid(tmp_path: Path) -> None:
    write_example_run(tmp_path, "r1")
    write_example_run(tmp_path, "r2", correct=False, complete=False, opportunities=3)
    report = validate_paths([tmp_path])
    assert report.ok, findings(report)
    # example runs carry events only: the one warning each is that they cannot be audited
    assert [f.path.split("/")[-2:] for f in report.warnings] == [["r1", "measurements.parquet"], ["r2", "measurements.parquet"]]


def test_truncated_last_line(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    n = len(path.read_bytes().splitlines())
    with open(path, "ab") as fh:
        fh.write(b'{"type": "dwell", "seq": 50')
    assert_finding(validate_paths([path.parent]), rf"events\.jsonl:{n + 1}: truncated last line \(27 bytes")


def test_non_utf8_byte(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"d0"', b'"d\xff"')
    path.write_bytes(b"".join(lines))
    assert_finding(validate_paths([path]), r"events\.jsonl:2: not UTF-8: byte b'\\xff' at column \d+")


def test_ten_megabyte_single_line(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    huge = json.dumps({"type": "validity", "seq": 1000, "t": 99.0, "kind": "sensor_error", "source": "x" * 10_000_000})
    with open(path, "a") as fh:
        fh.write(huge + "\n")
    n = len(path.read_bytes().splitlines())
    assert_finding(validate_paths([path]), rf"events\.jsonl:{n}: line is 100000\d\d bytes, over the 1048576-byte limit")


def test_empty_file(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    path.write_bytes(b"")
    assert_finding(validate_paths([path.parent]), r"events\.jsonl: empty file")


def test_invalid_json_names_line(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:-1] + ",,}"
    path.write_text("\n".join(lines) + "\n")
    assert_finding(validate_paths([path]), r"events\.jsonl:3: invalid JSON")


def test_record_against_its_model_names_field_and_value(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    events[1]["trigger"] = "whim"
    rewrite_events(path, events)
    assert_finding(validate_paths([path]), r"events\.jsonl:2 trigger: Invalid enum value 'whim'")


def test_duplicate_seq(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    events[2]["seq"] = events[1]["seq"]
    rewrite_events(path, events)
    assert_finding(validate_paths([path]), r"events\.jsonl:3 seq: seq 1 does not increase \(previous 1\)")


def test_time_going_back(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    events[3]["t"] = -1.0
    rewrite_events(path, events)
    assert_finding(validate_paths([path]), r"events\.jsonl:4 t: t -1\.0 goes back")


def test_choice_before_its_opportunity(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    events[1], events[2] = events[2], events[1]
    events[1]["seq"], events[2]["seq"] = 1, 2
    events[1]["t"] = 0.0
    rewrite_events(path, events)
    assert_finding(validate_paths([path]), r"events\.jsonl:2 choice\.opp: no opportunity 'o0' before seq 1")


def test_two_first_native_choices(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    extra = dict(events[2], seq=events[-1]["seq"] + 1, t=events[-1]["t"])
    rewrite_events(path, events + [extra])
    assert_finding(validate_paths([path]), r"choice\.first: second first=true native choice for opportunity 'o0'")


def test_evidence_version_going_back(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1", opportunities=3)
    events = load_events(run_dir / "events.jsonl")
    opps = [e for e in events if e["type"] == "opportunity"]
    opps[2]["evidence_version"] = 0
    rewrite_events(run_dir / "events.jsonl", events)
    assert_finding(validate_paths([run_dir]), r"opportunity\.evidence_version: evidence version 0 goes back from 1")


def test_intervention_bound_to_missing_evidence_version_and_opportunity(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    t = events[-1]["t"]
    events.append({"type": "intervention", "seq": 100, "t": t, "opp": "o0", "evidence_version": 7, "mode": "assist", "site": "semantic"})
    events.append({"type": "intervention", "seq": 101, "t": t, "opp": "o5", "evidence_version": 0, "mode": "replace", "site": "decision"})
    rewrite_events(path, events)
    report = validate_paths([path])
    assert_finding(report, r"intervention\.evidence_version: intervention bound to evidence version 7, opportunity 'o0' has 0")
    assert_finding(report, r"intervention\.opp: no opportunity 'o5' before seq 101")


def test_findings_are_collected_not_stop_at_first(tmp_path: Path) -> None:
    path = events_path(tmp_path)
    events = load_events(path)
    events[2]["seq"] = events[1]["seq"]
    events[1]["trigger"] = "x"
    events[4]["t"] = -5
    rewrite_events(path, events)
    assert len(validate_paths([path]).errors) >= 3


def test_duplicate_run_ids_across_a_folder(tmp_path: Path) -> None:
    write_example_run(tmp_path, "r1")
    copy = write_example_run(tmp_path / "tmp", "r1")
    copy.rename(tmp_path / "r1-copy")
    report = validate_paths([tmp_path])
    assert_finding(report, r"run_id: run_id 'r1' also used by")
    assert_finding(report, r"differs from its directory name 'r1-copy'", "warnings")


def test_population_members_must_exist(tmp_path: Path) -> None:
    write_example_run(tmp_path, "r1", population=("pop", "i1"))
    write_example_run(tmp_path, "r2", population=("pop", "i9"))
    (tmp_path / "populations").mkdir()
    (tmp_path / "populations" / "pop.jsonl").write_text(
        '{"type": "checkpoint", "instance_id": "i1", "decision": "d0"}\n'
        '{"type": "pair", "pair_id": "p1", "members": ["i1", "i2"], "kind": "answer_changing"}\n'
        '{"type": "oracle_pair", "pair_id": "q1", "base": "i1", "supported": "i3", "mode": "assist", "oracle": "reading"}\n')
    report = validate_paths([tmp_path])
    assert_finding(report, r"pop\.jsonl:2 pair\.members: member 'i2' is not a registered instance")
    assert_finding(report, r"pop\.jsonl:3 oracle_pair\.supported: member 'i3' is not a registered instance")
    assert_finding(report, r"r2/run\.json evaluation\.population\.instance_id: instance 'i9' is not registered in population 'pop'")


def test_hostile_run_id_in_manifest(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    raw = json.loads((run_dir / "run.json").read_text())
    raw["run_id"] = "../../etc"
    (run_dir / "run.json").write_text(json.dumps(raw))
    assert_finding(validate_paths([run_dir]), r"run_id '\.\./\.\./etc' is not a safe path component")


def test_newer_major_version_is_an_error(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    raw = json.loads((run_dir / "run.json").read_text())
    raw["schema"] = "labrecord.run/7"
    (run_dir / "run.json").write_text(json.dumps(raw))
    assert_finding(validate_paths([run_dir]), r"labrecord\.run/7 is newer than labrecord\.run/1")


def test_missing_receipt_for_delivered_observation(tmp_path: Path) -> None:
    run_dir = write_example_run(tmp_path, "r1")
    (run_dir / "observations.jsonl").write_text(
        '{"obs_id": "other", "step": 0, "t_acquired": 0.0, "t_delivered": 0.01, "evidence_version": 0}\n')
    assert_finding(validate_paths([run_dir]), r"opportunity\.obs_id: observation 'obs0' has no delivery receipt")


def test_unusable_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="no such file or directory"):
        validate_paths([tmp_path / "missing"])
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(LabrecordError, match="not a file labrecord validates"):
        validate_paths([tmp_path / "notes.txt"])


def test_cli_exit_codes_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    good = write_example_run(tmp_path / "good", "r1")
    result = runner.invoke(cli, ["validate", str(good), "--json"])
    assert result.exit_code == 0, result.output
    output = json.loads(result.stdout)
    assert output["errors"] == [] and [w["path"].endswith("measurements.parquet") for w in output["warnings"]] == [True]

    path = events_path(tmp_path / "bad")
    events = load_events(path)
    events[2]["seq"] = 1
    rewrite_events(path, events)
    result = runner.invoke(cli, ["validate", str(path.parent), "--json"])
    assert result.exit_code == 1
    errors = json.loads(result.stdout)["errors"]
    assert errors[0] == {"path": str(path), "line": 3, "field": "seq", "message": "seq 1 does not increase (previous 1)"}

    result = runner.invoke(cli, ["validate", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "no such file or directory" in result.output
