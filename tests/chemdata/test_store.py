"""Filling the reaction tables: comments, idempotent re-ingestion, the canonical-form cache,
one transaction per ingest."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import require_module

from labrecord.chemdata import store as rxn_store
from labrecord.chemdata.store import ingest_documents, systems
from labrecord.errors import LabrecordError
from labrecord.store import connect
from labrecord.store.schema import RXN_JUDGE_TABLES, RXN_TABLES

from tests.chemdata.rxn_factories import figure, gold

require_module("rdkit", 'pip install "labrecord[chem]"')


def test_every_column_is_commented() -> None:
    con = connect()
    rows = con.execute("SELECT table_name, column_name, comment FROM duckdb_columns() "
                       "WHERE table_name LIKE 'rxn_%'").fetchall()
    assert {(t, c) for t, c, _ in rows} == {(t.name, c) for t in RXN_TABLES + RXN_JUDGE_TABLES for c in t.names}
    assert all(comment for _, _, comment in rows)


def test_ingest_counts_and_cache(tmp_path: Path) -> None:
    con = connect(str(tmp_path / "c.duckdb"))
    docs = [gold("a", [(["CCO", "CC(=O)O"], ["CCOC(C)=O"])]), gold("b", [(["CCO"], ["CC=O"])])]
    first = ingest_documents(con, docs, gold=True)
    assert first == {"figures": 2, "reactions": 2, "molecules": 5, "new_smiles": 4}
    again = ingest_documents(con, docs, gold=True)           # replaced, nothing canonicalized twice
    assert again["new_smiles"] == 0
    assert con.execute("SELECT count(*) FROM rxn_reactions").fetchall()[0][0] == 2
    assert systems(con) == [("gold", True, 2)]
    row = con.execute("SELECT status, reason, strict, nonstereo FROM rxn_smiles WHERE smiles = 'CCOC(C)=O'").fetchall()[0]
    assert row == ("ok", None, ["CCOC(C)=O"], ["CCOC(C)=O"])


def test_failure_reasons_are_stored() -> None:
    con = connect()
    ingest_documents(con, [figure("a", [(["*C", "C1CC"], ["CC"])])])
    rows = dict(con.execute("SELECT smiles, reason FROM rxn_smiles WHERE reason IS NOT NULL").fetchall())
    assert rows == {"*C": "wildcard", "C1CC": "unparsable"}


def test_same_figure_twice_in_one_batch_is_refused() -> None:
    with pytest.raises(LabrecordError, match="appears twice"):
        ingest_documents(connect(), [figure("a", []), figure("a", [])])


def test_existing_figure_refused_without_replace() -> None:
    con = connect()
    ingest_documents(con, [figure("a", [])])
    with pytest.raises(LabrecordError, match="already in the corpus"):
        ingest_documents(con, [figure("a", [])], replace=False)


def test_a_file_that_is_not_a_corpus_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "x.duckdb").write_text("not a database")
    with pytest.raises(LabrecordError, match="x.duckdb: cannot open DuckDB corpus"):
        connect(str(tmp_path / "x.duckdb"))


def stored(con: object) -> list[tuple]:
    return con.execute("SELECT f.system, f.figure_id, r.reaction_index, m.smiles FROM rxn_figures f "  # type: ignore[attr-defined]
                       "JOIN rxn_reactions r USING (system, figure_id) JOIN rxn_molecules m USING (system, figure_id, reaction_index) "
                       "ORDER BY ALL").fetchall()


def test_a_failed_canonicalization_keeps_the_stored_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Canonicalization runs before anything is deleted: a crash there leaves the old rows."""
    con = connect()
    ingest_documents(con, [figure("a", [(["CCO"], ["CC=O"])])])
    before = stored(con)

    def crash(strings: object) -> dict:
        raise RuntimeError("normalizer crashed")

    monkeypatch.setattr("labrecord.chemdata.normalize.canonicalize_many", crash)
    with pytest.raises(RuntimeError):
        ingest_documents(con, [figure("a", [(["CCN"], ["CC=N"])])])
    assert stored(con) == before == [("sys", "a", 0, "CC=O"), ("sys", "a", 0, "CCO")]


def test_a_failed_write_rolls_back_the_whole_replacement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Delete and insert share one transaction: a failure on the last insert restores all rows."""
    con = connect()
    ingest_documents(con, [figure("a", [(["CCO"], ["CC=O"])])])
    before = stored(con)
    insert = rxn_store._insert

    def failing(con_: object, name: str, rows: list) -> None:
        if name == "rxn_molecules":
            raise RuntimeError("disk full")
        insert(con_, name, rows)

    monkeypatch.setattr(rxn_store, "_insert", failing)
    with pytest.raises(RuntimeError):
        ingest_documents(con, [figure("a", [(["CCN"], ["CC=N"])])])
    assert stored(con) == before
    assert con.execute("SELECT count(*) FROM rxn_smiles WHERE smiles = 'CCN'").fetchall()[0][0] == 0


def _table_rows(con: object) -> dict[str, list[tuple[object, ...]]]:
    out = {}
    for spec in RXN_TABLES:
        columns = ", ".join(f'"{c}"' for c in spec.names if c != "normalizer")
        out[spec.name] = con.execute(f"SELECT {columns} FROM {spec.name} ORDER BY ALL").fetchall()  # type: ignore[attr-defined]
    return out


def test_ingesting_sets_together_stores_what_one_after_the_other_does() -> None:
    """A gold set and a prediction sharing strings ("CCO" in both) ingested in one call
    give the same rows as two calls, and each shared string is canonicalized once."""
    golds = [gold("a", [(["CCO", "CC(=O)O"], ["CCOC(C)=O"])]), gold("b", [(["CCO"], ["CC=O"])])]
    preds = [figure("a", [(["OCC", "CC(=O)O"], ["CCOC(C)=O"])]), figure("b", [(["C1CC"], ["CC=O"])], status="failed")]
    apart, together = connect(tables=RXN_TABLES), connect(tables=RXN_TABLES)
    ingest_documents(apart, golds, gold=True)
    ingest_documents(apart, preds)
    counts = rxn_store.ingest_sets(together, [(golds, True), (preds, False)])
    assert counts == {"figures": 4, "reactions": 4, "molecules": 10, "new_smiles": 6}
    assert _table_rows(together) == _table_rows(apart)


def test_a_figure_in_two_of_the_sets_is_refused() -> None:
    with pytest.raises(LabrecordError, match="appears twice"):
        rxn_store.ingest_sets(connect(), [([figure("a", [])], True), ([figure("a", [])], False)])
