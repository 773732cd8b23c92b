"""Bounded checks on reaction data: absurd judge counts are refused, unmatchable gold is named."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from labrecord.cli import main
from labrecord.chemdata.judge import MAX_COUNT, check_judge
from labrecord.validation.findings import Report
from tests.chemdata.test_judge import judge_output
from tests.support import require_module

require_module("rdkit", 'pip install "labrecord[chem]"')


@pytest.mark.parametrize("field", ["gt_reaction_count", "prediction_reaction_count_raw", "prediction_reaction_count_logical"])
def test_absurd_judge_count_is_refused_with_a_message(field: str) -> None:
    obj = judge_output()
    obj[field] = 1_000_000_000
    report = Report()
    check_judge(obj, report, "j.json")
    assert any(f.field == field and f"over the {MAX_COUNT} limit" in f.message for f in report.errors), \
        [str(f) for f in report.errors]


def test_check_judge_cli_on_a_billion_gold_reactions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    obj = judge_output()
    obj["gt_reaction_count"] = 1_000_000_000
    (tmp_path / "j.json").write_text(json.dumps(obj))
    with pytest.raises(SystemExit) as exit_info:
        main(["rxn", "check-judge", str(tmp_path / "j.json")])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 1 and "gt_reaction_count: 1000000000 is over the" in out + err


def test_rxn_score_warns_about_gold_that_can_never_match(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "gold").mkdir()
    (tmp_path / "pred").mkdir()
    gold = {"selected_examples": [{"reactants": ["CCO"], "products": ["CC=O"]},
                                  {"reactants": ["*C"], "products": ["CC"]},
                                  {"reactants": ["[Rf]c1ccccc1"], "products": ["c1ccccc1"]},
                                  {"reactants": ["C1CC"], "products": ["CC"]}]}
    (tmp_path / "gold" / "f1.json").write_text(json.dumps(gold))
    pred = {"answer": {"reactions": [{"reactants": [{"smiles": "CCO"}], "products": [{"smiles": "CC=O"}]}]}}
    (tmp_path / "pred" / "f1.json").write_text(json.dumps(pred))
    with pytest.raises(SystemExit) as exit_info:
        main(["rxn", "score", "--gold", str(tmp_path / "gold"), "--pred", str(tmp_path / "pred"), "--json"])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0
    warnings = [line for line in err.splitlines() if "can never match" in line]
    assert [w.split(":")[1].strip() for w in warnings] == ["gold f1 reaction 1", "gold f1 reaction 2", "gold f1 reaction 3"], err
    assert "'*C'" in warnings[0] and "'[Rf]c1ccccc1'" in warnings[1] and "'C1CC'" in warnings[2]
