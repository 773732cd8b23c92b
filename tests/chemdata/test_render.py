"""Tests for chemdata/render.py: the figure generator and its gold records."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')
from hypothesis import given, strategies as st
from PIL import Image
from rdkit import Chem

from labrecord.chemdata.render import draw_figure, entry_id, gold_document, parse_reactions_file, render
from labrecord.errors import LabrecordError


def specs(tmp_path: Path, text: str) -> list:
    path = tmp_path / "r.smi"
    path.write_text(text)
    return parse_reactions_file(path)


def test_single_multistep_and_scope_lines(tmp_path: Path) -> None:
    parsed = specs(tmp_path, "# comment\nCCO.CC(=O)O>[H+]>CCOC(C)=O esterify  # acid\n\nBrc1ccccc1>>OB(O)c1ccccc1>>c1ccccc1\n"
                             "@scope-table [*:1]c1ccccc1>>[*:1]c1ccc(Br)cc1 R1=Me,Cl sc\nC#N>>CC#N nitrile\n")
    assert [(s.figure_id, s.layout) for s in parsed] == [("esterify", "single"), ("rxn-0004", "multistep"), ("sc", "scope-table"),
                                                 ("nitrile", "single")]
    assert parsed[0].agents == [["[H+]"]] and parsed[2].values == ["Me", "Cl"]


def test_gold_for_a_multistep_scheme_chains_steps(tmp_path: Path) -> None:
    (spec,) = specs(tmp_path, "Brc1ccccc1>>OB(O)c1ccccc1>>Cc1ccccc1 two\n")
    document = gold_document(spec)
    assert [(r.step, [m.smiles for m in r.reactants], [m.smiles for m in r.products]) for r in document.reactions] == [
        (1, ["Brc1ccccc1"], ["OB(O)c1ccccc1"]), (2, ["OB(O)c1ccccc1"], ["Cc1ccccc1"])]
    assert document.system == "gold"


def test_gold_for_a_scope_is_instantiated_with_provenance(tmp_path: Path) -> None:
    (spec,) = specs(tmp_path, "@scope-grid [*:1][C@H](N)C(=O)O>>[*:1][C@H](NC(C)=O)C(=O)O R1=Me,Bn aa\n")
    document = gold_document(spec)
    assert [r.identifiers for r in document.reactions] == [["1a"], ["1b"]]
    phe = document.reactions[1].reactants[0]
    assert phe.smiles == Chem.CanonSmiles("N[C@@H](Cc1ccccc1)C(=O)O")
    assert (phe.provenance.origin, phe.provenance.bindings) == ("template_derived", {"R1": "Bn"})
    assert document.templates[0].variables == {"R1": ["Me", "Bn"]}


@pytest.mark.parametrize(("text", "message"), [
    ("", "no reactions"),
    ("CCO>>CC a\nCC>>C a\n", "figure id 'a' used twice"),
    ("@scope-wide C>>C R=Me x\n", "unknown layout"),
    ("@scope-table [*:1]C>>[*:1]CC x\n", "needs LABEL="),
    ("@scope-table [*:1]C>>[*:1]CC R1= x\n", "has no values"),
    ("CCO a b\n", "expected reaction SMILES"),
    ("CCO>>CC bad/id\n", "bad figure id"),
    ("CCO>>>CC x\n", "bad reaction SMILES"),
    ("@scope-table A>>B>>C R1=Me x\n", "must be one step"),
])
def test_bad_lines_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(LabrecordError, match=message) as caught:
        specs(tmp_path, text)
    assert "r.smi" in str(caught.value)


def test_unparseable_smiles_and_unknown_substituent_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LabrecordError, match="line 1: RDKit cannot parse 'C1CC'"):
        gold_document(specs(tmp_path, "C1CC>>CC x\n")[0])
    with pytest.raises(LabrecordError, match="line 1: figure x: substituent R1='Zz'"):
        gold_document(specs(tmp_path, "@scope-table [*:1]C>>[*:1]CC R1=Zz x\n")[0])


def test_render_writes_figure_and_gold_side_by_side(tmp_path: Path) -> None:
    source = tmp_path / "r.smi"
    source.write_text("CC(=O)Nc1ccc(O)cc1>>CC(=O)Nc1ccc(OC)cc1 methylation\n")
    (png,) = render(source, tmp_path / "figs")
    assert png == tmp_path / "figs" / "methylation.png"
    assert Image.open(png).mode == "L"
    from labrecord.chemdata.adapters import load_documents

    (document,) = load_documents(tmp_path / "figs", gold=True)
    assert document.figure_id == "methylation" and len(document.reactions) == 1


def test_scope_table_figure_is_taller_than_its_template_row(tmp_path: Path) -> None:
    row, table = specs(tmp_path, "[*:1]c1ccccc1>>[*:1]c1ccccc1C a\n@scope-table [*:1]c1ccccc1>>[*:1]c1ccccc1C R1=Me,Et,Cl b\n")
    assert draw_figure(table).height > draw_figure(row).height


@given(st.integers(0, 2000))
def test_entry_ids_are_unique_and_printable(index: int) -> None:
    assert entry_id(index) != entry_id(index + 1)
    assert entry_id(index)[:-1].isdigit() and entry_id(index)[-1].islower()
