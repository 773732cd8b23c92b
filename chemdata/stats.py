"""Corpus statistics of the kind the RxnMiner paper reports for its silver corpus.

Per system: figures by status; concrete reactions and templates; records per figure (mean,
median, max, and bands with doubling upper bounds); parse rates of molecule strings
(representational validity only: a parsable string can still be the wrong molecule);
provenance shares of reactant and product occurrences; field coverage (share of reactions
carrying a yield, selectivity, conditions, condition roles, identifiers, outcome, step).
All numbers come from SQL over the reaction tables.

Calibration (:func:`reliability`): where a system's molecules carry the recognition
confidence of their reader, how often the readings of each confidence bin are right.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
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
    from labrecord.store.schema import RXN_TABLES

    docs = load_documents(path)
    con = connect(tables=RXN_TABLES)
    try:
        ingest_documents(con, docs)
        return corpus_stats(con, system)
    finally:
        con.close()


# --------------------------------------------------------------------------- calibration

#: confidence bins of the reliability table
CALIBRATION_BINS = 10


def stored_documents(con: DuckDBPyConnection, system: str, figure_ids: Sequence[str] | None = None) -> dict[str, Any]:
    """Stored documents of ``system`` by figure id (``labrecord.models.rxn.FigureDocument``)."""
    import msgspec

    from labrecord.models.rxn import FigureDocument

    rows = con.execute("SELECT figure_id, document FROM rxn_figures WHERE system = ? ORDER BY figure_id",
                       [system]).fetchall()
    wanted = None if figure_ids is None else set(figure_ids)
    return {f: msgspec.json.decode(d, type=FigureDocument) for f, d in rows if wanted is None or f in wanted}


def molecule_forms(con: DuckDBPyConnection, systems: list[str]) -> dict[str, tuple[str, ...] | None]:
    """SMILES string -> its strict components, or ``None`` when it can never match."""
    rows = con.execute("SELECT DISTINCT s.smiles, s.reason, s.strict FROM rxn_molecules m JOIN rxn_smiles s USING (smiles) "
                       "WHERE m.system IN (SELECT unnest(?))", [systems]).fetchall()
    return {smiles: (None if reason is not None else tuple(strict)) for smiles, reason, strict in rows}


def gold_components(doc: Any, forms: dict[str, tuple[str, ...] | None]) -> Counter[str]:
    """The strict components of a gold figure's reactants and products, as a multiset."""
    found: Counter[str] = Counter()
    for rxn in doc.reactions:
        for mol in (*rxn.reactants, *rxn.products):
            found.update(forms.get(mol.smiles) or ())
    return found


def claim(components: tuple[str, ...] | None, pool: Counter[str]) -> bool:
    """Take ``components`` out of ``pool`` when all are there (a correct reading); else leave it."""
    if not components:
        return False
    need = Counter(components)
    if any(pool[k] < n for k, n in need.items()):
        return False
    pool.subtract(need)
    return True


def readings(docs: dict[str, Any]) -> list[tuple[str, Any]]:
    """``(figure id, molecule)`` of every reactant and product of the ``ok`` documents."""
    return [(figure_id, mol) for figure_id, doc in sorted(docs.items()) if doc.status == "ok"
            for rxn in doc.reactions for mol in (*rxn.reactants, *rxn.products)]


def reliability(con: DuckDBPyConnection, gold: str, pred: str, bins: int = CALIBRATION_BINS) -> dict[str, Any]:
    """Reliability table of the recognition confidences ``pred`` records (``Provenance.confidence``).

    Per reader (``Provenance.reader``, ``unrecorded`` when absent) and confidence bin (equal
    widths over [0, 1], the last closed): readings, correct ones, precision with its 95 %
    Wilson interval, mean confidence; and the expected calibration error
    Σ_b n_b / N · |precision_b − mean confidence_b|.  A reading is correct when its strict
    components are among the figure's gold reactant and product components not already
    claimed by a more confident reading of the same figure.  Only figures of status ``ok``
    count; molecules without a confidence are counted, not binned.
    """
    from labrecord.errors import LabrecordError
    from labrecord.scorers.metric import wilson

    if bins < 1:
        raise LabrecordError(f"--bins must be at least 1, got {bins}")
    forms = molecule_forms(con, [gold, pred])
    gold_docs, pred_docs = stored_documents(con, gold), stored_documents(con, pred)
    pools = {f: gold_components(doc, forms) for f, doc in gold_docs.items()}
    scored: dict[str, list[tuple[float, bool]]] = {}
    without = 0
    order = sorted(((f, m) for f, m in readings(pred_docs) if f in pools),
                   key=lambda fm: -(fm[1].provenance.confidence if fm[1].provenance and fm[1].provenance.confidence
                                    is not None else -1.0))
    for figure_id, mol in order:
        prov = mol.provenance
        if prov is None or prov.confidence is None:
            without += 1
            continue
        if not 0.0 <= prov.confidence <= 1.0:
            raise LabrecordError(f"system {pred!r} figure {figure_id!r}: confidence {prov.confidence!r} of "
                                 f"{mol.smiles!r} is outside [0, 1]")
        scored.setdefault(prov.reader or "unrecorded", []).append(
            (prov.confidence, claim(forms.get(mol.smiles), pools[figure_id])))
    readers = {}
    for reader, items in sorted(scored.items()):
        table: list[dict[str, Any]] = []
        total, ece = len(items), 0.0
        for b in range(bins):
            low, high = b / bins, (b + 1) / bins
            inside = [(c, ok) for c, ok in items if low <= c < high or (b == bins - 1 and c == 1.0)]
            n, correct = len(inside), sum(ok for _, ok in inside)
            precision = correct / n if n else None
            mean = sum(c for c, _ in inside) / n if n else None
            if precision is not None and mean is not None:
                ece += n / total * abs(precision - mean)
            table.append({"low": low, "high": high, "n": n, "correct": correct, "precision": precision,
                          "interval": wilson(correct, n), "mean_confidence": mean})
        readers[reader] = {"readings": total, "correct": sum(ok for _, ok in items), "ece": ece, "bins": table}
    return {"readers": readers, "without_confidence": without}
