"""Tests for the reaction-centre transfer (chemdata/transfer.py)."""
from __future__ import annotations

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')
from hypothesis import given, settings, strategies as st
from rdkit import Chem

from labrecord.chemdata.rgroup import Failure
from labrecord.chemdata.transfer import forward, reaction_centre, retro

#: the triazoloquinazolinone row: a 2-halobenzoyl hydrazone and cyanamide close two rings
HYDRAZIDE = "O=C(NN=CC(F)(F)F)c1ccccc1[X]"
CYANAMIDE = "NC#N"
FUSED = "O=c1c2ccccc2[nH]c2nc(C(F)(F)F)nn12"


def canon(smiles: str) -> str:
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


def test_the_centre_is_where_bonds_change() -> None:
    """Amide formation ``OC(=O)c1ccccc1`` + ``NC`` >> ``CNC(=O)c1ccccc1``: the acid maps
    its 8 heavy atoms but the OH (lost), methylamine both of its atoms.  The carbonyl
    carbon (loses O, gains N) and the nitrogen (gains C, loses one H) change: the centre
    is those two atoms, product indices 1 (N) and 2 (C=O carbon)."""
    centre = reaction_centre(("OC(=O)c1ccccc1", "NC"), "CNC(=O)c1ccccc1")
    assert centre is not None
    assert centre.atoms == frozenset({1, 2})
    assert len(centre.maps[0]) == 8 and len(centre.maps[1]) == 2


def test_a_thieno_ring_keeps_its_sulfur_and_gets_the_printed_halide() -> None:
    """The module's hand check: the drawn thieno product keeps its thiophene; the centre
    (the two new rings and the ring carbons fused to them) comes back as the hydrazone and
    cyanamide; the X of the template takes the printed ``X = Br``."""
    assert retro([HYDRAZIDE, CYANAMIDE], FUSED, "O=c1c2sccc2[nH]c2nc(C(F)(F)F)nn12", {"X": "Br"}) == [
        canon("O=C(NN=CC(F)(F)F)c1sccc1Br"), canon("N#CN")]


def test_a_substituent_beside_the_centre_stays_where_it_is_drawn() -> None:
    """A methyl drawn next to the ring NH (4b) ends next to the C–Br of the reactant; one
    drawn para to it (4d) ends para to the bromine."""
    assert retro([HYDRAZIDE, CYANAMIDE], FUSED, "Cc1cccc2c(=O)n3nc(C(F)(F)F)nc3[nH]c12", {"X": "Br"})[0] == \
        canon("O=C(NN=CC(F)(F)F)c1cccc(C)c1Br")
    assert retro([HYDRAZIDE, CYANAMIDE], FUSED, "Cc1ccc2[nH]c3nc(C(F)(F)F)nn3c(=O)c2c1", {"X": "Br"})[0] == \
        canon("O=C(NN=CC(F)(F)F)c1cc(C)ccc1Br")


def test_a_substituent_on_a_centre_atom_changes_its_hydrogens() -> None:
    """Amide formation again, with an N,N-dimethyl amide drawn: the N carries one more
    carbon than the template's product, so it had one H fewer in the reactant:
    dimethylamine (1 H), not methylamine."""
    assert retro(["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1", "CN(C)C(=O)c1ccccc1") == [
        canon("OC(=O)c1ccccc1"), canon("CNC")]


def test_refusals() -> None:
    """No centre in the drawing (an ester where an amide was made), a label still unbound,
    and a row whose centre is a label (the reaction at the variable) all refuse."""
    assert isinstance(retro(["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1", "COC(=O)c1ccccc1"), Failure)
    unbound = retro([HYDRAZIDE, CYANAMIDE], FUSED, "O=c1c2sccc2[nH]c2nc(C(F)(F)F)nn12")
    assert isinstance(unbound, Failure) and unbound.kind == "no_match"
    assert reaction_centre(("*C(=O)O", "NC"), "*C(=O)NC") is not None  # R away from the centre
    assert reaction_centre(("[R]", "c1ccccc1"), "[R]c1ccccc1") is None  # R is where the bond forms


def test_two_placements_that_disagree_are_ambiguous() -> None:
    """A diamide drawn for an amide formation: the two amide groups of the symmetric
    ``CNC(=O)c1ccc(C(=O)NC)cc1`` give the same reactants (one answer); with an N-ethyl
    amide at one end the two placements give different acids and amines: refused."""
    row = (["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1")
    assert retro(*row, "CNC(=O)c1ccc(C(=O)NC)cc1") == [canon("CNC(=O)c1ccc(C(=O)O)cc1"), "CN"]
    refused = retro(*row, "CNC(=O)c1ccc(C(=O)NCC)cc1")
    assert isinstance(refused, Failure) and refused.kind == "ambiguous_match"


def test_a_placement_needs_the_centre_s_first_shell() -> None:
    """The amide centre is N–C; the N–CH3 bond of the drawing is N–C too, but its carbon
    has no double-bonded neighbour, so only the amide's own N–C(=O) is a placement."""
    assert retro(["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1", "CNC(=O)c1ccccc1") == [canon("OC(=O)c1ccccc1"), "CN"]


SUBSTITUENTS = ["C", "F", "Cl", "OC", "C(F)(F)F", "C#N", "c1ccccc1"]


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(SUBSTITUENTS), st.integers(min_value=0, max_value=4))
def test_any_ring_substituent_comes_back_at_its_position(substituent: str, position: int) -> None:
    """Property: for an amide formation, a substituent drawn at any free position of the
    benzoyl ring of the product comes back at the same position of the acid."""
    ring = ["c", "c", "c", "c", "c"]
    ring[position] = f"c({substituent})"
    product = f"CNC(=O)c1{''.join(ring)}1"
    acid = f"OC(=O)c1{''.join(ring)}1"
    assert retro(["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1", product) == [canon(acid), "CN"]


IMINE = (["[R]C=O", "NC"], "[R]C=NC")


def test_forward_makes_the_change_on_a_drawn_reactant() -> None:
    """The docstring's hand check: ``CCCN`` holds the amine's centre (its N, which loses
    both H to the C=N), so it stands for ``NC`` (template 1) and with ``R = Ph`` the
    product is the N-propyl imine of benzaldehyde.  A secondary amine has one H only and
    a tertiary none: neither forms the imine."""
    assert forward(*IMINE, "CCCN", {"R": "Ph"}) == (1, [canon("O=Cc1ccccc1"), "CCCN"], canon("CCCN=Cc1ccccc1"))
    for amine in ("CCNCC", "CCN(C)CC"):
        assert isinstance(forward(*IMINE, amine, {"R": "Ph"}), Failure)


def test_forward_takes_secondary_amines_where_the_change_needs_one_hydrogen() -> None:
    """A dithiocarbamate from a quinone methide, an amine and CS2: the amine's N loses one
    H, so a primary, a secondary and a cyclic amine all hold the centre; pyrrolidine gives
    the pyrrolidine-1-carbodithioate."""
    methide = "CC(C)(C)C1=CC(=Cc2ccccc2)C=C(C(C)(C)C)C1=O"
    product = "CC(C)(C)C1=CC(=C(SC(=S)NC[R])c2ccccc2)C=C(C(C)(C)C)C1=O"
    slot, reactants, made = forward([methide, "NC[R]", "S=C=S"], product, "C1CCNC1")
    assert slot == 1 and reactants == [canon(methide), "C1CCNC1", "S=C=S"]
    assert made == canon("CC(C)(C)C1=CC(=C(SC(=S)N2CCCC2)c2ccccc2)C=C(C(C)(C)C)C1=O")


def test_forward_refuses_a_drawing_holding_two_templates_centres() -> None:
    """An amino aldehyde holds the centres of both the aldehyde and the amine template of
    the imine row: which reactant it stands for is not decided, so it is refused."""
    made = forward(*IMINE, "NCCC=O", {"R": "Ph"})
    assert isinstance(made, Failure) and made.kind == "ambiguous_match"


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=6))
def test_forward_and_retro_undo_each_other(chain: int) -> None:
    """Property: an n-alkylamine taken forward through the amide row gives an amide that
    retro takes back to the same amine."""
    amine = "N" + "C" * chain
    slot, _, amide = forward(["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1", amine)
    assert slot == 1
    assert retro(["OC(=O)c1ccccc1", "NC"], "CNC(=O)c1ccccc1", amide) == [canon("OC(=O)c1ccccc1"), canon(amine)]
