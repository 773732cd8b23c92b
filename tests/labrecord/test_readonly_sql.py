"""``labrecord sql`` only reads: statement types are checked and the connection cannot reach files."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from labrecord.cli import cli
from labrecord.errors import LabrecordError
from labrecord.examples import write_example_run
from labrecord.store import connect, ingest_runs, write_snapshot
from labrecord.store.readonly import read_statements


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("sql")
    write_example_run(root / "runs", "r1")
    db = root / "c.duckdb"
    con = connect(db)
    ingest_runs(root / "runs", con)
    write_snapshot(con, root / "snap")
    con.close()
    return root, db, root / "snap"


HOSTILE = [
    ("COPY runs TO '{root}/snap/out.csv'", "statement 1 is COPY"),
    ("EXPORT DATABASE '{root}/snap/exported'", "statement 1 is EXPORT"),
    ("ATTACH '{root}/snap/new.db'", "statement 1 is ATTACH"),
    ("INSTALL httpfs", "statement 1 is LOAD"),
    ("CREATE TABLE t AS SELECT 1", "statement 1 is CREATE"),
    ("DROP VIEW first_choices", "statement 1 is DROP"),
    ("SET enable_external_access = true", "statement 1 is SET"),
    ("SELECT 1; DELETE FROM runs", "statement 2 is DELETE"),
    ("EXPLAIN ANALYZE COPY runs TO '{root}/snap/out.csv'", "EXPLAIN of COPY"),
    ("SELECT * FROM read_text('/etc/passwd')", "Permission Error"),
    ("SELECT * FROM glob('/root/*')", "Permission Error"),
    ("SELECT * FROM read_csv('{root}/runs/r1/events.jsonl')", "Permission Error"),
]


@pytest.mark.parametrize("mode", ["db", "parquet"])
@pytest.mark.parametrize("query, refusal", HOSTILE)
def test_writes_and_outside_reads_are_refused_in_both_modes(corpus, mode: str, query: str, refusal: str) -> None:
    root, db, snap = corpus
    before = sorted(p.name for p in snap.iterdir())
    source = ["--db", str(db)] if mode == "db" else ["--parquet", str(snap)]
    result = CliRunner().invoke(cli, ["sql", query.format(root=root), *source])
    assert result.exit_code == 1 and refusal in result.output, result.output
    assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1
    assert "root:" not in result.output
    assert sorted(p.name for p in snap.iterdir()) == before


@pytest.mark.parametrize("mode", ["db", "parquet"])
@pytest.mark.parametrize("query", ["SELECT count(*) AS n FROM runs", "FROM runs SELECT count(*) AS n",
                                   "WITH x AS (SELECT * FROM runs) SELECT count(*) AS n FROM x"])
def test_reads_still_work(corpus, mode: str, query: str) -> None:
    _, db, snap = corpus
    source = ["--db", str(db)] if mode == "db" else ["--parquet", str(snap)]
    result = CliRunner().invoke(cli, ["sql", query, *source, "--csv"])
    assert result.exit_code == 0 and result.output.splitlines() == ["n", "1"], result.output


def test_describe_show_and_explain_are_reads() -> None:
    assert len(read_statements("DESCRIBE runs; SHOW TABLES; SUMMARIZE runs; EXPLAIN SELECT 1; VALUES (1)")) == 5
    with pytest.raises(LabrecordError, match="statement 1 is PRAGMA"):
        read_statements("PRAGMA enable_profiling")


def test_help_says_what_is_allowed() -> None:
    output = CliRunner().invoke(cli, ["sql", "-h"]).output
    assert "Only reads are run" in output and "COPY" in output


def test_sql_on_a_reaction_only_corpus(tmp_path: Path) -> None:
    import duckdb

    from labrecord.store.schema import RXN_TABLES

    db = tmp_path / "rxn.duckdb"  # a reaction-only corpus file, as an older release wrote it
    raw = duckdb.connect(str(db))
    for spec in RXN_TABLES:
        raw.execute(spec.ddl())
    raw.close()
    result = CliRunner().invoke(cli, ["sql", "SELECT count(*) AS n FROM rxn_figures", "--db", str(db), "--csv"])
    assert result.exit_code == 0 and result.output.splitlines() == ["n", "0"], result.output
