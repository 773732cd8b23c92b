"""Scoring figure documents end to end: read, canonicalize and store them, then score.

The reaction scorer (:mod:`labrecord.scorers.reaction`) reads a corpus connection only;
this module is the orchestration around it — reading documents with the adapters,
ingesting them (:func:`labrecord.chemdata.store.ingest_documents`) into a corpus
(:func:`labrecord.store.connect`, in memory unless a file is named) and calling the
scorer.  ``labrecord rxn score`` is :func:`score_paths`.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labrecord.errors import LabrecordError
from labrecord.chemdata.stats import reliability, stored_documents
from labrecord.chemdata.store import ingest_documents, ingest_sets
from labrecord.scorers.reaction import (
    FigureCounts, FingerprintTable, Profile, SideReaction, count_profile, expand_profiles, extra_figures, figure_counts,
    figure_pairs, from_figure_counts, parse_profile, prf, profile_summary, score_db, side_reactions, similarity_for, unmatchable_gold,
)
from labrecord.store import connect
from labrecord.store.schema import RXN_TABLES

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: Morgan fingerprint of the ``tanimoto`` profile
MORGAN_RADIUS = 2
MORGAN_BITS = 2048


def score_documents(gold: Sequence[Any], pred: Sequence[Any], *, by: str | None = None,
                    con: DuckDBPyConnection | None = None, profiles: Sequence[str] = (), answered_only: bool = False,
                    rows: str | None = None) -> dict[str, Any]:
    """Score figure documents (``labrecord.models.rxn.FigureDocument``) end to end.

    Both sets are ingested into ``con`` (when None, a fresh in-memory corpus holding the
    reaction tables alone) and scored there with
    :func:`~labrecord.scorers.reaction.score_db`.  ``pred`` must hold one
    system; ``by="system"`` is handled by the caller (one call per system).  ``profiles``,
    ``answered_only`` and ``rows`` add the sections of :func:`score_paths`.
    """
    gold_names = {d.system for d in gold}
    pred_names = {d.system for d in pred}
    if len(gold_names) != 1:
        raise LabrecordError(f"gold documents name {len(gold_names)} systems ({', '.join(sorted(gold_names))}); expected one")
    if len(pred_names) > 1:
        raise LabrecordError(f"predictions hold several systems ({', '.join(sorted(pred_names))}); score them one at a time")
    gold_name = next(iter(gold_names))
    pred_name = next(iter(pred_names), f"{gold_name}~no-predictions")
    if gold_name == pred_name:
        raise LabrecordError(f"gold set and prediction are the same system {gold_name!r}")
    con = con or connect(tables=RXN_TABLES)
    ingest_sets(con, [(gold, True), (pred, False)])
    counts = figure_counts(con, gold_name, pred_name, allow_empty=not pred)
    result = score_db(con, gold_name, pred_name, by=by, counts=counts)
    if profiles or rows is not None:
        inputs = ProfileInputs(con, gold_name, pred_name, base=counts)
        if profiles:
            result["profiles"] = score_profiles(con, gold_name, pred_name, profiles, answered_only=answered_only,
                                                inputs=inputs)
        if rows is not None:
            result["rows"] = template_rows(con, gold_name, pred_name, rows, inputs=inputs)
    return result


def score_paths(gold: str, preds: Sequence[str], *, db: str | None = None, by: str | None = None,
                warn: Callable[[str], None] | None = None, profiles: Sequence[str] = (),
                answered_only: bool = False, rows: str | None = None,
                calibration: int | None = None) -> dict[str, dict[str, Any]]:
    """``{system: summary}`` for ``labrecord rxn score``.

    ``gold`` and each of ``preds`` is a file or folder of documents (read by the
    adapters and ingested into ``db``, in memory when None) or, with
    ``db``, the name of a system already stored there.  More than one prediction system
    needs ``by="system"``; ``by="layout"`` adds per-layout groups to each summary.
    ``warn`` receives a line for each system with figures outside the gold manifest
    (usually a figure-id mismatch; those figures are not scored).  ``profiles`` (names for
    :func:`~labrecord.scorers.reaction.expand_profiles`) adds ``"profiles"`` to each summary
    (:func:`score_profiles`); ``rows`` (a profile name) adds the R-group row report
    (:func:`template_rows`); ``calibration`` (a number of bins) adds the reliability table
    of recorded confidences (:func:`labrecord.chemdata.stats.reliability`).
    """
    con = connect(db, locked=True, tables=RXN_TABLES if db is None else None)
    try:
        gold_name = _resolve_gold(con, gold, db)
        systems: dict[str, bool] = {}
        for pred in preds:
            systems.update(_resolve_pred(con, pred, db))
        if len(systems) > 1 and by != "system":
            raise LabrecordError(f"predictions hold {len(systems)} systems ({', '.join(sorted(systems))}); "
                                 "pass --by system or name one system")
        layout = "layout" if by == "layout" else None
        counts = {name: figure_counts(con, gold_name, name, allow_empty=empty) for name, empty in sorted(systems.items())}
        results = {name: score_db(con, gold_name, name, by=layout, counts=counts[name]) for name in counts}
        for name in results:
            inputs = ProfileInputs(con, gold_name, name, base=counts[name]) if profiles or rows is not None else None
            if profiles:
                results[name]["profiles"] = score_profiles(con, gold_name, name, profiles, answered_only=answered_only,
                                                           inputs=inputs)
            if rows is not None:
                results[name]["rows"] = template_rows(con, gold_name, name, rows, inputs=inputs)
            if calibration is not None:
                results[name]["calibration"] = reliability(con, gold_name, name, calibration)
        for name in results:
            extra = extra_figures(con, gold_name, name)
            if extra and warn is not None:
                shown = ", ".join(extra[:5]) + (" …" if len(extra) > 5 else "")
                warn(f"{name}: {len(extra)} figure(s) not in the gold manifest were not scored: {shown}")
        if warn is not None:
            for line in unmatchable_gold(con, gold_name):
                warn(line)
        return results
    finally:
        con.close()


def _resolve_gold(con: DuckDBPyConnection, gold: str, db: str | None) -> str:
    from labrecord.chemdata.adapters import load_documents

    if Path(gold).exists():
        docs = load_documents(gold, gold=True)
        names = sorted({d.system for d in docs})
        if len(names) != 1:
            raise LabrecordError(f"{gold}: gold documents name {len(names)} systems ({', '.join(names) or 'none'}); expected one")
        ingest_documents(con, docs, gold=True)
        return names[0]
    if db is None:
        raise LabrecordError(f"{gold}: no such file or folder (a gold set name needs --db)")
    return gold


def _resolve_pred(con: DuckDBPyConnection, pred: str, db: str | None) -> dict[str, bool]:
    """``{system name: has no documents}`` for one ``--pred`` value."""
    from labrecord.chemdata.adapters import load_documents

    path = Path(pred)
    if path.exists():
        docs = load_documents(pred)
        if not docs:
            return {path.stem if path.is_file() else path.name: True}
        ingest_documents(con, docs, gold=False)
        return {name: False for name in {d.system for d in docs}}
    if db is None:
        raise LabrecordError(f"{pred}: no such file or folder (a system name needs --db)")
    return {pred: False}


# --------------------------------------------------------------------------- profiles

def strict_keys(con: DuckDBPyConnection, systems: Sequence[str]) -> list[str]:
    """Distinct strict component keys of the molecules (conditions included) of ``systems``."""
    rows = con.execute("SELECT DISTINCT unnest(s.strict) FROM rxn_molecules m JOIN rxn_smiles s USING (smiles) "
                       "WHERE m.system IN (SELECT unnest(?)) AND s.reason IS NULL", [list(systems)]).fetchall()
    return sorted(r[0] for r in rows)


def inchi_keys(keys: Sequence[str]) -> dict[str, str | None]:
    """Standard InChI of each canonical component (``None`` where RDKit's InChI writer gives
    none: such a component never matches under ``inchi``)."""
    from rdkit import Chem, rdBase

    rdBase.DisableLog("rdApp.*")
    out: dict[str, str | None] = {}
    for key in keys:
        mol = Chem.MolFromSmiles(key)
        text = Chem.MolToInchi(mol) if mol is not None else ""
        out[key] = text or None
    return out


def morgan_fingerprints(keys: Sequence[str]) -> dict[str, Any]:
    """Morgan fingerprint (radius 2, 2048 bits, no chirality) of each canonical component as
    a 0/1 ``uint8`` row."""
    import numpy as np
    from rdkit import Chem, rdBase
    from rdkit.Chem import rdFingerprintGenerator

    rdBase.DisableLog("rdApp.*")
    generator = rdFingerprintGenerator.GetMorganGenerator(radius=MORGAN_RADIUS, fpSize=MORGAN_BITS)
    out = {}
    for key in keys:
        mol = Chem.MolFromSmiles(key)
        out[key] = (generator.GetFingerprintAsNumPy(mol).astype(np.uint8) if mol is not None
                    else np.zeros(MORGAN_BITS, dtype=np.uint8))
    return out


class ProfileInputs:
    """What the profiles of one (gold, prediction) pair need, computed once and shared: the
    per-figure counts of the SQL path, the figures' reactions as keys per profile family, the
    InChI map and fingerprints."""

    def __init__(self, con: DuckDBPyConnection, gold: str, pred: str, *, allow_empty: bool = False,
                 base: list[FigureCounts] | None = None) -> None:
        self.con, self.gold, self.pred = con, gold, pred
        self.base = base if base is not None else figure_counts(con, gold, pred, allow_empty=allow_empty)
        self._keys: list[str] | None = None
        self._inchi: dict[str, str | None] | None = None
        self._fingerprints: FingerprintTable | None = None
        self._sides: dict[tuple[str, bool], dict[str, dict[str, list[SideReaction]]]] = {}

    def keys(self) -> list[str]:
        if self._keys is None:
            self._keys = strict_keys(self.con, [self.gold, self.pred])
        return self._keys

    def fingerprints(self) -> FingerprintTable:
        if self._fingerprints is None:
            self._fingerprints = FingerprintTable(morgan_fingerprints(self.keys()))
        return self._fingerprints

    def sides(self, profile: Profile) -> dict[str, dict[str, list[SideReaction]]]:
        family = (profile.kind if profile.kind in ("inchi", "stereo-blind") else "strict",
                  profile.conditions_with_reactants)
        if family not in self._sides:
            key_map = None
            if profile.kind == "inchi":
                if self._inchi is None:
                    self._inchi = inchi_keys(self.keys())
                key_map = self._inchi
            self._sides[family] = side_reactions(self.con, self.gold, self.pred, profile, key_map)
        return self._sides[family]

    def counts(self, profile: Profile) -> list[Any]:
        if profile.kind in ("strict", "stereo-blind"):
            return from_figure_counts(self.base, profile)
        sides = self.sides(profile)
        fingerprints = self.fingerprints() if profile.kind == "tanimoto" else None
        return count_profile(self.base, sides[self.gold], sides[self.pred], profile, fingerprints)


def score_profiles(con: DuckDBPyConnection, gold: str, pred: str, names: Sequence[str], *, allow_empty: bool = False,
                   answered_only: bool = False, inputs: ProfileInputs | None = None) -> dict[str, Any]:
    """``{profile name: {"macro", "micro", "molecule"[, "answered_only"]}}`` of system
    ``pred`` against ``gold``, every profile over the same gold figures."""
    inputs = inputs or ProfileInputs(con, gold, pred, allow_empty=allow_empty)
    return {p.name: profile_summary(inputs.counts(p), answered_only=answered_only) for p in expand_profiles(names)}


# --------------------------------------------------------------------------- R-group rows

def row_label(reaction: Any, index: int) -> str:
    """A table row's name: its printed identifiers (else its id, else its position) and the
    R-group bindings its template-derived molecules record."""
    name = ", ".join(reaction.identifiers) or reaction.id or f"#{index}"
    for mol in (*reaction.reactants, *reaction.products):
        bindings = mol.provenance.bindings if mol.provenance is not None else {}
        if bindings:
            return f"{name} ({'; '.join(f'{k}={v}' for k, v in sorted(bindings.items()))})"
    return name


def reaction_smiles(reaction: Any) -> str:
    return ".".join(m.smiles for m in reaction.reactants) + ">>" + ".".join(m.smiles for m in reaction.products)


def template_rows(con: DuckDBPyConnection, gold: str, pred: str, profile_name: str = "strict", *, allow_empty: bool = False,
                  inputs: ProfileInputs | None = None) -> dict[str, Any]:
    """R-group tables row by row: in each gold figure with a template, every concrete reaction
    (one R-group assignment) is a row; rows pair one-to-one under ``profile_name``.

    Returns ``{"profile", "figures", "rows": {gold, pred, matched}, "micro": {precision,
    recall}, "macro": {precision, recall}, "per_figure": […], "missed": […], "invented": […]}``;
    a listed row is ``{"figure_id", "row", "reaction"}``.  Macro means over template figures.
    """
    profile = parse_profile(profile_name)
    inputs = inputs or ProfileInputs(con, gold, pred, allow_empty=allow_empty)
    figures = [r[0] for r in con.execute("SELECT figure_id FROM rxn_figures WHERE system = ? AND n_templates > 0 "
                                         "ORDER BY figure_id", [gold]).fetchall()]
    status = {c.figure_id: c.status for c in inputs.base}
    sides = inputs.sides(profile)
    fingerprints = inputs.fingerprints() if profile.kind == "tanimoto" else None
    gold_docs, pred_docs = stored_documents(con, gold, figures), stored_documents(con, pred, figures)
    per_figure, missed, invented = [], [], []
    totals = [0, 0, 0]
    for figure_id in figures:
        g = sides[gold].get(figure_id, [])
        p = sides[pred].get(figure_id, []) if status.get(figure_id) == "ok" else []
        sim = similarity_for(g, p, fingerprints) if fingerprints is not None and p else None
        pairs = figure_pairs(g, p, profile, sim) if p else []
        n_pred = len(sides[pred].get(figure_id, []))
        precision, recall, _ = prf(len(pairs), len(g), n_pred)
        per_figure.append({"figure_id": figure_id, "gold": len(g), "pred": n_pred, "matched": len(pairs),
                           "precision": precision, "recall": recall, "status": status.get(figure_id, "missing")})
        totals = [totals[0] + len(g), totals[1] + n_pred, totals[2] + len(pairs)]
        found_g, found_p = {i for i, _, _ in pairs}, {j for _, j, _ in pairs}
        g_doc, p_doc = gold_docs.get(figure_id), pred_docs.get(figure_id)
        for i, rxn in enumerate(g_doc.reactions if g_doc else []):
            if i not in found_g:
                missed.append({"figure_id": figure_id, "row": row_label(rxn, i), "reaction": reaction_smiles(rxn)})
        for j, rxn in enumerate(p_doc.reactions if p_doc else []):
            if j not in found_p:
                invented.append({"figure_id": figure_id, "row": row_label(rxn, j), "reaction": reaction_smiles(rxn)})
    micro_p, micro_r, _ = prf(totals[2], totals[0], totals[1])
    count = len(per_figure)
    return {"profile": profile.name, "figures": count,
            "rows": {"gold": totals[0], "pred": totals[1], "matched": totals[2]},
            "micro": {"precision": micro_p, "recall": micro_r},
            "macro": {"precision": sum(r["precision"] for r in per_figure) / count if count else None,
                      "recall": sum(r["recall"] for r in per_figure) / count if count else None},
            "per_figure": per_figure, "missed": missed, "invented": invented}

