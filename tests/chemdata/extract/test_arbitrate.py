"""Tests for chemdata/extract/arbitrate.py: chemistry decides between readers."""
from __future__ import annotations

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')

from labrecord.chemdata.extract.arbitrate import (  # noqa: E402
    choose, fits_template, fuller_stereo, labels_named, labels_printed, pick_product, related_reactants, sound,
)
from labrecord.chemdata.extract.osra import Reading  # noqa: E402


def reading(ident: str, smiles: str, confidence: float, reader: str) -> Reading:
    return Reading(ident, smiles, confidence, (0, 0, 10, 10), "crop", reader)


#: the template row of an aryl iodide Suzuki scope: iodide template, boronic acid, product template
IODIDE_OSRA = reading("m1", "*c1ccc(I)cc1", 0.2, "osra")
IODIDE_BAD = reading("d1", "*c1ccc(I)c1", 0.99, "decimer")  # a five-ring misreading, very confident
PRODUCT_OSRA = reading("m2", "*c1ccc(cc1)C1CCCCC1", 0.9, "osra")  # phenyl read as cyclohexyl
PRODUCT_DECIMER = reading("d2", "*c1ccc(cc1)-c1ccccc1", 0.3, "decimer")
DRAWN = ["COc1ccc(-c2ccccc2)cc1", "Cc1ccc(-c2ccccc2)cc1"]


def related(choice: dict[int, Reading]) -> int:
    """How many drawn products the chosen templates relate (the engine's verdict)."""
    return sum(fits_template([choice[0].smiles], choice[1].smiles, p) for p in DRAWN)


def test_sound() -> None:
    assert sound("c1ccccc1") and sound("[R1]c1ccccc1") and sound("*c1ccccc1")
    assert not sound("c1cccc1") and not sound("C(C)(C)(C)(C)C") and not sound("") and not sound("[C]O")


def test_engine_beats_confidence() -> None:
    """Hand-checked: with the osra iodide (both readings of it parse) the decimer product
    template relates both drawn biaryls (2), the osra one neither (0); the five-ring
    iodide relates nothing.  The kept choice is osra's iodide and DECIMER's product
    template, although the rejected readings had the higher confidences (0.99, 0.9)."""
    kept = choose({0: [IODIDE_OSRA, IODIDE_BAD], 1: [PRODUCT_OSRA, PRODUCT_DECIMER]}, related)
    assert kept == {0: IODIDE_OSRA, 1: PRODUCT_DECIMER} and related(kept) == 2


def test_soundness_then_confidence_break_ties() -> None:
    """No engine evidence (0 everywhere): a sound reading beats an unsound one whatever
    the confidence (a radical is unsound); between two sound ones a DECIMER reading
    0.95 confident (tie score 1.95) beats osra's (1), one 0.8 confident (0.8) does not,
    whatever osra's own estimate (3.2 here)."""
    unsound = reading("a", "c1cccc1", 0.99, "decimer")
    radical = reading("r", "[C]O", 0.99, "decimer")
    by_osra = reading("b", "CCO", 3.2, "osra")
    sure, unsure = reading("c", "OCC(C)", 0.95, "decimer"), reading("d", "OCC(C)", 0.8, "decimer")
    assert choose({0: [unsound, by_osra]}, lambda _: 0) == {0: by_osra}
    assert choose({0: [radical, by_osra]}, lambda _: 0) == {0: by_osra}
    assert choose({0: [by_osra, sure]}, lambda _: 0) == {0: sure}
    assert choose({0: [by_osra, unsure]}, lambda _: 0) == {0: by_osra}


def test_a_reading_that_names_its_printed_labels_wins_a_tie_before_confidence() -> None:
    """The drawing prints R₁ and R₂ (OCR: ``Ry``, ``R2``).  osra writes both as bare ``*``
    (tie score 1), DECIMER names them ``[R1]``, ``[R2]`` at 0.897 (tie score 0.897, below
    TRUSTED): with no engine evidence and both sound, the named reading is kept.  A label
    the drawing does not print (``[R3]``) names nothing."""
    words = {"R1", "R2"}  # the runner normalizes the printed words Ry, R2, OH to these labels
    bare = reading("m1", "*c1ccc(*)c(O)c1", 1.5, "osra")
    named = reading("d1", "[R1]c1ccc([R2])c(O)c1", 0.897, "decimer")
    assert labels_named(named.smiles, words) and not labels_named(bare.smiles, words)
    assert not labels_named("[R3]c1ccccc1", words) and not labels_named("c1ccccc1", words)
    assert not labels_named(named.smiles, None)

    def by_words(r: Reading) -> bool:
        return labels_named(r.smiles, words)

    assert choose({0: [bare, named]}, lambda _: 0, named=by_words) == {0: named}
    assert choose({0: [bare, named]}, lambda _: 0) == {0: bare}  # without the criterion, confidence decides


def test_greedy_search_past_the_exhaustive_limit() -> None:
    """With the exhaustive limit at 1 the one-region-at-a-time search finds the same choice."""
    kept = choose({0: [IODIDE_OSRA, IODIDE_BAD], 1: [PRODUCT_OSRA, PRODUCT_DECIMER]}, related, exhaustive=1)
    assert kept == {0: IODIDE_OSRA, 1: PRODUCT_DECIMER}


def test_the_same_constitution_takes_the_fuller_stereo() -> None:
    """DECIMER's imine ``PhCH=NCH2Ph`` (0.94, wins the tie) leaves the C=N geometry open;
    osra's reading of the same drawing gives it (E, one stereo element): the region keeps
    that reading.  A reading of another constitution (an amine) never lends its stereo,
    and neither does one with less (the kept E alkene over the open one)."""
    open_imine = reading("d", "C1=CC=C(C=C1)C=NCC2=CC=CC=C2", 0.94, "decimer")
    e_imine = reading("o", "c1ccc(cc1)C/N=C/c1ccccc1", 0.37, "osra")
    assert choose({0: [e_imine, open_imine]}, lambda _: 0) == {0: e_imine}
    chiral_amine = reading("a", "C[C@H](N)c1ccccc1", 1.0, "osra")
    assert fuller_stereo(open_imine, [chiral_amine]) is open_imine
    e_alkene, open_alkene = reading("e", "C/C=C/C", 1.0, "osra"), reading("f", "CC=CC", 0.99, "decimer")
    assert fuller_stereo(e_alkene, [open_alkene]) is e_alkene
    assert fuller_stereo(open_alkene, [e_alkene]) is e_alkene
    # the labels are part of the constitution: osra's E enone with bare "*" does not
    # replace DECIMER's template with R3/R4 printed, nor one with the labels swapped
    labelled = reading("t", "C(#N)C(=C[R4])C(=O)[R3]", 0.95, "decimer")
    assert fuller_stereo(labelled, [reading("s", r"*/C=C(/C(=O)*)\C#N", 1.0, "osra")]) is labelled
    assert fuller_stereo(labelled, [reading("w", r"[R4]C(=O)/C(C#N)=C/[R3]", 1.0, "osra")]) is labelled
    same = reading("u", r"[R3]C(=O)/C(C#N)=C/[R4]", 1.0, "osra")
    assert fuller_stereo(labelled, [same]) is same


def test_an_attachment_point_needs_a_printed_label() -> None:
    """A cyclohexenol drawing prints only ``OH``: osra's ``C1CCC(C=C1)C1CCC2C1C*2`` has a
    ``*`` no printed word names, so it is not sound there, and DECIMER's ``OC1CCCC=C1``
    wins although it is below the trusted confidence (0.88 < 0.9).  Printed ``R1``,
    ``Ar``, ``X=`` name variables; a reading without attachment points needs none, and
    unknown words (None) decide nothing."""
    assert not labels_printed("C1CCC(C=C1)C1CCC2C1C*2", ["OH"]) and not labels_printed("*C", [])
    assert labels_printed("*c1ccccc1", ["R1"]) and labels_printed("[Ar]C#C", ["Ar"]) and labels_printed("*Br", ["X="])
    assert labels_printed("OC1CCCC=C1", ["OH"]) and labels_printed("*C", None)
    garbled = reading("o", "C1CCC(C=C1)C1CCC2C1C*2", 0.2, "osra")
    right = reading("d", "OC1CCCC=C1", 0.88, "decimer")
    assert choose({0: [garbled, right]}, lambda _: 0) == {0: garbled}
    kept = choose({0: [garbled, right]}, lambda _: 0, judge=lambda r: sound(r.smiles) and labels_printed(r.smiles, ["OH"]))
    assert kept == {0: right}


def test_pick_product_keeps_the_reading_that_fits() -> None:
    """4-methoxybiphenyl fits *c1ccc(-c2ccccc2)cc1 with R = OMe; its misreading with a
    cyclohexyl does not, so the second reader's reading is kept; a first reading that
    fits is never replaced, and with neither fitting the first stays."""
    templates, product_template = ["*c1ccc(I)cc1"], "*c1ccc(cc1)-c1ccccc1"
    good = reading("p2", "COc1ccc(-c2ccccc2)cc1", 0.5, "decimer")
    bad = reading("p1", "COc1ccc(C2CCCCC2)cc1", 0.9, "osra")
    assert pick_product(bad, good, templates, product_template) is good
    assert pick_product(good, bad, templates, product_template) is good
    assert pick_product(bad, None, templates, product_template) is bad
    other = reading("p3", "CCO", 0.1, "decimer")
    assert pick_product(bad, other, templates, product_template) is bad


def test_related_reactants_counts_only_reactants_derived_through_a_label() -> None:
    """Template row ArCHO + RCHO -> ArCH(OH)C(=O)R with two drawn products.  Read with
    both aldehyde templates, each entry relates 2 reactants (4 in all); with the second
    template misread as a concrete alkene, both entries still assemble but relate only
    1 reactant each (2)."""
    from labrecord.chemdata.extract.assemble import assemble

    drawn = [Reading("p1", "CC(=O)C(O)c1ccccc1", 1.0, (0, 50, 9, 59), "crop"),
             Reading("p2", "O=C(CCc1ccccc1)C(O)c1ccccc1", 1.0, (10, 50, 19, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["a", "b"], "product_template": "p",
                        "entries": [{"id": "1", "product": "p1"}, {"id": "2", "product": "p2"}]}]}

    def built(second: str) -> int:
        readings = [reading("a", "[R]C=O", 0.9, "decimer"), reading("b", second, 0.9, "decimer"),
                    reading("p", "[Ar]C(O)C(=O)[R]", 0.9, "decimer"), *drawn]
        reactions, _, _ = assemble(plan, readings)
        return related_reactants(reactions)

    assert built("[Ar]C=O") == 4 and built("CC(C)=C1CCCCC1") == 2


def test_a_reactant_carried_back_from_the_centre_counts_as_related() -> None:
    """Amide formation drawn with a label-free template row (benzoic acid + methylamine >>
    N-methylbenzamide) and a drawn 4-chloro amide: the R-group engine finds no label to
    bind, the centre transfer derives 4-chlorobenzoic acid, which differs from its
    template and counts (1); the methylamine, copied as drawn, does not."""
    from labrecord.chemdata.extract.assemble import assemble

    readings = [reading("a", "OC(=O)c1ccccc1", 0.9, "decimer"), reading("b", "NC", 0.9, "decimer"),
                reading("p", "CNC(=O)c1ccccc1", 0.9, "decimer"),
                Reading("d", "CNC(=O)c1ccc(Cl)cc1", 1.0, (0, 50, 9, 59), "crop")]
    plan = {"scopes": [{"id": "t", "reactant_templates": ["a", "b"], "product_template": "p",
                        "entries": [{"id": "1", "product": "d"}]}]}
    reactions, _, _ = assemble(plan, readings)
    assert [m.smiles for m in reactions[0].reactants] == ["O=C(O)c1ccc(Cl)cc1", "CN"]
    assert related_reactants(reactions) == 1


def test_a_reading_in_many_pieces_is_not_sound() -> None:
    """Three pieces (a salt with two acetates) is a reading; four is a reader running on."""
    assert sound("CC(=O)O.CC(=O)O.CCOC(=CN1C=CC=CC1)OCC")
    assert not sound("[Cl-].[Cl-].[Cl-].C[N+](C)(C)C")
