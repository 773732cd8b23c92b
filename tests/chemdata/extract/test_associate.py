"""Tests for chemdata/extract/associate.py: the rule-based entry plan."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from labrecord.chemdata.extract.associate import (
    alternatives, binding_lines, drawn_values, normalize_entry_id, normalize_variable, ordinal_labels, plan_from_rules, repair_aryl_formula,
    printed_under, repair_value, table_entries, table_value,
)
from labrecord.chemdata.extract.layout import Segment
from labrecord.chemdata.extract.osra import Reading
from labrecord.chemdata.extract.tesseract import TextLine


def seg(kind: str, x: int, band: int = 0, y: int = 0, w: int = 100, h: int = 100) -> Segment:
    return Segment(kind, (x, y, x + w, y + h), band)


def read(ident: str, smiles: str, x: int, y: int = 0) -> Reading:
    return Reading(ident, smiles, 1.0, (x + 10, y + 10, x + 90, y + 90), "crop")


@pytest.mark.parametrize(("token", "expected"), [("1a", "1a"), ("la", "1a"), ("(2b)", "2b"), ("I0", "10"), ("Me", None), ("R1", None)])
def test_entry_ids(token: str, expected: str | None) -> None:
    assert normalize_entry_id(token) == expected


@pytest.mark.parametrize(("token", "expected"), [("Rl", "R1"), ("R|", "R1"), ("Ri", "R1"), ("Ry", "R1"), ("R 2", "R2"),
                                                   ("Ro", "R2"), ("X", "X")])
def test_variables(token: str, expected: str) -> None:
    assert normalize_variable(token) == expected


@pytest.mark.parametrize(("value", "expected"), [("CI", "Cl"), ("0Me", "OMe"), ("OMe", "OMe"), ("C(C)C", "C(C)C"),
                                                 ("Boc_", "Boc"), ("Me.", "Me")])
def test_ocr_repairs_only_towards_known_abbreviations(value: str, expected: str) -> None:
    assert repair_value(value) == expected


def test_binding_lines_with_and_without_entry_ids() -> None:
    lines = [TextLine("la Rl =Me", (0, 0, 1, 1), 90), TextLine("X = I", (0, 5, 1, 6), 90), TextLine("noise", (0, 9, 1, 9), 9)]
    assert [(entry, pairs) for entry, pairs, _ in binding_lines(lines)] == [("1a", {"R1": "Me"}), (None, {"X": "I"})]


def test_two_step_row_chains_the_intermediate() -> None:
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300), seg("arrow", 450, h=10), seg("structure", 600)]
    readings = [read("m1", "Brc1ccccc1", 0), read("m2", "OB(O)c1ccccc1", 300), read("m3", "Cc1ccccc1", 600)]
    plan, failures = plan_from_rules(segments, readings, [])
    assert failures == []
    assert [(r["reactants"], r["products"]) for r in plan["reactions"]] == [
        ([{"reading": "m1"}], [{"reading": "m2"}]), ([{"reading": "m2"}], [{"reading": "m3"}])]


def test_unread_structure_skips_only_its_step() -> None:
    segments = [seg("structure", 0), seg("plus", 120, w=20, h=20), seg("structure", 200), seg("arrow", 350, h=10), seg("structure", 500)]
    plan, failures = plan_from_rules(segments, [read("m1", "CCO", 200), read("m2", "CC", 500)], [])
    assert plan["reactions"] == []
    assert [f["kind"] for f in failures] == ["unread_structure", "incomplete_step"]


def test_template_row_with_a_binding_table() -> None:
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300), seg("text", 0, band=1, y=200, h=20)]
    readings = [read("m1", "*c1ccc(I)cc1", 0), read("m2", "*c1ccccc1", 300)]
    lines = [TextLine("1a R1 = Me", (0, 200, 100, 220), 90), TextLine("1b R1 = OMe", (0, 240, 100, 260), 90)]
    plan, failures = plan_from_rules(segments, readings, lines)
    assert failures == [] and plan["reactions"] == []
    (scope,) = plan["scopes"]
    assert scope["reactant_templates"] == ["m1"] and scope["product_template"] == "m2"
    assert scope["entries"] == [{"id": "1a", "bindings": {"R1": "Me"}}, {"id": "1b", "bindings": {"R1": "OMe"}}]


def test_template_row_with_drawn_products_and_a_footnote_binding() -> None:
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300), seg("structure", 0, band=1, y=200)]
    readings = [read("m1", "*c1ccc([X])cc1", 0), read("m2", "*c1ccccc1", 300), read("m3", "Cc1ccccc1", 0, y=200)]
    lines = [TextLine("3a", (30, 320, 60, 340), 90), TextLine("X = I", (300, 400, 360, 420), 90)]
    plan, _ = plan_from_rules(segments, readings, lines)
    assert plan["scopes"][0]["entries"] == [{"id": "3a", "product": "m3", "bindings": {"X": "I"}}]


def test_no_arrow_is_reported() -> None:
    plan, failures = plan_from_rules([seg("structure", 0)], [read("m1", "CCO", 0)], [])
    assert plan == {"reactions": [], "scopes": []}
    assert [f["kind"] for f in failures] == ["no_arrow", "unassigned"]


@given(st.integers(1, 6))
def test_n_arrows_give_n_steps(arrows: int) -> None:
    segments, readings = [], []
    for index in range(arrows + 1):
        segments.append(seg("structure", index * 300))
        readings.append(read(f"m{index}", "C" * (index + 1), index * 300))
        if index < arrows:
            segments.append(seg("arrow", index * 300 + 150, h=10))
    plan, failures = plan_from_rules(segments, readings, [])
    assert failures == [] and [r["step"] for r in plan["reactions"]] == list(range(1, arrows + 1))


def test_entry_id_printed_left_of_its_binding_line() -> None:
    lines = [TextLine("la", (40, 222, 70, 240), 95), TextLine("Rl =Me", (109, 222, 216, 241), 90),
             TextLine("1b", (40, 265, 70, 284), 95), TextLine("Ri = Br", (109, 266, 237, 285), 90)]
    assert [(entry, pairs) for entry, pairs, _ in binding_lines(lines)] == [("1a", {"R1": "Me"}), ("1b", {"R1": "Br"})]


def test_unread_template_expands_no_entry() -> None:
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300)]
    plan, failures = plan_from_rules(segments, [read("m2", "*c1ccccc1", 300)], [TextLine("1a R1 = Me", (0, 200, 9, 220), 90)])
    assert plan["scopes"][0]["entries"] == []
    assert [f["kind"] for f in failures] == ["unread_structure", "incomplete_template"]


def test_text_over_an_arrow_is_that_steps_condition_and_percent_is_a_yield() -> None:
    segments = [seg("structure", 0), seg("arrow", 150, y=45, h=10), seg("structure", 300), seg("arrow", 450, y=45, h=10),
                seg("structure", 600)]
    readings = [read("m1", "Brc1ccccc1", 0), read("m2", "OB(O)c1ccccc1", 300), read("m3", "Cc1ccccc1", 600)]
    lines = [TextLine("Pd(PPh3)4", (160, 20, 240, 35), 90), TextLine("THF, 60 C", (470, 60, 540, 75), 90),
             TextLine("3a", (30, 150, 50, 165), 90)]
    plan, _ = plan_from_rules(segments, readings, lines)
    assert [r.get("conditions") for r in plan["reactions"]] == [["Pd(PPh3)4"], ["THF, 60 C"]]
    table = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300)]
    scope_plan, _ = plan_from_rules(table, [read("m1", "*c1ccc(I)cc1", 0), read("m2", "*c1ccccc1", 300)],
                                    [TextLine("1a R1 = Me 92 %", (0, 200, 200, 220), 90)])
    assert scope_plan["scopes"][0]["entries"] == [{"id": "1a", "bindings": {"R1": "Me"}, "yield": "92%"}]


def test_a_structure_drawn_under_the_arrow_row_is_not_a_participant() -> None:
    # reactant and product straddle the arrow's axis (y 50); a catalyst drawn below the
    # reactant (y 150-250) and one under the arrow are left out of the step
    segments = [seg("structure", 0), seg("arrow", 150, y=45, h=10), seg("structure", 300),
                seg("structure", 0, y=150), seg("structure", 150, y=120, h=40)]
    readings = [read("m1", "CCO", 0), read("m2", "CC=O", 300), read("m3", "c1ccccc1", 0, 150), read("m4", "O", 150, 110)]
    plan, _ = plan_from_rules(segments, readings, [])
    assert [([r["reading"] for r in x["reactants"]], [p["reading"] for p in x["products"]]) for x in plan["reactions"]] \
        == [(["m1"], ["m2"])]


def test_a_reactant_stacked_under_another_with_a_plus_joins_its_step() -> None:
    """Reactant m1 (0–100, y 0–100) straddles the arrow axis (y 50); m3 is drawn under it
    (y 150–250) with a "+" at (40–55, y 120–135) in the gap, centre x 47.5 over both: it
    joins m1 as a reactant.  Without the plus it is a drawing beside the row, left out."""
    row = [seg("structure", 0), seg("arrow", 150, y=45, h=10), seg("structure", 300), seg("structure", 0, y=150)]
    readings = [read("m1", "CCO", 0), read("m2", "CCOC(C)=O", 300), read("m3", "CC(=O)O", 0, 150)]
    plus = Segment("plus", (40, 120, 55, 135), 0)
    for segments, reactants in ((row + [plus], ["m1", "m3"]), (row, ["m1"])):
        plan, _ = plan_from_rules(segments, readings, [])
        assert [[r["reading"] for r in x["reactants"]] for x in plan["reactions"]] == [reactants]


def words(*cells: tuple[str, int]) -> tuple[tuple[str, tuple[int, int, int, int]], ...]:
    return tuple((text, (x, 0, x + 20, 10)) for text, x in cells)


def test_table_entries_read_columns_under_their_headers() -> None:
    # header "R1 R2 yield" (OCR'd superscripts), rows start with the entry number;
    # a repeated row (an optimization table) is kept once, a stray cell is skipped
    lines = [TextLine("Ri Ro conv.", (0, 100, 300, 110), 90, words(("Ri", 100), ("Ro", 200), ("conv.", 300))),
             TextLine("1 H H 100", (0, 120, 300, 130), 90, words(("1", 0), ("H", 102), ("H", 198), ("100", 300))),
             TextLine("Cl", (190, 135, 210, 145), 90, words(("Cl", 195))),
             TextLine("2 CH30 Cl 90", (0, 150, 300, 160), 90, words(("2", 0), ("CH30", 95), ("Cl", 205), ("90", 300))),
             TextLine("3 H H 80", (0, 170, 300, 180), 90, words(("3", 0), ("H", 102), ("H", 198), ("80", 300)))]
    assert [(e, b) for e, b, _ in table_entries(lines, 50)] == [("1", {"R1": "H", "R2": "H"}),
                                                                 ("2", {"R1": "OMe", "R2": "Cl"})]
    assert table_entries(lines, 500) == []


def test_readings_with_printed_labels_are_templates() -> None:
    assert read("m1", "[R2]c1ccc(C=O)cc1[R1]", 0).is_template and read("m2", "*c1ccccc1", 0).is_template
    assert read("m3", "c1ccccc1[Ar]", 0).is_template  # [Ar] at an attachment point is a label
    assert not read("m4", "CCO", 0).is_template


def test_a_row_opening_with_an_arrow_continues_the_previous_row() -> None:
    # row 0: m1 -> m2 ; row 1: (arrow) -> m3 : the second step is m2 -> m3
    segments = [seg("structure", 0), seg("arrow", 150, y=45, h=10), seg("structure", 300),
                seg("arrow", 0, band=1, y=245, h=10), seg("structure", 150, band=1, y=200)]
    readings = [read("m1", "CCO", 0), read("m2", "CC=O", 300), read("m3", "CC(=O)O", 150, 200)]
    plan, _ = plan_from_rules(segments, readings, [])
    assert [([r["reading"] for r in x["reactants"]], [p["reading"] for p in x["products"]]) for x in plan["reactions"]] \
        == [(["m1"], ["m2"]), (["m2"], ["m3"])]


@given(st.lists(st.tuples(st.sampled_from(["H", "Me", "OMe", "Cl", "Br", "Ph"]),
                          st.sampled_from(["H", "Et", "F", "CF3", "tBu"])), min_size=1, max_size=8))
def test_table_rows_round_trip(rows: list[tuple[str, str]]) -> None:
    lines = [TextLine("entry R1 R2", (0, 0, 300, 10), 90, words(("entry", 0), ("R1", 100), ("R2", 200)))]
    for number, (first, second) in enumerate(rows, start=1):
        y = 20 * number
        lines.append(TextLine(f"{number} {first} {second}", (0, y, 300, y + 10), 90,
                              words((str(number), 0), (first, 95), (second, 205))))
    expected, seen = [], set()
    for number, (first, second) in enumerate(rows, start=1):
        if (first, second) not in seen:  # repeated rows are kept once
            seen.add((first, second))
            expected.append((str(number), {"R1": first, "R2": second}))
    assert [(e, b) for e, b, _ in table_entries(lines)] == expected


def test_variables_listed_before_one_value_share_it() -> None:
    lines = [TextLine("10b, R1, R2 = H", (0, 0, 1, 1), 90), TextLine("3 R1, R2, X = Me, Y = I", (0, 5, 1, 6), 90)]
    assert [(entry, pairs) for entry, pairs, _ in binding_lines(lines)] == [
        ("10b", {"R1": "H", "R2": "H"}), ("3", {"R1": "Me", "R2": "Me", "X": "Me", "Y": "I"})]


@given(st.lists(st.sampled_from(["R1", "R2", "R3", "X", "Y", "Ar"]), min_size=1, max_size=4, unique=True),
       st.sampled_from(["Me", "OMe", "Cl", "H", "Ph"]))
def test_any_shared_binding_list_binds_every_variable(names: list[str], value: str) -> None:
    line = TextLine("7a " + ", ".join(names) + f" = {value}", (0, 0, 1, 1), 90)
    ((entry, pairs, _),) = binding_lines([line])
    assert entry == "7a" and pairs == {name: value for name in names}


def test_a_structure_drawn_as_a_bindings_value_is_that_value_not_a_product() -> None:
    """A table row ``10a, R1 = <drawn phenyl>`` under the template: the drawing (its wavy
    bond read as a ring methyl, ``Cc1ccccc1``) is the value of R1, ``*c1ccccc1``; the
    row printed as text (``10b, R1 = Me``) stays as it was."""
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300),
                seg("structure", 200, band=1, y=200, w=80, h=80)]
    readings = [read("m1", "*c1ccc(I)cc1", 0), read("m2", "*c1ccccc1", 300), read("m3", "Cc1ccccc1", 200, y=200)]
    lines = [TextLine("10a, R1 =", (20, 230, 180, 250), 90), TextLine("10b, R1 = Me", (20, 320, 180, 340), 90)]
    plan, failures = plan_from_rules(segments, readings, lines)
    assert plan["scopes"][0]["entries"] == [{"id": "10a", "bindings": {"R1": "*c1ccccc1"}},
                                            {"id": "10b", "bindings": {"R1": "Me"}}]
    assert not [f for f in failures if f["kind"] == "unassigned"]


def test_drawn_values_name_every_variable_and_repair_a_garbled_one_from_the_other_rows() -> None:
    """``10a, Ry, Ro =`` is R₁, R₂ as OCR reads the subscripts; in ``10c, R34, Ro =`` the
    first name is garbled and takes what the other rows print there (R1).  A drawing read
    with two ring methyls (which is the wavy bond?) gives no entry and one
    ``unread_value`` line."""
    def row(y: int) -> Segment:
        return seg("structure", 200, band=1, y=y, w=80, h=80)

    segments = [row(200), row(300), row(400), row(500)]
    readings = [read("m1", "Cc1cc(F)cc(F)c1", 200, 200), read("m2", "Cc1ccc(Cl)cc1", 200, 300),
                read("m3", "Cc1cc(Br)cc(Br)c1", 200, 400), read("m4", "Cc1cc(C)ccc1", 200, 500)]
    lines = [TextLine("10a, Ry, Ro =", (20, 230, 180, 250), 90), TextLine("10b, Ry, Ro=", (20, 330, 180, 350), 90),
             TextLine("10c, R34, Ro =", (20, 430, 180, 450), 90), TextLine("10d, Ry, Ro =", (20, 530, 180, 550), 90)]
    failures: list[dict[str, str]] = []
    found = drawn_values(segments, dict(enumerate(readings)), lines, failures)
    assert [(entry, pairs) for entry, pairs, _, _ in found] == [
        ("10a", {"R1": "*c1cc(F)cc(F)c1", "R2": "*c1cc(F)cc(F)c1"}),
        ("10b", {"R1": "*c1ccc(Cl)cc1", "R2": "*c1ccc(Cl)cc1"}),
        ("10c", {"R1": "*c1cc(Br)cc(Br)c1", "R2": "*c1cc(Br)cc(Br)c1"})]
    assert [f["kind"] for f in failures] == ["unread_value"] and "10d" in failures[0]["message"]


def test_a_two_arrow_template_row_expands_its_net_transformation() -> None:
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300), seg("arrow", 450, h=10),
                seg("structure", 600)]
    readings = [read("m1", "*OC(=O)c1ccccc1C#Cc1ccccc1", 0), read("m2", "O=c1oc(-c2ccccc2)c([B])c2ccccc12", 300),
                read("m3", "O=c1oc(-c2ccccc2)c(B2OC(C)(C)C(C)(C)O2)c2ccccc12", 600)]
    lines = [TextLine("1 R = Me", (0, 200, 100, 220), 90)]
    plan, failures = plan_from_rules(segments, readings, lines)
    assert failures == []
    (scope,) = plan["scopes"]
    assert (scope["reactant_templates"], scope["product_template"], scope["intermediates"]) == (["m1"], "m3", ["m2"])
    assert scope["entries"] == [{"id": "1", "bindings": {"R": "Me"}}]


def test_a_concrete_species_beside_the_product_template_is_every_entrys_co_product() -> None:
    """RC(O)NH2 + PhOH -> RCO2Ph + NH3: ammonia (m4) is drawn right of the product
    template (x 400..500) with a plus between them (centre x 530, in the gap 500..560);
    it is the scope's co-product, not a template and not an entry.  Drawn there without
    the plus (a ligand in a panel of its own), it is no co-product."""
    segments = [seg("structure", 0), seg("structure", 120), seg("arrow", 250, h=10), seg("structure", 400),
                seg("plus", 520, y=40, w=20, h=20), seg("structure", 560, w=40, h=30)]
    readings = [read("m1", "*C(N)=O", 0), read("m2", "Oc1ccccc1", 120), read("m3", "*C(=O)Oc1ccccc1", 400),
                Reading("m4", "N", 0.0, (565, 5, 595, 25), "formula", "tesseract")]
    lines = [TextLine("3a R = Me", (0, 200, 100, 220), 90)]
    plan, failures = plan_from_rules(segments, readings, lines)
    assert failures == []
    (scope,) = plan["scopes"]
    assert (scope["product_template"], scope["co_products"]) == ("m3", ["m4"])
    assert scope["entries"] == [{"id": "3a", "bindings": {"R": "Me"}}]
    plan, _ = plan_from_rules([s for s in segments if s.kind != "plus"], readings, lines)
    assert "co_products" not in plan["scopes"][0]


def test_template_first_adds_a_fitting_product_outside_the_grid() -> None:
    """Template row iodide -> biaryl; one product drawn under the row (m3,
    4-methylbiphenyl) and one in the row's band but high above its arrow axis, so in no
    stage (m4, 4-methoxybiphenyl).  The engine relates m4 to the templates (R1 = OMe), so
    it becomes an entry too; ethanol (m5), drawn the same way, fits nothing and stays out."""
    segments = [seg("structure", 0), seg("arrow", 150, y=45, h=10), seg("structure", 300),
                seg("structure", 0, band=1, y=200), seg("structure", 600, y=-300), seg("structure", 900, y=-300)]
    readings = [read("m1", "*c1ccc(I)cc1", 0), read("m2", "*c1ccc(-c2ccccc2)cc1", 300),
                read("m3", "Cc1ccc(-c2ccccc2)cc1", 0, y=200), read("m4", "COc1ccc(-c2ccccc2)cc1", 600, y=-300),
                read("m5", "CCO", 900, y=-300)]
    plan, failures = plan_from_rules(segments, readings, [])
    assert [e["product"] for e in plan["scopes"][0]["entries"]] == ["m3", "m4"]
    assert [f["message"] for f in failures if f["kind"] == "unassigned"] == ["reading m5 (CCO) belongs to no reaction"]


def test_no_arrow_templates_still_make_a_scope() -> None:
    """No arrow was found: of the two templates, *c1ccc(I)cc1 relates none of the drawn
    biaryls as a product template, *c1ccc(-c2ccccc2)cc1 relates both (R1 = Me, OMe): it is
    the product template, the iodide the reactant template."""
    segments = [seg("structure", 0), seg("structure", 300), seg("structure", 0, band=1, y=200),
                seg("structure", 300, band=1, y=200)]
    readings = [read("m1", "*c1ccc(I)cc1", 0), read("m2", "*c1ccc(-c2ccccc2)cc1", 300),
                read("m3", "Cc1ccc(-c2ccccc2)cc1", 0, y=200), read("m4", "COc1ccc(-c2ccccc2)cc1", 300, y=200)]
    plan, failures = plan_from_rules(segments, readings, [TextLine("3a", (30, 320, 60, 340), 90)])
    (scope,) = plan["scopes"]
    assert scope["reactant_templates"] == ["m1"] and scope["product_template"] == "m2"
    assert scope["entries"] == [{"id": "3a", "product": "m3"}, {"id": "m4", "product": "m4"}]
    assert [f["kind"] for f in failures] == ["no_arrow"]


# -- superscripts and subscripts OCR loses -------------------------------------------------

@pytest.mark.parametrize("read, repaired", [
    ("4-BrC.Hy", "4-BrC6H4"),      # 6 read as '.', 4 as 'y'
    ("3-BrCsHy", "3-BrC6H4"),      # 6 read as 's'
    ("4-MeC,H", "4-MeC6H4"),       # the hydrogen count lost: one group, so 4
    ("4MeOC.H", "4MeOC6H4"),       # the hyphen lost as well
    ("2,4-Cl,C.H", "2,4-Cl2C6H3"), # Cl's subscript 2 read as ','; two groups, so 3 hydrogens
    ("4-FC6H4", "4-FC6H4"),        # already a formula
    ("CoHs", "C6H5"),              # no locant, but one character for the hydrogens, read as a 5
])
def test_phenyl_formulas_with_misread_subscripts(read: str, repaired: str) -> None:
    assert repair_aryl_formula(read) == repaired
    assert table_value(read) == repaired and repair_value(read) == repaired


@pytest.mark.parametrize("read", [
    "CoH",          # no locant: C6H5, C6H11 or C6H13 cannot be told apart
    "CoH11",        # a two-digit count: C6H11
    "Hy",
    "4-BrCxH4",     # 'x' is not what OCR makes of a subscript 6
    "4-ClC.H3",     # one group leaves four hydrogens, and a 3 was read plainly
])
def test_phenyl_formulas_that_cannot_be_recovered_stay_as_read(read: str) -> None:
    assert repair_aryl_formula(read) is None
    assert table_value(read) == read


def test_ordinal_labels_by_hand() -> None:
    """``R! R R Rt`` under R1–R4: as normalized R1, R, R, R1 (R1 twice), so the four R columns
    take R1–R4 in order.  Refused: a plainly read label that contradicts the order, a column
    count other than the template's, a non-R column, a header already right."""
    assert ordinal_labels(["R!", "R", "R", "Rt"], ["R1", "R2", "R3", "R4"]) == ["R1", "R2", "R3", "R4"]
    assert ordinal_labels(["R!", "R"], ["R2", "R1"]) == ["R1", "R2"]
    assert ordinal_labels(["R1", "R3"], ["R1", "R2"]) is None
    assert ordinal_labels(["R", "R", "R"], ["R1", "R2"]) is None
    assert ordinal_labels(["R", "Ar"], ["R1", "R2"]) is None
    assert ordinal_labels(["Ri", "R2"], ["R1", "R2"]) is None
    assert ordinal_labels(["R", "R"], []) is None


def test_a_table_whose_superscripts_were_lost_binds_by_column_order() -> None:
    """The header of a four-variable scope table read as ``entry R! R R Rt``: without the
    template's variables two columns claim R1 and R2, R3 are lost; with them each column
    binds its own variable, and the phenyl formula's subscripts are repaired."""
    header = TextLine("entry R! R R Rt", (0, 100, 500, 110), 90,
                      words(("entry", 10), ("R!", 120), ("R", 220), ("R", 330), ("Rt", 470)))
    row = TextLine("1 Ph H Ph 4-BrC.Hy", (0, 120, 500, 130), 90,
                   words(("1", 10), ("Ph", 118), ("H", 222), ("Ph", 331), ("4-BrC.Hy", 468)))
    lines = [header, row]
    (entry, bindings, _), = table_entries(lines, 50, ["R1", "R2", "R3", "R4"])
    assert (entry, bindings) == ("1", {"R1": "Ph", "R2": "H", "R3": "Ph", "R4": "4-BrC6H4"})
    (_, as_read, _), = table_entries(lines, 50)
    assert "R4" not in as_read and "R3" not in as_read


def test_a_drawing_made_from_several_reactants_is_one_entry_per_printed_line() -> None:
    """Under product 4a: ``4a, X = Cl`` then ``X = Br`` and ``X = I`` stacked right under
    it (20 px lines, 2 px apart): three entries of one drawing, with the id 4a and each its
    own X.  The product template has no X (the hydrazide's leaving group), so the lines
    bind it; the next drawing's label line (``4b, X = Br``, another entry) ends the stack."""
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300),
                seg("structure", 0, band=1, y=200), seg("structure", 0, band=2, y=500)]
    readings = [read("m1", "O=C(NN)c1ccccc1[X]", 0), read("m2", "O=c1[nH][nH]c2ccccc12", 300),
                read("m3", "O=c1[nH][nH]c2ccccc12", 0, y=200), read("m4", "Cc1ccc2[nH][nH]c(=O)c2c1", 0, y=500)]
    lines = [TextLine("4a, X = Cl 44%", (10, 305, 90, 325), 90), TextLine("X = Br 78%", (20, 327, 90, 347), 90),
             TextLine("X = I 86%", (20, 349, 90, 369), 90), TextLine("4b, X = Br", (10, 605, 90, 625), 90)]
    plan, _ = plan_from_rules(segments, readings, lines)
    entries = plan["scopes"][0]["entries"]
    assert [(e["id"], e["product"], e["bindings"]["X"]) for e in entries] == [
        ("4a", "m3", "Cl"), ("4a", "m3", "Br"), ("4a", "m3", "I"), ("4b", "m4", "Br")]
    assert len({e.get("variant") for e in entries[:3]}) == 3


def test_lines_far_below_or_beside_a_drawing_are_not_its_own() -> None:
    """A binding line 100 px under the drawing (over the 80 px reach) or off to its side
    is not printed under it; a line stacked more than 1.5 line heights under the label
    line ends the stack."""
    drawing = Segment("structure", (0, 0, 100, 100), 1)
    bound = binding_lines([TextLine("3a, X = Cl", (0, 110, 90, 130), 90), TextLine("X = Br", (0, 170, 90, 190), 90),
                           TextLine("X = I", (300, 110, 390, 130), 90)])
    assert printed_under(drawing, bound) == [{"X": "Cl"}]
    assert printed_under(Segment("structure", (0, 0, 100, 100), 1), binding_lines(
        [TextLine("X = Cl", (0, 200, 90, 220), 90)])) == []


@pytest.mark.parametrize(("cell", "expected"), [("I/Br", [{"X": "I"}, {"X": "Br"}]), ("CH2OH", [{"X": "CH2OH"}]),
                                                ("1/2", [{"X": "1/2"}]), ("Me/", [{"X": "Me/"}])])
def test_a_cell_of_alternatives_is_one_entry_each(cell: str, expected: list[dict[str, str]]) -> None:
    """``I/Br`` splits (both are groups the engine knows); a formula, a ratio or a dangling
    slash stays whole."""
    assert alternatives({"X": table_value(cell)}) == expected


@given(st.lists(st.sampled_from(["H", "Me", "Cl", "Br", "I", "OMe"]), min_size=1, max_size=3, unique=True))
def test_alternatives_multiply_out(values: list[str]) -> None:
    """Property: a row ``R = a/b``, ``X = c/d…`` gives every combination, once."""
    split = alternatives({"R": "/".join(values), "X": "/".join(values)})
    assert len(split) == len(values) ** 2
    assert {(v["R"], v["X"]) for v in split} == {(a, b) for a in values for b in values}


def test_each_branch_of_a_fork_is_a_reaction_from_the_same_reactants() -> None:
    """Two reactants left of a fork (bar from y 60 to 220, its middle 140 crossing both),
    a product right of each branch head: two reactions, each with both reactants and its
    own product; the printed line over the upper branch is that reaction's condition."""
    fork = Segment("fork", (300, 56, 450, 224), 0, ((300, 52, 450, 68), (300, 212, 450, 228)))
    segments = [Segment("structure", (20, 100, 120, 180), 0), Segment("plus", (130, 135, 140, 145), 0),
                Segment("structure", (150, 110, 250, 170), 0), fork,
                Segment("structure", (500, 20, 600, 100), 0), Segment("structure", (500, 180, 600, 260), 0)]
    readings = [Reading("m1", "OC(=O)c1ccco1", 1.0, (25, 105, 115, 175), "crop"),
                Reading("m2", "C=CC(=O)OCCCC", 1.0, (155, 115, 245, 165), "crop"),
                Reading("m3", "CCCCOC(=O)/C=C/c1ccoc1", 1.0, (505, 25, 595, 95), "crop"),
                Reading("m4", "CCCCOC(=O)/C=C/c1ccoc1C(=O)O", 1.0, (505, 185, 595, 255), "crop")]
    plan, failures = plan_from_rules(segments, readings, [TextLine("125 °C", (340, 30, 400, 45), 90)])
    assert [f for f in failures if f["kind"] != "unassigned"] == []
    assert [([r["reading"] for r in x["reactants"]], [p["reading"] for p in x["products"]]) for x in plan["reactions"]] == [
        (["m1", "m2"], ["m3"]), (["m1", "m2"], ["m4"])]
    assert plan["reactions"][0]["conditions"] == ["125 °C"] and "conditions" not in plan["reactions"][1]


def test_a_yield_is_never_a_binding_value() -> None:
    """``Ar = 77%`` (OCR joined a definition's ``Ar =`` to a yield of the next column) and
    ``R1, R2 = (80%)`` bind nothing, so the lines are no binding lines; ``4a R = Me``
    still binds R to Me."""
    from labrecord.chemdata.extract.associate import binding_lines

    lines = [TextLine("Ar = 77%", (0, 0, 60, 10), 90.0), TextLine("4a R = Me", (0, 20, 60, 30), 90.0),
             TextLine("R1, R2 = (80%)", (0, 40, 90, 50), 90.0)]
    assert [(entry, bindings) for entry, bindings, _ in binding_lines(lines)] == [("4a", {"R": "Me"})]


def test_a_figure_wide_binding_that_is_no_substituent_is_reported_not_applied() -> None:
    """The footnote ``X = I`` binds X in the drawn entry; ``Ar = 3`` (OCR joining a
    definition's label to the compound number after it) is no substituent the engine can
    attach: applied, it would void the entry, so it is left out and reported once as an
    ``unread_binding`` naming the line."""
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300), seg("structure", 0, band=1, y=200)]
    readings = [read("m1", "*c1ccc([X])cc1", 0), read("m2", "*c1ccccc1", 300), read("m3", "Cc1ccccc1", 0, y=200)]
    lines = [TextLine("3a", (30, 320, 60, 340), 90), TextLine("X = I", (300, 400, 360, 420), 90),
             TextLine("Ar = 3", (300, 440, 360, 460), 90)]
    plan, problems = plan_from_rules(segments, readings, lines)
    assert plan["scopes"][0]["entries"] == [{"id": "3a", "product": "m3", "bindings": {"X": "I"}}]
    assert [p["kind"] for p in problems].count("unread_binding") == 1
    assert "Ar = '3'" in next(p["message"] for p in problems if p["kind"] == "unread_binding")



@pytest.mark.parametrize(("text", "expected"), [("R = F, 89% (5e)", "5e"), ("95% (5c)", "5c"), ("R = Cl, 93% (5f).", "5f"),
                                                ("R = Me (80%)", None), ("2 (2.0 equiv)", None), ("R = Me", None)])
def test_an_entry_id_in_brackets_ends_a_line(text: str, expected: str | None) -> None:
    from labrecord.chemdata.extract.associate import trailing_entry_id

    assert trailing_entry_id(text) == expected


def test_lines_listed_beside_a_drawing_that_keeps_its_label_are_its_entries() -> None:
    """Template row m1 -> m2.  Below it: a drawn product m3 (x 0..100, y 200..300)
    labelled ``95% (5c)`` under it, and a drawing m4 (x 0..100, y 400..500) whose R is
    still drawn (``*``), with ``R = F, 89% (5e)`` and ``R = Cl, 93% (5f)`` printed
    right of it (starting at x 110, within its width; middles at y 430 and 470, within
    its height).  The two lines are m4's entries, filled with F and Cl; m3 keeps its own
    label and takes neither line (they name other entries); the line far right (x 400)
    is nobody's."""
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300),
                seg("structure", 0, band=1, y=200), seg("structure", 0, band=2, y=400)]
    readings = [read("m1", "*C(=O)C", 0), read("m2", "*C(O)C", 300), read("m3", "CC(O)c1ccccc1", 0, y=200),
                read("m4", "*c1ccc(C(C)O)cc1", 0, y=400)]
    lines = [TextLine("95% (5c)", (20, 305, 80, 320), 90),
             TextLine("R = F, 89% (5e)", (110, 422, 230, 438), 90), TextLine("R = Cl, 93% (5f)", (110, 462, 235, 478), 90),
             TextLine("R = Br, 90% (5g)", (400, 442, 520, 458), 90)]
    plan, _ = plan_from_rules(segments, readings, lines)
    entries = plan["scopes"][0]["entries"]
    assert entries[0] == {"id": "5c", "product": "m3"}
    assert entries[1:] == [{"id": "5e", "product": "m4", "product_bindings": {"*": "F"}},
                           {"id": "5f", "product": "m4", "product_bindings": {"*": "Cl"}}]


def test_lettered_lists_are_read_as_columns() -> None:
    """Lines as OCR reads a nested list (14 px high): ``X: a=OMe 69%`` at x 191 and
    ``b=H 71%`` … under it at x 217 make one column of X; ``X: g=Br 80%`` starts another
    (it names its variable); ``f=NO, 73%`` is NO₂ (a subscript 2 read as a comma).  A
    list with no head starts at ``a``: a stray ``d=B`` on its own is no list, and a
    line whose letter does not follow (``k=Me`` after ``b``) does not join."""
    from labrecord.chemdata.extract.associate import lettered_columns

    lines = [TextLine("X: a=OMe 69%", (191, 212, 317, 227), 90), TextLine("X: g=Br 80%", (426, 221, 533, 239), 90),
             TextLine("b=H 71%", (217, 234, 294, 248), 90), TextLine("h=CN 87%", (452, 242, 542, 257), 90),
             TextLine("c=NO, 73%", (216, 256, 309, 270), 90), TextLine("k=Me", (216, 277, 280, 291), 90),
             TextLine("d=B", (700, 300, 740, 314), 90)]
    columns = lettered_columns(lines)
    assert [(c.variable, c.items) for c in columns] == [
        ("X", (("a", "OMe", "69%"), ("b", "H", "71%"), ("c", "NO2", "73%"))),
        ("X", (("g", "Br", "80%"), ("h", "CN", "87%")))]
    assert columns[0].first == (191, 212, 317, 227) and columns[0].box == (191, 212, 317, 270)


@pytest.mark.parametrize(("variable", "smiles", "label"), [
    ("X", "[X]c1ccc(*)cc1", "X"), (None, "[X]c1ccc(*)cc1", "X"), (None, "*c1ccc(C)cc1", "*"), ("X", "*c1ccc(C)cc1", "*"),
    ("X", "[R]c1ccc(I)cc1", None), (None, "*c1ccc(*)cc1", None), (None, "[X1]c1ccc([X2])cc1", None)])
def test_the_label_a_lettered_list_fills(variable: str | None, smiles: str, label: str | None) -> None:
    """The head's variable where the drawing keeps it; with no head the only label; with
    no label the only bare ``*`` (osra's X); else none — ``[R]`` under a head naming X is
    a misreading (the ``R =`` beside the drawing read into it), two ``*`` or two labels
    cannot be told apart."""
    from labrecord.chemdata.extract.associate import LetteredColumn, column_label

    column = LetteredColumn(variable, (("a", "H", None),), (0, 0, 1, 1), (0, 0, 1, 1))
    assert column_label(column, smiles) == label


def test_a_lettered_list_beside_a_drawn_substituent_gives_an_entry_per_item() -> None:
    """Template row R–CHO (m1) -> product (m2).  Below it the drawing m3 (x 0..100, y
    200..300, osra's ``*c1ccc(C)cc1``: X as ``*``, the wavy bond as a methyl) with the
    list ``X: a=OMe 69%`` (x 110, middle y 217, beside it) and ``b=F 71%``, ``c=Cl``
    under it: three entries of m3 filling ``*`` with OMe, F and Cl, with their yields;
    the head line is no figure-wide binding X = "a=OMe"."""
    segments = [seg("structure", 0), seg("arrow", 150, h=10), seg("structure", 300),
                seg("structure", 0, band=1, y=200)]
    readings = [read("m1", "O=C[R]", 0), read("m2", "OC([R])c1ccccc1", 300), read("m3", "*c1ccc(C)cc1", 0, y=200)]
    lines = [TextLine("X: a=OMe 69%", (110, 210, 230, 224), 90), TextLine("b=F 71%", (128, 230, 200, 244), 90),
             TextLine("c=Cl", (128, 250, 170, 264), 90)]
    plan, failures = plan_from_rules(segments, readings, lines)
    assert plan["scopes"][0]["entries"] == [
        {"id": "a", "product": "m3", "product_bindings": {"*": "OMe"}, "yield": "69%"},
        {"id": "b", "product": "m3", "product_bindings": {"*": "F"}, "yield": "71%"},
        {"id": "c", "product": "m3", "product_bindings": {"*": "Cl"}}]
    assert not [f for f in failures if f["kind"] in ("unread_binding", "unassigned")]


@pytest.mark.parametrize(("text", "expected"), [("CH,OH", "CH2OH"), ("CH,CH(CH3),", "CH2CH(CH3)2"),
                                                ("H, 89%", None), ("Me,", None), ("OMe, Et", None)])
def test_subscript_twos_read_as_commas_are_repaired_only_into_known_groups(text: str, expected: str | None) -> None:
    from labrecord.chemdata.extract.associate import subscript_commas

    assert subscript_commas(text) == expected


def test_a_binding_value_cut_short_by_a_comma_subscript_is_read_whole() -> None:
    """``R' = CH,CH(CH3),`` is R' = isobutyl, ``Y = CH,OH`` Y = CH2OH; ``R = Me, 80%`` stays Me."""
    lines = [TextLine("R' = CH,CH(CH3),", (0, 0, 1, 1), 90), TextLine("Y = CH,OH", (0, 2, 1, 3), 90),
             TextLine("1a R = Me, 80%", (0, 4, 1, 5), 90)]
    assert [(e, b) for e, b, _ in binding_lines(lines)] == [
        (None, {"R'": "CH2CH(CH3)2"}), (None, {"Y": "CH2OH"}), ("1a", {"R": "Me"})]
