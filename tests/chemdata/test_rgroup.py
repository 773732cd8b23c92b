"""Tests for the R-group engine (chemdata/rgroup.py)."""
from __future__ import annotations

import pytest

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')
from hypothesis import given, settings, strategies as st
from rdkit import Chem

from labrecord.chemdata.abbreviations import ABBREVIATIONS
from labrecord.chemdata.rgroup import (
    DerivedSmiles, Failure, RGroupError, core_share, derive_bindings, derive_reactants, drawn_substituent, instantiate,
    normalize_label,
    template_labels,
)


def canon(smiles: str) -> str:
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


@pytest.mark.parametrize("template", ["[*:1]c1ccccc1", "[1*]c1ccccc1", "[R1]c1ccccc1", "*c1ccccc1 |$R1;;;;;;$|"])
def test_every_label_spelling_names_r1(template: str) -> None:
    assert template_labels(template) == ["R1"]
    assert instantiate(template, {"R1": "Me"}) == canon("Cc1ccccc1")


@pytest.mark.parametrize("key", ["1", "R1", "[*:1]", "[1*]", " R1 "])
def test_binding_keys_normalize(key: str) -> None:
    assert normalize_label(key) == "R1"


@pytest.mark.parametrize(("value", "expected"), [
    ("Me", "Cc1ccccc1"), ("*C", "Cc1ccccc1"), ("[*]Cl", "Clc1ccccc1"), ("Cl", "Clc1ccccc1"),
    ("OMe", "COc1ccccc1"), ("*c1ccccc1", "c1ccc(-c2ccccc2)cc1"), ("H", "c1ccccc1"),
    ("tBu", "CC(C)(C)c1ccccc1"), ("Boc", "CC(C)(C)OC(=O)c1ccccc1"), ("OC", "COc1ccccc1"),
])
def test_substituent_spellings(value: str, expected: str) -> None:
    assert instantiate("[*:1]c1ccccc1", {"R1": value}) == canon(expected)


def test_stereo_kept_through_instantiation() -> None:
    # L-alanine written with the methyl as R1; benzyl gives L-phenylalanine, H gives glycine
    assert instantiate("[*:1][C@H](N)C(=O)O", {"R1": "Me"}) == canon("C[C@H](N)C(=O)O")
    assert instantiate("[*:1][C@H](N)C(=O)O", {"R1": "Bn"}) == canon("N[C@@H](Cc1ccccc1)C(=O)O")
    assert instantiate("[*:1]/C=C/c1ccccc1", {"R1": "Cl"}) == canon("Cl/C=C/c1ccccc1")
    # stereo carried by the substituent itself
    assert instantiate("[*:1]c1ccccc1", {"R1": "*[C@@H](C)O"}) == canon("c1ccccc1[C@@H](C)O")


def test_two_attachment_points_and_repeated_label() -> None:
    assert instantiate("[R1]c1ccc([R2])cc1", {"R1": "OMe", "R2": "CF3"}) == canon("COc1ccc(C(F)(F)F)cc1")
    assert instantiate("[*:1]c1ccc([*:1])cc1", {"1": "Me"}) == canon("Cc1ccc(C)cc1")


@pytest.mark.parametrize(("template", "bindings", "kind"), [
    ("[*:1]c1ccccc1", {}, "unbound_label"),
    ("[R1]c1ccc([R2])cc1", {"R1": "Me"}, "unbound_label"),
    ("[*:1]c1ccccc1(", {"R1": "Me"}, "bad_smiles"),
    ("[*:1]c1ccccc1", {"R1": "Xyz"}, "bad_substituent"),
    ("[*:1]c1ccccc1", {"R1": "*C*"}, "bad_substituent"),
    ("[*:1]=C", {"R1": "*C(C)(C)C"}, "bad_substituent"),
])
def test_instantiate_failures(template: str, bindings: dict[str, str], kind: str) -> None:
    with pytest.raises(RGroupError) as caught:
        instantiate(template, bindings)
    assert caught.value.failure.kind == kind
    assert template.split("(")[0][:6] in str(caught.value) or kind == "bad_substituent"


def test_derive_bindings_recovers_substituents() -> None:
    assert derive_bindings("[*:1]c1ccccc1", "Cc1ccccc1") == {"R1": "*C"}
    assert derive_bindings("[*:1]c1ccccc1", "c1ccccc1") == {"R1": "H"}
    assert derive_bindings("[*:1][C@H](N)C(=O)O", "N[C@@H](Cc1ccccc1)C(=O)O") == {"R1": "*Cc1ccccc1"}


def test_derive_bindings_is_stereo_blind_and_reactants_take_the_product_stereo() -> None:
    # the template says L (S), the drawn product is D (R): the match is made stereo-blind
    found = derive_bindings("[*:1][C@H](N)C(=O)O", "N[C@H](Cc1ccccc1)C(=O)O")
    assert found == {"R1": "*Cc1ccccc1"}
    # the reactant's core centre takes the product's CIP label (R), not the template's
    (reactant,) = derive_reactants(["[*:1][C@H](N)C(=O)OC"], "[*:1][C@H](N)C(=O)O", "N[C@H](Cc1ccccc1)C(=O)O")
    assert reactant == canon("N[C@H](Cc1ccccc1)C(=O)OC")
    # a different skeleton still fails
    assert derive_bindings("[*:1][C@H](N)C(=O)O", "NCCC(=O)O").kind == "no_match"


def test_ambiguous_match_and_its_resolution_by_explicit_binding() -> None:
    found = derive_bindings("[*:1]c1ccc([*:2])cc1", "Cc1ccc(Cl)cc1")
    assert isinstance(found, Failure) and found.kind == "ambiguous_match"
    assert "2 ways" in found.message
    assert derive_bindings("[*:1]c1ccc([*:2])cc1", "Cc1ccc(Cl)cc1", {"R1": "Me"}) == {"R1": "*C", "R2": "*Cl"}


def test_no_match_when_product_has_extra_atoms() -> None:
    found = derive_bindings("[*:1]c1ccccc1", "Cc1ccc(C)cc1")
    assert isinstance(found, Failure) and found.kind == "no_match"
    assert not found  # a failure is falsy


def test_derive_reactants_leaving_group_from_entry_evidence() -> None:
    reactants = derive_reactants(["[X]c1ccc([*:1])cc1", "OB(O)c1ccccc1"], "c1ccc(-c2ccc([*:1])cc2)cc1",
                                 "COc1ccc(-c2ccccc2)cc1", {"X": "I"})
    assert reactants == [canon("COc1ccc(I)cc1"), canon("OB(O)c1ccccc1")]
    assert isinstance(reactants[0], DerivedSmiles)
    assert reactants[0].provenance() == {"origin": "template_derived", "template": "[X]c1ccc([*:1])cc1",
                                         "bindings": {"R1": "*OC", "X": "I"}}


def test_derive_reactants_explicit_binding_takes_precedence() -> None:
    reactants = derive_reactants(["[*:1]c1ccccc1"], "[*:1]c1ccccc1", "Cc1ccccc1", {"R1": "Et"})
    assert reactants == [canon("CCc1ccccc1")]


def test_derive_reactants_stereo_kept() -> None:
    reactants = derive_reactants(["[*:1][C@H](N)C(=O)O", "CC(=O)Cl"], "[*:1][C@H](NC(C)=O)C(=O)O",
                                 "CC(=O)N[C@@H](Cc1ccccc1)C(=O)O")
    assert reactants[0] == canon("N[C@@H](Cc1ccccc1)C(=O)O")


def test_derive_reactants_failure_kinds() -> None:
    unbound = derive_reactants(["[X]c1ccc([*:1])cc1"], "c1ccc(-c2ccc([*:1])cc2)cc1", "COc1ccc(-c2ccccc2)cc1")
    assert isinstance(unbound, Failure) and unbound.kind == "unbound_label" and unbound.label == "X"
    no_match = derive_reactants(["[*:1]I"], "c1ccc(-c2ccc([*:1])cc2)cc1", "CCO")
    assert isinstance(no_match, Failure) and no_match.kind == "no_match"
    ambiguous = derive_reactants(["[*:1]I"], "[*:1]c1ccc([*:2])cc1", "Cc1ccc(Cl)cc1")
    assert isinstance(ambiguous, Failure) and ambiguous.kind == "ambiguous_match"
    bad = derive_reactants(["[*:1]I"], "[*:1]c1ccccc1", "not a smiles")
    assert isinstance(bad, Failure) and bad.kind == "bad_smiles"


def test_abbreviation_table_entries_are_single_attachment_fragments() -> None:
    for name, smiles in ABBREVIATIONS.items():
        mol = Chem.MolFromSmiles(smiles)
        assert mol is not None, name
        assert sum(a.GetAtomicNum() == 0 for a in mol.GetAtoms()) == 1, name


_CONCRETE = sorted(k for k, v in ABBREVIATIONS.items() if k not in {"H", "D"})


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(_CONCRETE), st.sampled_from(["[*:1]c1ccc(I)cc1", "[*:1]C(=O)N1CCCC1", "[*:1]/C=C/C(=O)OC"]))
def test_instantiate_then_derive_round_trips(abbreviation: str, template: str) -> None:
    concrete = instantiate(template, {"R1": abbreviation})
    found = derive_bindings(template, concrete)
    if isinstance(found, Failure):
        # the only legitimate failure: the substituent repeats part of the template
        assert found.kind == "ambiguous_match"
        return
    assert instantiate(template, found) == concrete
    assert Chem.MolToSmiles(Chem.MolFromSmiles(found["R1"])) == Chem.MolToSmiles(
        Chem.MolFromSmiles(ABBREVIATIONS[abbreviation]))


@pytest.mark.parametrize(("template", "label"), [
    ("[Ar]C=O", "Ar"), ("[Y]c1ccccc1", "Y"), ("[Rf]C(=O)O", "Rf"), ("[X]c1ccccc1", "X"),
])
def test_element_like_labels_at_attachment_points(template: str, label: str) -> None:
    assert template_labels(template) == [label]
    assert instantiate(template, {label: "Me"}) == canon(template.replace(f"[{label}]", "C"))


def test_element_label_in_context() -> None:
    # an unbonded [Ar] is argon, not a label; a name printed in the figure makes one a label
    assert template_labels("[Ar].c1ccccc1") == []
    assert template_labels("[Ni]C", names={"Ni"}) == ["Ni"]


def test_ar_label_binds_only_an_aryl() -> None:
    # Ar and R on one carbon: without the Ar context the match is ambiguous (Ph/Et either way)
    found = derive_bindings("O=C1OCC([Ar])([R])N1", "O=C1OCC(CC)(c2ccccc2)N1")
    assert found == {"Ar": "*c1ccccc1", "R": "*CC"}


def test_symmetric_core_tie_broken_by_reactant_templates() -> None:
    # [1*]SS[2*] matches an unsymmetric disulfide two ways; both give the same two thiols
    reactants = derive_reactants(["[1*]S", "[2*]S"], "[1*]SS[2*]", "CSSc1ccccc1")
    assert sorted(reactants) == sorted([canon("CS"), canon("Sc1ccccc1")])
    # where the reactant templates differ per label, the tie stands
    tie = derive_reactants(["[1*]S", "[2*]O"], "[1*]SS[2*]", "CSSc1ccccc1")
    assert isinstance(tie, Failure) and tie.kind == "ambiguous_match"


def test_bare_star_reactant_template() -> None:
    # C–H functionalization: the bare * reactant is the arene itself (H at the attachment point)
    product = "Cc1ccc(-c2ccccn2)cc1"
    (arene, pyridine) = derive_reactants(["*", "Brc1ccccn1"], "*c1ccccn1", product, c_h_functionalization=True)
    assert arene == canon("Cc1ccccc1") and pyridine == canon("Brc1ccccn1")
    # a leaving group only from the entry's own evidence ...
    (halide, _) = derive_reactants(["*", "Brc1ccccn1"], "*c1ccccn1", product, {"LG": "I"})
    assert halide == canon("Cc1ccc(I)cc1")
    # ... else an explicit refusal, never a guess
    refused = derive_reactants(["*", "Brc1ccccn1"], "*c1ccccn1", product)
    assert isinstance(refused, Failure) and refused.kind == "leaving_group_unknown"


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["Me", "Et", "Bn", "Ph", "iPr", "CF3", "OMe"]))
def test_derivation_is_stereo_blind_whichever_way_the_template_writes_the_centre(value: str) -> None:
    # the product is made with one configuration; the template may spell either
    product = instantiate("[*:1][C@@H](N)C(=O)O", {"R1": value})
    for template in ("[*:1][C@H](N)C(=O)O", "[*:1][C@@H](N)C(=O)O", "[*:1]C(N)C(=O)O"):
        found = derive_bindings(template, product)
        assert not isinstance(found, Failure) and canon(instantiate("[*:1]C(N)C(=O)O", found)) == \
            canon(instantiate("[*:1]C(N)C(=O)O", {"R1": value}))


def test_symmetric_reagent_is_settled_by_the_other_entries() -> None:
    """Ar–I + R²S–SR² -> Ar–SR² with the product template [R1]c1ccc(S[R2])cc1.  The product
    CCSc1ccc(SC)cc1 matches two ways: R1 = SEt, R2 = Me (4-iodophenyl ethyl sulfide +
    dimethyl disulfide) or R1 = SMe, R2 = Et (4-iodothioanisole + diethyl disulfide), so
    alone it is ambiguous.  Two other entries bound R2 = Me (and R1 = Me, OMe): the first
    assignment agrees with them twice, the second never, so it is kept."""
    from labrecord.chemdata.rgroup import Failure, derive_reactants

    templates, product_template = ["[R1]c1ccc(I)cc1", "[R2]SS[R2]"], "[R1]c1ccc(S[R2])cc1"
    alone = derive_reactants(templates, product_template, "CCSc1ccc(SC)cc1")
    assert isinstance(alone, Failure) and alone.kind == "ambiguous_match"
    others = [{"R1": "Me", "R2": "Me"}, {"R1": "OMe", "R2": "*C"}]
    settled = derive_reactants(templates, product_template, "CCSc1ccc(SC)cc1", prefer=others)
    assert sorted(settled) == ["CCSc1ccc(I)cc1", "CSSC"]
    tied = derive_reactants(templates, product_template, "CCSc1ccc(SC)cc1", prefer=[{"R2": "Me"}, {"R2": "Et"}])
    assert isinstance(tied, Failure) and tied.kind == "ambiguous_match"


def test_a_centre_the_reaction_creates_stays_off_the_reactants_sp2_atom() -> None:
    """Hydrocyanation of a terminal diene, [*:1]/C=C/C=C + HCN -> C[C@H](C#N)/C=C/[*:1].
    The shared core maps the product's new centre (the CH bearing CN) onto the diene's
    CH= next to the terminal CH2=: an sp2 atom with three neighbours, which cannot be a
    tetrahedral centre.  The derived diene carries no tag there (before the fix it came
    out as C=[C@@H]/C=C/c1ccccc1), while the double-bond geometry it is drawn with stays."""
    diene, cyanide = derive_reactants(["[*:1]/C=C/C=C", "C#N"], "C[C@H](C#N)/C=C/[*:1]", "C[C@H](C#N)/C=C/c1ccccc1")
    assert diene == canon("C=C/C=C/c1ccccc1") and cyanide == canon("C#N")
    # a centre the reactant does hold (the amino acid's) is still carried: see
    # test_derive_reactants_stereo_kept


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(["Me", "Et", "Bn", "Ph", "iPr", "CF3", "OMe"]), st.sampled_from(["@", "@@"]))
def test_a_created_centre_never_reaches_the_reactant(value: str, tag: str) -> None:
    """Whatever the substituent and the product's configuration, the diene derived for
    C[C@H](C#N)/C=C/R (or its mirror image) is the template's own diene with R put in:
    it holds no centre, so no configuration of the product can show up in it."""
    product = instantiate(f"C[C{tag}H](C#N)/C=C/[*:1]", {"R1": value})
    diene, _ = derive_reactants(["[*:1]/C=C/C=C", "C#N"], f"C[C{tag}H](C#N)/C=C/[*:1]", product)
    assert diene == canon(instantiate("[*:1]/C=C/C=C", {"R1": value}))


@pytest.mark.parametrize(("read", "fragment"), [
    # the wavy bond's end read as the one ring methyl (4-hydroxy-3-bromo-5-methoxyphenyl)
    ("COc1cc(C)cc(Br)c1O", "*c1cc(Br)c(O)c(OC)c1"),
    # on an indole C3, on a saturated ring (tetrahydrofuran-2-yl), on an alkene (E-styryl)
    ("Cc1c[nH]c2ccccc12", "*c1c[nH]c2ccccc12"),
    ("CC1CCCO1", "*C1CCCO1"),
    ("C/C=C/c1ccccc1", "*/C=C/c1ccccc1"),
    # read as an attachment point already, once bonded (any label spelling)
    ("[1*]c1ccccc1", "*c1ccccc1"),
    # no methyl where a wavy bond could start: OMe, NMe, acetyl, isopropyl are the drawing's
    ("COc1ccccc1", None), ("CN1CCCC1=O", None), ("CC(=O)Oc1ccccc1", None), ("CC(C)C", None),
    # two candidates (a drawn tolyl beside the stub), two attachment points, a ring `*`
    ("Cc1ccc(C)cc1", None), ("*c1cc(*)ccc1", None), ("C1c*ccc1", None),
])
def test_drawn_substituent_finds_the_one_attachment_or_refuses(read: str, fragment: str | None) -> None:
    assert drawn_substituent(read) == (canon(fragment) if fragment else None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["", "Cl", "F", "OC", "O", "Br", "C(F)(F)F", "OC(C)=O"]), min_size=5, max_size=5))
def test_a_fragment_drawn_with_a_methyl_stub_comes_back(groups: list[str]) -> None:
    """A phenyl fragment with any of these groups (none a ring methyl) at positions 2–6,
    its ``*`` replaced by a methyl (what osra reads for a wavy bond), reads back as the
    fragment."""
    atoms = [f"c({g})" if g else "c" for g in groups[:4]] + ["c1" + (f"({groups[4]})" if groups[4] else "")]
    fragment = "*c1" + "".join(atoms)
    stub = canon(fragment.replace("*", "C", 1))
    assert drawn_substituent(stub) == canon(fragment)


def test_core_share_tells_a_drawn_product_from_a_drawn_substituent() -> None:
    """Thione template (13 heavy atoms) against a drawn aryl substituent: they share the
    C–O pair of an ester/ether only, 2/13.  A biaryl template *c1ccccc1 lies whole inside
    toluene: 6/6.  A quinazolinone misread with a non-aromatic benzo ring still shares its
    triazolone and CF3 part with a drawn product: 14 of its 20 atoms, 0.7."""
    assert core_share("*C1NC(=S)N(C)C(C)=C1C(=O)OC", "COc1cc(C)cc(Br)c1O") == pytest.approx(2 / 13)
    assert core_share("[R]c1ccccc1", "Cc1ccccc1") == 1.0
    assert core_share("O=c1c2C=CC(C=Cc2[nH]c2n1nc(n2)C(F)(F)F)(*)C",
                      "Fc1ccc2c(c1)c(=O)n1c([nH]2)nc(n1)C(F)(F)F") == pytest.approx(0.7)
    assert core_share("*c1ccccc1", "not a smiles") == 0.0


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["Cl", "OC", "C(F)(F)F", "N", "C#N"]), st.sampled_from(["*c1ccccc1", "*C1CCCCC1", "*c1ccncc1"]))
def test_a_filled_template_shares_all_of_it(group: str, template: str) -> None:
    """The template instantiated with any substituent contains the whole template."""
    assert core_share(template, instantiate(template, {"*": group})) == 1.0


@given(st.sampled_from(["H", "Me", "OMe", "Ph", "4-MeOC6H4", "2-ClC6H4", "CO2Me", "*c1ccccc1", "Boc"]))
def test_every_readable_value_is_a_substituent(value: str) -> None:
    """Abbreviations, aryl formulas and fragment SMILES are readable; a bare number or an
    OCR scrap (``3``, ``CH``) is not."""
    from labrecord.chemdata.rgroup import readable_substituent

    assert readable_substituent(value)
    assert not readable_substituent("3") and not readable_substituent("CH")


@pytest.mark.parametrize(("smiles", "bindings", "filled"), [
    ("[X]c1ccc(*)cc1", {"X": "OMe"}, "*c1ccc(OC)cc1"), ("[X]c1ccc([*])cc1", {"X": "H"}, "*c1ccccc1"),
    ("*c1ccc(C)cc1", {"*": "Br"}, "Cc1ccc(Br)cc1"), ("[X]c1ccc(C)cc1", {"X": "F"}, "Cc1ccc(F)cc1")])
def test_fill_labels_keeps_the_attachment_points_it_is_not_given(smiles: str, bindings: dict[str, str], filled: str) -> None:
    """A drawn substituent keeps its wavy bond (``*``) when only its printed X is filled;
    a binding for ``*`` itself, or a drawing with no other ``*``, is :func:`instantiate`."""
    from labrecord.chemdata.rgroup import fill_labels

    assert canon(fill_labels(smiles, bindings)) == canon(filled)
