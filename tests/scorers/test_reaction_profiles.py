"""Scoring profiles side by side: hand-worked pairs where the profiles disagree, the
maximum one-to-one matching of ``tanimoto:T``, coverage and the answered-only number, and
properties tying the profiles to the SQL path."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import require_module

from labrecord.errors import LabrecordError
from labrecord.models.rxn import Condition, FigureDocument, Molecule, Provenance, Reaction, Template
from labrecord.scorers.reaction import (
    ALL_TANIMOTO, FingerprintTable, Profile, expand_profiles, max_matching, parse_profile,
)

from tests.chemdata.rxn_factories import figure, gold

require_module("rdkit", 'pip install "labrecord[chem]"')
require_module("scipy", 'pip install "labrecord[chem]"')

NAMES = ["strict", "stereo-blind", "inchi", "tanimoto:0.85", "roles-lenient"]


def profile_f1(golds: list, preds: list, names: list[str] = NAMES) -> dict[str, float]:
    from labrecord.chemdata.scoring import score_documents

    result = score_documents(golds, preds, profiles=names)
    return {name: result["profiles"][name]["macro"]["f1"] for name in names}


# --------------------------------------------------------------------------- parsing

def test_profile_names_parse_and_all_expands_to_every_kind() -> None:
    assert parse_profile("tanimoto:0.7") == Profile("tanimoto", 0.7)
    assert parse_profile("tanimoto:1").name == "tanimoto:1"
    assert [p.name for p in expand_profiles(["all"])] == ["strict", "stereo-blind", "inchi",
                                                           f"tanimoto:{ALL_TANIMOTO:g}", "roles-lenient"]
    assert [p.name for p in expand_profiles(["inchi", "strict", "inchi", "all"])][:2] == ["inchi", "strict"]
    assert len(expand_profiles(["inchi", "strict", "inchi", "all"])) == 5


@pytest.mark.parametrize("bad", ["tanimoto", "tanimoto:", "tanimoto:0", "tanimoto:1.5", "tanimoto:x", "fuzzy",
                                 "strict:1", ""])
def test_bad_profile_names_are_refused_with_one_line(bad: str) -> None:
    with pytest.raises(LabrecordError, match="profile"):
        parse_profile(bad)


# --------------------------------------------------------------------------- profiles disagree

def test_flipped_stereocentre() -> None:
    """Methyl alaninate, (S) drawn as (R).  strict: different canonical SMILES -> 0;
    stereo-blind: same after stereo removal -> 1; inchi: the standard InChI keeps the /t3-
    /m0 vs /m1 layer -> 0; tanimoto:0.85: Morgan bits ignore chirality, 16 of 16 shared ->
    similarity 1 -> 1; roles-lenient: strict keys -> 0."""
    g = gold("a", [(["C[C@H](N)C(=O)O", "CO"], ["C[C@H](N)C(=O)OC"])])
    p = figure("a", [(["C[C@@H](N)C(=O)O", "CO"], ["C[C@@H](N)C(=O)OC"])])
    assert profile_f1([g], [p]) == {"strict": 0.0, "stereo-blind": 1.0, "inchi": 0.0, "tanimoto:0.85": 1.0,
                                    "roles-lenient": 0.0}


def test_hydroxypyridine_and_pyridone_tautomers() -> None:
    """2-hydroxypyridine vs 2-pyridone: two canonical SMILES (strict, stereo-blind 0), one
    standard InChI with a mobile H, InChI=1S/C5H5NO/c7-5-3-1-2-4-6-5/h1-4H,(H,6,7) (inchi 1);
    Morgan bits 16 and 16, 5 shared: 5 / 27 = 0.185 < 0.85 (tanimoto 0)."""
    g = gold("a", [(["Oc1ccccn1", "CI"], ["COc1ccccn1"])])
    p = figure("a", [(["O=c1cccc[nH]1", "CI"], ["COc1ccccn1"])])
    assert profile_f1([g], [p]) == {"strict": 0.0, "stereo-blind": 0.0, "inchi": 1.0, "tanimoto:0.85": 0.0,
                                    "roles-lenient": 0.0}


def test_near_analogue_matches_only_below_its_similarity() -> None:
    """Ethyl 4-methoxybenzoate read as ethyl 4-ethoxybenzoate: 25 and 25 Morgan bits, 21
    shared, Tanimoto 21 / 29 = 0.724.  tanimoto:0.7 pairs the products (and the identical
    reactants, similarity 1), tanimoto:0.75 does not; every exact profile says 0."""
    g = gold("a", [(["CCOC(=O)c1ccc(O)cc1", "CI"], ["CCOC(=O)c1ccc(OC)cc1"])])
    p = figure("a", [(["CCOC(=O)c1ccc(O)cc1", "CI"], ["CCOC(=O)c1ccc(OCC)cc1"])])
    scores = profile_f1([g], [p], ["strict", "inchi", "tanimoto:0.7", "tanimoto:0.75"])
    assert scores == {"strict": 0.0, "inchi": 0.0, "tanimoto:0.7": 1.0, "tanimoto:0.75": 0.0}


def _with_conditions(doc: FigureDocument, conditions: list[tuple[str, str]]) -> FigureDocument:
    doc.reactions[0].conditions.extend(Condition(role=role, smiles=smiles) for role, smiles in conditions)
    return doc


def test_reagent_read_as_reactant_matches_only_under_roles_lenient() -> None:
    """Gold: acetic acid + ethanol -> ethyl acetate, H2SO4 as catalyst.  Predicted: acetic
    acid -> ethyl acetate with ethanol and H2SO4 as conditions.  Reactant multisets differ
    ({AcOH, EtOH} vs {AcOH}): strict 0.  roles-lenient puts reactants and condition
    molecules on one side: {AcOH, EtOH, H2SO4} both -> 1."""
    g = _with_conditions(gold("a", [(["CC(=O)O", "OCC"], ["CCOC(C)=O"])]), [("catalyst", "OS(=O)(=O)O")])
    p = _with_conditions(figure("a", [(["CC(=O)O"], ["CCOC(C)=O"])]), [("solvent", "OCC"), ("catalyst", "O=S(=O)(O)O")])
    assert profile_f1([g], [p]) == {"strict": 0.0, "stereo-blind": 0.0, "inchi": 0.0, "tanimoto:0.85": 0.0,
                                    "roles-lenient": 1.0}


def test_an_extra_solvent_sinks_only_roles_lenient() -> None:
    """The reverse disagreement: the prediction adds THF as solvent.  Conditions are outside
    the primary match (strict 1); under roles-lenient the left sides differ
    ({AcOH, EtOH} vs {AcOH, EtOH, THF}) -> 0."""
    g = gold("a", [(["CC(=O)O", "OCC"], ["CCOC(C)=O"])])
    p = _with_conditions(figure("a", [(["CC(=O)O", "OCC"], ["CCOC(C)=O"])]), [("solvent", "C1CCOC1")])
    assert profile_f1([g], [p]) == {"strict": 1.0, "stereo-blind": 1.0, "inchi": 1.0, "tanimoto:0.85": 1.0,
                                    "roles-lenient": 0.0}


def test_micro_and_macro_differ_per_profile() -> None:
    """Figure a: 1 gold, 1 right (F1 1); figure b: 3 gold, 1 predicted wrong (F1 0).
    Macro F1 = 0.5; micro: matched 1 of 2 predicted and 4 gold, P 0.5, R 0.25, F1 1/3."""
    from labrecord.chemdata.scoring import score_documents

    ester = (["CC(=O)O", "OCC"], ["CCOC(C)=O"])
    golds = [gold("a", [ester]), gold("b", [(["CO"], ["C=O"]), (["CCO"], ["CC=O"]), (["CCCO"], ["CCC=O"])])]
    preds = [figure("a", [ester]), figure("b", [(["CO"], ["CO"])])]
    strict = score_documents(golds, preds, profiles=["strict"])["profiles"]["strict"]
    assert strict["macro"]["f1"] == 0.5
    assert strict["micro"] == {"precision": 0.5, "recall": 0.25, "f1": pytest.approx(1 / 3)}


# --------------------------------------------------------------------------- matching

def test_tanimoto_hand_value_on_packed_bits() -> None:
    rows = {name: np.zeros(2048, dtype=np.uint8) for name in ("a", "b", "c", "empty")}
    rows["a"][[0, 1, 2]] = 1
    rows["b"][[1, 2, 3]] = 1          # 2 shared of 4 set bits
    rows["c"][[0, 1, 2, 2047]] = 1    # 3 shared of 4, the last bit in the last byte
    table = FingerprintTable(rows)
    assert table.similarities(["a"], ["b", "c", "a", "empty"]).tolist() == [[0.5, 0.75, 1.0, 0.0]]


def test_matching_prefers_more_pairs_over_a_greedy_best_pair() -> None:
    """sim [[0.9, 0.8], [0.85, 0]] at T 0.8: taking the best pair (0, 0) first leaves row 1
    nothing; the maximum matching pairs (0, 1) and (1, 0): two pairs."""
    sim = np.array([[0.9, 0.8], [0.85, 0.0]])
    assert sorted((i, j) for i, j, _ in max_matching(sim, sim >= 0.8)) == [(0, 1), (1, 0)]


def test_among_maximum_matchings_the_most_similar_wins() -> None:
    """Three gold, two predicted: gold 0 and gold 1 both fit predicted 0 (0.90, 0.95), gold 2
    fits predicted 1 (0.99).  Both maximum matchings have 2 pairs; (1, 0) + (2, 1) sums
    1.94 > 1.89, so gold 1 takes predicted 0."""
    sim = np.array([[0.90, 0.0], [0.95, 0.0], [0.0, 0.99]])
    assert sorted((i, j) for i, j, _ in max_matching(sim, sim >= 0.8)) == [(1, 0), (2, 1)]


def test_tanimoto_pairs_reactions_one_to_one() -> None:
    """Two identical gold reactions and one prediction: one pair (recall 1/2, precision 1)."""
    from labrecord.chemdata.scoring import score_documents

    rxn = (["CCOC(=O)c1ccc(O)cc1", "CI"], ["CCOC(=O)c1ccc(OC)cc1"])
    result = score_documents([gold("a", [rxn, rxn])], [figure("a", [rxn])], profiles=["tanimoto:0.9"])
    assert result["profiles"]["tanimoto:0.9"]["macro"] == {"precision": 1.0, "recall": 0.5, "f1": pytest.approx(2 / 3)}


def test_unmatchable_molecules_match_under_no_profile() -> None:
    rxn = (["*c1ccccc1", "CI"], ["Cc1ccccc1"])
    assert set(profile_f1([gold("a", [rxn])], [figure("a", [rxn])]).values()) == {0.0}


# --------------------------------------------------------------------------- one denominator

def test_coverage_and_the_labelled_answered_only_number() -> None:
    """Five gold figures: a answered right, b answered with nothing (refused), c timed out,
    d failed, e never predicted (missing, counted as failed).  The headline macro F1 is
    1/5 = 0.2; answered-only (1 figure) is 1.0 and sits under its own key."""
    from labrecord.chemdata.scoring import score_documents

    ester = (["CC(=O)O", "OCC"], ["CCOC(C)=O"])
    golds = [gold(f, [ester]) for f in "abcde"]
    preds = [figure("a", [ester]), figure("b", []), figure("c", [], status="timeout"),
             figure("d", [ester], status="failed")]
    result = score_documents(golds, preds, profiles=["strict", "inchi"], answered_only=True)
    assert result["coverage"] == {"figures": 5, "answered": 1, "refused": 1, "timed_out": 1, "failed": 2, "missing": 1}
    for name in ("strict", "inchi"):
        p = result["profiles"][name]
        assert p["macro"]["f1"] == pytest.approx(0.2)
        assert p["answered_only"] == {"figures": 1, "macro": {"precision": 1.0, "recall": 1.0, "f1": 1.0}}
    assert "answered_only" not in score_documents(golds, preds, profiles=["strict"])["profiles"]["strict"]


# --------------------------------------------------------------------------- R-group rows

def _scope_gold() -> FigureDocument:
    def row(entry: str, r: str) -> Reaction:
        prov = Provenance(origin="template_derived", template="t", bindings={"R": r})
        return Reaction(reactants=[Molecule(smiles=f"OC(=O)c1ccc({r})cc1", provenance=prov), Molecule(smiles="CO")],
                        products=[Molecule(smiles=f"COC(=O)c1ccc({r})cc1", provenance=prov)], identifiers=[entry])
    return FigureDocument(figure_id="scope", system="gold", layout="scope",
                          reactions=[row("2a", "C"), row("2b", "Cl"), row("2c", "F")],
                          templates=[Template(id="t", reactants=[Molecule(smiles="OC(=O)c1ccc([R])cc1")])])


def test_rgroup_rows_are_units_with_missed_and_invented_listings() -> None:
    """Gold rows 2a (R=C), 2b (R=Cl), 2c (R=F); predicted 2a right and 2b read with R=Br.
    Matched 1: row precision 1/2, recall 1/3; missed 2b and 2c, invented the R=Br row.  The
    single-reaction figure is not a table and is not listed."""
    from labrecord.chemdata.scoring import score_documents

    g = _scope_gold()
    single = gold("plain", [(["CO"], ["C=O"])])
    p = FigureDocument(figure_id="scope", system="sys", reactions=[
        Reaction(reactants=[Molecule(smiles="OC(=O)c1ccc(C)cc1"), Molecule(smiles="CO")],
                 products=[Molecule(smiles="COC(=O)c1ccc(C)cc1")], identifiers=["2a"]),
        Reaction(reactants=[Molecule(smiles="OC(=O)c1ccc(Br)cc1"), Molecule(smiles="CO")],
                 products=[Molecule(smiles="COC(=O)c1ccc(Br)cc1")], identifiers=["2b"])])
    rows = score_documents([g, single], [p, figure("plain", [])], rows="strict")["rows"]
    assert rows["figures"] == 1 and rows["rows"] == {"gold": 3, "pred": 2, "matched": 1}
    assert rows["micro"] == {"precision": 0.5, "recall": pytest.approx(1 / 3)}
    assert [r["row"] for r in rows["missed"]] == ["2b (R=Cl)", "2c (R=F)"]
    assert [(r["row"], r["reaction"]) for r in rows["invented"]] == [("2b", "OC(=O)c1ccc(Br)cc1.CO>>COC(=O)c1ccc(Br)cc1")]


# --------------------------------------------------------------------------- properties

POOL = ["CCO", "CC(=O)O", "C[C@H](N)C(=O)O", "C[C@@H](N)C(=O)O", "F/C=C/F", "F/C=C\\F", "c1ccccc1Br", "Oc1ccccn1",
        "O=c1cccc[nH]1", "CC(=O)[O-].[Na+]", "CC(=O)[O-].[K+]", "*C", "C1CC", "N", "O=C1CCCCC1"]
smiles = st.sampled_from(POOL)
rxns = st.lists(st.tuples(st.lists(smiles, min_size=0, max_size=3), st.lists(smiles, min_size=1, max_size=2)),
                min_size=1, max_size=4)
conditions = st.lists(st.lists(smiles, max_size=2), min_size=4, max_size=4)


def _docs(g: list, p: list, conds: list | None = None) -> tuple[list, list]:
    pred = figure("a", p)
    for rxn, extra in zip(pred.reactions, conds or []):
        rxn.conditions.extend(Condition(role="reagent", smiles=s) for s in extra)
    return [gold("a", g)], [pred]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=rxns, p=rxns, conds=conditions)
def test_profiles_agree_with_the_sql_path_where_they_must(g: list, p: list, conds: list) -> None:
    """strict from the SQL path equals the generic exact matcher on strict keys; tanimoto:1
    never matches less than stereo-blind (equal stereo-blind keys give equal fingerprints);
    roles-lenient equals strict when no conditions are written."""
    from labrecord.chemdata.scoring import ProfileInputs, score_documents
    from labrecord.scorers.reaction import count_profile
    from labrecord.store import connect

    golds, preds = _docs(g, p)
    con = connect()
    result = score_documents(golds, preds, con=con, profiles=["strict", "stereo-blind", "tanimoto:1", "roles-lenient"])
    inputs = ProfileInputs(con, "gold", "sys")
    generic = count_profile(inputs.base, *(inputs.sides(Profile("strict"))[s] for s in ("gold", "sys")), Profile("strict"))
    assert [c.matched for c in generic] == [c.matched_strict for c in inputs.base]
    assert [c.mol_matched for c in generic] == [c.mol_matched_strict for c in inputs.base]
    profiles = result["profiles"]
    assert profiles["strict"]["macro"] == result["macro"]["strict"]
    assert profiles["roles-lenient"] == profiles["strict"]
    for level in ("macro", "micro", "molecule"):
        assert profiles["tanimoto:1"][level]["f1"] >= profiles["stereo-blind"][level]["f1"] - 1e-12
    with_conditions = score_documents(*_docs(g, p, conds), profiles=["roles-lenient", "strict"])["profiles"]
    assert with_conditions["strict"] == profiles["strict"]
