"""Corpus statistics on a small hand-counted corpus."""
from __future__ import annotations


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
