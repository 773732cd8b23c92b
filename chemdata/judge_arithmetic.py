"""The arithmetic of an ``llm-reaction-judge-v2`` object, from per-reaction grades.

:func:`assemble_judgment` turns what a grader decided — for each reference reaction, its
candidate partner (or none), its category scores and its two exactness flags — into the
complete object, computing applicability, renormalized weights, composites, image means,
the count adjustment and the precision figures exactly as the rubric prescribes.  The
runner uses it for figures whose system run failed (every reference reaction missing, so
the grades are known without asking the judge); it is also the reference the validator's
tests build consistent judgments with.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from labrecord.chemdata.judge import BASE_WEIGHTS, CATEGORIES, JUDGE_SCHEMA

STRICT_CRITERION = "All reactants and products right, with every required stereo element."
NONSTEREO_CRITERION = "All reactants and products right by connectivity, stereochemistry ignored."


@dataclass(frozen=True)
class ReactionGrade:
    """The grade of one reference reaction: ``scores`` for its applicable categories
    (a missing category counts 0); no partner (``prediction_index`` None) scores 0."""

    prediction_index: int | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    strict: bool = False
    nonstereo: bool = False


def applicability(reaction: Mapping[str, Any]) -> dict[str, bool]:
    """Which categories a reference reaction (judge view) gives something to check."""
    conditions = reaction.get("conditions") or []
    return {"reactants": True, "products": True,
            "condition_molecules": any(c.get("smiles") for c in conditions),
            "condition_text": any(c.get("text") for c in conditions),
            "yield": reaction.get("yield") is not None,
            "selectivity": reaction.get("selectivity") is not None}


def _r(value: float) -> float:
    return round(value, 4)


def _entities(reaction: Mapping[str, Any]) -> dict[str, int]:
    conditions = reaction.get("conditions") or []
    return {"reactants": len(reaction.get("reactants") or []), "products": len(reaction.get("products") or []),
            "condition_molecules": sum(1 for c in conditions if c.get("smiles"))}


def _match(gt_index: int, reaction: Mapping[str, Any], grade: ReactionGrade) -> dict[str, Any]:
    applicable = applicability(reaction)
    missing = grade.prediction_index is None
    scores = {c: (None if not applicable[c] else 0.0 if missing else float(grade.scores.get(c, 0.0))) for c in CATEGORIES}
    live = sum(BASE_WEIGHTS[c] for c in CATEGORIES if applicable[c])
    weights = {c: _r(BASE_WEIGHTS[c] / live) if applicable[c] else 0.0 for c in CATEGORIES}
    composite = sum(BASE_WEIGHTS[c] / live * score for c in CATEGORIES if applicable[c] and (score := scores[c]) is not None)
    molecular = {}
    for cat, n in _entities(reaction).items():
        score = scores[cat] or 0.0
        pred_n = 0 if missing else n
        molecular[cat] = {"gt_count": n, "prediction_count": pred_n, "soft_matched_credit": _r(score * pred_n),
                          "soft_precision": _r(score if pred_n else 0.0), "soft_recall": _r(score if n and pred_n else 0.0)}
    return {"gt_index": gt_index, "gt_identifier": reaction.get("id"), "prediction_index": grade.prediction_index,
            "match_confidence": 0.0 if missing else 1.0, "semantic_role_reassignments": [], "applicable": applicable,
            "scores": {c: None if v is None else _r(v) for c, v in scores.items()}, "molecular_scoring": molecular,
            "stereochemistry_assessment": {"reactants_applicable": False, "reactants_score": None,
                                           "products_applicable": False, "products_score": None,
                                           "condition_molecules_applicable": False, "condition_molecules_score": None,
                                           "errors": []},
            "structural_exactness": {"strict_stereo_reaction_match": grade.strict and not missing,
                                     "nonstereo_reaction_match": (grade.nonstereo or grade.strict) and not missing},
            "normalized_weights": weights, "composite_score": _r(composite),
            "evidence": {"correct": [], "missing": ["no candidate reaction"] if missing else [], "incorrect": [], "extra": []},
            "rationale": "no candidate partner" if missing else ""}


def assemble_judgment(task_id: str, reference: Mapping[str, Any], n_candidates: int, grades: Sequence[ReactionGrade],
                      *, harmful_extra: int | None = None, molecules_matched: tuple[int, int] = (0, 0),
                      molecules_predicted: int = 0) -> dict[str, Any]:
    """A complete judge object for ``reference`` (judge view) graded by ``grades`` (one per
    reference reaction, in order) against ``n_candidates`` candidate reactions.

    Candidates that no grade uses are listed as unsupported extras; ``harmful_extra``
    (default: all of them) sets the count adjustment n_ref / (n_ref + harmful).
    ``molecules_matched`` is (strict, nonstereo) pooled exact molecule matches out of
    ``molecules_predicted`` candidate occurrences.
    """
    reactions = list(reference.get("reactions") or [])
    if len(grades) != len(reactions):
        raise ValueError(f"{len(grades)} grades for {len(reactions)} reference reactions")
    matches = [_match(i, rxn, grade) for i, (rxn, grade) in enumerate(zip(reactions, grades))]
    used = {g.prediction_index for g in grades if g.prediction_index is not None}
    unmatched = [{"prediction_index": i, "classification": "unsupported_extra", "reason": "no reference partner"}
                 for i in range(n_candidates) if i not in used]
    harmful = len(unmatched) if harmful_extra is None else harmful_extra
    image: dict[str, float | None] = {}
    for cat in CATEGORIES:
        values = [m["scores"][cat] for m in matches if m["applicable"][cat]]
        image[cat] = _r(sum(values) / len(values)) if values else None
    unadjusted = sum(m["composite_score"] for m in matches) / len(matches) if matches else 0.0
    factor = len(matches) / (len(matches) + harmful) if matches or harmful else 1.0
    strict = sum(1 for m in matches if m["structural_exactness"]["strict_stereo_reaction_match"])
    blind = sum(1 for m in matches if m["structural_exactness"]["nonstereo_reaction_match"])
    gt_molecules = sum(len(r.get("reactants") or []) + len(r.get("products") or []) for r in reactions)
    m_strict, m_blind = molecules_matched
    return {
        "schema_version": JUDGE_SCHEMA, "task_id": task_id, "gt_reaction_count": len(reactions),
        "prediction_reaction_count_raw": n_candidates, "prediction_reaction_count_logical": n_candidates,
        "base_weights": dict(BASE_WEIGHTS), "reaction_matches": matches, "unmatched_predictions": unmatched,
        "image_category_scores": image,
        "count_assessment": {"harmful_extra_count": harmful, "count_adjustment_factor": _r(factor),
                             "reason": "reference count / (reference count + harmful extras)"},
        "unadjusted_image_score": _r(unadjusted), "overall_score": _r(min(1.0, max(0.0, unadjusted * factor))),
        "reaction_precision": {"strict_stereo": _r(strict / n_candidates) if n_candidates else 0.0,
                               "nonstereo": _r(blind / n_candidates) if n_candidates else 0.0},
        "reaction_precision_details": {"strict_stereo_correct_logical_predictions": strict,
                                       "nonstereo_correct_logical_predictions": blind,
                                       "total_logical_predictions": n_candidates,
                                       "strict_stereo_criterion": STRICT_CRITERION,
                                       "nonstereo_criterion": NONSTEREO_CRITERION},
        "molecule_precision": {"strict_stereo": _r(m_strict / molecules_predicted) if molecules_predicted else 0.0,
                               "nonstereo": _r(m_blind / molecules_predicted) if molecules_predicted else 0.0},
        "molecule_recall": {"strict_stereo": _r(m_strict / gt_molecules) if gt_molecules else None,
                            "nonstereo": _r(m_blind / gt_molecules) if gt_molecules else None},
        "molecule_metric_details": {"gt_count": gt_molecules, "prediction_count": molecules_predicted,
                                    "strict_stereo_matched": m_strict, "nonstereo_matched": m_blind},
        "gt_quality_flag": "ok", "gt_quality_note": "", "alternative_score": None, "judge_confidence": 1.0,
    }

