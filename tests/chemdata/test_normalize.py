"""Normalization rules of chemdata/normalize.py, one case per rule, plus properties."""
from __future__ import annotations

import pytest

from tests.support import require_module
from hypothesis import given, settings
from hypothesis import strategies as st

require_module("rdkit", 'pip install "labrecord[chem]"')

from labrecord.chemdata.normalize import (  # noqa: E402
    COUNTER_ION_METALS, MAX_ATOMS, MAX_SMILES_LENGTH, Canonical, canonicalize, canonicalize_many, size_reason,
    unmatchable_reason,
)


@pytest.mark.parametrize("text, reason", [
    ("", "empty"), ("   ", "empty"),
    ("C1CC", "unparsable"), ("C(", "unparsable"),
    ("C(C)(C)(C)(C)C", "hypervalent"), ("FCl(F)(F)(F)F", "hypervalent"),
    ("c1cccc1", "sanitization"),
    ("*C", "wildcard"), ("[1*]C", "wildcard"), ("[*:1]CC", "wildcard"),
    ("[R1]C", "placeholder"), ("[R']C", "placeholder"), ("[X]C", "placeholder"), ("CCR", "placeholder"),
    ("[Ar]C", "placeholder"), ("[Rf]CC", "placeholder"), ("[Het]C", "placeholder"),
    ("CC |$R1;;$|", "cxsmiles"), ("CCO ethanol", "cxsmiles"),
    ("*C<sep><a>0:R1</a>", "wildcard"), ("C<sep><a>0:R1</a>", "extended_smiles"),
])
def test_failures_record_their_reason(text: str, reason: str) -> None:
    form = canonicalize(text)
    assert form.reason == reason
    assert form.strict == () and form.nonstereo == ()
    assert form.status == ("malformed" if reason in ("empty", "unparsable", "hypervalent", "sanitization") else "unmatchable")


def test_size_limits_come_before_rdkit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A string over the limits is refused on its text: RDKit never parses it.

    "C" * 1000 is 1000 atom tokens (at the limit, parsed); one more is too many.  Bracket
    atoms count once each: "[NH4+]" * 501 + "C" * 500 is 1001 atoms in 3506 characters.
    A 4001-character string is too long whatever it holds.
    """
    assert size_reason("C" * MAX_ATOMS) is None
    assert size_reason("C" * (MAX_ATOMS + 1)) == "too_many_atoms"
    assert size_reason("[NH4+]" * 501 + "C" * 500) == "too_many_atoms"
    assert size_reason("Cl" * 600 + "Br" * 400) is None        # two-letter symbols are one atom
    assert size_reason("O" + "=" * MAX_SMILES_LENGTH) == "too_long"

    def no_rdkit(smiles: str) -> None:
        raise AssertionError(f"RDKit was handed {len(smiles)} characters")

    monkeypatch.setattr("labrecord.chemdata.normalize._parse", no_rdkit)
    huge = "C" * 50_000
    form = canonicalize(huge)
    assert (form.reason, form.status) == ("too_long", "malformed")
    assert canonicalize("c1ccccc1" * 200).reason == "too_many_atoms"


@given(st.lists(st.sampled_from(["C", "Cl", "Br", "c", "n", "[NH4+]", "[13CH3]", "O", "=", "(", ")", "1"]),
                max_size=1300))
def test_size_reason_counts_every_atom_once(tokens: list[str]) -> None:
    text = "".join(tokens)
    atoms = sum(1 for t in tokens if t not in ("=", "(", ")", "1"))
    expected = "too_long" if len(text) > MAX_SMILES_LENGTH else "too_many_atoms" if atoms > MAX_ATOMS else None
    assert size_reason(text) == expected


def test_real_elements_that_look_like_labels_are_kept() -> None:
    assert canonicalize("[Rh]").ok and canonicalize("C[Ru]").ok and canonicalize("[Y+3]").ok
    assert unmatchable_reason("Brc1ccccc1") is None  # the r of Br is not an R label


def test_strict_keeps_stereo_and_blind_drops_it_but_keeps_isotopes() -> None:
    form = canonicalize("[2H]C([2H])[C@H](N)O")
    assert form.strict == ("[2H]C([2H])[C@H](N)O",)
    assert form.nonstereo == ("[2H]C([2H])C(N)O",)
    assert canonicalize("F/C=C/F").nonstereo == canonicalize("F/C=C\\F").nonstereo == ("FC=CF",)
    assert canonicalize("F/C=C/F").strict != canonicalize("F/C=C\\F").strict


def test_explicit_hydrogens_and_atom_maps_fold_away() -> None:
    assert canonicalize("[H]C([H])([H])O").strict == canonicalize("CO").strict == ("CO",)
    assert canonicalize("[CH3:1][OH:2]").strict == ("CO",)


def test_salts_split_and_metal_counter_ions_are_dropped() -> None:
    assert canonicalize("CC(=O)[O-].[Na+]") == canonicalize("CC(=O)[O-].[K+]") == Canonical(("CC(=O)[O-]",), ("CC(=O)[O-]",))
    carbonate = ("O=C([O-])[O-]",)
    for salt in ("O=C([O-])[O-].[Na+].[Na+]", "[K+].[K+].[O-]C([O-])=O", "[Cs+].[Cs+].O=C([O-])[O-]", "[Ca+2].O=C([O-])[O-]"):
        assert canonicalize(salt).strict == carbonate
    assert canonicalize("CC(=O)O").strict != canonicalize("CC(=O)[O-].[Na+]").strict  # charges never neutralized
    assert canonicalize("[Na+]").strict == ("[Na+]",)                                  # nothing else left: kept
    assert canonicalize("[NH4+].[Cl-]").strict == ("[Cl-]", "[NH4+]")                   # ammonium is not a metal
    assert canonicalize("CCO.O").strict == ("CCO", "O")                                  # components, sorted
    assert canonicalize("C1.C1").strict == ("CC",)                                       # split on the graph
    assert COUNTER_ION_METALS == {"Li", "Na", "K", "Rb", "Cs", "Mg", "Ca", "Sr", "Ba"}


def test_each_distinct_string_is_canonicalized_once() -> None:
    forms = canonicalize_many(["CCO", "OCC", "CCO"])
    assert list(forms) == ["CCO", "OCC"]
    assert canonicalize("CCO") is canonicalize("CCO")


MOLECULES = ["CCO", "C[C@H](N)C(=O)O", "F/C=C/F", "c1ccc2ccccc2c1", "O=C(O)[C@@H]1CCCN1", "[2H]c1ccccc1",
             "CC(=O)[O-].[Na+]", "N#Cc1ccc(cc1)C(F)(F)F", "C[C@@H]1CC[C@H](C)CC1", "O=S(=O)(Cl)c1ccccc1"]


@settings(max_examples=60, deadline=None)
@given(text=st.sampled_from(MOLECULES), seed=st.integers(0, 2**31 - 1))
def test_canonical_forms_are_invariant_under_random_atom_orderings(text: str, seed: int) -> None:
    from rdkit import Chem, rdBase

    rdBase.SeedRandomNumberGenerator(seed)
    shuffled = Chem.MolToSmiles(Chem.MolFromSmiles(text), doRandom=True, canonical=False)
    assert canonicalize(shuffled) == canonicalize(text)


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet="CNOc1()=[]@H+-.#/\\*2R", max_size=12))
def test_any_string_gives_a_form_or_a_reason_never_an_exception(text: str) -> None:
    form = canonicalize(text)
    assert (form.reason is None) == bool(form.strict)
    assert len(form.strict) == len(form.nonstereo)


def test_stereo_marks_on_non_stereogenic_atoms_are_ignored() -> None:
    assert canonicalize("C[C@H](C)C") == canonicalize("CC(C)C")
    assert canonicalize("C/C=C(/C)C") == canonicalize("CC=C(C)C")
    assert canonicalize("[H][C@@](C)(N)O") == canonicalize("C[C@H](N)O")


def test_importing_the_wing_does_not_import_rdkit() -> None:
    import subprocess
    import sys

    code = ("import sys, labrecord, labrecord.chemdata, labrecord.chemdata.adapters, labrecord.chemdata.store, "
            "labrecord.chemdata.scoring, labrecord.scorers.reaction, labrecord.models.rxn; print('rdkit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
