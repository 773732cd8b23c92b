"""Tests for chemdata/extract/osra.py: parsing osra's output and running it."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from labrecord.chemdata.abbreviations import ABBREVIATIONS
from labrecord.chemdata.extract.osra import Reading, parse_output, read_structures
from labrecord.chemdata.extract.trajectory import Trajectory

from .conftest import fake_tool, needs_tools

OUTPUT = "Ic1ccccc1 0.239608 109x147-291x252\nnot a structure line\n*c1ccc(cc1)I -0.5 70x147-329x252\n"


def test_parse_output_reads_smiles_confidence_and_box() -> None:
    assert parse_output(OUTPUT) == [("Ic1ccccc1", 0.239608, (109, 147, 291, 252)),
                                    ("*c1ccc(cc1)I", -0.5, (70, 147, 329, 252))]


def test_parse_output_shifts_boxes_into_figure_coordinates() -> None:
    assert parse_output(OUTPUT, offset=(10, -5))[0][2] == (119, 142, 301, 247)


def test_reading_knows_templates() -> None:
    assert Reading("m1", "*c1ccccc1", 1.0, (0, 0, 1, 1), "crop").is_template
    assert not Reading("m2", "c1ccccc1", 1.0, (0, 0, 1, 1), "crop").is_template


def test_read_structures_passes_the_documented_flags(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path, "osra", 'echo "CCO 1.0 1x2-3x4 $*"')
    trajectory = Trajectory("fig", budget_s=60)
    found = read_structures(trajectory, "img.png", command=[tool], limit_s=10, region="5,5,9,9")
    assert found == []  # the echoed arguments make the line unparseable
    assert trajectory.events[0]["args"] == [tool, "-c", "-p", "-f", "can", "img.png"]
    assert trajectory.events[0]["region"] == "5,5,9,9"


@needs_tools
def test_real_osra_reads_a_drawn_structure(tmp_path: Path) -> None:
    from rdkit import Chem

    from labrecord.chemdata.render import draw_molecule

    draw_molecule("CC(=O)Nc1ccc(O)cc1").save(tmp_path / "m.png")
    ((smiles, _, _),) = read_structures(Trajectory("m", 60), str(tmp_path / "m.png"), command=["osra"], limit_s=60)
    assert Chem.CanonSmiles(smiles) == Chem.CanonSmiles("CC(=O)Nc1ccc(O)cc1")


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 5000), st.integers(0, 500), st.integers(0, 500)),
                max_size=5), st.integers(-100, 100), st.integers(-100, 100))
def test_parse_output_keeps_every_line_and_offsets_consistently(boxes: list[tuple[int, int, int, int]], dx: int, dy: int) -> None:
    text = "".join(f"C 0.5 {x}x{y}-{x + w}x{y + h}\n" for x, y, w, h in boxes)
    parsed = parse_output(text, offset=(dx, dy))
    assert [b for _, _, b in parsed] == [(x + dx, y + dy, x + w + dx, y + h + dy) for x, y, w, h in boxes]


def test_rooted_fragment_puts_the_attachment_atom_first() -> None:
    from rdkit import Chem

    from labrecord.chemdata.extract.osra import rooted_fragment

    assert rooted_fragment("CC(C)*") == "C(C)C"  # isopropyl through its middle carbon
    ts = rooted_fragment("Cc1ccc(cc1)S(=O)(=O)*")
    assert ts is not None and ts.startswith("S") and Chem.CanonSmiles(ts) == Chem.CanonSmiles("CS(=O)(=O)c1ccc(C)cc1"[1:])
    assert rooted_fragment("*C*") is None and rooted_fragment("not smiles") is None


def test_superatom_table_adds_and_repairs_labels_keeping_the_installed_ones() -> None:
    from labrecord.chemdata.extract.osra import spelling_table, superatom_table

    installed = "# comment\nPh c1ccccc1\niPr CCC\nR [*]\n"
    table = {line.split()[0]: line.split()[1] for line in superatom_table(installed).splitlines()
             if line.split() and not line.startswith("#")}
    assert table["Ph"] == "c1ccccc1" and table["R"] == "[*]"           # kept
    assert table["iPr"] == "C(C)C"                                      # propyl repaired to isopropyl
    assert table["Bpin"].startswith("B") and table["Ts"].startswith("S")  # added from the project table
    assert table["Ar"] == "[*]" and "Cl" not in table                   # a variable label; elements left to osra
    assert table["C11H23"] == "C" * 11 and table["B(OH)2"] == "B(O)O"   # printed formulas
    assert "BPln Bpin" in spelling_table("Ci Cl\n").splitlines()


@given(st.sampled_from(sorted(k for k in ABBREVIATIONS if k not in ("H", "D"))))
def test_every_rooted_abbreviation_is_the_same_group(label: str) -> None:
    """A carbon on the rooted fragment's first atom gives the fragment with its ``*`` a carbon."""
    from rdkit import Chem

    from labrecord.chemdata.extract.osra import rooted_fragment

    rooted = rooted_fragment(ABBREVIATIONS[label])
    assert rooted is not None and "*" not in rooted
    capped = Chem.RWMol(Chem.MolFromSmiles(rooted))
    carbon = capped.AddAtom(Chem.Atom(6))
    capped.AddBond(0, carbon, Chem.BondType.SINGLE)
    Chem.SanitizeMol(capped)
    expected = Chem.RWMol(Chem.MolFromSmiles(ABBREVIATIONS[label]))
    for atom in expected.GetAtoms():
        if atom.GetAtomicNum() == 0:
            atom.SetAtomicNum(6)
    Chem.SanitizeMol(expected)
    assert Chem.MolToSmiles(capped) == Chem.MolToSmiles(expected)


@pytest.mark.parametrize(("smiles", "words", "expected"), [
    ("CCCCc1ccccc1O", ["‘Bu"], "CC(C)(C)c1ccccc1O"),             # ᵗBu read by osra as butyl
    ("CCCc1ccccc1", ["iPr"], "CC(C)c1ccccc1"),                    # ⁱPr read as propyl
    ("CCCCc1ccccc1CCCC", ["tBu"], "CCCCc1ccccc1CCCC"),            # one label, two chains: left alone
    ("CCCCc1ccccc1", [], "CCCCc1ccccc1"),                          # no label printed: a real butyl
    ("CCCCCc1ccccc1", ["'Bu"], "CCCCCc1ccccc1"),                   # a pentyl is no butyl
    ("CCCCC1CCCC1", ["'Bu"], "CC(C)(C)C1CCCC1"),                   # a butyl on a ring carbon is
])
def test_printed_prefixed_labels_rebranch_osras_straight_chains(smiles: str, words: list[str], expected: str) -> None:
    from rdkit import Chem

    from labrecord.chemdata.extract.osra import restore_prefixed_alkyls

    assert Chem.CanonSmiles(restore_prefixed_alkyls(smiles, words)) == Chem.CanonSmiles(expected)


@given(st.integers(1, 3), st.integers(0, 3))
def test_chains_are_rebranched_only_when_the_printed_count_matches(chains: int, printed: int) -> None:
    from rdkit import Chem

    from labrecord.chemdata.extract.osra import restore_prefixed_alkyls

    ring = ["c1ccccc1", "c1cc(CCCC)ccc1", "c1cc(CCCC)cc(CCCC)c1"][chains - 1]
    smiles = "CCCC" + ring
    out = restore_prefixed_alkyls(smiles, ["tBu"] * printed)
    tert = len(Chem.MolFromSmiles(out).GetSubstructMatches(Chem.MolFromSmarts("[CX4;H0]([CH3])([CH3])[CH3]")))
    assert tert == (chains if printed == chains else 0)


@pytest.mark.parametrize(("text", "expected"), [
    ("H2N-C≡N", "NC#N"),            # cyanamide as printed
    ("H.N-C=N", "NC#N"),            # as OCR reads it: the subscript 2 a ".", the "≡" a "="
    ("H,N–C=N", "NC#N"),
    ("HBr", "Br"), ("H2O", "O"), ("H2C=CH2", "C=C"), ("H3C-OH", "CO"),
    ("NH3", "N"), ("NHg", "N"),     # ammonia, its subscript 3 read as "g": the valence fills the count
    ("gHN", None), ("NHgg", None),  # a letter stands for a subscript only after the hydrogen, once
    ("H,0", "O"), ("H20", "O"),     # water with its O read as a zero
    ("0", None), ("10", None),      # a compound number is no formula
    ("HN-C=N", None),               # the first N is short of its valence: no guess
    ("toluene", None), ("NBS.", None), ("C", None), ("rt", None), ("2 h", None),
])
def test_linear_formulas_printed_as_text(text: str, expected: str | None) -> None:
    from rdkit import Chem

    from labrecord.chemdata.extract.osra import linear_formula

    found = linear_formula(text)
    assert (Chem.CanonSmiles(found) if found else None) == (Chem.CanonSmiles(expected) if expected else None)


@given(st.lists(st.sampled_from(["C", "N", "O"]), min_size=2, max_size=5), st.data())
def test_a_written_out_chain_reads_back(elements: list[str], data: st.DataObject) -> None:
    """Any single-bonded chain printed with every hydrogen reads back as itself."""
    from rdkit import Chem

    from labrecord.chemdata.extract.osra import linear_formula

    valence = {"C": 4, "N": 3, "O": 2}
    groups = []
    for i, element in enumerate(elements):
        bonds = (i > 0) + (i < len(elements) - 1)
        if valence[element] - bonds < 0:
            return
        count = valence[element] - bonds
        groups.append(element + ("H" + (str(count) if count > 1 else "") if count else ""))
    expected = Chem.CanonSmiles("".join(elements))
    assert Chem.CanonSmiles(linear_formula("-".join(groups)) or "") == expected
