"""Tests for chemdata/extract/assemble.py: plan + readings -> records with provenance."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from labrecord.chemdata.abbreviations import ABBREVIATIONS
from labrecord.chemdata.extract.assemble import PlanError, assemble, canonical
from labrecord.chemdata.extract.osra import Reading

READINGS = [Reading("m1", "Ic1ccccc1", 0.9, (1, 2, 3, 4), "crop"),
            Reading("m2", "c1ccc(cc1)c1ccccc1", 0.8, (5, 6, 7, 8), "crop"),
            Reading("t1", "*c1ccc(cc1)I", 0.5, (0, 0, 9, 9), "crop"),
            Reading("t2", "*c1ccc(cc1)c1ccccc1", 0.5, (0, 0, 9, 9), "crop"),
            Reading("p1", "COc1ccc(cc1)c1ccccc1", 0.7, (0, 100, 9, 190), "crop")]


def test_read_participants_keep_their_region() -> None:
    plan = {"reactions": [{"id": "r1", "step": 1, "reactants": [{"reading": "m1"}], "products": [{"reading": "m2"}]}]}
    (reaction,), templates, failures = assemble(plan, READINGS)
    assert templates == [] and failures == []
    assert reaction.reactants[0].smiles == "Ic1ccccc1"
    provenance = reaction.reactants[0].provenance
    assert (provenance.origin, provenance.region, provenance.bbox) == ("tool_read", "1,2,3,4", [1.0, 2.0, 3.0, 4.0])


def test_model_written_participant_is_marked() -> None:
    plan = {"reactions": [{"reactants": [{"smiles": "OCC"}], "products": [{"reading": "m2"}]}]}
    (reaction,), _, _ = assemble(plan, READINGS)
    assert reaction.reactants[0].smiles == "CCO" and reaction.reactants[0].provenance.origin == "model_written"


def test_table_entry_instantiates_unlabelled_templates() -> None:
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "1a", "bindings": {"R1": "Me"}}]}]}
    (reaction,), (template,), failures = assemble(plan, READINGS)
    assert failures == [] and reaction.identifiers == ["1a"] and reaction.id == "t-1a"
    assert reaction.reactants[0].smiles == canonical("Cc1ccc(I)cc1")
    assert reaction.products[0].smiles == canonical("Cc1ccc(-c2ccccc2)cc1")
    provenance = reaction.reactants[0].provenance
    assert (provenance.origin, provenance.template, provenance.bindings) == ("template_derived", "*c1ccc(cc1)I", {"*": "Me"})
    assert template.reactants[0].esmiles == "*c1ccc(cc1)I"


def test_drawn_product_derives_its_reactants() -> None:
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2", "entries": [{"id": "3a", "product": "p1"}]}]}
    (reaction,), _, failures = assemble(plan, READINGS)
    assert failures == []
    assert reaction.reactants[0].smiles == canonical("COc1ccc(I)cc1")
    assert reaction.reactants[0].provenance.bindings == {"*": "*OC"}
    assert reaction.products[0].provenance.origin == "tool_read"


def test_rgroup_failure_is_reported_and_only_that_entry_is_lost() -> None:
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "bad", "product": "m1"}, {"id": "ok", "bindings": {"R": "Cl"}}]}]}
    reactions, _, failures = assemble(plan, READINGS)
    assert [r.identifiers for r in reactions] == [["ok"]]
    assert failures == [{"stage": "rgroup", "kind": "no_match", "message": failures[0]["message"]}]
    assert failures[0]["message"].startswith("entry bad:")


@pytest.mark.parametrize("plan", [[], {"reactions": [{"reactants": [{"reading": "nope"}]}]},
                                  {"reactions": [{"reactants": ["CCO"]}]},
                                  {"scopes": [{"reactant_templates": ["zz"], "product_template": "t2"}]}, {"reactions": ["x"]}])
def test_unusable_plans_raise(plan: object) -> None:
    with pytest.raises(PlanError):
        assemble(plan, READINGS)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(k for k in ABBREVIATIONS if k not in {"H", "D"})))
def test_table_and_drawn_product_routes_agree(abbreviation: str) -> None:
    table = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2", "entries": [{"id": "e", "bindings": {"R1": abbreviation}}]}]}
    (by_table,), _, _ = assemble(table, READINGS)
    drawn = Reading("px", by_table.products[0].smiles, 1.0, (0, 0, 1, 1), "crop")
    derive = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2", "entries": [{"id": "e", "product": "px"}]}]}
    reactions, _, failures = assemble(derive, READINGS + [drawn])
    if failures:  # a substituent that repeats the template core is legitimately ambiguous
        assert failures[0]["kind"] == "ambiguous_match"
        return
    assert reactions[0].reactants[0].smiles == by_table.reactants[0].smiles


def test_conditions_and_yields_are_carried_not_scored() -> None:
    plan = {"reactions": [{"reactants": [{"reading": "m1"}], "products": [{"reading": "m2"}], "yield": 85, "step": "x",
                           "conditions": ["Pd(PPh3)4", {"role": "solvent", "smiles": "C1CCOC1"}]}],
            "scopes": [{"reactant_templates": ["t1"], "product_template": "t2", "entries": [{"id": "e", "bindings": {"R": "F"}, "yield": "92%"}]}]}
    (reaction, entry), _, _ = assemble(plan, READINGS)
    assert [(c.role, c.smiles, c.text) for c in reaction.conditions] == [("condition", None, "Pd(PPh3)4"), ("solvent", "C1CCOC1", None)]
    assert reaction.yield_ == "85" and reaction.step is None and entry.yield_ == "92%"
    with pytest.raises(PlanError, match="a condition must be"):
        assemble({"reactions": [{"conditions": [3]}]}, READINGS)


def test_a_symmetric_core_entry_takes_the_assignment_the_other_entries_confirm() -> None:
    """Scope Ar–I + R²S–SR²: entries 1 and 2 (4-methyl and 4-methoxy thioanisole) bind R2
    = Me unambiguously; entry 3 (CCSc1ccc(SC)cc1) could be R1 = SEt/R2 = Me or R1 =
    SMe/R2 = Et and is settled to the first: reactants 4-iodophenyl ethyl sulfide and
    dimethyl disulfide."""
    readings = [Reading("t1", "[R1]c1ccc(I)cc1", 0.9, (0, 0, 9, 9), "crop"),
                Reading("t2", "[R2]SS[R2]", 0.9, (10, 0, 19, 9), "crop", "decimer"),
                Reading("t3", "[R1]c1ccc(S[R2])cc1", 0.9, (30, 0, 39, 9), "crop", "decimer"),
                Reading("p1", "Cc1ccc(SC)cc1", 0.9, (0, 50, 9, 59), "crop"),
                Reading("p2", "COc1ccc(SC)cc1", 0.9, (10, 50, 19, 59), "crop"),
                Reading("p3", "CCSc1ccc(SC)cc1", 0.9, (20, 50, 29, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1", "t2"], "product_template": "t3",
                        "entries": [{"id": str(i), "product": f"p{i}"} for i in (1, 2, 3)]}]}
    reactions, _, failures = assemble(plan, readings)
    assert failures == [] and len(reactions) == 3
    assert sorted(m.smiles for m in reactions[2].reactants) == ["CCSc1ccc(I)cc1", "CSSC"]
    assert [m.provenance.reader for m in reactions[2].reactants] == ["osra", "decimer"]


def test_a_grid_of_drawn_substituents_binds_the_templates_variable() -> None:
    """Template RCHO + MeNHC(S)NH2 + methyl acetoacetate -> the thione, R drawn below as
    substituents whose wavy attachment bond osra reads as a methyl: 'COc1cc(C)ccc1O'
    (4-hydroxy-3-methoxyphenyl with its stub) gives R = *c1ccc(O)c(OC)c1, so the aldehyde
    is vanillin, O=Cc1ccc(O)c(OC)c1, and the product carries that aryl at C4.  The
    product template writes R bare (*), the aldehyde names it: one variable, both bound."""
    readings = [Reading("t1", "O=C[R]", 0.9, (0, 0, 9, 9), "crop", "decimer"),
                Reading("t2", "CNC(N)=S", 0.9, (10, 0, 19, 9), "crop"),
                Reading("t3", "COC(=O)CC(C)=O", 0.9, (20, 0, 29, 9), "crop"),
                Reading("t4", "*C1NC(=S)N(C)C(C)=C1C(=O)OC", 0.9, (40, 0, 49, 9), "crop", "decimer"),
                Reading("p1", "COc1cc(C)ccc1O", 0.9, (0, 50, 9, 59), "crop"),
                Reading("p2", "Cc1ccc(C)cc1", 0.9, (10, 50, 19, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1", "t2", "t3"], "product_template": "t4",
                        "entries": [{"id": "a", "product": "p1"}, {"id": "b", "product": "p2"}]}]}
    (reaction,), _, failures = assemble(plan, readings)
    assert reaction.identifiers == ["a"]
    assert sorted(m.smiles for m in reaction.reactants) == sorted(
        canonical(s) for s in ("O=Cc1ccc(O)c(OC)c1", "CNC(N)=S", "COC(=O)CC(C)=O"))
    assert reaction.products[0].smiles == canonical("COC(=O)C1=C(C)N(C)C(=S)NC1c1ccc(O)c(OC)c1")
    assert reaction.products[0].provenance.origin == "template_derived"
    # entry b (two ring methyls: which one is the stub?) stays refused as before
    assert [f["message"].split(":")[0] for f in failures] == ["entry b"]


def test_a_misfit_among_fitting_products_is_not_read_as_a_substituent() -> None:
    """One drawn product fits the template, so the grid holds products; the misfit
    'Cc1ccccc1' is a misreading and is refused, not turned into R = phenyl."""
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "3a", "product": "p1"}, {"id": "3b", "product": "m3"}]}]}
    readings = [*READINGS, Reading("m3", "Cc1ccccc1", 0.9, (0, 200, 9, 290), "crop")]
    reactions, _, failures = assemble(plan, readings)
    assert [r.identifiers for r in reactions] == [["3a"]]
    assert [f["kind"] for f in failures] == ["no_match"]


def test_co_products_join_every_entry_as_read() -> None:
    """Scope amide + phenol -> phenyl ester + NH3 with R = Me: reactants acetamide and
    phenol, products phenyl acetate and ammonia, the ammonia tool_read with its region."""
    readings = [Reading("t1", "*C(N)=O", 0.9, (0, 0, 9, 9), "crop"), Reading("t2", "Oc1ccccc1", 0.9, (10, 0, 19, 9), "crop"),
                Reading("t3", "*C(=O)Oc1ccccc1", 0.9, (30, 0, 39, 9), "crop"), Reading("n", "N", 0.9, (40, 0, 45, 9), "formula")]
    plan = {"scopes": [{"reactant_templates": ["t1", "t2"], "product_template": "t3", "co_products": ["n"],
                        "entries": [{"id": "3a", "bindings": {"R": "Me"}}]}]}
    (reaction,), _, failures = assemble(plan, readings)
    assert failures == []
    assert sorted(m.smiles for m in reaction.reactants) == sorted([canonical("CC(N)=O"), canonical("Oc1ccccc1")])
    assert [m.smiles for m in reaction.products] == [canonical("CC(=O)Oc1ccccc1"), "N"]
    assert reaction.products[1].provenance.origin == "tool_read" and reaction.products[1].provenance.region == "40,0,45,9"


def test_arbitration_can_leave_the_substituent_reading_out() -> None:
    """The same substituent grid assembled with reread_grids=False: the drawing
    stays a product that does not fit, so no reaction (the engine relates nothing)."""
    readings = [Reading("t1", "O=C[R]", 0.9, (0, 0, 9, 9), "crop"),
                Reading("t2", "*C(C)(C)C", 0.9, (40, 0, 49, 9), "crop"),
                Reading("p1", "Cc1ccc(Cl)cc1", 0.9, (0, 50, 9, 59), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2", "entries": [{"id": "a", "product": "p1"}]}]}
    (reaction,), _, _ = assemble(plan, readings)
    assert reaction.products[0].smiles == canonical("CC(C)(C)c1ccc(Cl)cc1")
    reactions, _, failures = assemble(plan, readings, reread_grids=False)
    assert reactions == [] and [f["kind"] for f in failures] == ["no_match"]


def test_a_misread_template_does_not_turn_drawn_products_into_substituents() -> None:
    """The template's benzo ring read non-aromatic, so no drawn quinazolinone fits it;
    the drawing 8-methyl-…quinazolinone has one ring methyl, but it shares 14 of the
    template's 20 atoms: a product, refused as no_match, not read as R = the drawing."""
    readings = [Reading("t1", "O=C(NN=CC(F)(F)F)c1ccccc1[X]", 0.9, (0, 0, 9, 9), "crop"),
                Reading("t2", "O=c1c2C=CC(C=Cc2[nH]c2n1nc(n2)C(F)(F)F)(*)C", 0.9, (40, 0, 49, 9), "crop"),
                Reading("p1", "Cc1cccc2c(=O)n3nc(C(F)(F)F)nc3[nH]c12", 0.9, (0, 50, 9, 59), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2", "entries": [{"id": "4b", "product": "p1"}]}]}
    reactions, _, failures = assemble(plan, readings)
    assert reactions == [] and [f["kind"] for f in failures] == ["no_match"]


AMINE_ROW = [Reading("t1", "O=C(c1ccccc1)[R]", 0.9, (0, 0, 9, 9), "crop"),       # a ketone R-CO-Ph
             Reading("t2", "NC[R2]", 0.9, (10, 0, 19, 9), "crop"),               # a primary amine H2N-CH2-R2
             Reading("t3", "[R2]CN=C([R])c1ccccc1", 0.9, (30, 0, 39, 9), "crop")]  # the imine


def test_a_grid_of_drawn_reactants_binds_the_labels_of_the_reactant_it_fits() -> None:
    """Template R-CO-Ph (R = Me, given) + H2N-CH2-R2 -> the imine; the grid draws the
    amines.  n-Butylamine 'CCCCN' fits no product but fits the amine template with
    R2 = n-propyl (it shares only 2 of the imine template's 9 atoms, C-N: no misread
    product); with the entry's R = Me the imine is nBuN=C(Me)Ph and the amine comes back
    as drawn.  Piperidine fits neither template and is refused as before."""
    readings = [*AMINE_ROW, Reading("p1", "CCCCN", 0.9, (0, 50, 9, 59), "crop"),
                Reading("p2", "C1CCNCC1", 0.9, (10, 50, 19, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1", "t2"], "product_template": "t3",
                        "entries": [{"id": "a", "product": "p1", "bindings": {"R": "Me"}, "yield": "90%"},
                                    {"id": "b", "product": "p2", "bindings": {"R": "Me"}}]}]}
    (reaction,), _, failures = assemble(plan, readings)
    assert reaction.identifiers == ["a"] and reaction.yield_ == "90%"
    assert sorted(m.smiles for m in reaction.reactants) == sorted([canonical("CC(=O)c1ccccc1"), canonical("CCCCN")])
    assert reaction.products[0].smiles == canonical("CCCCN=C(C)c1ccccc1")
    assert [f["message"].split(":")[0] for f in failures] == ["entry b"]
    # while arbitration judges (no grid re-reading) the centre still makes the imine from
    # the drawn amine — the drawing holds the amine template's centre — and piperidine,
    # which holds none, is still refused
    (reaction,), _, failures = assemble(plan, readings, reread_grids=False)
    assert reaction.products[0].smiles == canonical("CCCCN=C(C)c1ccccc1") and len(failures) == 1


def test_a_drawn_reactant_that_leaves_a_product_label_open_is_not_reread() -> None:
    """Without the entry's R the amine fixes R2 only; the imine's R stays open, so the
    drawing is not turned into an entry (a guess at R would be needed).  A drawing that
    holds most of the product template (benzylamine against this imine: N, C and the
    phenyl, 7 of 9 atoms) is a misread product and is not reread either."""
    readings = [*AMINE_ROW, Reading("p1", "CCCCN", 0.9, (0, 50, 9, 59), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1", "t2"], "product_template": "t3",
                        "entries": [{"id": "a", "product": "p1"}]}]}
    reactions, _, failures = assemble(plan, readings)
    assert reactions == [] and len(failures) == 1
    readings = [*AMINE_ROW, Reading("p1", "NCc1ccccc1", 0.9, (0, 50, 9, 59), "crop")]
    plan["scopes"][0]["entries"] = [{"id": "a", "product": "p1", "bindings": {"R": "Me"}}]
    reactions, _, failures = assemble(plan, readings)
    assert reactions == [] and [f["kind"] for f in failures] == ["no_match"]


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 6))
def test_any_drawn_primary_amine_comes_back_as_drawn_and_forms_its_imine(chain: int) -> None:
    """H2N-CH2-(CH2)n-1-CH3 drawn in the grid: R2 is the n-carbon chain, the amine is
    re-instantiated exactly as drawn and the imine carries the whole chain on N."""
    amine = "NC" + "C" * chain
    readings = [*AMINE_ROW, Reading("p1", amine, 0.9, (0, 50, 9, 59), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1", "t2"], "product_template": "t3",
                        "entries": [{"id": "a", "product": "p1", "bindings": {"R": "Me"}}]}]}
    (reaction,), _, failures = assemble(plan, readings)
    assert failures == []
    assert canonical(amine) in [m.smiles for m in reaction.reactants]
    assert reaction.products[0].smiles == canonical("C" * chain + "CN=C(C)c1ccccc1")


def test_an_entry_read_again_from_its_drawing_keeps_its_printed_yield() -> None:
    """The substituent grid of the thione test, entry a printed with 85 %: its reaction,
    built from R = the drawn aryl, carries 85 %."""
    readings = [Reading("t1", "O=C[R]", 0.9, (0, 0, 9, 9), "crop"),
                Reading("t2", "*C(C)(C)C", 0.9, (40, 0, 49, 9), "crop"),
                Reading("p1", "Cc1ccc(Cl)cc1", 0.9, (0, 50, 9, 59), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "a", "product": "p1", "yield": "85%"}]}]}
    (reaction,), _, _ = assemble(plan, readings)
    assert reaction.yield_ == "85%"


def test_a_product_varied_where_no_label_stands_gets_its_reactants_from_the_centre() -> None:
    """Products varied beyond the labels: a thieno ring where the template draws a benzo
    ring (no label there, so the R-group engine finds no match) gets its reactants by
    carrying the reaction centre back (chemdata/transfer.py); the printed ``X = Br`` binds
    the hydrazide's leaving group, and the derived reactant is marked as derived from its
    template with that binding.  A drawing that shares little with the product (a stray
    benzene) stays refused."""
    readings = [Reading("t1", "O=C(NN=CC(F)(F)F)c1ccccc1[X]", 0.9, (0, 0, 9, 9), "crop"),
                Reading("t2", "NC#N", 0.9, (10, 0, 19, 9), "crop"),
                Reading("t3", "O=c1c2ccccc2[nH]c2nc(C(F)(F)F)nn12", 0.9, (30, 0, 39, 9), "crop"),
                Reading("p1", "O=c1c2sccc2[nH]c2nc(C(F)(F)F)nn12", 0.9, (0, 50, 9, 59), "crop"),
                Reading("p2", "c1ccccc1", 0.9, (20, 50, 29, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1", "t2"], "product_template": "t3",
                        "entries": [{"id": "4h", "product": "p1", "bindings": {"X": "Br"}},
                                    {"id": "9", "product": "p2", "bindings": {"X": "Br"}}]}]}
    reactions, _, failures = assemble(plan, readings)
    (reaction,) = reactions
    assert [m.smiles for m in reaction.reactants] == [canonical("O=C(NN=CC(F)(F)F)c1sccc1Br"), canonical("NC#N")]
    assert reaction.reactants[0].provenance.bindings == {"X": "Br"}
    assert [f["kind"] for f in failures] == ["no_match"] and "entry 9" in failures[0]["message"]


def test_entries_of_one_drawing_made_several_ways_keep_distinct_reaction_ids() -> None:
    """Two entries of one drawing (``variant`` X=Cl and X=Br) become two reactions with the
    printed id 4a, told apart in their reaction ids."""
    readings = [Reading("t1", "O=C(O)c1ccccc1[X]", 0.9, (0, 0, 9, 9), "crop"),
                Reading("t2", "O=C(O)c1ccccc1N", 0.9, (10, 0, 19, 9), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "4a", "bindings": {"X": "Cl"}, "variant": "X=Cl"},
                                    {"id": "4a", "bindings": {"X": "Br"}, "variant": "X=Br"}]}]}
    reactions, _, _ = assemble(plan, readings)
    assert [r.identifiers for r in reactions] == [["4a"], ["4a"]]
    assert len({r.id for r in reactions}) == 2
    assert [r.reactants[0].smiles for r in reactions] == [canonical("O=C(O)c1ccccc1Cl"), canonical("O=C(O)c1ccccc1Br")]


def test_a_grid_of_drawn_amines_gets_its_products_by_the_centre() -> None:
    """A dithiocarbamate row whose amine template carries no label the drawings could
    bind (``NC`` read for the drawn H2N–CH2–R): no drawn amine fits the product template,
    the grid holds reactants, and each amine gets its product by making the row's change
    at its N–H (chemdata/transfer.py).  The product is marked derived."""
    methide = "CC(C)(C)C1=CC(=Cc2ccccc2)C=C(C(C)(C)C)C1=O"
    readings = [Reading("t1", methide, 0.9, (0, 0, 9, 9), "crop"), Reading("t2", "NC", 0.9, (10, 0, 19, 9), "crop"),
                Reading("t3", "S=C=S", 0.9, (20, 0, 29, 9), "crop"),
                Reading("t4", "CC(C)(C)C1=CC(=C(SC(=S)NC)c2ccccc2)C=C(C(C)(C)C)C1=O", 0.9, (40, 0, 49, 9), "crop"),
                Reading("p1", "NCc1ccccc1", 0.9, (0, 50, 9, 59), "crop"), Reading("p2", "C1CCNCC1", 0.9, (10, 50, 19, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["t1", "t2", "t3"], "product_template": "t4",
                        "entries": [{"id": "a", "product": "p1"}, {"id": "l", "product": "p2"}]}]}
    reactions, _, failures = assemble(plan, readings)
    assert failures == []
    assert [r.reactants[1].smiles for r in reactions] == ["NCc1ccccc1", "C1CCNCC1"]
    assert reactions[1].products[0].smiles == canonical("CC(C)(C)C1=CC(=C(SC(=S)N2CCCCC2)c2ccccc2)C=C(C(C)(C)C)C1=O")
    assert reactions[1].products[0].provenance.origin == "template_derived"


def test_a_drawing_that_keeps_a_label_is_filled_by_the_line_listed_beside_it() -> None:
    """The drawing ``[X]c1ccc(cc1)c1ccccc1`` keeps its X; the entry listed beside it binds
    X = OMe (``product_bindings``), so its product is 4-methoxybiphenyl, made from the
    templates: the reactant ``COc1ccc(I)cc1`` (the template's * = OMe).  The product is
    marked as derived from the drawing, with the binding that filled it."""
    readings = READINGS + [Reading("d1", "[X]c1ccc(cc1)c1ccccc1", 0.7, (0, 200, 9, 290), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "5e", "product": "d1", "product_bindings": {"X": "OMe"}}]}]}
    (reaction,), _, failures = assemble(plan, readings)
    assert failures == []
    assert reaction.products[0].smiles == canonical("COc1ccc(cc1)c1ccccc1")
    assert reaction.reactants[0].smiles == canonical("COc1ccc(I)cc1")
    provenance = reaction.products[0].provenance
    assert (provenance.origin, provenance.template, provenance.bindings) == \
        ("template_derived", "[X]c1ccc(cc1)c1ccccc1", {"X": "OMe"})


def test_a_bare_attachment_point_takes_the_value_every_named_variable_shares() -> None:
    """``R1, R2 = H`` where the reactant template names R1 and R2 and the product template
    (another reader) writes both as ``*``: the ``*`` takes H.  With R1 = Me, R2 = H there
    is no one value, and nothing is fitted; a template that writes only ``*`` takes an
    entry's single variable, as before."""
    from labrecord.chemdata.extract.assemble import _fit_labels

    templates = ["[R1]c1ccc([R2])cc1", "*c1ccc(*)cc1O"]
    assert _fit_labels(templates, {"R1": "H", "R2": "H"}) == {"R1": "H", "R2": "H", "*": "H"}
    assert _fit_labels(templates, {"R1": "Me", "R2": "H"}) == {"R1": "Me", "R2": "H"}
    assert _fit_labels(["*c1ccccc1"], {"R": "Me"}) == {"*": "Me"}
    assert _fit_labels(["*c1ccccc1"], {"R1": "Me", "R2": "Et"}) == {"R1": "Me", "R2": "Et"}


def test_a_drawn_substituent_filled_by_its_lettered_item_binds_the_templates_r() -> None:
    """Template row R–CHO + malononitrile -> R–CH=C(CN)2.  The drawing ``*c1ccc(C)cc1`` (X
    still drawn as ``*``, the wavy bond read as a methyl) is filled by its items X = OMe
    and X = F: ``COc1ccc(C)cc1`` is no product of the template (it shares at most 2 of its
    7 heavy atoms), but read as a drawn substituent it is R = 4-methoxyphenyl, so entry a
    is anisaldehyde -> 2-(4-methoxybenzylidene)malononitrile."""
    readings = [Reading("t1", "O=C[R]", 0.9, (0, 0, 9, 9), "crop"), Reading("t3", "N#CCC#N", 0.9, (10, 0, 19, 9), "crop"),
                Reading("t2", "N#CC(C#N)=C[R]", 0.9, (20, 0, 29, 9), "crop"),
                Reading("d1", "*c1ccc(C)cc1", 0.9, (0, 200, 9, 290), "crop")]
    plan = {"scopes": [{"reactant_templates": ["t1", "t3"], "product_template": "t2",
                        "entries": [{"id": "a", "product": "d1", "product_bindings": {"*": "OMe"}},
                                    {"id": "b", "product": "d1", "product_bindings": {"*": "F"}}]}]}
    reactions, _, failures = assemble(plan, readings)
    assert failures == []
    assert [(r.reactants[0].smiles, r.products[0].smiles) for r in reactions] == [
        (canonical("COc1ccc(C=O)cc1"), canonical("COc1ccc(C=C(C#N)C#N)cc1")),
        (canonical("Fc1ccc(C=O)cc1"), canonical("Fc1ccc(C=C(C#N)C#N)cc1"))]


def test_an_entry_binding_a_variable_no_template_carries_is_refused() -> None:
    """The iodide template ``*c1ccc(cc1)I`` was read without its printed X (a floating
    substituent dropped); an entry ``X = Me`` would give the parent biphenyl, as drawn, for
    every entry: it is refused (``unbound_variable``).  A footnote binding listed in
    ``shared`` (given to every entry) may name a variable of no template."""
    plan = {"scopes": [{"reactant_templates": ["t1"], "product_template": "t2",
                        "entries": [{"id": "1", "bindings": {"*": "OMe", "X": "Me"}},
                                    {"id": "2", "bindings": {"*": "OMe", "Ar2": "Ph"}, "shared": ["Ar2"]}]}]}
    reactions, _, failures = assemble(plan, READINGS)
    assert [r.id for r in reactions] == ["t-2"]
    assert [(f["kind"], f["stage"]) for f in failures] == [("unbound_variable", "rgroup")]
    assert "X = Me" in failures[0]["message"] and "labels: *" in failures[0]["message"]
