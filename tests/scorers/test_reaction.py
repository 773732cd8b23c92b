"""Reaction F1: hand-checkable cases, and properties of the DuckDB path against the
pure-Python reference."""
from __future__ import annotations


import pytest

from tests.support import require_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.models.rxn import Condition
from labrecord.chemdata.scoring import score_documents
from labrecord.scorers.reaction import FigureCounts, pooled, prf, reference_counts, summarize

from tests.chemdata.rxn_factories import figure, gold

require_module("rdkit", 'pip install "labrecord[chem]"')

ESTER = (["CC(=O)O", "OCC"], ["CCOC(C)=O"])
AMIDE = (["CC(=O)O", "N"], ["CC(N)=O"])


def f1(result: dict, variant: str = "strict") -> float:
    return result["macro"][variant]["f1"]


# --------------------------------------------------------------------------- hand-checkable

def test_identical_sets_score_one() -> None:
    result = score_documents([gold("a", [ESTER, AMIDE])], [figure("a", [AMIDE, ESTER])])
    assert result["macro"]["strict"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert result["molecule"]["nonstereo"]["f1"] == 1.0


def test_a_prediction_named_like_the_gold_set_is_refused_before_ingest() -> None:
    with pytest.raises(LabrecordError, match="same system 'gold'"):
        score_documents([gold("a", [ESTER])], [figure("a", [ESTER], system="gold")])


def test_repeated_gold_reaction_recovered_once_gives_recall_half() -> None:
    result = score_documents([gold("a", [ESTER, ESTER])], [figure("a", [ESTER])])
    row = result["per_figure"][0]
    assert (row["matched_strict"], row["precision"], row["recall"]) == (1, 1.0, 0.5)
    assert row["f1"] == pytest.approx(2 / 3)


def test_duplicate_predictions_halve_precision() -> None:
    result = score_documents([gold("a", [ESTER])], [figure("a", [ESTER, ESTER])])
    row = result["per_figure"][0]
    assert (row["precision"], row["recall"]) == (0.5, 1.0)


def test_flipped_stereo_scores_zero_strict_and_one_blind() -> None:
    g = gold("a", [(["C[C@H](N)C(=O)O"], ["C[C@H](N)C(=O)OC"])])
    p = figure("a", [(["C[C@@H](N)C(=O)O"], ["C[C@@H](N)C(=O)OC"])])
    result = score_documents([g], [p])
    assert f1(result, "strict") == 0.0
    assert f1(result, "nonstereo") == 1.0


def test_sodium_and_potassium_acetate_match_by_the_counter_ion_rule() -> None:
    g = gold("a", [(["CC(=O)[O-].[Na+]", "CI"], ["CC(=O)OC"])])
    p = figure("a", [(["CC(=O)[O-].[K+]", "CI"], ["CC(=O)OC"])])
    assert f1(score_documents([g], [p])) == 1.0


def test_sodium_and_potassium_carbonate_match() -> None:
    g = gold("a", [(["Oc1ccccc1", "O=C([O-])[O-].[Na+].[Na+]", "CI"], ["COc1ccccc1"])])
    p = figure("a", [(["Oc1ccccc1", "[K+].[K+].[O-]C([O-])=O", "CI"], ["COc1ccccc1"])])
    assert f1(score_documents([g], [p])) == 1.0


def test_salt_written_as_separate_components_matches_the_dotted_form() -> None:
    g = gold("a", [(["CC(=O)[O-].[Na+]"], ["CC(=O)O"])])
    p = figure("a", [(["CC(=O)[O-]"], ["CC(=O)O"])])
    assert f1(score_documents([g], [p])) == 1.0


@pytest.mark.parametrize("wild", ["*c1ccccc1", "[1*]c1ccccc1", "[*:1]c1ccccc1", "[R1]c1ccccc1", "[Ar]C", "[Rf]C"])
def test_wildcard_template_never_matches_even_itself(wild: str) -> None:
    rxn = ([wild, "CI"], ["CC"])
    result = score_documents([gold("a", [rxn])], [figure("a", [rxn])])
    assert result["per_figure"][0]["matched_strict"] == 0
    assert f1(result, "nonstereo") == 0.0


def test_malformed_prediction_stays_in_the_precision_denominator() -> None:
    result = score_documents([gold("a", [ESTER])], [figure("a", [ESTER, (["C1CC"], ["CC"])])])
    row = result["per_figure"][0]
    assert (row["n_pred"], row["precision"], row["recall"]) == (2, 0.5, 1.0)


def test_a_malformed_molecule_sinks_only_its_own_reaction() -> None:
    result = score_documents([gold("a", [ESTER, AMIDE])], [figure("a", [ESTER, (["", "N"], ["CC(N)=O"])])])
    assert result["per_figure"][0]["matched_strict"] == 1


def test_empty_and_failed_figures_score_zero() -> None:
    golds = [gold("a", [ESTER]), gold("b", [ESTER]), gold("c", [ESTER]), gold("d", [ESTER])]
    preds = [figure("a", []), figure("b", [ESTER], status="failed"), figure("c", [], status="timeout")]
    rows = {r["figure_id"]: r for r in score_documents(golds, preds)["per_figure"]}
    assert [rows[k]["f1"] for k in "abcd"] == [0.0, 0.0, 0.0, 0.0]
    assert [rows[k]["status"] for k in "abcd"] == ["ok", "failed", "timeout", "missing"]
    assert rows["b"]["n_pred"] == 1 and rows["b"]["matched_strict"] == 0


def test_macro_f1_differs_from_pooled_f1_on_two_figures() -> None:
    # figure a: 1 gold, 1 right prediction -> F1 1; figure b: 3 gold, none predicted -> F1 0
    golds = [gold("a", [ESTER]), gold("b", [ESTER, AMIDE, (["CO"], ["C=O"])])]
    preds = [figure("a", [ESTER])]
    result = score_documents(golds, preds)
    assert f1(result) == 0.5                       # mean of 1 and 0
    counts = [FigureCounts(r["figure_id"], r["status"], r["n_gold"], r["n_pred"], r["matched_strict"],
                           r["matched_nonstereo"], 0, 0, 0, 0) for r in result["per_figure"]]
    assert pooled(counts)["f1"] == pytest.approx(2 * 1.0 * 0.25 / 1.25)  # P 1/1, R 1/4 -> 0.4


def test_conditions_do_not_enter_the_match() -> None:
    g = gold("a", [ESTER])
    p = figure("a", [ESTER])
    p.reactions[0].conditions.append(Condition(role="catalyst", smiles="OS(=O)(=O)O"))
    assert f1(score_documents([g], [p])) == 1.0


def test_gold_figure_without_reactions_is_refused() -> None:
    with pytest.raises(LabrecordError, match="no concrete reactions"):
        score_documents([gold("a", [])], [figure("a", [ESTER])])


def test_json_shape_is_exact() -> None:
    result = score_documents([gold("a", [ESTER])], [figure("a", [ESTER])])
    assert list(result) == ["figures", "coverage", "macro", "molecule", "per_figure"]
    assert result["coverage"] == {"figures": 1, "answered": 1, "refused": 0, "timed_out": 0, "failed": 0, "missing": 0}
    assert list(result["macro"]) == ["strict", "nonstereo"]
    assert list(result["per_figure"][0]) == ["figure_id", "n_gold", "n_pred", "matched_strict", "matched_nonstereo",
                                             "precision", "recall", "f1", "status"]


def test_prf_hand_values() -> None:
    assert prf(1, 2, 4) == (0.25, 0.5, pytest.approx(1 / 3))
    assert prf(0, 3, 0) == (0.0, 0.0, 0.0)


def test_summarize_macro_is_mean_of_f1_not_harmonic_of_means() -> None:
    counts = [FigureCounts("a", "ok", 1, 1, 1, 1, 0, 0, 0, 0), FigureCounts("b", "ok", 1, 3, 1, 1, 0, 0, 0, 0)]
    macro = summarize(counts)["macro"]["strict"]
    assert macro["f1"] == pytest.approx((1.0 + 0.5) / 2)
    assert macro["precision"] == pytest.approx((1 + 1 / 3) / 2)


# --------------------------------------------------------------------------- properties

POOL = ["CCO", "CC(=O)O", "C[C@H](N)C(=O)O", "C[C@@H](N)C(=O)O", "F/C=C/F", "F/C=C\\F", "c1ccccc1Br",
        "[2H]C([2H])O", "CC(=O)[O-].[Na+]", "CC(=O)[O-].[K+]", "*C", "C1CC", "", "N", "O=C1CCCCC1"]

smiles = st.sampled_from(POOL)
rxns = st.lists(st.tuples(st.lists(smiles, min_size=0, max_size=3), st.lists(smiles, min_size=1, max_size=2)),
                min_size=0, max_size=4)
figures = st.dictionaries(st.sampled_from(["f1", "f2", "f3"]), st.tuples(st.sampled_from(["ok", "ok", "ok", "failed"]), rxns),
                          min_size=1, max_size=3)


def _docs(gold_side: dict, pred_side: dict) -> tuple[list, list]:
    golds = [gold(fid, rs) for fid, (_, rs) in gold_side.items()]
    preds = [figure(fid, rs, status=status) for fid, (status, rs) in pred_side.items()]
    return golds, preds


def _forms(rs):
    from labrecord.chemdata.normalize import canonicalize

    return [([canonicalize(s) for s in r], [canonicalize(s) for s in p]) for r, p in rs]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gold_side=figures, pred_side=figures)
def test_duckdb_path_agrees_with_the_python_reference(gold_side: dict, pred_side: dict) -> None:
    gold_side = {k: ("ok", v[1] or [(["CCO"], ["CC=O"])]) for k, v in gold_side.items()}
    golds, preds = _docs(gold_side, pred_side)
    result = score_documents(golds, preds)
    ref = reference_counts({k: _forms(v[1]) for k, v in gold_side.items()},
                           {k: (s, _forms(v)) for k, (s, v) in pred_side.items()})
    assert result == summarize(ref)
    for variant in ("strict",):
        for level in ("macro", "molecule"):
            assert result[level][variant]["f1"] <= result[level]["nonstereo"]["f1"] + 1e-12
    for row, c in zip(result["per_figure"], ref):
        assert row["matched_strict"] <= row["matched_nonstereo"]
        assert c.mol_matched_strict <= c.mol_matched_nonstereo


CONCRETE = ["CCO", "CC(=O)O", "C[C@H](N)C(=O)O", "F/C=C/F", "c1ccc(Br)cc1", "[2H]C([2H])O",
            "O=C(O)[C@@H]1CCCN1", "CC(C)(C)OC(=O)N[C@@H](Cc1ccccc1)C(=O)O", "CC(=O)[O-].[Na+]"]


def _random_order(smiles_text: str, seed: int) -> str:
    """The same molecule written from a random atom ordering (RDKit ``doRandom``)."""
    from rdkit import Chem, rdBase

    rdBase.SeedRandomNumberGenerator(seed)
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles_text), doRandom=True, canonical=False)


rxn_concrete = st.lists(st.tuples(st.lists(st.sampled_from(CONCRETE), min_size=1, max_size=3),
                                  st.lists(st.sampled_from(CONCRETE), min_size=1, max_size=2)), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=rxn_concrete, p=rxn_concrete, seed=st.integers(0, 2**31 - 1), data=st.data())
def test_scores_are_invariant_under_atom_orderings_and_reordering(g, p, seed, data) -> None:
    base = score_documents([gold("a", g)], [figure("a", p)])
    shuffled = [(data.draw(st.permutations([_random_order(s, seed + i) for i, s in enumerate(r)])),
                 data.draw(st.permutations([_random_order(s, seed + 7 * i) for i, s in enumerate(q)])))
                for r, q in data.draw(st.permutations(p))]
    again = score_documents([gold("a", g)], [figure("a", shuffled)])
    assert again == base
    assert base["macro"]["strict"]["f1"] <= base["macro"]["nonstereo"]["f1"]


@settings(max_examples=25, deadline=None)
@given(g=rxn_concrete)
def test_a_perfect_prediction_scores_one(g) -> None:
    assert f1(score_documents([gold("a", g)], [figure("a", list(reversed(g)))])) == 1.0


def test_a_generated_corpus_scores_the_same_in_a_whole_corpus_and_in_the_reaction_tables_alone() -> None:
    """A benchmark-shaped corpus (substrate-scope tables with rewritten atom orders, flipped
    stereocentres, duplicates, malformed strings, failed figures) scores to the pure-Python
    reference, whether the corpus holds every table or only the reaction tables."""
    import sys
    from pathlib import Path

    import numpy as np

    from labrecord.chemdata.normalize import canonicalize
    from labrecord.store import connect

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import bench_rxn
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(11)
    golds = bench_rxn.generate_gold(30, rng)
    preds = bench_rxn.generate_prediction(golds, rng)

    def forms(doc):
        return [([canonicalize(m.smiles) for m in r.reactants], [canonicalize(m.smiles) for m in r.products])
                for r in doc.reactions]

    ref = summarize(reference_counts({d.figure_id: forms(d) for d in golds},
                                     {d.figure_id: (d.status, forms(d)) for d in preds}))
    assert score_documents(golds, preds) == ref
    assert score_documents(golds, preds, con=connect()) == ref
