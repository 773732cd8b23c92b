"""Validator for secondary LLM-judge outputs (schema ``llm-reaction-judge-v2``, RxnMiner
appendix B.2).

It checks what can be checked without chemistry: types; every number finite and in
[0, 1] where it is a score; every gold reaction matched exactly once; candidate indices in
range and used at most once; normalized weights equal to the base weights renormalized over
the applicable categories (0 elsewhere); composite = sum(weight x score); image category
means, the unadjusted and overall scores; reaction and molecule precision/recall from their
integer details; strict <= nonstereo.  Reported values are rounded to four decimals, so
arithmetic is compared with tolerance :data:`TOLERANCE`.  It does not judge chemistry.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.safeio import MAX_LOG_BYTES, excerpt, read_bounded
from labrecord.validation.findings import Report

JUDGE_SCHEMA = "llm-reaction-judge-v2"
CATEGORIES = ("reactants", "products", "condition_molecules", "condition_text", "yield", "selectivity")
MOLECULAR = ("reactants", "products", "condition_molecules")
BASE_WEIGHTS = {"reactants": 0.25, "products": 0.30, "condition_molecules": 0.18,
                "condition_text": 0.10, "yield": 0.09, "selectivity": 0.08}
#: four-decimal rounding of several terms stays well inside this
TOLERANCE = 1e-3
#: counts (gold reactions, predictions) above this are refused, not looped over
MAX_COUNT = 100_000

TOP_KEYS = ("schema_version", "task_id", "gt_reaction_count", "prediction_reaction_count_raw",
            "prediction_reaction_count_logical", "base_weights", "reaction_matches", "unmatched_predictions",
            "image_category_scores", "count_assessment", "unadjusted_image_score", "overall_score",
            "reaction_precision", "reaction_precision_details", "molecule_precision", "molecule_recall",
            "molecule_metric_details", "gt_quality_flag", "alternative_score", "judge_confidence")


class _Checker:
    """Collects findings for one judge object at ``where`` (file or file:line)."""

    def __init__(self, report: Report, path: str, line: int | None) -> None:
        self.report, self.path, self.line = report, path, line

    def error(self, field: str, message: str) -> None:
        self.report.error(self.path, self.line, field, message)

    def warn(self, field: str, message: str) -> None:
        self.report.warn(self.path, self.line, field, message)

    def number(self, value: Any, field: str, *, unit: bool = True, nullable: bool = False) -> float | None:
        """A finite number (in [0, 1] when ``unit``); None (with a finding unless nullable) otherwise."""
        if value is None:
            if not nullable:
                self.error(field, "is null, expected a number")
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(field, f"expected a number, got {value!r}")
            return None
        if not math.isfinite(value):
            self.error(field, f"not finite: {value!r}")
            return None
        if unit and not 0.0 <= value <= 1.0:
            self.error(field, f"{value!r} outside [0, 1]")
        return float(value)

    def count(self, value: Any, field: str) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.error(field, f"expected a non-negative integer, got {excerpt(repr(value))}")
            return None
        if value > MAX_COUNT:
            # checks loop over counts: an absurd one would hang the check or exhaust memory
            self.error(field, f"{value} is over the {MAX_COUNT} limit of a figure's reactions; not checked further")
            return None
        return value

    def close(self, actual: float | None, expected: float | None, field: str, what: str) -> None:
        if actual is None or expected is None:
            return
        if abs(actual - expected) > TOLERANCE:
            self.error(field, f"{actual!r} but {what} gives {expected:.4f}")

    def mapping(self, value: Any, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.error(field, f"expected an object, got {type(value).__name__}")
            return {}
        return value


def _ratio(num: int | None, den: int | None, empty: float | None) -> float | None:
    if num is None or den is None:
        return None
    return num / den if den else empty


def check_judge(obj: Any, report: Report, path: str, line: int | None = None) -> None:
    """Append the findings for one judge output to ``report``."""
    c = _Checker(report, path, line)
    if not isinstance(obj, dict):
        c.error("", f"expected a JSON object, got {type(obj).__name__}")
        return
    if obj.get("schema_version") != JUDGE_SCHEMA:
        c.error("schema_version", f"{obj.get('schema_version')!r}, expected {JUDGE_SCHEMA!r}")
    for key in TOP_KEYS:
        if key not in obj:
            c.error(key, "missing")
    gt_count = c.count(obj.get("gt_reaction_count"), "gt_reaction_count")
    raw = c.count(obj.get("prediction_reaction_count_raw"), "prediction_reaction_count_raw")
    logical = c.count(obj.get("prediction_reaction_count_logical"), "prediction_reaction_count_logical")
    base = _base_weights(c, obj.get("base_weights"))
    n_candidates = max(raw or 0, logical or 0)
    composites, category_scores = _matches(c, obj.get("reaction_matches"), gt_count, n_candidates, base)
    _unmatched(c, obj.get("unmatched_predictions"), n_candidates, obj.get("reaction_matches"))
    _image_scores(c, obj, composites, category_scores)
    _reaction_precision(c, obj, logical)
    _molecule_metrics(c, obj)
    if obj.get("gt_quality_flag") not in ("ok", "suspected_issue"):
        c.error("gt_quality_flag", f"{obj.get('gt_quality_flag')!r}, expected 'ok' or 'suspected_issue'")
    c.number(obj.get("alternative_score"), "alternative_score", nullable=True)
    c.number(obj.get("judge_confidence"), "judge_confidence")


def _base_weights(c: _Checker, value: Any) -> dict[str, float]:
    weights = c.mapping(value, "base_weights")
    base: dict[str, float] = {}
    for cat in CATEGORIES:
        w = c.number(weights.get(cat), f"base_weights.{cat}")
        if w is not None:
            base[cat] = w
    if len(base) == len(CATEGORIES):
        c.close(sum(base.values()), 1.0, "base_weights", "a sum of 1")
    return base


def _matches(c: _Checker, value: Any, gt_count: int | None, n_candidates: int,
             base: dict[str, float]) -> tuple[list[float | None], dict[str, list[float | None]]]:
    composites: list[float | None] = []
    per_category: dict[str, list[float | None]] = {cat: [] for cat in CATEGORIES}
    if not isinstance(value, list):
        c.error("reaction_matches", f"expected a list, got {type(value).__name__}")
        return composites, per_category
    seen_gt: dict[int, int] = {}
    seen_pred: dict[int, int] = {}
    for i, match in enumerate(value):
        field = f"reaction_matches[{i}]"
        if not isinstance(match, dict):
            c.error(field, f"expected an object, got {type(match).__name__}")
            continue
        _indices(c, match, field, i, gt_count, n_candidates, seen_gt, seen_pred)
        composite, scores = _one_match(c, match, field, base)
        composites.append(composite)
        for cat, score in scores.items():
            per_category[cat].append(score)
    if gt_count is not None:
        missing = [g for g in range(gt_count) if g not in seen_gt]
        if missing:
            c.error("reaction_matches", f"gold reactions {missing[:10]} have no entry (every gold reaction is matched exactly once)")
        if len(value) != gt_count:
            c.error("reaction_matches", f"{len(value)} entries for gt_reaction_count {gt_count}")
    return composites, per_category


def _indices(c: _Checker, match: dict[str, Any], field: str, i: int, gt_count: int | None, n_candidates: int,
             seen_gt: dict[int, int], seen_pred: dict[int, int]) -> None:
    gt_index = c.count(match.get("gt_index"), f"{field}.gt_index")
    if gt_index is not None:
        if gt_count is not None and gt_index >= gt_count:
            c.error(f"{field}.gt_index", f"{gt_index} out of range for gt_reaction_count {gt_count}")
        if gt_index in seen_gt:
            c.error(f"{field}.gt_index", f"gold reaction {gt_index} matched again (first at reaction_matches[{seen_gt[gt_index]}])")
        seen_gt.setdefault(gt_index, i)
    pred_index = match.get("prediction_index")
    if pred_index is not None:
        pred_index = c.count(pred_index, f"{field}.prediction_index")
        if pred_index is not None:
            if pred_index >= n_candidates:
                c.error(f"{field}.prediction_index", f"{pred_index} out of range for {n_candidates} candidate reactions")
            if pred_index in seen_pred:
                c.error(f"{field}.prediction_index",
                        f"candidate {pred_index} assigned again (first at reaction_matches[{seen_pred[pred_index]}])")
            seen_pred.setdefault(pred_index, i)
    c.number(match.get("match_confidence"), f"{field}.match_confidence")


def _one_match(c: _Checker, match: dict[str, Any], field: str,
               base: dict[str, float]) -> tuple[float | None, dict[str, float | None]]:
    applicable = c.mapping(match.get("applicable"), f"{field}.applicable")
    scores = c.mapping(match.get("scores"), f"{field}.scores")
    weights = c.mapping(match.get("normalized_weights"), f"{field}.normalized_weights")
    missing_pred = match.get("prediction_index") is None
    flags: dict[str, bool] = {}
    values: dict[str, float | None] = {}
    for cat in CATEGORIES:
        flag = applicable.get(cat)
        if not isinstance(flag, bool):
            c.error(f"{field}.applicable.{cat}", f"expected true or false, got {flag!r}")
            continue
        flags[cat] = flag
        if flag:
            values[cat] = c.number(scores.get(cat), f"{field}.scores.{cat}")
            if missing_pred and values[cat] not in (None, 0.0):
                c.error(f"{field}.scores.{cat}", f"{values[cat]!r} for a missing prediction (must be 0.0)")
        elif scores.get(cat) is not None:
            c.error(f"{field}.scores.{cat}", f"{scores.get(cat)!r} for a non-applicable category (must be null)")
    _weights(c, field, flags, weights, base)
    composite = c.number(match.get("composite_score"), f"{field}.composite_score")
    if len(flags) == len(CATEGORIES) and all(values.get(cat) is not None for cat, f in flags.items() if f):
        expected = sum(_num(weights.get(cat)) * score for cat, f in flags.items() if f and (score := values.get(cat)) is not None)
        c.close(composite, expected, f"{field}.composite_score", "sum(normalized_weight x score)")
    _structural(c, match, field, missing_pred)
    _molecular(c, match.get("molecular_scoring"), f"{field}.molecular_scoring")
    if missing_pred and composite not in (None, 0.0):
        c.error(f"{field}.composite_score", f"{composite!r} for a missing prediction (must be 0.0)")
    return composite, {cat: values.get(cat) if flags.get(cat) else None for cat in CATEGORIES}


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _weights(c: _Checker, field: str, flags: dict[str, bool], weights: dict[str, Any], base: dict[str, float]) -> None:
    live = [cat for cat, f in flags.items() if f]
    base_sum = sum(base.get(cat, 0.0) for cat in live)
    for cat in CATEGORIES:
        w = c.number(weights.get(cat), f"{field}.normalized_weights.{cat}")
        if w is None or cat not in flags:
            continue
        if not flags[cat]:
            if w != 0.0:
                c.error(f"{field}.normalized_weights.{cat}", f"{w!r} for a non-applicable category (must be 0.0)")
        elif base_sum > 0 and cat in base:
            c.close(w, base[cat] / base_sum, f"{field}.normalized_weights.{cat}", "the base weight renormalized over applicable categories")
    if live:
        c.close(sum(_num(weights.get(cat)) for cat in live), 1.0, f"{field}.normalized_weights", "a sum of 1 over applicable categories")


def _structural(c: _Checker, match: dict[str, Any], field: str, missing_pred: bool) -> None:
    exact = c.mapping(match.get("structural_exactness"), f"{field}.structural_exactness")
    strict, blind = exact.get("strict_stereo_reaction_match"), exact.get("nonstereo_reaction_match")
    for name, value in (("strict_stereo_reaction_match", strict), ("nonstereo_reaction_match", blind)):
        if not isinstance(value, bool):
            c.error(f"{field}.structural_exactness.{name}", f"expected true or false, got {value!r}")
    if strict is True and blind is False:
        c.error(f"{field}.structural_exactness", "strict-stereo match without a nonstereo match (strict must imply nonstereo)")
    if missing_pred and (strict is True or blind is True):
        c.error(f"{field}.structural_exactness", "exact match claimed for a missing prediction")


def _molecular(c: _Checker, value: Any, field: str) -> None:
    scoring = c.mapping(value, field)
    for cat in MOLECULAR:
        part = c.mapping(scoring.get(cat), f"{field}.{cat}")
        if not part:
            continue
        gt = c.count(part.get("gt_count"), f"{field}.{cat}.gt_count")
        pred = c.count(part.get("prediction_count"), f"{field}.{cat}.prediction_count")
        credit = c.number(part.get("soft_matched_credit"), f"{field}.{cat}.soft_matched_credit", unit=False)
        precision = c.number(part.get("soft_precision"), f"{field}.{cat}.soft_precision")
        recall = c.number(part.get("soft_recall"), f"{field}.{cat}.soft_recall")
        if credit is None or gt is None or pred is None:
            continue
        if credit < 0 or credit > min(gt, pred) + TOLERANCE:
            c.error(f"{field}.{cat}.soft_matched_credit", f"{credit!r} outside [0, min(gt_count, prediction_count) = {min(gt, pred)}]")
        if pred:
            c.close(precision, credit / pred, f"{field}.{cat}.soft_precision", "soft_matched_credit / prediction_count")
        if gt:
            c.close(recall, credit / gt, f"{field}.{cat}.soft_recall", "soft_matched_credit / gt_count")


def _unmatched(c: _Checker, value: Any, n_candidates: int, matches: Any) -> None:
    if not isinstance(value, list):
        c.error("unmatched_predictions", f"expected a list, got {type(value).__name__}")
        return
    matched = {m.get("prediction_index") for m in matches if isinstance(m, dict)} if isinstance(matches, list) else set()
    for i, item in enumerate(value):
        field = f"unmatched_predictions[{i}]"
        if not isinstance(item, dict):
            c.error(field, f"expected an object, got {type(item).__name__}")
            continue
        index = c.count(item.get("prediction_index"), f"{field}.prediction_index")
        if index is None:
            continue
        if index >= n_candidates:
            c.error(f"{field}.prediction_index", f"{index} out of range for {n_candidates} candidate reactions")
        if index in matched:
            c.error(f"{field}.prediction_index", f"candidate {index} is listed unmatched but is matched to a gold reaction")


def _image_scores(c: _Checker, obj: dict[str, Any], composites: list[float | None],
                  category_scores: dict[str, list[float | None]]) -> None:
    image = c.mapping(obj.get("image_category_scores"), "image_category_scores")
    for cat in CATEGORIES:
        reported = c.number(image.get(cat), f"image_category_scores.{cat}", nullable=True)
        values = [v for v in category_scores[cat] if v is not None]
        if not values:
            if reported is not None and not any(v is None for v in category_scores[cat]):
                c.error(f"image_category_scores.{cat}", f"{reported!r} but the category applies to no gold reaction (must be null)")
            continue
        if reported is None:
            c.error(f"image_category_scores.{cat}", "null but the category applies to some gold reactions")
        c.close(reported, sum(values) / len(values), f"image_category_scores.{cat}", "the mean over applicable gold reactions")
    unadjusted = c.number(obj.get("unadjusted_image_score"), "unadjusted_image_score")
    if composites and all(v is not None for v in composites):
        c.close(unadjusted, sum(composites) / len(composites), "unadjusted_image_score",  # type: ignore[arg-type]
                "the mean composite_score over gold reactions")
    assessment = c.mapping(obj.get("count_assessment"), "count_assessment")
    c.count(assessment.get("harmful_extra_count"), "count_assessment.harmful_extra_count")
    factor = c.number(assessment.get("count_adjustment_factor"), "count_assessment.count_adjustment_factor")
    overall = c.number(obj.get("overall_score"), "overall_score")
    if unadjusted is not None and factor is not None:
        c.close(overall, min(1.0, max(0.0, unadjusted * factor)), "overall_score", "unadjusted_image_score x count_adjustment_factor")


def _reaction_precision(c: _Checker, obj: dict[str, Any], logical: int | None) -> None:
    precision = c.mapping(obj.get("reaction_precision"), "reaction_precision")
    details = c.mapping(obj.get("reaction_precision_details"), "reaction_precision_details")
    strict = c.number(precision.get("strict_stereo"), "reaction_precision.strict_stereo")
    blind = c.number(precision.get("nonstereo"), "reaction_precision.nonstereo")
    n_strict = c.count(details.get("strict_stereo_correct_logical_predictions"),
                       "reaction_precision_details.strict_stereo_correct_logical_predictions")
    n_blind = c.count(details.get("nonstereo_correct_logical_predictions"),
                      "reaction_precision_details.nonstereo_correct_logical_predictions")
    total = c.count(details.get("total_logical_predictions"), "reaction_precision_details.total_logical_predictions")
    if strict is not None and blind is not None and strict > blind + TOLERANCE:
        c.error("reaction_precision", f"strict_stereo {strict!r} exceeds nonstereo {blind!r}")
    if n_strict is not None and n_blind is not None and n_strict > n_blind:
        c.error("reaction_precision_details", f"strict correct {n_strict} exceeds nonstereo correct {n_blind}")
    if total is not None:
        for name, n in (("strict_stereo", n_strict), ("nonstereo", n_blind)):
            if n is not None and n > total:
                c.error(f"reaction_precision_details.{name}_correct_logical_predictions", f"{n} exceeds total_logical_predictions {total}")
        if logical is not None and total != logical:
            c.error("reaction_precision_details.total_logical_predictions", f"{total} differs from prediction_reaction_count_logical {logical}")
    c.close(strict, _ratio(n_strict, total, 0.0), "reaction_precision.strict_stereo", "strict correct / total logical predictions")
    c.close(blind, _ratio(n_blind, total, 0.0), "reaction_precision.nonstereo", "nonstereo correct / total logical predictions")


def _molecule_metrics(c: _Checker, obj: dict[str, Any]) -> None:
    precision = c.mapping(obj.get("molecule_precision"), "molecule_precision")
    recall = c.mapping(obj.get("molecule_recall"), "molecule_recall")
    details = c.mapping(obj.get("molecule_metric_details"), "molecule_metric_details")
    gt = c.count(details.get("gt_count"), "molecule_metric_details.gt_count")
    pred = c.count(details.get("prediction_count"), "molecule_metric_details.prediction_count")
    matched = {v: c.count(details.get(f"{v}_matched"), f"molecule_metric_details.{v}_matched") for v in ("strict_stereo", "nonstereo")}
    if None not in matched.values() and matched["strict_stereo"] > matched["nonstereo"]:  # type: ignore[operator]
        c.error("molecule_metric_details", f"strict_stereo_matched {matched['strict_stereo']} exceeds nonstereo_matched {matched['nonstereo']}")
    for variant, n in matched.items():
        if n is not None and gt is not None and pred is not None and n > min(gt, pred):
            c.error(f"molecule_metric_details.{variant}_matched", f"{n} exceeds min(gt_count, prediction_count) = {min(gt, pred)}")
        p = c.number(precision.get(variant), f"molecule_precision.{variant}")
        r = c.number(recall.get(variant), f"molecule_recall.{variant}", nullable=True)
        c.close(p, _ratio(n, pred, 0.0), f"molecule_precision.{variant}", f"{variant}_matched / prediction_count")
        if gt == 0 and r is not None:
            c.error(f"molecule_recall.{variant}", f"{r!r} with gt_count 0 (must be null)")
        elif gt:
            if r is None:
                c.error(f"molecule_recall.{variant}", "null with a non-zero gt_count")
            c.close(r, _ratio(n, gt, None), f"molecule_recall.{variant}", f"{variant}_matched / gt_count")


def validate_judge_paths(paths: list[str | os.PathLike[str]]) -> Report:
    """Check judge outputs in ``.json`` files (one object), ``.jsonl`` files (one per line)
    or folders of them."""
    from labrecord.chemdata.adapters import document_files

    report = Report()
    for path in paths:
        for file in document_files(path):
            _check_file(file, report)
    return report


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _check_file(file: Path, report: Report) -> None:
    try:
        data = read_bounded(file, MAX_LOG_BYTES)
    except LabrecordError as error:
        report.error(str(file), None, "", str(error).removeprefix(f"{file}: "))
        return
    chunks = [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()] \
        if file.suffix.lower() == ".jsonl" else [(None, data)]
    for line, raw in chunks:
        try:
            obj = json.loads(raw, parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            report.error(str(file), line, "", f"not JSON: {error or 'nested too deeply'}")
            continue
        check_judge(obj, report, str(file), line)
