"""labrecord.Corpus: a corpus file or a snapshot folder as polars frames, opened read-only."""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labrecord
from labrecord.errors import LabrecordError
from labrecord.examples import write_example_run
from labrecord.scorers.dataframes import SCORE_COLUMNS, Corpus
from labrecord.store import connect, ingest_runs, write_snapshot


@pytest.fixture(scope="module")
def corpus_paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two example weighing runs: r1 chooses right at its one opportunity; r2 chooses wrong
    at both of its two.  Returns (corpus file, snapshot folder)."""
    root = tmp_path_factory.mktemp("corpus")
    write_example_run(root / "runs", "r1", correct=True, opportunities=1)
    write_example_run(root / "runs", "r2", correct=False, opportunities=2)
    db = root / "corpus.duckdb"
    ingest_runs(root / "runs", db)
    con = connect(db, read_only=True)
    try:
        write_snapshot(con, root / "snapshot")
    finally:
        con.close()
    return db, root / "snapshot"


def test_runs_events_and_episodes_by_hand(corpus_paths: tuple[Path, Path]) -> None:
    """r1 writes episode_start, opportunity, choice (t 0.5), confirm (t 2), dwell start and
    complete (t 3, 6), episode_end (t 6): seven events.  r2 has two opportunities (t 0, 3),
    two wrong choices and no confirm, its dwell runs from t 6 to 9: eight events."""
    db, _ = corpus_paths
    with Corpus(db) as corpus:
        runs = corpus.runs()
        assert isinstance(runs, pl.DataFrame)
        assert runs["run_id"].to_list() == ["r1", "r2"]
        assert runs["system_name"].to_list() == ["reference", "reference"]

        r1 = corpus.events(run_id="r1")
        assert r1["type"].to_list() == ["episode_start", "opportunity", "choice", "confirm", "dwell", "dwell",
                                        "episode_end"]
        assert r1["t"].to_list() == [0.0, 0.0, 0.5, 2.0, 3.0, 6.0, 6.0]
        assert r1["seq"].is_sorted()
        assert len(corpus.events()) == 7 + 8
        choices = corpus.events(type="choice")
        assert choices["run_id"].to_list() == ["r1", "r2", "r2"]
        # nested columns arrive as Arrow lists and structs, not as Python objects
        assert choices["op"].struct.field("object").to_list() == ["w20", "w50", "w50"]
        assert corpus.events(type="opportunity")["legal"].dtype == pl.List(pl.Struct(
            {"kind": pl.String, "object": pl.String, "dest": pl.String}))

        episodes = corpus.episodes()
        assert episodes.select("run_id", "opportunities", "identified_choices", "correct_choices").rows() == [
            ("r1", 1, 1, 1), ("r2", 2, 2, 0)]


def test_scores_are_the_score_command_numbers(corpus_paths: tuple[Path, Path]) -> None:
    """One identity (both runs are the same system): d0 is reached by both runs and chosen
    right by r1 only (1/2); d1 is reached by r2 only (1/2) and chosen wrong (0/2)."""
    db, _ = corpus_paths
    with Corpus(db) as corpus:
        scores = corpus.scores(seed=0, resamples=200)
    assert scores.columns == [name for name, _ in SCORE_COLUMNS]
    assert set(scores["group"].to_list()) == {0}
    by_metric = {row["metric"]: row for row in scores.iter_rows(named=True)}
    assert (by_metric["reach.d0"]["num"], by_metric["reach.d0"]["den"], by_metric["reach.d0"]["value"]) == (2, 2, 1.0)
    assert (by_metric["correct.d0"]["num"], by_metric["correct.d0"]["den"], by_metric["correct.d0"]["value"]) == (1, 2, 0.5)
    assert (by_metric["reach.d1"]["num"], by_metric["reach.d1"]["value"]) == (1, 0.5)
    assert (by_metric["correct.d1"]["num"], by_metric["correct.d1"]["value"]) == (0, 0.0)
    assert by_metric["completion.physical"]["value"] == 1.0
    low, high = by_metric["correct.d0"]["ci_low"], by_metric["correct.d0"]["ci_high"]
    assert low is not None and high is not None and low <= 0.5 <= high
    assert by_metric["correct.d0"]["system_name"] == "reference"
    assert not any(name.endswith((".lower", ".upper")) for name in by_metric)


def test_a_snapshot_gives_the_same_frames(corpus_paths: tuple[Path, Path]) -> None:
    db, snapshot = corpus_paths
    with Corpus(db) as from_db, Corpus(snapshot) as from_snapshot:
        assert from_snapshot.kind == "parquet"
        assert from_snapshot.runs().select("run_id", "content_hash").equals(from_db.runs().select("run_id", "content_hash"))
        assert from_snapshot.events().select("run_id", "seq", "type", "t").equals(
            from_db.events().select("run_id", "seq", "type", "t"))
        assert from_snapshot.episodes().equals(from_db.episodes())
        assert from_snapshot.scores(resamples=50).equals(from_db.scores(resamples=50))


def test_sql_reads_only(corpus_paths: tuple[Path, Path]) -> None:
    db, _ = corpus_paths
    with Corpus(db) as corpus:
        counts = corpus.sql("SELECT run_id, count(*) AS n FROM events GROUP BY run_id ORDER BY run_id")
        assert counts.rows() == [("r1", 7), ("r2", 8)]
        with pytest.raises(LabrecordError, match="statement 1 is CREATE"):
            corpus.sql("CREATE TABLE x AS SELECT 1")
        with pytest.raises(duckdb.Error):
            corpus.con.execute("DELETE FROM runs")  # the connection itself is read-only
        with pytest.raises(LabrecordError, match="no_such_table"):
            corpus.sql("SELECT * FROM no_such_table")
    assert corpus.runs  # the object survives closing; using it does not
    with pytest.raises(LabrecordError, match="closed"):
        corpus.runs()


def test_bad_paths_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="no such corpus file"):
        Corpus(tmp_path / "missing.duckdb")
    with pytest.raises(LabrecordError, match="not a labrecord Parquet snapshot"):
        Corpus(tmp_path)
    write_example_run(tmp_path / "parent" / "runs", "r1")  # run directories, not a snapshot's partitions
    with pytest.raises(LabrecordError, match="parent: not a readable labrecord snapshot"):
        Corpus(tmp_path / "parent")
    garbage = tmp_path / "garbage.duckdb"
    garbage.write_bytes(b"not a database")
    with pytest.raises(LabrecordError, match="garbage.duckdb"):
        Corpus(garbage)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 3)), min_size=1, max_size=4))
def test_frames_count_what_was_written(plan: list[tuple[bool, int]]) -> None:
    """For any set of example runs: one runs row each, one episode row each, and the first
    decision's B_next numerator is the number of runs that chose right."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        for index, (correct, opportunities) in enumerate(plan):
            write_example_run(root / "runs", f"r{index}", correct=correct, opportunities=opportunities)
        ingest_runs(root / "runs", root / "c.duckdb")
        with Corpus(root / "c.duckdb") as corpus:
            assert len(corpus.runs()) == len(plan)
            episodes = corpus.episodes()
            assert episodes["opportunities"].to_list() == [n for _, n in plan]
            assert episodes["correct_choices"].sum() == sum(n for correct, n in plan if correct)
            scores = corpus.scores(resamples=20).filter(pl.col("metric") == "correct.d0")
            assert scores["num"].to_list() == [sum(correct for correct, _ in plan)]
            assert scores["den"].to_list() == [len(plan)]


def test_the_top_level_name_loads_lazily() -> None:
    assert labrecord.Corpus is Corpus
    code = ("import sys, labrecord; heavy = {'duckdb', 'polars', 'pyarrow', 'labrecord.scorers'};"
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
