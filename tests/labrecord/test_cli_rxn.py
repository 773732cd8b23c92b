"""``labrecord rxn``: ingest, score (table, JSON, CSV, --by), stats, check-judge, extensions."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import require_module

from labrecord.cli import main

require_module("rdkit", 'pip install "labrecord[chem]"')


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "gold").mkdir()
    (tmp_path / "pred").mkdir()
    gold = {"f1": {"file_name": "f1.png", "layout": "scope",
                   "selected_examples": [{"reactants": ["CC(=O)O", "OCC"], "products": ["CC(=O)OCC"]},
                                         {"reactants": ["C[C@H](N)O"], "products": ["C[C@H](N)OC"]}]},
            "f2": {"layout": "single", "selected_examples": [{"reactants": ["Brc1ccccc1"], "products": ["Cc1ccccc1"]}]}}
    for name, doc in gold.items():
        (tmp_path / "gold" / f"{name}.json").write_text(json.dumps(doc))
    pred = {"answer": {"reactions": [{"reactants": [{"smiles": "OCC"}, {"smiles": "OC(C)=O"}], "products": [{"smiles": "CCOC(C)=O"}]},
                                     {"reactants": [{"smiles": "C[C@@H](N)O"}], "products": [{"smiles": "C[C@@H](N)OC"}]}]}}
    (tmp_path / "pred" / "f1.png.json").write_text(json.dumps(pred))
    (tmp_path / "pred" / "f2.json").write_text(json.dumps({"answer": None, "status": "timeout"}))
    return tmp_path


def test_score_json_from_paths(capsys, corpus: Path) -> None:
    code, out, _ = run(capsys, "rxn", "score", "--gold", str(corpus / "gold"), "--pred", str(corpus / "pred"), "--json")
    result = json.loads(out)
    assert code == 0
    assert result["figures"] == 2
    assert result["macro"]["strict"] == {"precision": 0.25, "recall": 0.25, "f1": 0.25}
    assert result["macro"]["nonstereo"]["f1"] == 0.5
    assert [r["status"] for r in result["per_figure"]] == ["ok", "timeout"]


def test_ingest_then_score_by_name_in_the_corpus(capsys, corpus: Path) -> None:
    db = str(corpus / "c.duckdb")
    assert run(capsys, "rxn", "ingest", str(corpus / "gold"), "--db", db, "--gold")[0] == 0
    code, out, _ = run(capsys, "rxn", "ingest", str(corpus / "pred"), "--db", db, "--system", "sysA")
    assert code == 0 and "2 figures (ok 1, timeout 1)" in out
    code, out, _ = run(capsys, "rxn", "score", "--gold", "gold", "--pred", "sysA", "--db", db, "--json")
    assert json.loads(out)["macro"]["strict"]["f1"] == 0.25


def test_by_layout_and_table_and_csv(capsys, corpus: Path) -> None:
    args = ["rxn", "score", "--gold", str(corpus / "gold"), "--pred", str(corpus / "pred")]
    code, out, _ = run(capsys, *args, "--by", "layout", "--json")
    groups = {g["group"]: g for g in json.loads(out)["groups"]}
    assert groups["scope"]["macro"]["nonstereo"]["f1"] == 1.0 and groups["single"]["figures"] == 1
    code, out, _ = run(capsys, *args)
    assert code == 0 and "reaction" in out and "nonstereo" in out
    code, out, _ = run(capsys, *args, "--csv")
    assert out.splitlines()[1] == "f1,2,2,1,2,0.5,0.5,0.5,ok"


def test_two_systems_need_by_system(capsys, corpus: Path) -> None:
    (corpus / "pred2").mkdir()
    (corpus / "pred2" / "f2.json").write_text(json.dumps({"reactions": [{"reactants": ["Brc1ccccc1"], "products": ["Cc1ccccc1"]}]}))
    args = ["rxn", "score", "--gold", str(corpus / "gold"), "--pred", str(corpus / "pred"), "--pred", str(corpus / "pred2")]
    code, _, err = run(capsys, *args)
    assert code == 1 and "pass --by system" in err
    code, out, _ = run(capsys, *args, "--by", "system", "--json")
    assert {g["system"]: g["macro"]["strict"]["f1"] for g in json.loads(out)["groups"]} == {"pred": 0.25, "pred2": 0.5}


def test_bad_input_is_one_error_line(capsys, corpus: Path) -> None:
    code, _, err = run(capsys, "rxn", "score", "--gold", str(corpus / "missing"), "--pred", str(corpus / "pred"))
    assert code == 1 and err.startswith("Error: ") and err.count("\n") == 1
    (corpus / "gold" / "bad.json").write_text("{")
    code, _, err = run(capsys, "rxn", "score", "--gold", str(corpus / "gold"), "--pred", str(corpus / "pred"))
    assert code == 1 and "bad.json: gold document cannot be read" in err


def test_figures_outside_the_manifest_are_reported(capsys, corpus: Path) -> None:
    (corpus / "pred" / "f9.json").write_text(json.dumps({"reactions": []}))
    code, out, err = run(capsys, "rxn", "score", "--gold", str(corpus / "gold"), "--pred", str(corpus / "pred"), "--json")
    assert code == 0 and json.loads(out)["figures"] == 2
    assert "warning: pred: 1 figure(s) not in the gold manifest were not scored: f9" in err


def test_stats_json(capsys, corpus: Path) -> None:
    code, out, _ = run(capsys, "rxn", "stats", str(corpus / "pred"), "--json")
    stats = json.loads(out)["pred"]
    assert code == 0 and stats["figures"]["status"] == {"ok": 1, "timeout": 1} and stats["parse"]["rate"] == 1.0


def test_check_judge_exit_status(capsys, tmp_path: Path) -> None:
    (tmp_path / "j.json").write_text(json.dumps({"schema_version": "llm-reaction-judge-v2"}))
    code, out, _ = run(capsys, "rxn", "check-judge", str(tmp_path / "j.json"))
    assert code == 1 and "error:" in out


def test_extract_and_render_are_listed_with_examples(capsys) -> None:
    code, out, _ = run(capsys, "rxn", "-h")
    assert code == 0 and "extract" in out and "render" in out
    for name in ("extract", "render"):
        code, out, _ = run(capsys, "rxn", name, "-h")
        assert code == 0 and "Example:" in out
