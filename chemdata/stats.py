"""Corpus statistics of the kind the RxnMiner paper reports for its silver corpus.

Per system: figures by status; concrete reactions and templates; records per figure (mean,
median, max, and bands with doubling upper bounds); parse rates of molecule strings
(representational validity only: a parsable string can still be the wrong molecule);
provenance shares of reactant and product occurrences; field coverage (share of reactions
carrying a yield, selectivity, conditions, condition roles, identifiers, outcome, step).
All numbers come from SQL over the reaction tables.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: records-per-figure bands: (label, low, high) inclusive
BANDS: tuple[tuple[str, int, int], ...] = (
    ("0", 0, 0), ("1-5", 1, 5), ("6-10", 6, 10), ("11-20", 11, 20), ("21-40", 21, 40), ("41-80", 41, 80),
    (">80", 81, 1 << 30),
)

#: condition roles whose presence is reported as field coverage
COVERAGE_ROLES = ("reagent", "catalyst", "solvent", "temperature", "time")


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def _systems(con: DuckDBPyConnection, system: str | None) -> list[str]:
    if system is not None:
        found = con.execute("SELECT count(*) FROM rxn_figures WHERE system = ?", [system]).fetchall()[0][0]
        if not found:
            from labrecord.errors import LabrecordError

            raise LabrecordError(f"no figures of system {system!r} in the corpus")
        return [system]
    return [r[0] for r in con.execute("SELECT DISTINCT system FROM rxn_figures ORDER BY 1").fetchall()]


def _figures(con: DuckDBPyConnection, system: str) -> tuple[dict[str, Any], dict[str, Any], int, int]:
    status = dict(con.execute("SELECT status, count(*) FROM rxn_figures WHERE system = ? GROUP BY 1 ORDER BY 1",
                              [system]).fetchall())
    total, reactions, templates, mean, median, top = con.execute(
        "SELECT count(*), sum(n_reactions), sum(n_templates), avg(n_reactions), median(n_reactions), max(n_reactions) "
        "FROM rxn_figures WHERE system = ?", [system]).fetchall()[0]
    bands = {}
    for label, low, high in BANDS:
        bands[label] = con.execute("SELECT count(*) FROM rxn_figures WHERE system = ? AND n_reactions BETWEEN ? AND ?",
                                   [system, low, high]).fetchall()[0][0]
    per_figure = {"mean": float(mean) if mean is not None else None,
                  "median": float(median) if median is not None else None, "max": top, "bands": bands}
    return {"total": total, "status": status}, per_figure, int(reactions or 0), int(templates or 0)


def _parse(con: DuckDBPyConnection, system: str) -> dict[str, Any]:
    total, ok, distinct = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE s.status = 'ok'), count(DISTINCT m.smiles) "
        "FROM rxn_molecules m JOIN rxn_smiles s USING (smiles) WHERE m.system = ?", [system]).fetchall()[0]
    reasons = dict(con.execute(
        "SELECT s.reason, count(*) FROM rxn_molecules m JOIN rxn_smiles s USING (smiles) "
        "WHERE m.system = ? AND s.reason IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1", [system]).fetchall())
    return {"total": total, "ok": ok, "rate": _share(ok, total), "distinct": distinct, "reasons": reasons}


def _provenance(con: DuckDBPyConnection, system: str) -> dict[str, float | None]:
    rows = con.execute(
        "SELECT coalesce(origin, 'unrecorded'), count(*) FROM rxn_molecules "
        "WHERE system = ? AND role IN ('reactant', 'product') GROUP BY 1 ORDER BY 1", [system]).fetchall()
    total = sum(n for _, n in rows)
    return {origin: _share(n, total) for origin, n in rows}


def _coverage(con: DuckDBPyConnection, system: str, reactions: int) -> dict[str, float | None]:
    row = con.execute(
        "SELECT count(*) FILTER (WHERE yield IS NOT NULL), count(*) FILTER (WHERE selectivity IS NOT NULL), "
        "count(*) FILTER (WHERE n_conditions > 0), count(*) FILTER (WHERE len(identifiers) > 0), "
        "count(*) FILTER (WHERE outcome IS NOT NULL), count(*) FILTER (WHERE step IS NOT NULL) "
        "FROM rxn_reactions WHERE system = ?", [system]).fetchall()[0]
    names = ("yield", "selectivity", "conditions", "identifiers", "outcome", "step")
    coverage = {name: _share(int(n), reactions) for name, n in zip(names, row)}
    for role in COVERAGE_ROLES:
        n = _role_count(con, system, role)
        coverage[f"condition:{role}"] = _share(n, reactions)
    return coverage


def _role_count(con: DuckDBPyConnection, system: str, role: str) -> int:
    """Reactions with at least one condition of ``role``."""
    return con.execute("SELECT count(*) FROM rxn_reactions WHERE system = ? AND list_contains(condition_roles, ?)",
                       [system, role]).fetchall()[0][0]


def corpus_stats(con: DuckDBPyConnection, system: str | None = None) -> dict[str, dict[str, Any]]:
    """``{system: statistics}`` for every system in the corpus ``con`` (opened with
    :func:`labrecord.store.connect`), or just ``system``."""
    result = {}
    for name in _systems(con, system):
        figures, per_figure, reactions, templates = _figures(con, name)
        result[name] = {"figures": figures, "reactions": reactions, "templates": templates,
                        "records_per_figure": per_figure, "parse": _parse(con, name),
                        "provenance": _provenance(con, name), "coverage": _coverage(con, name, reactions)}
    return result


def stats_for_path(path: str | os.PathLike[str], system: str | None = None) -> dict[str, dict[str, Any]]:
    """Statistics of the documents under ``path`` (read and canonicalized in memory)."""
    from labrecord.chemdata.adapters import load_documents
    from labrecord.chemdata.store import ingest_documents
    from labrecord.store import connect

    docs = load_documents(path)
    con = connect()
    try:
        ingest_documents(con, docs)
        return corpus_stats(con, system)
    finally:
        con.close()
