"""``rxn diff``: the paired bootstrap, per-figure comparison, reader agreement, both
argument forms (folders and SYSTEM@corpus)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support import require_module

from labrecord.errors import LabrecordError
from labrecord.models.rxn import FigureDocument, Molecule, Provenance, Reaction

from tests.chemdata.rxn_factories import figure, gold, write_folder

require_module("rdkit", 'pip install "labrecord[chem]"')


def test_paired_bootstrap_hand_case() -> None:
    """Deltas [1, 0]: the observed difference is 0.5, a resample's mean is 0, 0.5 or 1 (with
    chances 1/4, 1/2, 1/4), so the 95 % percentile interval is [0, 1]."""
    from labrecord.chemdata.compare import paired_bootstrap

    result = paired_bootstrap([1.0, 0.0], [0.0, 0.0], np.random.default_rng(1), resamples=4000)
    assert result["difference"] == 0.5 and result["interval"] == [0.0, 1.0]
    assert result["share_above_zero"] == pytest.approx(0.75, abs=0.03)


def test_paired_bootstrap_is_paired_and_seeded() -> None:
    from labrecord.chemdata.compare import paired_bootstrap

    a = [0.2, 0.9, 0.4, 1.0]
    shifted = [x - 0.1 for x in a]    # every figure 0.1 behind: a paired draw never varies
    assert paired_bootstrap(a, shifted, np.random.default_rng(0), 500)["interval"] == pytest.approx([0.1, 0.1])
    one = paired_bootstrap(a, [0.0] * 4, np.random.default_rng(7), 300)
    assert one == paired_bootstrap(a, [0.0] * 4, np.random.default_rng(7), 300)
    with pytest.raises(LabrecordError, match="equal"):
        paired_bootstrap([1.0], [1.0, 0.0], np.random.default_rng(0))


def _read(smiles: str, reader: str, region: str) -> Molecule:
    return Molecule(smiles=smiles, provenance=Provenance(origin="tool_read", reader=reader, region=region))


ESTER = (["CC(=O)O", "OCC"], ["CCOC(C)=O"])
AMIDE = (["CC(=O)O", "N"], ["CC(N)=O"])


def _systems(tmp_path: Path) -> tuple[str, str, str]:
    """Gold: a (ester), b (amide), c (ester).  A gets a and b right, fails c; B gets a right,
    b wrong, c right.  Per-figure F1 A: 1, 1, 0; B: 1, 0, 1; both systems are named
    'runner'.  Regions of figure a: A's osra read r1 = EtOH, r2 = AcOH; B's decimer read
    r1 = EtOH, r2 = propanol (a misreading), r3 = AcOH."""
    golds = [gold("a", [ESTER]), gold("b", [AMIDE]), gold("c", [ESTER])]
    a_docs = [FigureDocument(figure_id="a", system="runner", reactions=[Reaction(
                  reactants=[_read("OCC", "osra", "r1"), _read("CC(=O)O", "osra", "r2")],
                  products=[Molecule(smiles="CCOC(C)=O")])]),
              figure("b", [AMIDE], system="runner"), figure("c", [], system="runner", status="failed")]
    b_docs = [FigureDocument(figure_id="a", system="runner", reactions=[Reaction(
                  reactants=[_read("OCC", "decimer", "r1"), _read("CC(=O)O", "decimer", "r3")],
                  products=[Molecule(smiles="CCOC(C)=O")]), Reaction(
                  reactants=[_read("CCCO", "decimer", "r2")], products=[])]),
              figure("b", [ESTER], system="runner"), figure("c", [ESTER], system="runner")]
    return write_folder(tmp_path / "gold", golds), write_folder(tmp_path / "A", a_docs), write_folder(tmp_path / "B", b_docs)


def test_diff_of_two_folders_hand_counted(tmp_path: Path) -> None:
    """Figure a: A 1/1 (F1 1); B matches 1 of 2 predictions (P 1/2, R 1, F1 2/3).  Deltas
    A − B: a +1/3, b +1, c −1; macro difference (1/3 + 1 − 1) / 3 = 1/9."""
    from labrecord.chemdata.compare import diff_systems

    g, a, b = _systems(tmp_path)
    result = diff_systems(g, a, b, seed=3, resamples=200, top=2)
    assert (result["a"], result["b"], result["figures"]) == ("runner", "runner~2", 3)
    assert [round(r["delta"], 4) for r in result["per_figure"]] == [0.3333, 1.0, -1.0]
    assert result["bootstrap"]["difference"] == pytest.approx(1 / 9)
    assert result["bootstrap"]["seed"] == 3
    low, high = result["bootstrap"]["interval"]
    assert -1.0 <= low <= 1 / 9 <= high <= 1.0
    assert [r["figure_id"] for r in result["largest"]] == ["b", "c"]
    assert result["coverage"]["runner"]["failed"] == 1 and result["coverage"]["runner~2"]["answered"] == 3
    agreement = result["agreement"]
    assert agreement["pairs"] == [{"reader_a": "osra", "reader_b": "decimer", "regions": 2, "same": 1, "share": 0.5}]
    assert (agreement["regions_only_a"], agreement["regions_only_b"]) == (0, 1)
    assert agreement["readers"]["runner"]["osra"] == {"molecules": 2, "gold": 2, "share": 1.0}
    assert agreement["readers"]["runner~2"]["decimer"] == {"molecules": 3, "gold": 2, "share": pytest.approx(2 / 3)}
    again = diff_systems(g, a, b, seed=3, resamples=200, top=2)
    assert again["bootstrap"] == result["bootstrap"]


def test_diff_reads_systems_stored_in_a_corpus(tmp_path: Path) -> None:
    from labrecord.chemdata.adapters import load_documents
    from labrecord.chemdata.compare import diff_systems
    from labrecord.chemdata.store import ingest_documents
    from labrecord.store import connect

    g, a, b = _systems(tmp_path)
    db = tmp_path / "corpus.duckdb"
    con = connect(db)
    ingest_documents(con, load_documents(g, gold=True), gold=True)
    ingest_documents(con, load_documents(a, system="first"))
    con.close()
    stored = diff_systems(f"gold@{db}", f"first@{db}", b, resamples=100)
    folders = diff_systems(g, a, b, resamples=100)
    assert stored["a"] == "first"
    assert [r["delta"] for r in stored["per_figure"]] == [r["delta"] for r in folders["per_figure"]]
    with pytest.raises(LabrecordError, match="no figures of system 'nobody'"):
        diff_systems(g, f"nobody@{db}", b)
    with pytest.raises(LabrecordError, match="SYSTEM@corpus"):
        diff_systems(g, str(tmp_path / "absent"), b)
    with pytest.raises(LabrecordError, match="one profile"):
        diff_systems(g, a, b, profile="all")
