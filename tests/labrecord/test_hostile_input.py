"""Hostile input: no file can stop a command from handling the other runs.

Each case puts one hostile run beside a valid one and checks that the hostile one is one
finding (or one ``Error:`` line for a bad output path), that the valid one is still
loaded, and that no message echoes a whole file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.examples import write_example_run
from labrecord.safeio import MAX_JSON_DEPTH, allow_symlinks
from labrecord.scorers.audit import audit_run
from labrecord.scorers.synthetic import write_population
from labrecord.store import connect, ingest_runs
import labrecord.store.ingest as ingest_module
from labrecord.validation import validate_paths, validate_run

DEEP = 100_000


def two_runs(root: Path) -> tuple[Path, Path]:
    return write_example_run(root, "good"), write_example_run(root, "bad")


def errors_of(run_dir: Path) -> list[str]:
    report, _ = validate_run(run_dir)
    return [str(f) for f in report.errors]


def assert_isolated(root: Path, bad: Path, pattern: str) -> None:
    """The bad run is one finding naming ``pattern``; the good one still ingests and audits."""
    found = errors_of(bad)
    assert len(found) == 1 and pattern in found[0], found
    summary = ingest_runs(root, connect(None))
    assert summary.added == ["good"] and list(summary.skipped) == [str(bad)]
    assert [f.check for f in audit_run(bad).findings] == ["read"]


def test_run_json_nested_a_hundred_thousand_deep_is_one_finding(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    (bad / "run.json").write_bytes(b"[" * DEEP + b"]" * DEEP)
    assert_isolated(tmp_path, bad, f"nested deeper than {MAX_JSON_DEPTH} levels")


def test_events_line_nested_a_hundred_thousand_deep_is_one_finding(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    with open(bad / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq": 99, "t": 99, "type": "state_report", "opp": "o0", "fields": ' + b'{"a":' * DEEP + b"1"
                 + b"}" * DEEP + b"}\n")
    assert_isolated(tmp_path, bad, "events.jsonl:")
    assert "nested deeper" in errors_of(bad)[0]


def test_events_linked_to_dev_zero_is_never_read(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    (bad / "events.jsonl").unlink()
    os.symlink("/dev/zero", bad / "events.jsonl")
    assert_isolated(tmp_path, bad, "symbolic link (to /dev/zero) refused")
    with allow_symlinks():
        found = errors_of(bad)
    assert len(found) == 1 and "a character device, not a regular file" in found[0]


def test_dangling_symlink_is_one_finding(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    (bad / "observations.jsonl").unlink()
    os.symlink(tmp_path / "nowhere", bad / "observations.jsonl")
    found = errors_of(bad)
    assert len(found) == 1 and "dangling symbolic link" in found[0]
    assert ingest_runs(tmp_path, connect(None)).added == ["good"]


def test_symlink_to_another_file_is_refused_and_followed_only_on_request(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("".join(f"user{i}:x:{i}:{i}:secret line {i}:/home/user{i}:/bin/sh\n" for i in range(500)))
    (bad / "events.jsonl").unlink()
    os.symlink(secret, bad / "events.jsonl")
    assert_isolated(tmp_path, bad, "refused; pass --follow-symlinks")
    result = CliRunner().invoke(cli, ["validate", str(bad), "--follow-symlinks"])
    assert result.exit_code == 1
    assert result.output.count("secret line") == 1, result.output
    assert len(result.output.splitlines()) < 15


def test_bad_output_paths_give_one_error_line(tmp_path: Path) -> None:
    write_example_run(tmp_path / "runs", "r1")
    runner = CliRunner()
    for args in (["export", "hdf5", str(tmp_path / "runs"), "--out", "/proc/x"],
                 ["report", str(tmp_path / "runs"), "--out", "/nonexistent_dir/r.html"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 1 and not isinstance(result.exception, (OSError, RecursionError)), result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and args[-1] in lines[0], result.output


def test_every_command_carries_follow_symlinks() -> None:
    runner = CliRunner()
    for args in (["validate"], ["ingest"], ["score"], ["report"], ["audit"], ["export", "hdf5"], ["export", "parquet"],
                 ["export", "lerobot"]):
        assert "--follow-symlinks" in runner.invoke(cli, [*args, "-h"]).output, args


def test_populations_are_committed_before_any_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ingest killed while loading runs leaves the denominators in place."""
    write_example_run(tmp_path, "r0", population=("J", "i0"))
    write_population(tmp_path, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d0"}])
    db = tmp_path / "c.duckdb"

    def killed(con, pending):
        raise KeyboardInterrupt  # stands in for the kill

    monkeypatch.setattr(ingest_module, "load_batch", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest_runs(tmp_path, db)
    con = connect(db)
    assert con.execute("SELECT population, instance_id FROM populations").fetchall() == [("J", "i0")]
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_a_registry_that_cannot_load_does_not_stop_the_runs(tmp_path: Path) -> None:
    write_example_run(tmp_path, "r0", population=("J", "i0"))
    (tmp_path / "populations").mkdir()
    os.symlink("/dev/zero", tmp_path / "populations" / "J.jsonl")
    summary = ingest_runs(tmp_path, connect(None))
    assert summary.added == ["r0"] and "refused" in summary.skipped[str(tmp_path / "populations" / "J.jsonl")][0]


def test_a_json_scores_file_is_bounded_too(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    (bad / "scores.json").write_text(json.dumps({"run_id": "bad"})[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}")
    found = errors_of(bad)
    assert len(found) == 1 and "nested deeper" in found[0]
    report = validate_paths([tmp_path])
    assert len(report.errors) == 1


def test_a_huge_value_is_quoted_short(tmp_path: Path) -> None:
    """A finding that names a value (here a 500 kB opportunity id opened twice) quotes an excerpt."""
    run_dir = write_example_run(tmp_path, "r1")
    path = run_dir / "events.jsonl"
    events = [json.loads(line) for line in path.read_text().splitlines()]
    opportunity = next(e for e in events if e["type"] == "opportunity")
    opportunity["opp"] = "o" * 500_000
    again = dict(opportunity, seq=opportunity["seq"] + 1000, obs_id=None)
    events.insert(events.index(opportunity) + 1, again)
    for number, event in enumerate(events):
        event["seq"] = number
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    found = errors_of(run_dir)
    assert any("opened again" in f for f in found) and all(len(f) < 1000 for f in found), [len(f) for f in found]
