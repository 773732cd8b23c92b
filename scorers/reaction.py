"""Reaction F1 (RxnMiner protocol, docs/design.md "Reaction records"), computed in DuckDB.

Inputs are the reaction tables of the corpus (declared in :mod:`labrecord.store.schema`,
filled by ``labrecord.chemdata``); this module only reads them from a connection: concrete
reactions, their reactant/product occurrences and, per distinct string, the canonical
components.  A reaction's *signature* is the sorted multiset of ``role:component`` keys of
its reactants and products; a reaction holding a molecule that is malformed or can never
match (wildcards, placeholders, Extended-SMILES) has no signature and matches nothing.

Per figure f, with G_f gold reactions and P_f predicted ones (malformed included):
    matched_f = sum over signatures s of min(#gold_f(s), #pred_f(s))
which is the size of an optimal one-to-one matching, because signature equality is an
equivalence relation.  P_f = matched_f / P_f, R_f = matched_f / G_f,
F1_f = 2 P R / (P + R) (0 when P + R = 0).  A figure whose prediction is missing, failed,
timed out or could not be converted scores 0 (P = R = F1 = 0).  The headline is the macro
mean of F1_f over the gold manifest (not the harmonic mean of macro P and macro R).
Molecule P/R/F1 pool the component occurrences of reactants and products per figure,
matched one-to-one regardless of role and reaction, and are macro-averaged the same way.
Both a strict (isomeric) and a stereo-blind variant are reported.

SQL computes the integer counts; :func:`summarize` turns counts into fractions in Python,
in figure order, so the SQL path and :func:`reference_counts` agree byte for byte.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from labrecord.errors import LabrecordError
from labrecord.safeio import excerpt

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

VARIANTS = ("strict", "nonstereo")


@dataclass(frozen=True)
class FigureCounts:
    """Integer counts of one gold figure against one system's prediction."""

    figure_id: str
    status: str            # ok | failed | timeout | malformed | missing
    n_gold: int
    n_pred: int
    matched_strict: int
    matched_nonstereo: int
    mol_gold: int
    mol_pred: int
    mol_matched_strict: int
    mol_matched_nonstereo: int
    layout: str | None = None


def prf(matched: int, n_gold: int, n_pred: int) -> tuple[float, float, float]:
    """(precision, recall, F1) of one figure; an empty denominator gives 0, never NaN."""
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _macro(rows: Sequence[tuple[float, float, float]]) -> dict[str, float]:
    return {"precision": _mean([r[0] for r in rows]), "recall": _mean([r[1] for r in rows]),
            "f1": _mean([r[2] for r in rows])}


def summarize(counts: Sequence[FigureCounts]) -> dict[str, Any]:
    """The score document: macro reaction P/R/F1 and molecule P/R/F1 (strict and
    stereo-blind) over the figures in ``counts`` (sorted by figure id), plus per-figure rows.

    Shape: ``{"figures": N, "macro": {"strict": {precision, recall, f1}, "nonstereo": …},
    "molecule": {…}, "per_figure": [{figure_id, n_gold, n_pred, matched_strict,
    matched_nonstereo, precision, recall, f1, status}]}``; per-figure P/R/F1 are strict.
    """
    ordered = sorted(counts, key=lambda c: c.figure_id)
    macro, molecule = {}, {}
    for variant in VARIANTS:
        macro[variant] = _macro([prf(getattr(c, f"matched_{variant}"), c.n_gold, c.n_pred) for c in ordered])
        molecule[variant] = _macro([prf(getattr(c, f"mol_matched_{variant}"), c.mol_gold, c.mol_pred) for c in ordered])
    per_figure = []
    for c in ordered:
        precision, recall, f1 = prf(c.matched_strict, c.n_gold, c.n_pred)
        per_figure.append({"figure_id": c.figure_id, "n_gold": c.n_gold, "n_pred": c.n_pred,
                           "matched_strict": c.matched_strict, "matched_nonstereo": c.matched_nonstereo,
                           "precision": precision, "recall": recall, "f1": f1, "status": c.status})
    return {"figures": len(ordered), "macro": macro, "molecule": molecule, "per_figure": per_figure}


def pooled(counts: Sequence[FigureCounts], variant: str = "strict") -> dict[str, float]:
    """Micro (pooled-count) reaction P/R/F1: a diagnostic that generally differs from macro."""
    matched = sum(getattr(c, f"matched_{variant}") for c in counts)
    p, r, f = prf(matched, sum(c.n_gold for c in counts), sum(c.n_pred for c in counts))
    return {"precision": p, "recall": r, "f1": f}


# --------------------------------------------------------------------------- SQL path

def _matched_cte(name: str, source: str, key: str) -> str:
    """One-to-one matching over multisets: per figure, Σ over keys of min(gold count, pred count)."""
    return (f"{name} AS (\n"
            f"    SELECT figure_id, sum(least(g, p)) AS m FROM (\n"
            f"        SELECT figure_id, {key}, count(*) FILTER (WHERE system = $gold) AS g,\n"
            f"               count(*) FILTER (WHERE system = $pred) AS p\n"
            f"        FROM {source} WHERE {key} IS NOT NULL GROUP BY figure_id, {key}) GROUP BY figure_id)")


_COUNTS_SQL = f"""
WITH gold_fig AS (
    SELECT figure_id, layout FROM rxn_figures WHERE system = $gold),
pred_fig AS (
    SELECT figure_id, status FROM rxn_figures WHERE system = $pred),
occ AS MATERIALIZED (  -- one row per reactant/product component occurrence; NULL keys never match
    SELECT m.system, m.figure_id, m.reaction_index, m.role,
           unnest(CASE WHEN s.reason IS NULL THEN s.strict ELSE [NULL] END) AS k_strict,
           unnest(CASE WHEN s.reason IS NULL THEN s.nonstereo ELSE [NULL] END) AS k_nonstereo
    FROM rxn_molecules m JOIN rxn_smiles s USING (smiles)
    WHERE m.system IN ($gold, $pred) AND m.role IN ('reactant', 'product')),
sig AS MATERIALIZED (
    SELECT r.system, r.figure_id, r.reaction_index,
           CASE WHEN count(o.role) = 0 OR bool_or(o.k_strict IS NULL) THEN NULL
                ELSE array_to_string(list_sort(list(o.role || ':' || o.k_strict)), ' ') END AS s_strict,
           CASE WHEN count(o.role) = 0 OR bool_or(o.k_nonstereo IS NULL) THEN NULL
                ELSE array_to_string(list_sort(list(o.role || ':' || o.k_nonstereo)), ' ') END AS s_nonstereo
    FROM rxn_reactions r LEFT JOIN occ o USING (system, figure_id, reaction_index)
    WHERE r.system IN ($gold, $pred)
    GROUP BY r.system, r.figure_id, r.reaction_index),
n_rxn AS (
    SELECT figure_id, count(*) FILTER (WHERE system = $gold) AS n_gold,
           count(*) FILTER (WHERE system = $pred) AS n_pred
    FROM sig GROUP BY figure_id),
n_mol AS (
    SELECT figure_id, count(*) FILTER (WHERE system = $gold) AS mol_gold,
           count(*) FILTER (WHERE system = $pred) AS mol_pred
    FROM occ GROUP BY figure_id),
{_matched_cte("rx_strict", "sig", "s_strict")},
{_matched_cte("rx_nonstereo", "sig", "s_nonstereo")},
{_matched_cte("mol_strict", "occ", "k_strict")},
{_matched_cte("mol_nonstereo", "occ", "k_nonstereo")}
SELECT gf.figure_id, coalesce(pf.status, 'missing') AS status,
       coalesce(n.n_gold, 0), coalesce(n.n_pred, 0),
       coalesce(rs.m, 0), coalesce(rn.m, 0),
       coalesce(nm.mol_gold, 0), coalesce(nm.mol_pred, 0),
       coalesce(ms.m, 0), coalesce(mn.m, 0), gf.layout
FROM gold_fig gf
LEFT JOIN pred_fig pf USING (figure_id)
LEFT JOIN n_rxn n USING (figure_id)
LEFT JOIN n_mol nm USING (figure_id)
LEFT JOIN rx_strict rs USING (figure_id)
LEFT JOIN rx_nonstereo rn USING (figure_id)
LEFT JOIN mol_strict ms USING (figure_id)
LEFT JOIN mol_nonstereo mn USING (figure_id)
ORDER BY gf.figure_id
"""


def figure_counts(con: DuckDBPyConnection, gold: str, pred: str, *, allow_empty: bool = False) -> list[FigureCounts]:
    """Per gold figure counts of system ``pred`` against gold set ``gold``, from the corpus.

    Predictions whose figure status is not ``ok`` keep their reaction counts but get no
    matches; a figure the system never produced is ``missing``.  ``allow_empty`` lets a
    system with no stored figures score (all missing) instead of being refused as a typo.
    """
    if gold == pred:
        raise LabrecordError(f"gold set and prediction are the same system {gold!r}")
    _require_system(con, gold)
    if not allow_empty:
        _require_system(con, pred)
    rows = con.execute(_COUNTS_SQL, {"gold": gold, "pred": pred}).fetchall()
    counts = []
    for row in rows:
        figure_id, status, n_gold, n_pred, rs, rn, mg, mp, ms, mn, layout = row
        if status != "ok":
            rs = rn = ms = mn = 0
        counts.append(FigureCounts(figure_id, status, int(n_gold), int(n_pred), int(rs), int(rn),
                                   int(mg), int(mp), int(ms), int(mn), layout))
    _require_gold_reactions(counts, gold)
    return counts


def _require_system(con: DuckDBPyConnection, system: str) -> None:
    found = con.execute("SELECT count(*) FROM rxn_figures WHERE system = ?", [system]).fetchall()[0][0]
    if not found:
        names = [r[0] for r in con.execute("SELECT DISTINCT system FROM rxn_figures ORDER BY 1").fetchall()]
        raise LabrecordError(f"no figures of system {system!r} in the corpus (systems: {', '.join(names) or 'none'})")


def _require_gold_reactions(counts: Sequence[FigureCounts], gold: str) -> None:
    """Recall is undefined for a gold figure without concrete reactions: refuse it."""
    for c in counts:
        if c.n_gold == 0:
            raise LabrecordError(f"gold figure {c.figure_id!r} of {gold!r} has no concrete reactions; "
                                 "recall is undefined — remove it from the gold set or annotate it")


def score_db(con: DuckDBPyConnection, gold: str, pred: str, by: str | None = None, *, allow_empty: bool = False) -> dict[str, Any]:
    """Score system ``pred`` against gold set ``gold`` stored in the corpus ``con``.

    ``by="layout"`` returns ``{"groups": {layout: summary}}`` next to the overall summary.
    """
    counts = figure_counts(con, gold, pred, allow_empty=allow_empty)
    result = summarize(counts)
    if by == "layout":
        groups: dict[str, list[FigureCounts]] = {}
        for c in counts:
            groups.setdefault(c.layout or "(none)", []).append(c)
        result = {**result, "groups": {name: summarize(rows) for name, rows in sorted(groups.items())}}
    return result


# --------------------------------------------------------------------------- reference path

class CanonicalLike(Protocol):
    strict: tuple[str, ...]
    nonstereo: tuple[str, ...]
    reason: str | None


#: a reaction as two lists of canonical forms: (reactants, products)
ReactionForms = tuple[Sequence[CanonicalLike], Sequence[CanonicalLike]]


def _signature(reaction: ReactionForms, variant: str) -> tuple[str, ...] | None:
    keys: list[str] = []
    for role, forms in (("reactant", reaction[0]), ("product", reaction[1])):
        for form in forms:
            if form.reason is not None:
                return None
            keys.extend(f"{role}:{k}" for k in getattr(form, variant))
    return tuple(sorted(keys)) if keys else None


def _occurrences(reactions: Iterable[ReactionForms], variant: str) -> tuple[int, Counter[str]]:
    total, keys = 0, Counter[str]()
    for reactants, products in reactions:
        for form in (*reactants, *products):
            if form.reason is not None:
                total += 1
                continue
            parts = getattr(form, variant)
            total += len(parts)
            keys.update(parts)
    return total, keys


def _matched_count(gold: Counter[Any], pred: Counter[Any]) -> int:
    return sum(min(n, pred[key]) for key, n in gold.items() if key is not None)


def reference_counts(gold: Mapping[str, Sequence[ReactionForms]],
                     pred: Mapping[str, tuple[str, Sequence[ReactionForms]]]) -> list[FigureCounts]:
    """Pure-Python twin of :func:`figure_counts` used by the property tests.

    ``gold``: figure id -> reactions; ``pred``: figure id -> (status, reactions).
    """
    counts = []
    for figure_id in sorted(gold):
        g_rxns = gold[figure_id]
        status, p_rxns = pred.get(figure_id, ("missing", []))
        values: dict[str, Any] = {}
        for variant in VARIANTS:
            gs = Counter(_signature(r, variant) for r in g_rxns)
            ps = Counter(_signature(r, variant) for r in p_rxns)
            mol_gold, gk = _occurrences(g_rxns, variant)
            mol_pred, pk = _occurrences(p_rxns, variant)
            ok = status == "ok"
            values[f"matched_{variant}"] = _matched_count(gs, ps) if ok else 0
            values[f"mol_matched_{variant}"] = _matched_count(gk, pk) if ok else 0
            values["mol_gold"], values["mol_pred"] = mol_gold, mol_pred
        counts.append(FigureCounts(figure_id=figure_id, status=status, n_gold=len(g_rxns), n_pred=len(p_rxns),
                                   **values))
    return counts


# --------------------------------------------------------------------------- diagnostics

def extra_figures(con: DuckDBPyConnection, gold: str, pred: str) -> list[str]:
    """Figures system ``pred`` produced that are not in the gold manifest (never scored)."""
    return [r[0] for r in con.execute(
        "SELECT figure_id FROM rxn_figures WHERE system = ? EXCEPT SELECT figure_id FROM rxn_figures WHERE system = ? "
        "ORDER BY 1", [pred, gold]).fetchall()]


def unmatchable_gold(con: DuckDBPyConnection, gold: str) -> list[str]:
    """One line per gold reaction no prediction can ever match: a reactant or product that
    is unparsable, a wildcard (``*``) or an R-group placeholder (``[Rf]``, ``R1``)."""
    rows = con.execute(
        "SELECT m.figure_id, m.reaction_index, any_value(m.role ORDER BY m.role, m.position), "
        "any_value(m.smiles ORDER BY m.role, m.position), any_value(coalesce(s.reason, s.status) ORDER BY m.role, m.position) "
        "FROM rxn_molecules m LEFT JOIN rxn_smiles s USING (smiles) "
        "WHERE m.system = ? AND m.role IN ('reactant', 'product') AND coalesce(s.status, 'malformed') <> 'ok' "
        "GROUP BY m.figure_id, m.reaction_index ORDER BY m.figure_id, m.reaction_index", [gold]).fetchall()
    return [f"gold {figure} reaction {index}: can never match ({role} {excerpt(smiles, 60)!r}: {excerpt(reason or 'unparsable', 80)})"
            for figure, index, role, smiles, reason in rows]

