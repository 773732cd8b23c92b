"""Geometry errors e_p and e_v (eq. 2) from ``geometry`` reports.

Units — the first report per (run, opportunity, target):
``(run_id, opp, target, p_valid, e_p, v_scored, v_valid, e_v)``.

* ``p_valid``: a prediction of the reference's length with every entry finite and not
  zero (norm below 1e-12); ``e_p = ‖p̂ − p*‖₂`` (null when invalid).
* ``v_scored``: the report carries a non-zero reference axis; ``v_valid`` as above for
  v̂ (a zero axis cannot be normalized); ``e_v`` is the angle between v̂ and v* in
  radians, computed as ``2·atan2(‖â − b̂‖, ‖â + b̂‖)`` on the unit vectors (Kahan's form:
  exact near 0 and π, where ``arccos`` of the cosine loses half the digits, so SQL and
  Python agree to rounding).

Zero or non-finite predictions stay in the population as invalid outputs: e_p is the
mean over valid reports and ``p_valid`` is valid/all reports.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from labrecord.models import Geometry
from labrecord.scorers.reference import RefCorpus

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection



class GeometryUnit(NamedTuple):
    run_id: str
    opp: str
    target: str
    p_valid: bool
    e_p: float | None
    v_scored: bool
    v_valid: bool
    e_v: float | None

#: a prediction whose norm is below this counts as zero (invalid); also keeps axes normalizable
MIN_NORM = 1e-12


def _valid(vec: str, ref: str) -> str:
    return (f"coalesce({vec} IS NOT NULL AND len({vec}) = len({ref}) AND len({vec}) > 0 AND list_count({vec}) = len({vec}) "
            f"AND isfinite(list_sum({vec})) AND sqrt(list_sum(list_transform({vec}, lambda x: x * x))) >= {MIN_NORM}, false)")


def _guard(vec: str, ok: str) -> str:
    # DuckDB's list distance functions raise on NULL entries or unequal lengths even in
    # rows a CASE discards, so invalid rows get a rebuilt stand-in list
    return f"list_transform(CASE WHEN {ok} THEN {vec} ELSE [1.0] END, lambda x: coalesce(x, 0.0))"


def _unit(vec: str) -> str:
    return f"list_transform({vec}, lambda x: x / sqrt(list_sum(list_transform({vec}, lambda y: y * y))))"


GEOMETRY_UNITS_SQL = f"""
WITH g AS (
    SELECT * FROM events WHERE type = 'geometry'
    QUALIFY row_number() OVER (PARTITION BY run_id, opp, target ORDER BY seq) = 1
), v AS (
    SELECT *, {_valid('p_hat', 'p_ref')} AS p_valid,
           {_valid('v_ref', 'v_ref')} AS v_scored,
           {_valid('v_hat', 'v_ref')} AS v_ok
    FROM g
), u AS (
    SELECT *,
           {_unit(_guard('v_hat', 'v_scored AND v_ok'))} AS a_unit,
           {_unit(_guard('v_ref', 'v_scored AND v_ok'))} AS b_unit
    FROM v
)
SELECT run_id, opp, target, p_valid,
       CASE WHEN p_valid THEN list_distance({_guard('p_hat', 'p_valid')}, {_guard('p_ref', 'p_valid')}) END AS e_p,
       v_scored, v_scored AND v_ok AS v_valid,
       CASE WHEN v_scored AND v_ok THEN 2 * atan2(list_distance(a_unit, b_unit),
                                                   list_distance(a_unit, list_transform(b_unit, lambda x: -x))) END AS e_v
FROM u
"""


def geometry_units(con: DuckDBPyConnection) -> list[GeometryUnit]:
    return [GeometryUnit(*row) for row in con.execute(GEOMETRY_UNITS_SQL).fetchall()]


def is_valid_vector(vec: list[float | None] | None, length: int) -> bool:
    """Same length as the reference, every entry finite, norm at least :data:`MIN_NORM`."""
    if vec is None or len(vec) != length or length == 0:
        return False
    if any(x is None or not math.isfinite(x) for x in vec):
        return False
    return math.sqrt(sum(x * x for x in vec if x is not None)) >= MIN_NORM


def axis_error(v_hat: list[float], v_ref: list[float]) -> float:
    """The angle between the two axes in radians, ``2·atan2(‖â − b̂‖, ‖â + b̂‖)``."""
    norm_a, norm_b = math.hypot(*v_hat), math.hypot(*v_ref)
    a = [x / norm_a for x in v_hat]
    b = [y / norm_b for y in v_ref]
    return 2 * math.atan2(math.dist(a, b), math.dist(a, [-y for y in b]))


def geometry_unit(run_id: str, report: Geometry) -> GeometryUnit:
    p_valid = is_valid_vector(report.p_hat, len(report.p_ref))
    e_p = math.dist(report.p_hat, report.p_ref) if p_valid else None  # type: ignore[arg-type]
    v_scored = report.v_ref is not None and is_valid_vector(report.v_ref, len(report.v_ref))  # type: ignore[arg-type]
    v_valid = v_scored and is_valid_vector(report.v_hat, len(report.v_ref))  # type: ignore[arg-type]
    e_v = axis_error(report.v_hat, report.v_ref) if v_valid else None  # type: ignore[arg-type]
    return GeometryUnit(run_id, report.opp, report.target, p_valid, e_p, v_scored, v_valid, e_v)


def geometry_units_reference(corpus: RefCorpus) -> list[GeometryUnit]:
    units = []
    for run in corpus.runs:
        seen: set[tuple[str, str]] = set()
        for event in sorted(run.events, key=lambda e: e.seq):
            if isinstance(event, Geometry) and (event.opp, event.target) not in seen:
                seen.add((event.opp, event.target))
                units.append(geometry_unit(run.run_id, event))
    return units
