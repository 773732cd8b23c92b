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

Scoring profiles (:class:`Profile`, docs/reactions.md "Scoring profiles") score the same
pair under other matching rules over the same gold figures: ``strict`` and ``stereo-blind``
are the two SQL variants; ``inchi`` and ``roles-lenient`` pair reactions by exact keys in
Python (:func:`exact_pairs`); ``tanimoto:T`` pairs them by a maximum one-to-one matching
over fingerprint similarity (:func:`similarity_pairs`, :func:`max_matching`).  The summary
carries the :func:`coverage` of the gold figures, and :func:`profile_summary` an
answered-only number only under its own key.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from itertools import permutations
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

    Shape: ``{"figures": N, "coverage": {…}, "macro": {"strict": {precision, recall, f1}, "nonstereo": …},
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
    return {"figures": len(ordered), "coverage": coverage(ordered), "macro": macro, "molecule": molecule,
            "per_figure": per_figure}


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
mol AS MATERIALIZED (  -- one row per reactant/product occurrence; ok: its string has components
    SELECT m.system, m.figure_id, m.reaction_index, m.role = 'product' AS product, m.smiles, s.reason IS NULL AS ok
    FROM rxn_molecules m JOIN rxn_smiles s USING (smiles)
    WHERE m.system IN ($gold, $pred) AND m.role IN ('reactant', 'product')),
comp AS MATERIALIZED (  -- the components of each distinct string in use (strict and stereo-blind)
    SELECT smiles, unnest(strict) AS k_strict, unnest(nonstereo) AS k_nonstereo
    FROM rxn_smiles WHERE reason IS NULL AND smiles IN (SELECT smiles FROM mol)),
kid AS MATERIALIZED (  -- each distinct component key numbered, so signatures sort integers, not strings
    SELECT k, (row_number() OVER ())::INTEGER AS id
    FROM (SELECT k_strict AS k FROM comp UNION SELECT k_nonstereo FROM comp)),
sid AS MATERIALIZED (  -- per distinct string its key numbers: joined once per string, not per occurrence
    SELECT c.smiles, list(a.id) AS i_strict, list(b.id) AS i_nonstereo
    FROM comp c JOIN kid a ON a.k = c.k_strict JOIN kid b ON b.k = c.k_nonstereo GROUP BY c.smiles),
occ AS MATERIALIZED (  -- one row per component occurrence; NULL keys never match
    SELECT m.system, m.figure_id, m.reaction_index, m.product,
           unnest(CASE WHEN m.ok THEN x.i_strict ELSE [NULL] END) AS k_strict,
           unnest(CASE WHEN m.ok THEN x.i_nonstereo ELSE [NULL] END) AS k_nonstereo
    FROM mol m LEFT JOIN sid x USING (smiles)),
sig AS MATERIALIZED (  -- a reaction's signature: its key numbers, negative for a product, sorted
    SELECT r.system, r.figure_id, r.reaction_index,
           CASE WHEN count(o.product) = 0 OR bool_or(o.k_strict IS NULL) THEN NULL
                ELSE list_sort(list(CASE WHEN o.product THEN -o.k_strict ELSE o.k_strict END)) END AS s_strict,
           CASE WHEN count(o.product) = 0 OR bool_or(o.k_nonstereo IS NULL) THEN NULL
                ELSE list_sort(list(CASE WHEN o.product THEN -o.k_nonstereo ELSE o.k_nonstereo END)) END AS s_nonstereo
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


def score_db(con: DuckDBPyConnection, gold: str, pred: str, by: str | None = None, *, allow_empty: bool = False,
             counts: list[FigureCounts] | None = None) -> dict[str, Any]:
    """Score system ``pred`` against gold set ``gold`` stored in the corpus ``con``.

    ``by="layout"`` returns ``{"groups": {layout: summary}}`` next to the overall summary.
    ``counts`` are :func:`figure_counts` already computed for this pair (not read again).
    """
    counts = counts if counts is not None else figure_counts(con, gold, pred, allow_empty=allow_empty)
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



# --------------------------------------------------------------------------- profiles

#: the threshold ``--profile all`` uses for ``tanimoto:T``
ALL_TANIMOTO = 0.85
PROFILE_KINDS = ("strict", "stereo-blind", "inchi", "tanimoto", "roles-lenient")


@dataclass(frozen=True)
class Profile:
    """One named matching rule (docs/reactions.md, "Scoring profiles").

    ``kind`` is one of :data:`PROFILE_KINDS`; ``threshold`` is the Tanimoto cut-off of
    ``tanimoto:T``.  Every profile compares components of the normalized molecules
    (counter-ions dropped, salts split); they differ in the component key, in whether
    molecules pair by equality or by similarity, and in which side condition molecules sit.
    """

    kind: str
    threshold: float | None = None

    @property
    def name(self) -> str:
        return f"tanimoto:{self.threshold:g}" if self.kind == "tanimoto" else self.kind

    @property
    def column(self) -> str:
        """The stored component key this profile starts from."""
        return "nonstereo" if self.kind == "stereo-blind" else "strict"

    @property
    def conditions_with_reactants(self) -> bool:
        return self.kind == "roles-lenient"


def parse_profile(text: str) -> Profile:
    """``strict``, ``stereo-blind``, ``inchi``, ``tanimoto:T`` (0 < T <= 1) or ``roles-lenient``."""
    kind, sep, value = text.strip().partition(":")
    if kind == "tanimoto":
        try:
            threshold = float(value)
        except ValueError:
            threshold = float("nan")
        if not sep or not 0.0 < threshold <= 1.0:
            raise LabrecordError(f"profile {text!r}: tanimoto needs a threshold in (0, 1], e.g. tanimoto:0.85")
        return Profile("tanimoto", threshold)
    if sep or kind not in PROFILE_KINDS:
        raise LabrecordError(f"unknown profile {text!r} (known: strict, stereo-blind, inchi, tanimoto:T, "
                             "roles-lenient, all)")
    return Profile(kind)


def expand_profiles(names: Iterable[str]) -> list[Profile]:
    """Parsed profiles in the order given, ``all`` standing for every kind (``tanimoto`` at
    :data:`ALL_TANIMOTO`); repeats are kept once."""
    found: list[Profile] = []
    for name in names:
        parsed = ([Profile(k, ALL_TANIMOTO if k == "tanimoto" else None) for k in PROFILE_KINDS]
                  if name.strip() == "all" else [parse_profile(name)])
        found.extend(p for p in parsed if p not in found)
    return found


#: one side of a reaction: component keys, ``None`` for a molecule that can never match
Side = tuple[str | None, ...]
#: a reaction as (left side, products); the left side holds reactants (and, under
#: ``roles-lenient``, condition molecules)
SideReaction = tuple[Side, Side]
#: a one-to-one pairing: (gold index, predicted index, similarity)
Pairs = list[tuple[int, int, float]]


def _exact_signature(reaction: SideReaction) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    left, right = reaction
    if not (left or right) or None in left or None in right:
        return None
    return tuple(sorted(left)), tuple(sorted(right))  # type: ignore[arg-type]


def exact_pairs(gold: Sequence[SideReaction], pred: Sequence[SideReaction]) -> Pairs:
    """Reactions paired one-to-one by equal signature (the i-th gold copy of a signature with
    its i-th predicted copy); ``len`` is Σ min(#gold(s), #pred(s))."""
    waiting: dict[Any, list[int]] = {}
    for j, reaction in enumerate(pred):
        signature = _exact_signature(reaction)
        if signature is not None:
            waiting.setdefault(signature, []).append(j)
    pairs: Pairs = []
    for i, reaction in enumerate(gold):
        queue = waiting.get(_exact_signature(reaction))
        if queue:
            pairs.append((i, queue.pop(0), 1.0))
    return pairs


def max_matching(sim: Any, allowed: Any) -> Pairs:
    """A maximum-cardinality one-to-one matching over the ``allowed`` cells of ``sim``
    (rows × columns), of highest total similarity among those of maximum size.

    Each allowed cell weighs ``B + sim`` with ``B = min(rows, cols) + 1`` and a forbidden
    one 0, so any matching with k allowed pairs outweighs every matching with k - 1 (their
    weights differ by at least B - (k - 1) > 0); ``scipy.optimize.linear_sum_assignment``
    then finds the heaviest, and only its allowed cells are kept.
    """
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    sim = np.asarray(sim, dtype=np.float64)
    allowed = np.asarray(allowed, dtype=bool)
    if sim.size == 0 or not allowed.any():
        return []
    big = min(sim.shape) + 1.0
    weight = np.where(allowed, big + sim, 0.0)
    rows, cols = linear_sum_assignment(weight, maximize=True)
    return [(int(i), int(j), float(sim[i, j])) for i, j in zip(rows, cols) if allowed[i, j]]


class FingerprintTable:
    """Fingerprints of component keys packed once: ``rows`` maps a key to a 0/1 row.

    Similarities are counted on the packed bits (popcount of the AND), which on a shared
    machine is an order of magnitude quicker than a dense float product."""

    def __init__(self, rows: Mapping[str, Any]) -> None:
        import numpy as np

        self.index = {k: i for i, k in enumerate(rows)}
        dense = np.asarray(list(rows.values()), dtype=bool) if rows else np.zeros((0, 8), dtype=bool)
        self.packed = np.packbits(dense, axis=1)
        self.counts = dense.sum(axis=1).astype(np.float64)

    def similarities(self, a: Sequence[str], b: Sequence[str]) -> Any:
        """Tanimoto matrix of keys ``a`` against keys ``b``: shared set bits over bits set in
        either.  Hand check: bits {0, 1, 2} against {1, 2, 3} share 2 of 4 set bits, 0.5."""
        import numpy as np

        ia = [self.index[k] for k in a]
        ib = [self.index[k] for k in b]
        if not ia or not ib:
            return np.zeros((len(ia), len(ib)))
        both = self.packed[ia][:, None, :] & self.packed[ib][None, :, :]
        inter = (np.bitwise_count(both) if hasattr(np, "bitwise_count") else _POPCOUNT[both]).sum(axis=2, dtype=np.float64)
        union = self.counts[ia][:, None] + self.counts[ib][None, :] - inter
        return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def _popcount_table() -> Any:
    import numpy as np

    return np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


_POPCOUNT = _popcount_table()


class Similarity:
    """Tanimoto similarity between component keys of one figure: the matrix of every gold key
    against every predicted key is computed once, from a :class:`FingerprintTable`."""

    def __init__(self, gold_keys: Sequence[str], pred_keys: Sequence[str], fingerprints: Any) -> None:
        table = fingerprints if isinstance(fingerprints, FingerprintTable) else FingerprintTable(fingerprints)
        self.gold_index = {k: i for i, k in enumerate(gold_keys)}
        self.pred_index = {k: i for i, k in enumerate(pred_keys)}
        self.matrix = table.similarities(gold_keys, pred_keys)
        self.rows = self.matrix.tolist()

    def __call__(self, g: str, p: str) -> float:
        if g == p:
            return 1.0
        return float(self.rows[self.gold_index[g]][self.pred_index[p]])


def _side_similarity(gold: Side, pred: Side, sim: Similarity, threshold: float) -> float | None:
    """Mean similarity of the best complete pairing of two sides with every pair ≥ threshold,
    or None when no complete pairing exists (different sizes, a molecule that can never match).

    Up to three molecules a side, every pairing is tried; larger sides go to
    :func:`max_matching` (the same optimum)."""
    import numpy as np

    n = len(gold)
    if n != len(pred) or None in gold or None in pred:
        return None
    if n == 0:
        return 1.0
    if n == 1:
        value = sim(gold[0], pred[0])  # type: ignore[arg-type]
        return value if value >= threshold else None
    matrix = [[sim(g, p) for p in pred] for g in gold]  # type: ignore[arg-type]
    if n <= 3:
        best = None
        for order in permutations(range(n)):
            values = [matrix[i][j] for i, j in enumerate(order)]
            if min(values) >= threshold and (best is None or sum(values) > best):
                best = sum(values)
        return None if best is None else best / n
    array = np.array(matrix)
    pairs = max_matching(array, array >= threshold)
    if len(pairs) < n:
        return None
    return sum(s for _, _, s in pairs) / n


def similarity_pairs(gold: Sequence[SideReaction], pred: Sequence[SideReaction], sim: Similarity,
                     threshold: float) -> Pairs:
    """Reactions paired under ``tanimoto:T``: a gold and a predicted reaction can pair when
    each side's molecules pair one-to-one with Tanimoto ≥ T (their similarity: the mean over
    both sides' pairs); the figure's reactions then pair by :func:`max_matching`."""
    import numpy as np

    if not gold or not pred:
        return []
    matrix = np.zeros((len(gold), len(pred)))
    allowed = np.zeros((len(gold), len(pred)), dtype=bool)
    for i, g in enumerate(gold):
        if not (g[0] or g[1]):
            continue
        for j, p in enumerate(pred):
            right = _side_similarity(g[1], p[1], sim, threshold)
            left = _side_similarity(g[0], p[0], sim, threshold) if right is not None else None
            if left is not None and right is not None:
                n_left, n_right = len(g[0]), len(g[1])
                matrix[i, j] = (left * n_left + right * n_right) / (n_left + n_right)
                allowed[i, j] = True
    return max_matching(matrix, allowed)


def molecule_matched(gold: Sequence[SideReaction], pred: Sequence[SideReaction], profile: Profile,
                     sim: Similarity | None = None) -> int:
    """Pooled component occurrences of a figure matched one-to-one regardless of role."""
    import numpy as np

    g = [k for left, right in gold for k in (*left, *right) if k is not None]
    p = [k for left, right in pred for k in (*left, *right) if k is not None]
    if profile.kind != "tanimoto":
        return _matched_count(Counter(g), Counter(p))
    if not g or not p or sim is None:
        return 0
    matrix = sim.matrix[np.ix_([sim.gold_index[k] for k in g], [sim.pred_index[k] for k in p])]
    exact = np.array(g, dtype=object)[:, None] == np.array(p, dtype=object)[None, :]
    matrix = np.where(exact, 1.0, matrix)
    assert profile.threshold is not None
    return len(max_matching(matrix, matrix >= profile.threshold))


@dataclass(frozen=True)
class ProfileCounts:
    """Integer counts of one gold figure under one profile."""

    figure_id: str
    status: str
    n_gold: int
    n_pred: int
    matched: int
    mol_gold: int
    mol_pred: int
    mol_matched: int
    layout: str | None = None


def _mol_total(reactions: Sequence[SideReaction]) -> int:
    return sum(len(left) + len(right) for left, right in reactions)


def figure_pairs(gold: Sequence[SideReaction], pred: Sequence[SideReaction], profile: Profile,
                 sim: Similarity | None = None) -> Pairs:
    """The one-to-one pairing of a figure's reactions under ``profile``."""
    if profile.kind == "tanimoto":
        assert sim is not None and profile.threshold is not None
        return similarity_pairs(gold, pred, sim, profile.threshold)
    return exact_pairs(gold, pred)


def similarity_for(gold: Sequence[SideReaction], pred: Sequence[SideReaction],
                   fingerprints: FingerprintTable | Mapping[str, Any]) -> Similarity:
    """The :class:`Similarity` of one figure's gold and predicted keys."""
    g = sorted({k for left, right in gold for k in (*left, *right) if k is not None})
    p = sorted({k for left, right in pred for k in (*left, *right) if k is not None})
    return Similarity(g, p, fingerprints)


def count_profile(base: Sequence[FigureCounts], gold: Mapping[str, Sequence[SideReaction]],
                  pred: Mapping[str, Sequence[SideReaction]], profile: Profile,
                  fingerprints: FingerprintTable | Mapping[str, Any] | None = None) -> list[ProfileCounts]:
    """Per-figure counts under ``profile`` from the figures' reactions as component keys
    (``gold``/``pred``: figure id -> reactions in document order).  ``base`` gives each gold
    figure's status and reaction counts; a figure whose status is not ``ok`` matches nothing.
    ``fingerprints`` (a :class:`FingerprintTable`, or key -> 0/1 row) is needed by ``tanimoto``."""
    if fingerprints is not None and not isinstance(fingerprints, FingerprintTable):
        fingerprints = FingerprintTable(fingerprints)
    counts = []
    for c in base:
        g, p = gold.get(c.figure_id, []), pred.get(c.figure_id, [])
        matched = mol_matched = 0
        if c.status == "ok" and p:
            sim = None
            if profile.kind == "tanimoto":
                if fingerprints is None:
                    raise LabrecordError("profile tanimoto needs molecule fingerprints")
                sim = similarity_for(g, p, fingerprints)
            matched = len(figure_pairs(g, p, profile, sim))
            mol_matched = molecule_matched(g, p, profile, sim)
        counts.append(ProfileCounts(c.figure_id, c.status, c.n_gold, c.n_pred, matched, _mol_total(g),
                                    _mol_total(p), mol_matched, c.layout))
    return counts


def from_figure_counts(base: Sequence[FigureCounts], profile: Profile) -> list[ProfileCounts]:
    """``strict`` and ``stereo-blind`` counts straight from the SQL path."""
    variant = "nonstereo" if profile.kind == "stereo-blind" else "strict"
    return [ProfileCounts(c.figure_id, c.status, c.n_gold, c.n_pred, getattr(c, f"matched_{variant}"), c.mol_gold,
                          c.mol_pred, getattr(c, f"mol_matched_{variant}"), c.layout) for c in base]


_SIDE_SQL = """
SELECT m.system, m.figure_id, m.reaction_index, m.role, s.reason, s.strict, s.nonstereo
FROM rxn_molecules m JOIN rxn_smiles s USING (smiles)
WHERE m.system IN ($gold, $pred) AND (m.role IN ('reactant', 'product') OR $conditions)
ORDER BY m.system, m.figure_id, m.reaction_index, m.role, m.position
"""


def side_reactions(con: DuckDBPyConnection, gold: str, pred: str, profile: Profile,
                   key_map: Mapping[str, str | None] | None = None) -> dict[str, dict[str, list[SideReaction]]]:
    """``{system: {figure id: reactions}}`` of both systems as component keys of ``profile``.

    A molecule that is malformed or unmatchable is one ``None`` component; ``key_map``
    (strict key -> profile key, ``None`` for none) rewrites keys (``inchi``).
    """
    column = 5 if profile.column == "strict" else 6
    shape = con.execute("SELECT system, figure_id, reaction_index FROM rxn_reactions WHERE system IN (?, ?) "
                        "ORDER BY system, figure_id, reaction_index", [gold, pred]).fetchall()
    sides: dict[tuple[str, str, int], tuple[list[str | None], list[str | None]]] = {
        (s, f, i): ([], []) for s, f, i in shape}
    rows = con.execute(_SIDE_SQL, {"gold": gold, "pred": pred, "conditions": profile.conditions_with_reactants})
    for row in rows.fetchall():
        left, right = sides[(row[0], row[1], row[2])]
        target = right if row[3] == "product" else left
        if row[4] is not None:
            target.append(None)
        elif key_map is None:
            target.extend(row[column])
        else:
            target.extend(key_map.get(k) for k in row[column])
    out: dict[str, dict[str, list[SideReaction]]] = {gold: {}, pred: {}}
    for (system, figure_id, _), (left, right) in sides.items():
        out[system].setdefault(figure_id, []).append((tuple(left), tuple(right)))
    return out


def coverage(counts: Sequence[Any]) -> dict[str, int]:
    """The denominator, shown: of the gold figures, how many the system ``answered`` (status
    ok, at least one reaction), ``refused`` (status ok, no reaction), ``timed_out``, and
    ``failed`` (a failed or malformed run, or no prediction at all — ``missing``, also
    counted on its own)."""
    out = {"figures": len(counts), "answered": 0, "refused": 0, "timed_out": 0, "failed": 0, "missing": 0}
    for c in counts:
        if c.status == "ok":
            out["answered" if c.n_pred else "refused"] += 1
        elif c.status == "timeout":
            out["timed_out"] += 1
        else:
            out["failed"] += 1
            out["missing"] += c.status == "missing"
    return out


def answered(c: Any) -> bool:
    """The figures an answered-only number keeps."""
    return bool(c.status == "ok" and c.n_pred)


def profile_summary(counts: Sequence[ProfileCounts], *, answered_only: bool = False) -> dict[str, Any]:
    """Macro and micro reaction P/R/F1 and macro molecule P/R/F1 of one profile over all gold
    figures; with ``answered_only`` also the same over the answered figures, under its own
    key (never in place of the headline)."""
    ordered = sorted(counts, key=lambda c: c.figure_id)
    matched = sum(c.matched for c in ordered)
    p, r, f = prf(matched, sum(c.n_gold for c in ordered), sum(c.n_pred for c in ordered))
    out: dict[str, Any] = {
        "macro": _macro([prf(c.matched, c.n_gold, c.n_pred) for c in ordered]),
        "micro": {"precision": p, "recall": r, "f1": f},
        "molecule": _macro([prf(c.mol_matched, c.mol_gold, c.mol_pred) for c in ordered]),
    }
    if answered_only:
        kept = [c for c in ordered if answered(c)]
        out["answered_only"] = {"figures": len(kept),
                                "macro": _macro([prf(c.matched, c.n_gold, c.n_pred) for c in kept])}
    return out
