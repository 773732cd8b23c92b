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
from labrecord.chemdata.store import ingest_documents
from labrecord.scorers.reaction import extra_figures, score_db, unmatchable_gold
from labrecord.store import connect

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection


def score_documents(gold: Sequence[Any], pred: Sequence[Any], *, by: str | None = None,
                    con: DuckDBPyConnection | None = None) -> dict[str, Any]:
    """Score figure documents (``labrecord.models.rxn.FigureDocument``) end to end.

    Both sets are ingested into ``con`` (a fresh in-memory corpus when None) and scored
    there with :func:`~labrecord.scorers.reaction.score_db`.  ``pred`` must hold one
    system; ``by="system"`` is handled by the caller (one call per system).
    """
    gold_names = {d.system for d in gold}
    pred_names = {d.system for d in pred}
    if len(gold_names) != 1:
        raise LabrecordError(f"gold documents name {len(gold_names)} systems ({', '.join(sorted(gold_names))}); expected one")
    if len(pred_names) > 1:
        raise LabrecordError(f"predictions hold several systems ({', '.join(sorted(pred_names))}); score them one at a time")
    con = con or connect()
    ingest_documents(con, gold, gold=True)
    ingest_documents(con, pred, gold=False)
    gold_name = next(iter(gold_names))
    pred_name = next(iter(pred_names), f"{gold_name}~no-predictions")
    return score_db(con, gold_name, pred_name, by=by, allow_empty=not pred)


def score_paths(gold: str, preds: Sequence[str], *, db: str | None = None, by: str | None = None,
                warn: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """``{system: summary}`` for ``labrecord rxn score``.

    ``gold`` and each of ``preds`` is a file or folder of documents (read by the
    adapters and ingested into ``db``, in memory when None) or, with
    ``db``, the name of a system already stored there.  More than one prediction system
    needs ``by="system"``; ``by="layout"`` adds per-layout groups to each summary.
    ``warn`` receives a line for each system with figures outside the gold manifest
    (usually a figure-id mismatch; those figures are not scored).
    """
    con = connect(db)
    try:
        gold_name = _resolve_gold(con, gold, db)
        systems: dict[str, bool] = {}
        for pred in preds:
            systems.update(_resolve_pred(con, pred, db))
        if len(systems) > 1 and by != "system":
            raise LabrecordError(f"predictions hold {len(systems)} systems ({', '.join(sorted(systems))}); "
                                 "pass --by system or name one system")
        layout = "layout" if by == "layout" else None
        results = {name: score_db(con, gold_name, name, by=layout, allow_empty=empty)
                   for name, empty in sorted(systems.items())}
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
