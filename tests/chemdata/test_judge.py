"""The llm-reaction-judge-v2 validator: a consistent output passes, each broken rule fails."""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.chemdata.judge import BASE_WEIGHTS, CATEGORIES, check_judge, validate_judge_paths
from labrecord.validation.findings import Report


def match(gt_index: int, pred_index: int | None, scores: dict[str, float | None], strict: bool, blind: bool) -> dict[str, Any]:
    applicable = {cat: scores.get(cat) is not None for cat in CATEGORIES}
    live = sum(BASE_WEIGHTS[c] for c in CATEGORIES if applicable[c])
    weights = {c: round(BASE_WEIGHTS[c] / live, 4) if applicable[c] else 0.0 for c in CATEGORIES}
    composite = round(sum(weights[c] * scores[c] for c in CATEGORIES if applicable[c]), 4)
    mol = {"gt_count": 2, "prediction_count": 2, "soft_matched_credit": 2.0, "soft_precision": 1.0, "soft_recall": 1.0}
    return {"gt_index": gt_index, "gt_identifier": None, "prediction_index": pred_index, "match_confidence": 0.9,
            "semantic_role_reassignments": [], "applicable": applicable,
            "scores": {c: scores.get(c) for c in CATEGORIES},
            "molecular_scoring": {"reactants": mol, "products": dict(mol), "condition_molecules": dict(mol)},
            "stereochemistry_assessment": {"reactants_applicable": False, "reactants_score": None, "products_applicable": False,
                                           "products_score": None, "condition_molecules_applicable": False,
                                           "condition_molecules_score": None, "errors": []},
            "structural_exactness": {"strict_stereo_reaction_match": strict, "nonstereo_reaction_match": blind},
            "normalized_weights": weights, "composite_score": composite,
            "evidence": {"correct": [], "missing": [], "incorrect": [], "extra": []}, "rationale": ""}


def judge_output() -> dict[str, Any]:
    """Two gold reactions: one found (yield and selectivity not applicable), one missing."""
    found = match(0, 1, {"reactants": 1.0, "products": 1.0, "condition_molecules": 0.5, "condition_text": 1.0}, True, True)
    missing = match(1, None, {"reactants": 0.0, "products": 0.0, "condition_molecules": 0.0, "condition_text": 0.0,
                              "yield": 0.0, "selectivity": 0.0}, False, False)
    for key in ("reactants", "products", "condition_molecules"):
        missing["molecular_scoring"][key] = {"gt_count": 1, "prediction_count": 0, "soft_matched_credit": 0.0,
                                             "soft_precision": 0.0, "soft_recall": 0.0}
    composites = [found["composite_score"], missing["composite_score"]]
    unadjusted = round(sum(composites) / 2, 4)
    image = {"reactants": 0.5, "products": 0.5, "condition_molecules": 0.25, "condition_text": 0.5, "yield": 0.0, "selectivity": 0.0}
    return {"schema_version": "llm-reaction-judge-v2", "task_id": "fig1", "gt_reaction_count": 2,
            "prediction_reaction_count_raw": 3, "prediction_reaction_count_logical": 3,
            "base_weights": dict(BASE_WEIGHTS), "reaction_matches": [found, missing],
            "unmatched_predictions": [{"prediction_index": 0, "classification": "unsupported_extra", "reason": ""},
                                      {"prediction_index": 2, "classification": "duplicate", "reason": ""}],
            "image_category_scores": image,
            "count_assessment": {"harmful_extra_count": 2, "count_adjustment_factor": 0.5, "reason": ""},
            "unadjusted_image_score": unadjusted, "overall_score": round(unadjusted * 0.5, 4),
            "reaction_precision": {"strict_stereo": 0.3333, "nonstereo": 0.3333},
            "reaction_precision_details": {"strict_stereo_correct_logical_predictions": 1,
                                           "nonstereo_correct_logical_predictions": 1, "total_logical_predictions": 3,
                                           "strict_stereo_criterion": "", "nonstereo_criterion": ""},
            "molecule_precision": {"strict_stereo": 0.5, "nonstereo": 0.75},
            "molecule_recall": {"strict_stereo": 0.6, "nonstereo": 0.9},
            "molecule_metric_details": {"gt_count": 5, "prediction_count": 6, "strict_stereo_matched": 3, "nonstereo_matched": 5},
            "gt_quality_flag": "ok", "gt_quality_note": "", "alternative_score": None, "judge_confidence": 0.8}


def findings(obj: Any) -> list[str]:
    report = Report()
    check_judge(obj, report, "judge.json")
    return [str(f) for f in report.errors]


def _valid() -> dict[str, Any]:
    obj = judge_output()
    obj["molecule_precision"]["nonstereo"] = 0.8333           # 5 / 6
    obj["molecule_recall"] = {"strict_stereo": 0.6, "nonstereo": 1.0}  # 3 / 5, 5 / 5
    return obj


def test_consistent_output_passes() -> None:
    assert findings(_valid()) == []


BREAKS = [
    ("schema", lambda o: o.update(schema_version="v1"), "schema_version"),
    ("missing key", lambda o: o.pop("overall_score"), "overall_score: missing"),
    ("nan", lambda o: o.update(judge_confidence=float("nan")), "not finite"),
    ("out of range", lambda o: o.update(judge_confidence=1.5), "outside \\[0, 1\\]"),
    ("gold matched twice", lambda o: o["reaction_matches"][1].update(gt_index=0), "matched again"),
    ("gold unmatched", lambda o: o["reaction_matches"].pop(), "have no entry"),
    ("candidate out of range", lambda o: o["reaction_matches"][0].update(prediction_index=7), "out of range"),
    ("candidate reused", lambda o: o["unmatched_predictions"][0].update(prediction_index=1), "listed unmatched but is matched"),
    ("weights", lambda o: o["reaction_matches"][0]["normalized_weights"].update(reactants=0.25), "renormalized"),
    ("weight on n/a", lambda o: o["reaction_matches"][0]["normalized_weights"].update({"yield": 0.1}), "non-applicable category"),
    ("score on n/a", lambda o: o["reaction_matches"][0]["scores"].update({"yield": 0.5}), "must be null"),
    ("composite", lambda o: o["reaction_matches"][0].update(composite_score=0.5), "sum\\(normalized_weight x score\\)"),
    ("missing pred scored", lambda o: o["reaction_matches"][1]["scores"].update(products=0.5), "missing prediction"),
    ("strict without blind", lambda o: o["reaction_matches"][0]["structural_exactness"].update(nonstereo_reaction_match=False),
     "strict must imply nonstereo"),
    ("unadjusted", lambda o: o.update(unadjusted_image_score=0.9), "mean composite_score"),
    ("overall", lambda o: o.update(overall_score=0.9), "count_adjustment_factor"),
    ("precision arithmetic", lambda o: o["reaction_precision"].update(strict_stereo=0.5, nonstereo=0.5), "total logical"),
    ("strict > nonstereo", lambda o: o["reaction_precision_details"].update(strict_stereo_correct_logical_predictions=2), "exceeds nonstereo"),
    ("molecule recall", lambda o: o["molecule_recall"].update(strict_stereo=0.1), "gt_count"),
    ("molecule matched too many", lambda o: o["molecule_metric_details"].update(nonstereo_matched=6), "exceeds min"),
    ("image mean", lambda o: o["image_category_scores"].update(products=0.9), "mean over applicable"),
    ("soft precision", lambda o: o["reaction_matches"][0]["molecular_scoring"]["products"].update(soft_precision=0.5),
     "soft_matched_credit / prediction_count"),
    ("bool type", lambda o: o["reaction_matches"][0]["applicable"].update(reactants="yes"), "expected true or false"),
]


@pytest.mark.parametrize("name, breaker, pattern", BREAKS, ids=[b[0] for b in BREAKS])
def test_each_broken_rule_is_reported(name: str, breaker: Any, pattern: str) -> None:
    obj = _valid()
    breaker(obj)
    errors = findings(obj)
    assert errors, name
    assert any(re.search(pattern, e) for e in errors), errors


@settings(max_examples=40, deadline=None)
@given(path=st.sampled_from(["judge_confidence", "overall_score", "unadjusted_image_score"]),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=3), st.none()))
def test_a_number_is_reported_exactly_when_it_is_bad(path: str, value: Any) -> None:
    obj = _valid()
    original = obj[path]
    obj[path] = value
    valid = isinstance(value, float) and math.isfinite(value) and 0.0 <= value <= 1.0
    if path != "judge_confidence":   # these two are also pinned by arithmetic
        valid = valid and abs(value - original) <= 1e-3
    assert (findings(obj) == []) == valid


def test_files_and_jsonl_lines_are_named(tmp_path: Path) -> None:
    good = _valid()
    bad = copy.deepcopy(good)
    bad["judge_confidence"] = 2
    (tmp_path / "j.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\nNaN\n")
    report = validate_judge_paths([tmp_path])
    assert [str(e).split(" ")[0] for e in report.errors] == [f"{tmp_path / 'j.jsonl'}:2", f"{tmp_path / 'j.jsonl'}:3:"]
