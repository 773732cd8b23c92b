"""``labrecord rxn score --profile …`` and ``labrecord rxn diff``: JSON, tables, errors, the
HTML report with its reliability diagram."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import require_module

from labrecord.models.rxn import FigureDocument, Molecule, Provenance, Reaction

from tests.chemdata.rxn_factories import figure, gold, write_folder
from tests.labrecord.test_cli_rxn import run

require_module("rdkit", 'pip install "labrecord[chem]"')
require_module("matplotlib", 'pip install "labrecord[report]"')


def _read(smiles: str, confidence: float) -> Molecule:
    return Molecule(smiles=smiles, provenance=Provenance(origin="tool_read", reader="osra", confidence=confidence,
                                                         region=smiles))


@pytest.fixture()
def folders(tmp_path: Path) -> tuple[str, str, str]:
    stereo = (["C[C@H](N)C(=O)O", "CO"], ["C[C@H](N)C(=O)OC"])
    golds = [gold("a", [stereo]), gold("b", [(["CCO"], ["CC=O"])]), gold("c", [(["CCO"], ["CC=O"])])]
    a = [FigureDocument(figure_id="a", system="x", reactions=[Reaction(
            reactants=[_read("C[C@@H](N)C(=O)O", 0.9), _read("CO", 0.8)], products=[_read("C[C@@H](N)C(=O)OC", 0.3)])]),
         figure("b", [(["CCO"], ["CC=O"])], system="x"), figure("c", [], system="x", status="timeout")]
    b = [figure("a", [stereo], system="y"), figure("b", [], system="y")]
    return write_folder(tmp_path / "gold", golds), write_folder(tmp_path / "a", a), write_folder(tmp_path / "b", b)


def test_score_all_profiles_json_and_table(capsys, folders) -> None:
    g, a, _ = folders
    code, out, _ = run(capsys, "rxn", "score", "--gold", g, "--pred", a, "--profile", "all", "--answered-only", "--json")
    assert code == 0
    result = json.loads(out)
    assert list(result["profiles"]) == ["strict", "stereo-blind", "inchi", "tanimoto:0.85", "roles-lenient"]
    assert result["profiles"]["strict"]["macro"]["f1"] == pytest.approx(1 / 3)         # b only, of 3 figures
    assert result["profiles"]["stereo-blind"]["macro"]["f1"] == pytest.approx(2 / 3)
    assert result["profiles"]["strict"]["answered_only"]["figures"] == 2
    assert result["coverage"]["timed_out"] == 1
    code, out, _ = run(capsys, "rxn", "score", "--gold", g, "--pred", a, "--profile", "inchi", "--answered-only")
    assert code == 0 and "answered only (not the headline)" in out and "2/0/1/0 of 3" in out


def test_score_rejects_an_unknown_profile(capsys, folders) -> None:
    g, a, _ = folders
    code, _, err = run(capsys, "rxn", "score", "--gold", g, "--pred", a, "--profile", "fuzzy")
    assert code == 1 and err.startswith("Error: unknown profile 'fuzzy'") and "Traceback" not in err


def test_diff_json_table_and_report(capsys, folders, tmp_path: Path) -> None:
    g, a, b = folders
    code, out, _ = run(capsys, "rxn", "diff", a, b, "--gold", g, "--json", "--seed", "2", "--resamples", "300")
    assert code == 0
    result = json.loads(out)
    assert [r["delta"] for r in result["per_figure"]] == [-1.0, 1.0, 0.0]
    assert result["bootstrap"]["seed"] == 2 and result["largest"][0]["figure_id"] == "a"
    osra = result["calibration"]["x"]["readers"]["osra"]
    assert (osra["readings"], osra["correct"]) == (3, 1)                              # only CO is right strictly
    report = tmp_path / "diff.html"
    code, out, _ = run(capsys, "rxn", "diff", a, b, "--gold", g, "--profile", "stereo-blind", "--report", str(report))
    assert code == 0 and "paired bootstrap interval" in out and "reader osra" in out
    text = report.read_text()
    assert "data:image/png;base64," in text and "reliability diagram of x" in text
    code, _, err = run(capsys, "rxn", "diff", a, b, "--gold", g, "--profile", "tanimoto:2")
    assert code == 1 and "tanimoto needs a threshold" in err


def test_by_layout_keeps_the_whole_set_sections(capsys, folders) -> None:
    g, a, _ = folders
    code, out, _ = run(capsys, "rxn", "score", "--gold", g, "--pred", a, "--by", "layout", "--profile", "stereo-blind",
                       "--json")
    assert code == 0
    overall = json.loads(out)["overall"]["x"]
    assert overall["profiles"]["stereo-blind"]["macro"]["f1"] == pytest.approx(2 / 3)
    assert overall["coverage"]["figures"] == 3
