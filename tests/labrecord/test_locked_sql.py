"""The one locked DuckDB set-up: a foreign corpus or snapshot cannot reach local files
through score, report, snapshot or sql; DuckDB's temporary folder is private; every
parser error is one line; sql has a time limit and a row cap."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labrecord.cli import cli
from labrecord.errors import LabrecordError
from labrecord.examples import write_example_run
from labrecord.store import connect, ingest_runs, open_source, write_snapshot
from labrecord.store.readonly import lock, read_statements

SECRET = "TOP-SECRET-7f3a"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("locked")
    write_example_run(root / "runs", "r1")
    write_example_run(root / "runs", "r2", correct=False)
    db = root / "clean.duckdb"
    con = connect(db)
    ingest_runs(root / "runs", con)
    con.close()
    (root / "secret.txt").write_text(SECRET + "\n")
    (root / "secret.csv").write_text(f"system_name\n{SECRET}\n")
    return {"root": root, "db": db}


def foreign(corpus: dict[str, Path], name: str, attack: str) -> Path:
    """A copy of the clean corpus whose ``runs`` table is replaced by a view reading a local file."""
    root = corpus["root"]
    db = root / f"{name}.duckdb"
    shutil.copy(corpus["db"], db)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE runs_kept AS SELECT * FROM runs")
    names = [r[0] for r in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'runs' "
                                       "ORDER BY column_index").fetchall()]
    con.execute("DELETE FROM runs")
    con.execute("ALTER TABLE runs RENAME TO runs_gone")
    leak = attack.format(secret_txt=root / "secret.txt", secret_csv=root / "secret.csv")
    select = ", ".join(f"({leak}) AS system_name" if n == "system_name" else f'"{n}"' for n in names)
    if "MACRO" in attack.upper():
        con.execute(f"CREATE MACRO leak() AS TABLE SELECT content FROM read_text('{root / 'secret.txt'}')")
        select = ", ".join("(SELECT content FROM leak()) AS system_name" if n == "system_name" else f'"{n}"' for n in names)
    con.execute(f"CREATE VIEW runs AS SELECT {select} FROM runs_kept")
    con.close()
    return db


ATTACKS = {
    "read_text": "SELECT content FROM read_text('{secret_txt}')",
    "read_csv": "SELECT system_name FROM read_csv('{secret_csv}')",
    "glob": "SELECT string_agg(file, ',') FROM glob('{secret_txt}')",
    "macro": "MACRO",
}


def test_the_foreign_corpus_really_leaks_without_the_lock(corpus: dict[str, Path]) -> None:
    """The attack works on a plain connection, so the tests below test the lock."""
    db = foreign(corpus, "plain", ATTACKS["read_text"])
    con = duckdb.connect(str(db), read_only=True)
    assert SECRET in str(con.execute("SELECT system_name FROM runs").fetchall())
    con.close()


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("command", ["score", "sql", "snapshot", "report"])
def test_a_foreign_corpus_cannot_read_local_files(corpus: dict[str, Path], attack: str, command: str) -> None:
    """A view in someone else's corpus once leaked local file contents through score and snapshot."""
    db = foreign(corpus, f"{command}-{attack}", ATTACKS[attack])
    out = corpus["root"] / f"out-{command}-{attack}"
    args = {"score": ["score", str(db), "--out", f"{out}.json", "--resamples", "0"],
            "sql": ["sql", "SELECT system_name FROM runs", "--db", str(db)],
            "snapshot": ["snapshot", "--db", str(db), "--parquet", str(out)],
            "report": ["report", str(db), "--out", f"{out}.html", "--resamples", "0"]}[command]
    result = CliRunner().invoke(cli, args)
    assert SECRET not in result.output
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1, result.output
    assert "disabled by configuration" in result.output
    for written in (out, Path(f"{out}.json"), Path(f"{out}.html")):
        assert not written.exists() or SECRET not in "".join(
            p.read_text(errors="replace") for p in ([written] if written.is_file() else written.rglob("*")) if p.is_file())


def test_a_locked_connection_cannot_be_unlocked(corpus: dict[str, Path]) -> None:
    con, _, _ = open_source(corpus["db"])
    for statement in ("SET enable_external_access = true", "SET allowed_directories = ['/']",
                      "SET lock_configuration = false", "RESET enable_external_access",
                      f"SET temp_directory = '{corpus['root']}'"):
        with pytest.raises(duckdb.Error, match="locked"):
            con.execute(statement)
    with pytest.raises(duckdb.Error, match="disabled by configuration"):
        con.execute(f"ATTACH '{corpus['root'] / 'other.duckdb'}'")
    con.close()


def test_every_kind_of_source_is_locked(corpus: dict[str, Path]) -> None:
    root = corpus["root"]
    snap = root / "snap-locked"
    write_snapshot(corpus["db"], snap)
    for source, parquet in ((corpus["db"], False), (snap, True), (root / "runs", False)):
        con, kind, _ = open_source(source, parquet=parquet)
        assert con.execute("SELECT current_setting('enable_external_access'), current_setting('lock_configuration')"
                           ).fetchone() == (False, True), kind
        with pytest.raises(duckdb.Error, match="disabled by configuration"):
            con.execute(f"SELECT * FROM read_text('{root / 'secret.txt'}')")
        con.close()


def test_a_snapshot_with_a_link_outside_is_refused(corpus: dict[str, Path]) -> None:
    root = corpus["root"]
    snap = root / "snap-linked"
    write_snapshot(corpus["db"], snap)
    outside = root / "outside.parquet"
    duckdb.connect().execute(f"COPY (SELECT '{SECRET}' AS system_name) TO '{outside}' (FORMAT parquet)")
    part = next((snap / "runs").rglob("*.parquet"))
    (part.parent / "leak.parquet").symlink_to(outside)
    result = CliRunner().invoke(cli, ["sql", "SELECT system_name FROM runs", "--parquet", str(snap)])
    assert result.exit_code == 1 and "symbolic link" in result.output and SECRET not in result.output


@pytest.mark.parametrize("mode", ["db", "parquet"])
def test_the_temporary_folder_is_private(corpus: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         mode: str) -> None:
    """sql once read files under <db>.tmp/ (DuckDB allows its temporary folder even with external access off)."""
    root = corpus["root"]
    monkeypatch.chdir(tmp_path)
    snap = root / "snap-tmp"
    if not snap.exists():
        write_snapshot(corpus["db"], snap)
    planted = [Path(f"{corpus['db']}.tmp"), tmp_path / ".tmp", snap / ".tmp"]
    for folder in planted:
        folder.mkdir(exist_ok=True)
        (folder / "x.csv").write_text(f"a\n{SECRET}\n")
    source = ["--db", str(corpus["db"])] if mode == "db" else ["--parquet", str(snap)]
    for folder in planted[:2]:
        result = CliRunner().invoke(cli, ["sql", f"SELECT * FROM read_csv('{folder / 'x.csv'}')", *source])
        assert result.exit_code == 1 and SECRET not in result.output, result.output
    con, _, _ = open_source(corpus["db"])
    temp = Path(con.execute("SELECT current_setting('temp_directory')").fetchone()[0])
    assert temp.name.startswith("labrecord-duckdb-") and (temp.stat().st_mode & 0o077) == 0
    con.close()
    for folder in planted:
        shutil.rmtree(folder)


@pytest.mark.parametrize("query, expect", [
    ("EXPLAIN (FORMAT json) SELECT 1", 0),
    ("EXPLAIN (FORMAT json) SELECT * FROM runs", 0),
    ("EXPLAIN ANALYZE (FORMAT json) SELECT 1", None),
    ("EXPLAIN (FORMAT json) COPY runs TO 'x.csv'", 1),
    ("EXPLAIN (FORMAT", 1),
    ("EXPLAIN (FORMAT json", 1),
    ("EXPLAIN (FORMAT json) ", 1),
    ("EXPLAIN", 1),
    ("SELECT (", 1),
    ("SELECT 'unterminated", 1),
    ("/* open comment", 1),
    ("", 2),
])
def test_every_parser_error_is_one_line(corpus: dict[str, Path], query: str, expect: int | None) -> None:
    """EXPLAIN (FORMAT json) once ended in a traceback."""
    result = CliRunner().invoke(cli, ["sql", query, "--db", str(corpus["db"])])
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    if expect is not None:
        assert result.exit_code == expect, result.output
    if result.exit_code == 1:
        assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=st.sampled_from(list("EXPLAIN SELECT FROM ()'\";,*1 json FORMAT ANALYZE runs -/")), max_size=40))
def test_any_query_text_is_a_result_or_one_line(corpus: dict[str, Path], text: str) -> None:
    result = CliRunner().invoke(cli, ["sql", text or " ", "--db", str(corpus["db"]), "--timeout-s", "5"])
    assert result.exception is None or isinstance(result.exception, SystemExit), (text, result.exception)
    if result.exit_code == 1:
        assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1


def test_explain_statements_are_reads_only_of_reads() -> None:
    assert len(read_statements("EXPLAIN (FORMAT json) SELECT 1; EXPLAIN ANALYZE SELECT 2")) == 2
    with pytest.raises(LabrecordError, match="EXPLAIN of COPY"):
        read_statements("EXPLAIN (FORMAT json, ANALYZE) COPY (SELECT 1) TO 'x.csv'")


def test_sql_has_a_time_limit(corpus: dict[str, Path]) -> None:
    query = "SELECT count(*) FROM range(100000000000) a"
    result = CliRunner().invoke(cli, ["sql", query, "--db", str(corpus["db"]), "--timeout-s", "0.3"])
    assert result.exit_code == 1 and "time limit" in result.output and "--timeout-s" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_sql_has_a_row_cap(corpus: dict[str, Path]) -> None:
    """Hand check: range(1000) has 1000 rows, over a cap of 999 and within one of 1000."""
    db = str(corpus["db"])
    result = CliRunner().invoke(cli, ["sql", "SELECT * FROM range(1000)", "--db", db, "--max-rows", "999"])
    assert result.exit_code == 1 and "more than 999 rows" in result.output and "--max-rows" in result.output
    result = CliRunner().invoke(cli, ["sql", "SELECT * FROM range(1000)", "--db", db, "--max-rows", "1000", "--csv"])
    assert result.exit_code == 0 and len(result.output.splitlines()) == 1001
    default = CliRunner().invoke(cli, ["sql", "SELECT * FROM range(200000)", "--db", db, "--csv"])
    assert default.exit_code == 1 and "more than 100000 rows" in default.output


def test_lock_is_idempotent_on_a_shared_instance(corpus: dict[str, Path]) -> None:
    first = connect(corpus["db"], read_only=True)
    second = connect(corpus["db"], read_only=True)  # one DuckDB instance per file and process
    assert lock(second) is second
    first.close()
    second.close()


def test_ingest_into_a_foreign_corpus_cannot_read_other_files(corpus: dict[str, Path]) -> None:
    """Views of an existing corpus may read the runs being ingested, nothing else."""
    db = foreign(corpus, "ingest", ATTACKS["read_text"])
    result = CliRunner().invoke(cli, ["ingest", str(corpus["root"] / "runs"), "--db", str(db), "--no-audit"])
    assert SECRET not in result.output
    assert result.exit_code == 1 and "disabled by configuration" in result.output, result.output
    con = duckdb.connect(str(db), read_only=True, config={"enable_external_access": False})
    with pytest.raises(duckdb.Error, match="disabled by configuration"):
        con.execute("SELECT system_name FROM runs").fetchall()
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    stored = " ".join(str(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)
    con.close()
    assert SECRET not in stored
    clean = corpus["root"] / "fresh.duckdb"
    result = CliRunner().invoke(cli, ["ingest", str(corpus["root"] / "runs"), "--db", str(clean)])
    assert result.exit_code == 0, result.output


def test_a_snapshot_through_a_locked_connection(corpus: dict[str, Path]) -> None:
    """A locked connection writes only into its private temporary folder; the snapshot is moved from there."""
    root = corpus["root"]
    con = connect(corpus["db"], read_only=True)
    counts = write_snapshot(con, root / "snap-from-locked")
    temp = Path(con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0])
    con.close()
    assert counts["runs"] == 2 and not list(temp.glob("snapshot-*"))
    reopened, _, _ = open_source(root / "snap-from-locked", parquet=True)
    assert reopened.execute("SELECT count(*) FROM runs").fetchall() == [(2,)]
    reopened.close()
    con = connect(foreign(corpus, "locked-snapshot", ATTACKS["read_text"]), read_only=True)
    with pytest.raises(LabrecordError, match="disabled by configuration"):
        write_snapshot(con, root / "snap-leak")
    con.close()
    assert not (root / "snap-leak").exists()


def test_rxn_diff_reads_a_stored_system_through_the_lock(corpus: dict[str, Path]) -> None:
    """SYSTEM@corpus.duckdb is opened by the same locked set-up as every other reader."""
    from labrecord.chemdata.compare import load_source

    root = corpus["root"]
    db = root / "rxn-foreign.duckdb"
    con = connect(db)
    con.execute("DROP TABLE rxn_figures")
    con.execute(f"CREATE VIEW rxn_figures AS SELECT 'sys' AS system, 'f1' AS figure_id, content AS document "
                f"FROM read_text('{root / 'secret.txt'}')")
    con.close()
    with pytest.raises(duckdb.Error, match="disabled by configuration") as caught:
        load_source(f"sys@{db}")
    assert SECRET not in str(caught.value)
    result = CliRunner().invoke(cli, ["rxn", "diff", f"sys@{db}", f"sys@{db}", "--gold", f"sys@{db}"])
    assert result.exit_code == 1 and result.output.startswith("Error: corpus query failed: Permission Error")
    assert SECRET not in result.output and len(result.output.strip().splitlines()) == 1
