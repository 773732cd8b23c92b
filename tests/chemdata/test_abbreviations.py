"""Substituted-phenyl formulas read by the abbreviation table (chemdata/abbreviations.py)."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.chemdata.abbreviations import ABBREVIATIONS, aryl_formula, lookup

pytest.importorskip("rdkit")
from rdkit import Chem  # noqa: E402


def same(a: str | None, b: str) -> bool:
    return a is not None and Chem.CanonSmiles(a) == Chem.CanonSmiles(b)


@pytest.mark.parametrize("formula, smiles", [
    ("3-BrC6H4", "*c1cccc(Br)c1"),                       # one locant, one group, 5 - 1 = 4 H
    ("2-MeC6H4", "*c1ccccc1C"),
    ("4-MeOC6H4", "*c1ccc(OC)cc1"),                      # the table's own entry, same fragment
    ("2,4-Cl2C6H3", "*c1ccc(Cl)cc1Cl"),                  # Cl2 takes both locants, 5 - 2 = 3 H
    ("3,4-(MeO)2C6H3", "*c1ccc(OC)c(OC)c1"),             # a bracketed group with a multiplicity
    ("3-Cl-4-FC6H3", "*c1ccc(F)c(Cl)c1"),                 # two locant groups
    ("3,5-(CF3)2C6H3", "*c1cc(C(F)(F)F)cc(C(F)(F)F)c1"),
    ("2,4,6-Me3C6H2", "*c1c(C)cc(C)cc1C"),
    ("4-tBuC6H4", "*c1ccc(C(C)(C)C)cc1"),
])
def test_formulas_by_hand(formula: str, smiles: str) -> None:
    assert same(lookup(formula), smiles)


@pytest.mark.parametrize("formula", [
    "2,4-Cl2C6H4",   # two groups leave three hydrogens, not four
    "4-ClC6H3",      # one group leaves four
    "2,2-Cl2C6H3",   # one position twice
    "4-ArC6H4",      # Ar is a variable, not a group
    "4-HC6H4",       # H is no substituent
    "4-XyzC6H4",     # no such group
    "C6H5",          # no locant: not a substituted-phenyl formula (the table has Ph)
    "4-Cl",          # no ring
])
def test_formulas_that_do_not_add_up_are_refused(formula: str) -> None:
    assert aryl_formula(formula) is None


GROUPS = ["F", "Cl", "Br", "Me", "OMe", "CF3", "NO2", "CN"]


@given(st.dictionaries(st.integers(2, 6), st.sampled_from(GROUPS), min_size=1, max_size=4))
def test_a_written_formula_reads_back_as_the_ring_it_names(placed: dict[int, str]) -> None:
    """Property: write positions and groups as ``2-F-4-ClC6H3`` (one locant group each, in
    position order), read it, and get the ring built atom by atom with RDKit."""
    formula = "-".join(f"{p}-{g}" for p, g in sorted(placed.items())) + f"C6H{5 - len(placed)}"
    ring = Chem.RWMol(Chem.MolFromSmiles("c1ccccc1"))
    dummy = ring.AddAtom(Chem.Atom(0))
    ring.AddBond(0, dummy, Chem.BondType.SINGLE)
    for position, group in placed.items():
        fragment = Chem.MolFromSmiles(ABBREVIATIONS[group])
        combined = Chem.RWMol(Chem.CombineMols(ring, fragment))
        offset = ring.GetNumAtoms()
        (star,) = [a.GetIdx() + offset for a in fragment.GetAtoms() if a.GetAtomicNum() == 0]
        (root,) = [n.GetIdx() for n in combined.GetAtomWithIdx(star).GetNeighbors()]
        combined.AddBond(position - 1, root, Chem.BondType.SINGLE)
        combined.RemoveAtom(star)
        ring = combined
    expected = ring.GetMol()
    Chem.SanitizeMol(expected)
    assert same(aryl_formula(formula), Chem.MolToSmiles(expected))


@pytest.mark.parametrize("word, smiles", [
    ("CS2", "S=C=S"), ("cs,", "S=C=S"),                 # any case; a subscript 2 read as ","
    ("B,(pin),", "CC1(C)OB(B2OC(C)(C)C(C)(C)O2)OC1(C)C"),
    ("H,0", "O"),                                       # "0" for the letter O
    ("(NBS)", "O=C1CCC(=O)N1Br"),
])
def test_printed_molecules_by_hand(word: str, smiles: str) -> None:
    from labrecord.chemdata.abbreviations import printed_molecule

    assert same(printed_molecule(word), smiles)


@pytest.mark.parametrize("word", ["co", "rt,", "DCM", "Ar", "MeOH", "R+", ""])
def test_words_that_name_no_printed_molecule(word: str) -> None:
    from labrecord.chemdata.abbreviations import printed_molecule

    assert printed_molecule(word) is None


@given(st.sampled_from(sorted(__import__("labrecord.chemdata.abbreviations", fromlist=["x"]).PRINTED_MOLECULES)))
def test_every_printed_molecule_reads_back_in_any_case(name: str) -> None:
    from labrecord.chemdata.abbreviations import PRINTED_MOLECULES, printed_molecule

    assert Chem.MolFromSmiles(PRINTED_MOLECULES[name]) is not None
    assert printed_molecule(name.upper()) == PRINTED_MOLECULES[name] == printed_molecule(name.lower())


@pytest.mark.parametrize(("formula", "smiles"), [
    ("p-MeOC6H4", "*c1ccc(OC)cc1"), ("o-ClC6H4", "*c1ccccc1Cl"), ("m-BrC6H4", "*c1cccc(Br)c1"),
    ("p-CH3C6H4", "*c1ccc(C)cc1"),        # a formula group inside the formula (CH3 is Me)
    ("p-OCH3C6H4", "*c1ccc(OC)cc1"), ("4-NCC6H4", "*c1ccc(C#N)cc1"),
    ("C7H15", "CCCCCCC*"), ("n-C17H35", "C" * 17 + "*"), ("CH3", "C*"), ("C2H5", "CC*"),
    ("C6H5", "c1ccccc1*"), ("3-pyridyl", "*c1cccnc1"), ("2-naphthyl", "*c1ccc2ccccc2c1"),
])
def test_letter_positions_formula_groups_alkyl_formulas_and_spelled_names(formula: str, smiles: str) -> None:
    """``p-``, ``m-``, ``o-`` name positions 4, 3, 2; ``CnH2n+1`` is the straight chain."""
    assert same(lookup(formula), smiles)


@pytest.mark.parametrize("formula", ["C6H11", "C6H13x", "CH2", "p-Cl", "x-ClC6H4", "p-ClC6H3"])
def test_formulas_that_name_no_one_group_stay_unread(formula: str) -> None:
    """``C6H11`` is cyclohexyl or a hexenyl; ``CH2`` no group; ``p-Cl`` no ring; a
    position letter other than o, m, p; a hydrogen count that does not add up."""
    assert lookup(formula) is None


@given(st.integers(1, 30))
def test_every_straight_alkyl_formula_reads_as_its_chain(n: int) -> None:
    assert lookup(f"C{n}H{2 * n + 1}" if n > 1 else "CH3") == "C" * n + "*"


@pytest.mark.parametrize(("formula", "smiles"), [
    ("CH2CH(CH3)2", "*CC(C)C"), ("CH(CH3)2", "*C(C)C"), ("C(CH3)3", "*C(C)(C)C"), ("CH2OCH3", "*COC"),
    ("(CH2)3CH3", "*CCCC"), ("(CH2)2OH", "*CCO"), ("CH2CO2Et", "*CC(=O)OCC"), ("CH2Ph", "*Cc1ccccc1"),
    ("CH2CH2Br", "*CCBr"), ("N(CH3)2", "*N(C)C"), ("CH2CF3", "*CC(F)(F)F"),
])
def test_condensed_formulas_by_hand(formula: str, smiles: str) -> None:
    """``CH2CH(CH3)2``: CH2 has 2 H and 2 bonds, CH 1 H and 3, each CH3 3 H and 1 — isobutyl."""
    assert same(lookup(formula), smiles)


@pytest.mark.parametrize("formula", ["CHCH3", "CH2(CH3)2", "(CH2)3", "CO", "C", "CH3CH2)", "C(CH3"])
def test_condensed_formulas_that_break_a_valence_are_refused(formula: str) -> None:
    """``CHCH3``: the CH would have 1 H and 2 bonds; ``CH2(CH3)2`` 2 H and 3 bonds; a
    chain of links with no end; ``CO`` is carbon monoxide or a carbonyl; unbalanced brackets."""
    assert lookup(formula) is None


@given(st.integers(1, 12), st.integers(1, 3))
def test_a_repeated_link_is_the_straight_chain(links: int, end: int) -> None:
    """``(CH2)nCH3`` is the n+1-carbon chain, whatever the spelling of its end."""
    formula = f"(CH2){links}" + ("CH3" if end == 1 else "OH" if end == 2 else "Cl")
    tail = {1: "C", 2: "O", 3: "Cl"}[end]
    assert same(lookup(formula), "*" + "C" * links + tail)
