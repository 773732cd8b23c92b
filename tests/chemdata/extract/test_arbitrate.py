"""Tests for chemdata/extract/arbitrate.py: chemistry decides between readers."""
from __future__ import annotations

from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')

from labrecord.chemdata.extract.arbitrate import choose, fits_template, pick_product, sound  # noqa: E402
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


def test_greedy_search_past_the_exhaustive_limit() -> None:
    """With the exhaustive limit at 1 the one-region-at-a-time search finds the same choice."""
    kept = choose({0: [IODIDE_OSRA, IODIDE_BAD], 1: [PRODUCT_OSRA, PRODUCT_DECIMER]}, related, exhaustive=1)
    assert kept == {0: IODIDE_OSRA, 1: PRODUCT_DECIMER}


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
