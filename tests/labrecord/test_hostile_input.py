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


# -- one read of each file: what validation saw is what is loaded ----------------------------


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def _write_events(run_dir: Path, lines: list[bytes]) -> None:
    (run_dir / "events.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))


def _forge_episode_end(run_dir: Path) -> None:
    """Forged keys first, the real ones last (the reader that keeps the first key is fooled)."""
    events = _events(run_dir)
    end = events[-1]
    assert end["type"] == "episode_end"
    real = dict(end, valid_complete=False, physical_complete=False, reason="timeout")
    forged = b'{"valid_complete":true,"physical_complete":true,"reason":"success",' + json.dumps(real).encode()[1:]
    _write_events(run_dir, [json.dumps(e).encode() for e in events[:-1]] + [forged])


def test_a_repeated_key_is_a_finding_and_never_loaded(tmp_path: Path) -> None:
    """The forged ``episode_end``: on the old code validation and the audit read the last
    copy of each key (a timeout), the load read the first (a success)."""
    _, bad = two_runs(tmp_path)
    _forge_episode_end(bad)
    found = errors_of(bad)
    assert len(found) == 1 and "appears more than once" in found[0] and "events.jsonl:7:" in found[0], found
    con = connect(None)
    summary = ingest_runs(tmp_path, con)
    assert summary.added == ["good"] and list(summary.skipped) == [str(bad)]
    assert con.execute("SELECT count(*) FROM events WHERE run_id = 'bad'").fetchone() == (0,)
    assert [f.check for f in audit_run(bad).findings] == ["read"]


def test_a_repeated_key_spelled_with_escapes_is_found(tmp_path: Path) -> None:
    """``\\u`` escapes defeat a count of colons; such lines are checked key by key."""
    _, bad = two_runs(tmp_path)
    events = _events(bad)
    forged = (b'{"valid_complete":true,"reason":"su\\u0063cess:",' + json.dumps(dict(events[-1], valid_complete=False)).encode()[1:])
    _write_events(bad, [json.dumps(e).encode() for e in events[:-1]] + [forged])
    assert "appears more than once" in errors_of(bad)[0]


def test_a_repeated_key_in_run_json_is_a_finding(tmp_path: Path) -> None:
    _, bad = two_runs(tmp_path)
    raw = (bad / "run.json").read_bytes()
    (bad / "run.json").write_bytes(b'{"status": "aborted", ' + raw.lstrip()[1:])
    assert_isolated(tmp_path, bad, "key 'status' appears more than once")


def test_a_seed_outside_64_bits_is_a_finding_and_the_other_runs_load(tmp_path: Path) -> None:
    good, bad = two_runs(tmp_path)
    write_example_run(tmp_path, "good2")
    raw = json.loads((bad / "run.json").read_text())
    raw["seeds"]["layout"] = 2**63
    (bad / "run.json").write_text(json.dumps(raw))
    found = errors_of(bad)
    assert len(found) == 1 and "9223372036854775808 at `seeds.layout` is outside the stored 64-bit range" in found[0], found
    summary = ingest_runs(tmp_path, connect(None))
    assert sorted(summary.added) == ["good", "good2"] and list(summary.skipped) == [str(bad)]


def test_an_episode_outside_64_bits_is_a_finding(tmp_path: Path) -> None:
    """``episode = 2**64 - 1`` decoded fine but could not be stored: successes became
    failures while the run counted as resolved."""
    _, bad = two_runs(tmp_path)
    events = _events(bad)
    for event in events:
        if event["type"] == "episode_end":
            event["episode"] = 2**64 - 1
    _write_events(bad, [json.dumps(e).encode() for e in events])
    found = errors_of(bad)
    assert any("events.jsonl:7: integer 18446744073709551615 at `episode` is outside the stored 64-bit range" in f
               for f in found), found
    summary = ingest_runs(tmp_path, connect(None))
    assert summary.added == ["good"] and list(summary.skipped) == [str(bad)]
    assert [f.check for f in audit_run(bad).findings] == ["read"]


def test_a_cut_last_line_that_validation_ignores_is_not_loaded(tmp_path: Path) -> None:
    """An interrupted run (status running) whose log ends in a whole JSON object without
    its newline: validation warns and ignores it, so the load must too."""
    run = write_example_run(tmp_path, "r")
    raw = json.loads((run / "run.json").read_text())
    raw["status"] = "running"
    (run / "run.json").write_text(json.dumps(raw))
    before = len(_events(run))
    with open(run / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq": 50, "t": 7.0, "type": "episode_start", "episode": 1}')
    report, _ = validate_run(run)
    assert report.ok and any("cut last line" in str(w) for w in report.warnings)
    con = connect(None)
    assert ingest_runs(tmp_path, con).added == ["r"]
    assert con.execute("SELECT count(*), max(seq) FROM events").fetchone() == (before, before - 1)


def test_data_changed_between_validation_and_load_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file rewritten just after validation read it: the load uses the bytes validated
    (and their content hash), not the new file."""
    import labrecord.validation as validation

    run = write_example_run(tmp_path, "r")
    real = validation.validate_run

    def then_tamper(run_dir, report=None):
        result = real(run_dir, report)
        _forge_episode_end(Path(run_dir))
        return result

    monkeypatch.setattr(validation, "validate_run", then_tamper)
    validated = (run / "events.jsonl").read_bytes()
    con = connect(None)
    assert ingest_runs(tmp_path, con).added == ["r"]
    assert (run / "events.jsonl").read_bytes() != validated
    assert con.execute("SELECT valid_complete, reason FROM events WHERE type = 'episode_end'").fetchall() == [(True, "success")]
    from labrecord.rundir import content_digest

    stored = con.execute("SELECT content_hash FROM runs").fetchone()[0]
    files = {name: (run / name).read_bytes() for name in ("run.json", "observations.jsonl")}
    assert stored == content_digest([("run.json", [files["run.json"]]), ("events.jsonl", [validated]),
                                     ("observations.jsonl", [files["observations.jsonl"]])])
    # the audit then sees files other than those loaded: no verdict is stored for them
    from labrecord.scorers.corpus import audit_corpus

    monkeypatch.undo()
    verdicts = audit_corpus(con)
    assert [v["check_name"] for v in verdicts] == ["unreadable"]
    assert con.execute("SELECT count(*) FROM audits").fetchone() == (0,)


# -- isolation at load -------------------------------------------------------------------------


def _measured_run(root: Path, run_id: str, **columns: object) -> Path:
    import pyarrow as pa

    from labrecord.examples import example_manifest
    from labrecord.models import EpisodeStart
    from labrecord.rundir import RunWriter

    with RunWriter.create(root, example_manifest(run_id, family="family-x")) as run:
        run.emit(EpisodeStart, t=0.0, episode=0)
        run.write_measurements(pa.table({"step": [0, 1], "t": [0.0, 0.002], **columns}))
    return root / run_id


def test_a_measurement_column_the_store_uses_is_a_finding(tmp_path: Path) -> None:
    good = _measured_run(tmp_path, "good", load_g=[1.0, 2.0])
    for run_id, name in (("bad", "filename"), ("bad2", "RUN_ID")):
        bad = _measured_run(tmp_path, run_id, **{name: ["a", "b"]})
        found = errors_of(bad)
        assert len(found) == 1 and f"column {name!r} is a name the store reserves" in found[0], found
    summary = ingest_runs(tmp_path, connect(None))
    assert summary.added == ["good"] and sorted(summary.skipped) == [str(tmp_path / "bad"), str(tmp_path / "bad2")]
    assert good.exists()


def test_columns_repeated_in_letter_case_are_a_finding(tmp_path: Path) -> None:
    bad = _measured_run(tmp_path, "bad", load_g=[1.0, 2.0], LOAD_G=[1.0, 2.0])
    found = errors_of(bad)
    assert len(found) == 1 and "repeats column 'load_g'" in found[0], found


def test_runs_whose_extra_columns_clash_refuse_only_the_later_run(tmp_path: Path) -> None:
    """Both runs are valid alone; together their ``slot`` columns disagree (BIGINT and
    VARCHAR): the batch is retried run by run and only the second is refused."""
    _measured_run(tmp_path, "a", slot=[1, 2])
    _measured_run(tmp_path, "b", slot=["left", "right"])
    _measured_run(tmp_path, "c", load_g=[1.0, 2.0])
    assert not errors_of(tmp_path / "b")
    con = connect(None)
    summary = ingest_runs(tmp_path, con)
    assert sorted(summary.added) == ["a", "c"] and list(summary.skipped) == [str(tmp_path / "b")]
    assert "'slot' is VARCHAR, but the corpus stores it as BIGINT" in summary.skipped[str(tmp_path / "b")][0]
    assert con.execute("SELECT run_id, reason LIKE '%slot%' FROM invalid_runs").fetchall() == [("b", True)]
    assert con.execute("SELECT count(*) FROM measurements WHERE run_id = 'b'").fetchone() == (0,)
    # a later ingest of the same folder refuses it the same way, and changes nothing else
    again = ingest_runs(tmp_path, con)
    assert sorted(again.unchanged) == ["a", "c"] and list(again.skipped) == [str(tmp_path / "b")]


def test_a_parquet_file_declaring_millions_of_rows_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row bomb (a few hundred kB holding more rows than the limit) is refused from its
    footer: no column is decoded, by validation, ingest or the audit."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from labrecord.safeio import MAX_MEASUREMENT_ROWS

    good, bad = two_runs(tmp_path)
    rows = MAX_MEASUREMENT_ROWS + 1
    pq.write_table(pa.table({"step": pa.repeat(pa.scalar(0, pa.int64()), rows)}), bad / "measurements.parquet",
                   compression="zstd")
    assert (bad / "measurements.parquet").stat().st_size < 10 << 20

    def no_decoding(*args, **kwargs):
        raise AssertionError("a column was decoded")

    monkeypatch.setattr(pq.ParquetFile, "read", no_decoding)
    monkeypatch.setattr(pq, "read_table", no_decoding)
    found = errors_of(bad)
    assert len(found) == 1 and f"declares {rows} rows, over the {MAX_MEASUREMENT_ROWS}-row limit" in found[0], found
    summary = ingest_runs(tmp_path, connect(None))
    assert summary.added == ["good"] and list(summary.skipped) == [str(bad)]
    from labrecord.errors import LabrecordError
    from labrecord.scorers.audit import read_measurements
    from labrecord.scorers.contracts import get_contract

    with pytest.raises(LabrecordError, match="row limit; refused unread"):
        read_measurements(bad / "measurements.parquet", get_contract("weighing"))


def test_an_unsigned_measurement_column_past_64_bits_is_a_finding(tmp_path: Path) -> None:
    import pyarrow as pa

    bad = _measured_run(tmp_path, "bad", big=pa.array([1, 2**64 - 1], pa.uint64()))
    found = errors_of(bad)
    assert len(found) == 1 and "outside the stored 64-bit range" in found[0], found


# -- stable run identity ---------------------------------------------------------------------------


def test_an_ingest_from_another_folder_names_the_same_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative folders were stored as typed: audited from elsewhere, every run failed to
    read, and that verdict was kept."""
    from labrecord.scorers.corpus import audit_corpus

    write_example_run(tmp_path / "runs", "r0")
    write_example_run(tmp_path / "runs", "r1")
    (tmp_path / "elsewhere").mkdir()
    con = connect(None)
    monkeypatch.chdir(tmp_path)
    ingest_runs("runs", con)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert con.execute("SELECT DISTINCT run_dir FROM runs ORDER BY 1").fetchall() == [
        (str((tmp_path / "runs" / "r0").resolve()),), (str((tmp_path / "runs" / "r1").resolve()),)]
    summary = ingest_runs(tmp_path / "runs", con)
    assert sorted(summary.unchanged) == ["r0", "r1"]
    verdicts = audit_corpus(con)
    assert all(v["check_name"] != "unreadable" for v in verdicts), verdicts
    assert con.execute("SELECT count(*) FROM audits").fetchone() == (2,)


def test_an_audit_that_cannot_read_the_files_stores_no_verdict(tmp_path: Path) -> None:
    from labrecord.scorers.corpus import audit_corpus
    from labrecord.store import runs_to_audit

    write_example_run(tmp_path / "runs", "r0")
    con = connect(None)
    ingest_runs(tmp_path / "runs", con)
    (tmp_path / "runs").rename(tmp_path / "moved")
    verdicts = audit_corpus(con)
    assert [v["check_name"] for v in verdicts] == ["unreadable"]
    assert con.execute("SELECT count(*) FROM audits").fetchone() == (0,)
    assert [row[0] for row in runs_to_audit(con)] == ["r0"]  # audited again once readable
    (tmp_path / "moved").rename(tmp_path / "runs")
    assert [v["check_name"] for v in audit_corpus(con)] != ["unreadable"]
    assert con.execute("SELECT count(*) FROM audits").fetchone() == (1,)


def test_a_repaired_run_replaces_its_invalid_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused with an unreadable run.json from one folder, repaired and ingested through
    another spelling of its path: the stale invalid row goes."""
    run = write_example_run(tmp_path / "runs", "r0")
    manifest = (run / "run.json").read_bytes()
    (run / "run.json").write_bytes(b"{not json")
    con = connect(None)
    monkeypatch.chdir(tmp_path)
    ingest_runs("runs", con)
    assert con.execute("SELECT run_id FROM invalid_runs").fetchall() == [(None,)]
    (run / "run.json").write_bytes(manifest)
    monkeypatch.chdir(tmp_path / "runs")
    assert ingest_runs(".", con).added == ["r0"]
    assert con.execute("SELECT count(*) FROM invalid_runs").fetchone() == (0,)


# -- links and a full disk ---------------------------------------------------------------------------


def test_a_linked_populations_folder_is_refused_unless_links_are_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    write_population(elsewhere, "J", [{"type": "instance", "instance_id": "i0"}])
    root = tmp_path / "runs"
    write_example_run(root, "r0", population=("J", "i0"))
    os.symlink(elsewhere / "populations", root / "populations")
    report = validate_paths([root])
    assert len(report.errors) == 1 and report.errors[0].path == str(root / "populations")
    assert report.errors[0].message.startswith("symbolic link (to ")
    assert report.errors[0].message.endswith("refused; pass --follow-symlinks to read it")
    con = connect(None)
    summary = ingest_runs(root, con)
    assert summary.added == ["r0"] and "refused" in summary.skipped[str(root.resolve() / "populations")][0]
    assert con.execute("SELECT count(*) FROM populations").fetchone() == (0,)
    with allow_symlinks():
        assert validate_paths([root]).ok
        assert ingest_runs(root, con).populations == ["J"]


def test_a_full_disk_during_a_snapshot_is_one_error_and_leaves_nothing(tmp_path: Path) -> None:
    import duckdb

    from labrecord.errors import LabrecordError
    from labrecord.store import write_snapshot

    write_example_run(tmp_path / "runs", "r0")
    con = connect(None)
    ingest_runs(tmp_path / "runs", con)

    class FullDisk:
        def execute(self, sql, *args):
            if sql.startswith("COPY") and "events" in sql:
                raise duckdb.IOException('Could not write file "x.parquet": No space left on device')
            return con.execute(sql, *args)

    with pytest.raises(LabrecordError, match="snapshot could not be written, nothing of it was kept: .*No space left"):
        write_snapshot(FullDisk(), tmp_path / "snap")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]


def test_a_full_disk_in_the_store_is_one_error_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import duckdb

    import labrecord.store as store

    write_example_run(tmp_path / "runs", "r0")

    def full(*args, **kwargs):
        raise duckdb.IOException("Could not write to the WAL: No space left on device")

    monkeypatch.setattr(store, "ingest_runs", full)
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "runs"), "--db", str(tmp_path / "c.duckdb")])
    assert result.exit_code == 1 and not isinstance(result.exception, duckdb.Error), result.output
    assert result.output.strip().splitlines()[-1] == (
        "Error: the corpus could not be written: Could not write to the WAL: No space left on device")


def test_a_commit_that_cannot_write_its_log_stops_the_ingest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB reports a full disk at commit as a transaction error: that is the machine, not
    the runs, so no run is refused for it (they were all once marked invalid)."""
    import duckdb

    from labrecord.errors import LabrecordError

    for run_id in ("r0", "r1"):
        write_example_run(tmp_path, run_id)
    con = connect(None)

    def full(con_, pending):
        raise duckdb.TransactionException('Failed to commit: Could not write file "c.duckdb.wal": No space left on device')

    monkeypatch.setattr(ingest_module, "_load_scores", full)
    with pytest.raises(LabrecordError, match="could not be stored, nothing of it was kept .*No space left"):
        ingest_runs(tmp_path, con)
    assert con.execute("SELECT count(*) FROM invalid_runs").fetchone() == (0,)


def test_a_measurement_column_name_is_never_sql(tmp_path: Path) -> None:
    """A column name read from a Parquet file is quoted as an identifier, whatever it holds."""
    name = 'x" DOUBLE; DROP TABLE runs; --'
    _measured_run(tmp_path, "a", **{name: [1.0, 2.0]})
    con = connect(None)
    assert ingest_runs(tmp_path, con).added == ["a"]
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert con.execute(f'SELECT "{name.replace(chr(34), chr(34) * 2)}" FROM measurements ORDER BY step').fetchall() == [(1.0,), (2.0,)]


def test_a_measurement_column_of_records_is_a_finding(tmp_path: Path) -> None:
    """A struct's field names would reach the SQL of the load through its type: refused."""
    import pyarrow as pa

    bad = _measured_run(tmp_path, "bad", rec=pa.array([{'a" INTEGER); DROP TABLE runs; --': 1}] * 2))
    found = errors_of(bad)
    assert len(found) == 1 and "column 'rec' is of a record type" in found[0], found


def test_a_run_json_swapped_after_the_identity_check_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder-name check reads run.json before validation does: a run.json swapped in
    between (claiming another run's id) is refused, never stored under that id."""
    import labrecord.validation as validation

    write_example_run(tmp_path, "victim")
    intruder = write_example_run(tmp_path, "intruder")
    real = validation.validate_run

    def swap_first(run_dir, report=None):
        if Path(run_dir).name == "intruder":
            raw = json.loads((intruder / "run.json").read_text())
            raw["run_id"] = "victim"
            (intruder / "run.json").write_text(json.dumps(raw))
        return real(run_dir, report)

    monkeypatch.setattr(validation, "validate_run", swap_first)
    con = connect(None)
    summary = ingest_runs(tmp_path, con)
    assert summary.added == ["victim"] and "differs from the folder name" in summary.skipped[str(intruder)][0]
    assert con.execute("SELECT run_id, run_dir FROM runs").fetchall() == [("victim", str(tmp_path / "victim"))]


def test_a_parquet_file_with_thousands_of_columns_is_refused_unread(tmp_path: Path) -> None:
    """Each column could become a corpus column: a file of 5,000 is one finding."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, bad = two_runs(tmp_path)
    pq.write_table(pa.table({f"c{i}": [0.0] for i in range(5000)}), bad / "measurements.parquet")
    found = errors_of(bad)
    assert len(found) == 1 and "5000 columns, over the 1024-column limit" in found[0], found


def test_resuming_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    """The cut last line is set aside in ``.<log>.cut``; a link planted under that name
    is not followed (the line would land in the link's target)."""
    from labrecord.errors import LabrecordError
    from labrecord.rundir import RunWriter

    run = write_example_run(tmp_path, "r")
    raw = json.loads((run / "run.json").read_text())
    raw["status"] = "running"
    (run / "run.json").write_text(json.dumps(raw))
    with open(run / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq": 50, "t"')
    target = tmp_path / "target.txt"
    target.write_text("keep\n")
    os.symlink(target, run / ".events.jsonl.cut")
    with pytest.raises(LabrecordError, match="cannot set the cut last line aside"):
        RunWriter.open(run)
    assert target.read_text() == "keep\n"
    # the run itself is unchanged: the cut line is still in place
    assert (run / "events.jsonl").read_bytes().endswith(b'{"seq": 50, "t"')
