"""The real-figure development set (chemdata/extract/devset.py) and its gold."""
from __future__ import annotations

import csv

import pytest

from labrecord.chemdata.extract import devset
from labrecord.errors import LabrecordError

from .conftest import needs_tools


def test_every_figure_has_gold_and_a_manifest_row() -> None:
    gold = {d.figure_id for d in devset.gold_documents()}
    images = devset.image_paths()
    assert set(images) == gold and len(gold) >= 33
    with open(devset.DEFAULT_DIR / "MANIFEST.tsv", encoding="utf-8") as handle:
        rows = [r for r in csv.reader(handle, delimiter="\t") if r and not r[0].startswith("#")]
    assert {r[0] for r in rows} == {p.name for p in images.values()}
    assert all(len(r) == 8 and len(r[2]) == 40 and r[4] for r in rows)  # repository commit and licence


def test_gold_reactions_are_concrete() -> None:
    documents = devset.gold_documents()
    assert sum(len(d.reactions) for d in documents) >= 230
    for document in documents:
        assert document.reactions, document.figure_id
        for reaction in document.reactions:
            assert all("*" not in m.smiles for m in reaction.reactants + reaction.products)


def test_scope_entries_fill_their_template() -> None:
    # oxidation table entry 2: R1 = H, R2 = Cl -> 4-chlorobenzaldehyde to 4-chlorobenzoic acid
    cases = {(c.figure_id, c.entry): c for c in devset.scope_cases()}
    case = cases[("aldehyde-oxidation-table", "2")]
    assert case.reactants == ["O=Cc1ccc(Cl)cc1"] and case.product == "O=C(O)c1ccc(Cl)cc1"


def test_rgroup_engine_recovers_the_scope_entries() -> None:
    # the bar: at least 80 % of real scope entries given correct templates and products
    report = devset.rgroup_recovery()
    assert report["entries"] >= 50
    assert report["share"] >= 0.8, report["refused"]


@pytest.mark.parametrize(("text", "message"), [
    ("rxn CC>>C\n", "before any 'figure'"),
    ("figure f single\nrxn CC>C\n", "REACTANTS>>PRODUCTS"),
    ("figure f scope-table\nentry 1 R=Me\n", "before the figure's template"),
    ("figure f scope-table\ntemplate [R]C>>[R]O\nentry 1 RMe\n", "bad binding"),
])
def test_bad_gold_lines_name_file_and_line(tmp_path, text: str, message: str) -> None:
    path = tmp_path / "gold.txt"
    path.write_text(text)
    with pytest.raises(LabrecordError, match=message) as caught:
        devset.parse_gold(path)
    assert f"{path}:" in str(caught.value)


@needs_tools
def test_real_figures_end_to_end(tmp_path) -> None:
    # two real figures of the set through the whole runner and the scorer: a substrate
    # table (template labels placed from the printed R1/R2, five table rows) and a
    # single scheme; both are read completely (stereo-blind)
    import shutil

    from labrecord.chemdata.extract.runner import ExtractConfig, run_extraction
    from labrecord.chemdata.scoring import score_paths

    figures, gold = tmp_path / "figures", tmp_path / "gold"
    figures.mkdir()
    chosen = ("aldehyde-oxidation-table", "isochromanone-acetal")
    for name in chosen:
        shutil.copy(devset.image_paths()[name], figures)
    for path in devset.write_gold(gold):
        if path.stem not in chosen:
            path.unlink()
    summary = run_extraction(figures, tmp_path / "out", ExtractConfig())
    assert summary["status"] == {"ok": 2}
    (scores,) = score_paths(str(gold), [str(tmp_path / "out")]).values()
    rows = {row["figure_id"]: row for row in scores["per_figure"]}
    assert rows["aldehyde-oxidation-table"]["matched_nonstereo"] == 5 == rows["aldehyde-oxidation-table"]["n_pred"]
    assert rows["isochromanone-acetal"]["matched_nonstereo"] == 1
