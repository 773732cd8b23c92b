"""The DuckDB corpus: bulk ingest, idempotence, skipping invalid runs, atomic batches, schema docs."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.examples import example_manifest, write_example_run
from labrecord.models import EpisodeStart, FinalScores, MetricValue, OnlineScore
from labrecord.rundir import RunWriter
from labrecord.scorers.synthetic import DecisionSpec, RolloutSpec, write_population, write_rollout
from labrecord.store import connect, ingest_runs, schema_rows, write_snapshot, open_snapshot
import labrecord.store.ingest as ingest_module
from labrecord import parallel


def _count(con, sql: str) -> int:
    return con.execute(sql).fetchone()[0]


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def test_ingest_loads_every_record(tmp_path):
    root = tmp_path / "runs"
    for index in range(3):
        write_example_run(root, f"r{index}", opportunities=index + 1)
    con = connect(None)
    summary = ingest_runs(root, con)
    assert sorted(summary.added) == ["r0", "r1", "r2"] and not summary.skipped
    assert _count(con, "SELECT count(*) FROM events") == sum(_lines(root / f"r{i}" / "events.jsonl") for i in range(3))
    assert _count(con, "SELECT count(*) FROM observations") == 1 + 2 + 3
    assert con.execute("SELECT op.kind, op.object FROM events WHERE type = 'choice' AND run_id = 'r0'").fetchone() == ("add", "w20")
    assert con.execute("SELECT legal[1].object FROM events WHERE type = 'opportunity' AND run_id = 'r0'").fetchone() == ("w20",)
    assert _count(con, "SELECT count(*) FROM events WHERE episode IS NULL") == 0


def test_reingest_is_a_no_op_and_a_changed_run_is_replaced_whole(tmp_path):
    root = tmp_path / "runs"
    write_example_run(root, "r0")
    write_example_run(root, "r1")
    db = tmp_path / "c.duckdb"
    ingest_runs(root, db)
    con = connect(db)
    before = con.execute("SELECT * FROM events ORDER BY run_id, seq").fetchall()
    stamps = dict(con.execute("SELECT run_id, content_hash FROM runs").fetchall())
    con.close()
    again = ingest_runs(root, db)
    assert sorted(again.unchanged) == ["r0", "r1"] and not again.added and not again.replaced
    # change r1: one more event
    with open(root / "r1" / "events.jsonl", "ab") as fh:
        fh.write(b'{"seq":99,"t":99.0,"type":"dwell","state":"reset"}\n')
    changed = ingest_runs(root, db)
    assert changed.replaced == ["r1"] and changed.unchanged == ["r0"]
    con = connect(db)
    after = con.execute("SELECT * FROM events ORDER BY run_id, seq").fetchall()
    assert len(after) == len(before) + 1
    assert [r for r in after if r[0] == "r0"] == [r for r in before if r[0] == "r0"]
    assert dict(con.execute("SELECT run_id, content_hash FROM runs").fetchall())["r0"] == stamps["r0"]


def test_invalid_run_is_skipped_with_findings_and_nothing_loaded(tmp_path):
    root = tmp_path / "runs"
    write_example_run(root, "good")
    bad = write_example_run(root, "bad")
    (bad / "events.jsonl").write_bytes((bad / "events.jsonl").read_bytes() + b'{"seq": 1, "t": 0.0, "type": "dwell", "state": "start"}\n')
    con = connect(None)
    summary = ingest_runs(root, con)
    assert summary.added == ["good"]
    assert any("seq 1 does not increase" in f for f in summary.skipped[str(bad)])
    assert _count(con, "SELECT count(*) FROM events WHERE run_id = 'bad'") == 0
    assert _count(con, "SELECT count(*) FROM runs WHERE run_id = 'bad'") == 0


def test_failed_bulk_load_keeps_nothing_of_the_batch(tmp_path, monkeypatch):
    """A full disk stops the ingest with one error; nothing of the batch stays."""
    import errno

    root = tmp_path / "runs"
    write_example_run(root, "r0")
    con = connect(None)

    def broken(con_, pending):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(ingest_module, "_load_scores", broken)
    with pytest.raises(LabrecordError, match="nothing of it was kept .*No space left on device"):
        ingest_runs(root, con)
    assert _count(con, "SELECT count(*) FROM runs") == 0
    assert _count(con, "SELECT count(*) FROM events") == 0


def test_a_run_that_fails_to_load_is_refused_alone(tmp_path, monkeypatch):
    """A load failure of one run's data refuses that run (invalid_runs row with the reason);
    the others of its batch are loaded."""
    root = tmp_path / "runs"
    for run_id in ("r0", "r1", "r2"):
        write_example_run(root, run_id)
    con = connect(None)
    real = ingest_module._load_scores

    def broken(con_, pending):
        if any(p.run_id == "r1" for p in pending):
            raise RuntimeError("bad scores")
        real(con_, pending)

    monkeypatch.setattr(ingest_module, "_load_scores", broken)
    summary = ingest_runs(root, con)
    assert sorted(summary.added) == ["r0", "r2"] and list(summary.skipped) == [str((root / "r1").resolve())]
    assert "bad scores" in summary.skipped[str((root / "r1").resolve())][0]
    assert con.execute("SELECT run_id FROM runs ORDER BY 1").fetchall() == [("r0",), ("r2",)]
    assert con.execute("SELECT run_id, reason LIKE '%bad scores%' FROM invalid_runs").fetchall() == [("r1", True)]
    assert _count(con, "SELECT count(*) FROM events WHERE run_id = 'r1'") == 0


def test_measurements_of_different_families_union_by_name(tmp_path):
    root = tmp_path / "runs"
    for run_id, family, column in (("a", "family-a", "load_g"), ("b", "family-b", "slot")):
        with RunWriter.create(root, example_manifest(run_id, family=family)) as run:
            run.emit(EpisodeStart, t=0.0, episode=0)
            run.write_measurements(pa.table({"step": [0, 1], "t": [0.0, 0.002], column: [1.5, 2.5]}))
            run.write_scores(FinalScores(run_id=run_id, status="complete", metrics={"B_next": MetricValue(value=1.0, num=1, den=1)}))
            run.online_score(OnlineScore(t=0.1, seq=0, metrics={}))
    con = connect(None)
    ingest_runs(root, con)
    rows = con.execute("SELECT run_id, load_g, slot FROM measurements ORDER BY run_id, step").fetchall()
    assert rows == [("a", 1.5, None), ("a", 2.5, None), ("b", None, 1.5), ("b", None, 2.5)]
    assert con.execute("SELECT metrics->'B_next'->>'num' FROM final_scores WHERE run_id = 'a'").fetchone() == ("1",)
    assert _count(con, "SELECT count(*) FROM online_scores") == 2


def test_populations_load_once(tmp_path):
    root = tmp_path / "runs"
    write_example_run(root, "r0", population=("J", "i0"))
    write_population(root, "J", [{"type": "checkpoint", "instance_id": "i0", "decision": "d0"}])
    db = tmp_path / "c.duckdb"
    assert ingest_runs(root, db).populations == ["J"]
    assert ingest_runs(root, db).populations == []
    assert connect(db).execute("SELECT population, type, decision FROM populations").fetchall() == [("J", "checkpoint", "d0")]


def test_every_column_is_documented():
    rows = schema_rows(connect(None))
    assert {r[1] for r in rows} >= {"runs", "events", "observations", "measurements", "populations", "first_choices", "episodes"}
    assert [r for r in rows if not r[4]] == []


def test_schema_listing_shows_tables_added_by_other_modules():
    con = connect(None)
    con.execute("CREATE TABLE reactions (figure_id VARCHAR)")
    con.execute("COMMENT ON COLUMN reactions.figure_id IS 'figure'")
    assert ("table", "reactions", "figure_id", "VARCHAR", "figure") in schema_rows(con)


def test_snapshot_is_hive_partitioned_and_reopens(tmp_path):
    root = tmp_path / "runs"
    write_rollout(root, RolloutSpec("a", system="pi05"))
    write_rollout(root, RolloutSpec("b", system="groot"))
    con = connect(None)
    ingest_runs(root, con)
    counts = write_snapshot(con, tmp_path / "snap")
    assert (tmp_path / "snap" / "events" / "family=weighing" / "system_name=pi05").is_dir()
    snap = open_snapshot(tmp_path / "snap")
    for table, n in counts.items():
        assert _count(snap, f"SELECT count(*) FROM {table}") == n
    assert snap.execute("SELECT system_name FROM runs ORDER BY 1").fetchall() == [("groot",), ("pi05",)]
    with pytest.raises(LabrecordError, match="not empty"):
        write_snapshot(con, tmp_path / "snap")


def test_snapshot_interrupted_midway_leaves_no_folder(tmp_path, monkeypatch):
    """A snapshot that fails after some tables were copied leaves neither ``snap`` nor a
    temporary folder behind; a retry then writes the whole snapshot."""
    root = tmp_path / "runs"
    write_rollout(root, RolloutSpec("a", system="pi05"))
    con = connect(None)
    ingest_runs(root, con)

    class Flaky:
        def __init__(self, inner, fail_at):
            self.inner, self.left = inner, fail_at

        def execute(self, sql, *args):
            if sql.startswith("COPY"):
                self.left -= 1
                if self.left < 0:
                    raise OSError("disk full")
            return self.inner.execute(sql, *args)

    with pytest.raises(LabrecordError, match="snapshot could not be written, nothing of it was kept: disk full"):
        write_snapshot(Flaky(con, 3), tmp_path / "snap")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    counts = write_snapshot(con, tmp_path / "snap")
    snap = open_snapshot(tmp_path / "snap")
    assert _count(snap, "SELECT count(*) FROM runs") == counts["runs"] == 1


@settings(max_examples=10, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["correct", "wrong", "none"]), max_size=4), min_size=1, max_size=4))
def test_written_events_read_back_unchanged(decision_lists):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        for index, outcomes in enumerate(decision_lists):
            write_rollout(root, RolloutSpec(f"r{index}", decisions=[DecisionSpec(outcome=o) for o in outcomes]))
        con = connect(None)
        ingest_runs(root, con)
        for index in range(len(decision_lists)):
            lines = [json.loads(line) for line in (root / f"r{index}" / "events.jsonl").read_text().splitlines()]
            stored = con.execute("SELECT seq, type, t FROM events WHERE run_id = ? ORDER BY seq", [f"r{index}"]).fetchall()
            assert stored == [(e["seq"], e["type"], e["t"]) for e in lines]


def test_a_corpus_with_views_of_an_older_release_gets_current_ones(tmp_path):
    root = tmp_path / "runs"
    write_rollout(root, RolloutSpec("a", decisions=[DecisionSpec("d0")]))
    db = tmp_path / "c.duckdb"
    ingest_runs(root, db)
    con = connect(db)
    con.execute("CREATE OR REPLACE VIEW first_choices AS SELECT run_id, opp FROM events WHERE type = 'opportunity'")
    con.close()
    # read-only: connection-local views shadow the stale stored one
    assert connect(db, read_only=True).execute("SELECT eligible FROM first_choices").fetchall() == [(True,)]
    # writable: the stored views are redone, the tables kept
    assert connect(db).execute("SELECT run_id, eligible FROM first_choices").fetchall() == [("a", True)]


def test_a_run_reingested_invalid_replaces_its_old_data_with_an_invalid_row(tmp_path):
    from labrecord.scorers.synthetic import RolloutSpec, write_rollout

    root = tmp_path / "runs"
    write_rollout(root, RolloutSpec("r0", physical=True))
    con = connect(tmp_path / "c.duckdb")
    ingest_runs(root, con)
    assert con.execute("SELECT count(*) FROM events WHERE run_id = 'r0'").fetchone()[0] > 0
    events = root / "r0" / "events.jsonl"
    events.write_bytes(events.read_bytes()[:-5])  # cut the last line
    summary = ingest_runs(root, con)
    assert [r["run_id"] for r in summary.invalid] == ["r0"]
    for table in ("runs", "events", "observations", "final_scores"):
        assert con.execute(f"SELECT count(*) FROM {table} WHERE run_id = 'r0'").fetchone()[0] == 0, table
    row = con.execute("SELECT run_id, system_name, identity_readable, reason FROM invalid_runs").fetchone()
    assert row[:3] == ("r0", "pi05", True) and "events.jsonl" in row[3]
    # repaired: the invalid row goes, the run is back
    events.unlink()
    write_rollout(tmp_path / "fresh", RolloutSpec("r0", physical=True))
    events.write_bytes((tmp_path / "fresh" / "r0" / "events.jsonl").read_bytes())
    ingest_runs(root, con)
    assert con.execute("SELECT count(*) FROM invalid_runs").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def test_a_corpus_of_runs_and_reactions_round_trips_through_a_snapshot(tmp_path):
    """Every registered table goes into the snapshot: run scores and reaction F1 computed on
    the reopened snapshot equal those computed on the corpus file."""
    from tests.support import require_module

    require_module("rdkit", 'pip install "labrecord[chem]"')
    from labrecord.chemdata.store import ingest_documents
    from labrecord.scorers.corpus import score_corpus
    from labrecord.scorers.reaction import score_db
    from labrecord.store.schema import TABLES
    from tests.chemdata.rxn_factories import figure, gold

    root = tmp_path / "runs"
    write_rollout(root, RolloutSpec("a", system="pi05", decisions=[DecisionSpec("d0")]))
    write_rollout(root, RolloutSpec("b", system="pi05", decisions=[DecisionSpec("d0", outcome="wrong")]))
    db = tmp_path / "c.duckdb"
    ingest_runs(root, db)
    con = connect(db)
    ester, amide = (["CC(=O)O", "OCC"], ["CCOC(C)=O"]), (["CC(=O)O", "N"], ["CC(N)=O"])
    ingest_documents(con, [gold("f1", [ester, amide]), gold("f2", [amide])], gold=True)
    ingest_documents(con, [figure("f1", [ester]), figure("f2", [ester])])
    counts = write_snapshot(con, tmp_path / "snap")
    assert set(counts) == {t.name for t in TABLES}
    assert counts["rxn_figures"] == 4 and counts["runs"] == 2
    snap = open_snapshot(tmp_path / "snap")
    for table, n in counts.items():
        assert _count(snap, f"SELECT count(*) FROM {table}") == n
    assert score_db(snap, "gold", "sys") == score_db(con, "gold", "sys")
    assert score_db(snap, "gold", "sys")["macro"]["strict"]["f1"] == pytest.approx((2 / 3 + 0) / 2)
    assert score_corpus(snap, seed=0, resamples=50) == score_corpus(con, seed=0, resamples=50)


def test_corpus_files_of_older_releases_open_whole(tmp_path):
    """One migration path: a runs-only or reactions-only file gains the tables it lacks
    (connection-local when read-only, stored when writable), its rows kept."""
    import duckdb

    from labrecord.store.schema import RXN_FIGURES, TABLES

    runs_only = tmp_path / "runs.duckdb"
    ingest_runs(write_rollout(tmp_path / "r", RolloutSpec("a")).parent, runs_only)
    raw = duckdb.connect(str(runs_only))
    for spec in TABLES:
        if spec.name.startswith("rxn_"):
            raw.execute(f"DROP TABLE {spec.name}")
    raw.close()
    assert _count(connect(runs_only, read_only=True), "SELECT count(*) FROM rxn_figures") == 0
    assert _count(connect(runs_only), "SELECT count(*) FROM runs") == 1

    rxn_only = tmp_path / "rxn.duckdb"
    raw = duckdb.connect(str(rxn_only))
    raw.execute(RXN_FIGURES.ddl())
    raw.execute("INSERT INTO rxn_figures (system, figure_id, gold, status, n_reactions, n_templates) "
                "VALUES ('gold', 'f', true, 'ok', 0, 0)")
    raw.close()
    read = connect(rxn_only, read_only=True)
    assert _count(read, "SELECT count(*) FROM events") == 0
    assert _count(read, "SELECT count(*) FROM first_choices") == 0
    read.close()
    con = connect(rxn_only)
    assert _count(con, "SELECT count(*) FROM rxn_figures") == 1
    assert {t.name for t in TABLES} <= {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}


def test_validation_on_worker_processes_loads_the_same_corpus(tmp_path, monkeypatch):
    """``jobs`` spreads validation over labrecord.parallel.map; the stored rows do not change."""
    root = tmp_path / "runs"
    for index, outcome in enumerate(["correct", "wrong", "none"]):
        write_rollout(root, RolloutSpec(f"r{index}", decisions=[DecisionSpec(outcome=outcome)]))
    (root / "r1" / "run.json").write_text("{")                 # one invalid run, skipped with findings
    monkeypatch.setattr(parallel, "POOL_THRESHOLD", 1)
    one, many = connect(None), connect(None)
    first, second = ingest_runs(root, one, jobs=1), ingest_runs(root, many, jobs=2)
    assert (first.added, list(first.skipped)) == (second.added, list(second.skipped)) == (["r0", "r2"], [str(root / "r1")])
    query = "SELECT run_id, seq, type, t FROM events ORDER BY ALL"
    assert one.execute(query).fetchall() == many.execute(query).fetchall()


def test_a_read_only_corpus_lacking_new_columns_still_scores(tmp_path):
    """A corpus file written before runs.asset_revision, events.runtime_s and audits.audited
    existed opens read-only with those columns as nulls, and scores."""
    import duckdb

    from labrecord.scorers.corpus import score_corpus

    db = tmp_path / "old.duckdb"
    ingest_runs(write_rollout(tmp_path / "r", RolloutSpec("a", physical=True)).parent, db)
    raw = duckdb.connect(str(db))
    for table, column in (("runs", "asset_revision"), ("events", "runtime_s"), ("audits", "audited")):
        raw.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    raw.close()
    con = connect(db, read_only=True)
    (group,) = score_corpus(con, resamples=0)["groups"]
    assert group["metrics"]["completion.valid"]["value"] == 1.0
    assert group["identity"]["asset_revision"] is None
