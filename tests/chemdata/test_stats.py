"""Corpus statistics on a small hand-counted corpus."""
from __future__ import annotations


import pytest

from tests.support import require_module

from labrecord.chemdata.stats import corpus_stats
from labrecord.chemdata.store import ingest_documents
from labrecord.models.rxn import Condition, FigureDocument, Molecule, Provenance, Reaction
from labrecord.store import connect

require_module("rdkit", 'pip install "labrecord[chem]"')


def test_hand_counted_statistics() -> None:
    tool = Provenance(origin="tool_read")
    derived = Provenance(origin="template_derived", template="t1", bindings={"R1": "C"})
    docs = [
        FigureDocument(figure_id="a", system="s", reactions=[
            Reaction(reactants=[Molecule(smiles="CCO", provenance=tool)], products=[Molecule(smiles="CC=O", provenance=derived)],
                     conditions=[Condition(role="Catalyst", smiles="[Pd]"), Condition(role="solvent", text="THF")],
                     yield_="80%"),
            Reaction(reactants=[Molecule(smiles="C1CC")], products=[Molecule(smiles="CC", provenance=tool)], selectivity="95% ee"),
        ]),
        FigureDocument(figure_id="b", system="s", status="failed", error="timeout in tool"),
    ]
    con = connect()
    ingest_documents(con, docs)
    s = corpus_stats(con)["s"]
    assert s["figures"] == {"total": 2, "status": {"failed": 1, "ok": 1}}
    assert (s["reactions"], s["templates"]) == (2, 0)
    assert s["records_per_figure"]["bands"]["0"] == 1 and s["records_per_figure"]["bands"]["1-5"] == 1
    assert s["records_per_figure"]["max"] == 2 and s["records_per_figure"]["mean"] == 1.0
    assert s["parse"] == {"total": 5, "ok": 4, "rate": 0.8, "distinct": 5, "reasons": {"unparsable": 1}}
    assert s["provenance"] == {"template_derived": 0.25, "tool_read": 0.5, "unrecorded": 0.25}
    cov = s["coverage"]
    assert (cov["yield"], cov["selectivity"], cov["conditions"]) == (0.5, 0.5, 0.5)
    assert (cov["condition:catalyst"], cov["condition:solvent"], cov["condition:reagent"]) == (0.5, 0.5, 0.0)


# --------------------------------------------------------------------------- calibration

def _read(smiles: str, confidence: float | None, reader: str | None = "osra") -> Molecule:
    return Molecule(smiles=smiles, provenance=Provenance(origin="tool_read", reader=reader, confidence=confidence))


def test_reliability_table_hand_counted() -> None:
    """Gold: CCO, CC=O, CCCl.  osra's readings: CCO 0.95 (right), CC=O 0.91 (right), CCBr
    0.92 (wrong), CCO again 0.15 (wrong: the one gold CCO is already claimed by the 0.95
    reading), CCCl 0.12 (right).  Bin 0.9–1.0: 2 of 3, Wilson [0.208, 0.939]; bin 0.1–0.2:
    1 of 2.  ECE = 3/5·|2/3 − 0.9267| + 2/5·|1/2 − 0.135| = 0.156 + 0.146 = 0.302.  The
    reading without a confidence is counted, not binned."""
    from labrecord.chemdata.stats import reliability

    g = FigureDocument(figure_id="a", system="gold", reactions=[
        Reaction(reactants=[Molecule(smiles="CCO"), Molecule(smiles="CCCl")], products=[Molecule(smiles="CC=O")])])
    p = FigureDocument(figure_id="a", system="s", reactions=[
        Reaction(reactants=[_read("CCO", 0.95), _read("CCBr", 0.92)], products=[_read("CC=O", 0.91)]),
        Reaction(reactants=[_read("CCO", 0.15), _read("CCCl", 0.12), _read("CC", None)], products=[])])
    con = connect()
    ingest_documents(con, [g], gold=True)
    ingest_documents(con, [p])
    result = reliability(con, "gold", "s", bins=10)
    assert result["without_confidence"] == 1 and list(result["readers"]) == ["osra"]
    osra = result["readers"]["osra"]
    assert (osra["readings"], osra["correct"]) == (5, 3)
    top, low = osra["bins"][9], osra["bins"][1]
    assert (top["n"], top["correct"]) == (3, 2) and (low["n"], low["correct"]) == (2, 1)
    assert top["interval"] == pytest.approx([0.2077, 0.9385], abs=1e-4)
    assert top["mean_confidence"] == pytest.approx(0.9266667)
    assert osra["ece"] == pytest.approx(0.6 * abs(2 / 3 - 0.9266667) + 0.4 * abs(0.5 - 0.135))
    assert sum(b["n"] for b in osra["bins"]) == 5


def test_confidence_one_falls_in_the_last_bin_and_out_of_range_is_refused() -> None:
    from labrecord.chemdata.stats import reliability
    from labrecord.errors import LabrecordError

    g = FigureDocument(figure_id="a", system="gold", reactions=[Reaction(reactants=[Molecule(smiles="CCO")],
                                                                         products=[Molecule(smiles="CC=O")])])
    con = connect()
    ingest_documents(con, [g], gold=True)
    ingest_documents(con, [FigureDocument(figure_id="a", system="s", reactions=[
        Reaction(reactants=[_read("CCO", 1.0, reader=None)], products=[])])])
    table = reliability(con, "gold", "s", bins=4)["readers"]["unrecorded"]["bins"]
    assert [b["n"] for b in table] == [0, 0, 0, 1] and table[3]["interval"][1] == 1.0
    ingest_documents(con, [FigureDocument(figure_id="a", system="t", reactions=[
        Reaction(reactants=[_read("CCO", 1.5)], products=[])])])
    with pytest.raises(LabrecordError, match="outside"):
        reliability(con, "gold", "t")
    with pytest.raises(LabrecordError, match="bins"):
        reliability(con, "gold", "s", bins=0)
