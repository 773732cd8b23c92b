"""Two extraction systems side by side on one gold set (``labrecord rxn diff``).

Both systems are scored under one profile over the same gold figures; the comparison is
paired by figure: per-figure F1 of each and their difference, a paired bootstrap interval
of the macro-F1 difference (figures resampled with replacement, the same draw for both
systems), the figures where they differ most, and, where the records name the structure
reader of a molecule (``Provenance.reader``), how often the two systems' readers agree on
the same figure region and how often each reader's molecules are gold molecules.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from labrecord.chemdata.scoring import ProfileInputs
from labrecord.chemdata.stats import claim, gold_components, molecule_forms, readings, reliability, stored_documents
from labrecord.chemdata.store import ingest_documents
from labrecord.errors import LabrecordError
from labrecord.scorers.reaction import parse_profile, prf
from labrecord.store import connect
from labrecord.store.schema import RXN_TABLES

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

#: bootstrap resamples and interval level of the macro-F1 difference
RESAMPLES = 2000
LEVEL = 0.95


def parse_source(text: str) -> tuple[str, str | None]:
    """``SYSTEM@corpus.duckdb`` -> (system, corpus file); a file or folder -> (path, None)."""
    if Path(text).exists():
        return text, None
    system, sep, db = text.rpartition("@")
    if sep and system and db:
        if not Path(db).is_file():
            raise LabrecordError(f"{text}: no such corpus file {db!r}")
        return system, db
    raise LabrecordError(f"{text}: no such file or folder (a stored system is written SYSTEM@corpus.duckdb)")


def load_source(text: str, *, gold: bool = False) -> list[Any]:
    """The documents of one argument: read by the adapters from a path, or taken from a
    corpus opened read-only (its documents as stored)."""
    from labrecord.chemdata.adapters import load_documents
    from labrecord.models.rxn import FigureDocument
    from labrecord.store import open_source

    name, db = parse_source(text)
    if db is None:
        return load_documents(name, gold=gold)
    con, _, _ = open_source(db)  # locked: a view in a corpus from elsewhere reads no local file
    try:
        rows = con.execute("SELECT document FROM rxn_figures WHERE system = ? ORDER BY figure_id", [name]).fetchall()
        if not rows:
            found = [r[0] for r in con.execute("SELECT DISTINCT system FROM rxn_figures ORDER BY 1").fetchall()]
            raise LabrecordError(f"{text}: no figures of system {name!r} in {db} (systems: {', '.join(found) or 'none'})")
    finally:
        con.close()
    return [msgspec.json.decode(r[0], type=FigureDocument) for r in rows]


def _one_system(docs: list[Any], text: str) -> str:
    names = sorted({d.system for d in docs})
    if len(names) != 1:
        raise LabrecordError(f"{text}: holds {len(names)} systems ({', '.join(names) or 'none'}); expected one")
    return names[0]


def paired_bootstrap(a: Any, b: Any, rng: Any, resamples: int = RESAMPLES, level: float = LEVEL) -> dict[str, Any]:
    """Percentile interval of mean(a) − mean(b) over figures resampled with replacement, one
    draw of figure indices shared by both systems (``rng``: a ``numpy.random.Generator``).

    Returns ``{"difference", "interval", "resamples", "level", "share_above_zero"}``.
    """
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) != len(b) or not len(a):
        raise LabrecordError(f"paired bootstrap needs two equal, non-empty lists of figures ({len(a)} and {len(b)})")
    if resamples < 1:
        raise LabrecordError(f"--resamples must be at least 1, got {resamples}")
    delta = a - b
    index = rng.integers(0, len(delta), size=(resamples, len(delta)))
    means = delta[index].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return {"difference": float(delta.mean()), "interval": [float(low), float(high)], "resamples": resamples,
            "level": level, "share_above_zero": float((means > 0).mean())}


def _reader(mol: Any) -> str:
    return (mol.provenance.reader if mol.provenance is not None else None) or "unrecorded"


def reader_agreement(con: DuckDBPyConnection, gold: str, a: str, b: str) -> dict[str, Any]:
    """Per-molecule agreement between the systems' recognition backends.

    ``pairs``: per (reader of A, reader of B), the figure regions both systems read
    (``Provenance.region``, first reading of a region) and how many of those readings are
    the same molecule (equal strict components).  ``readers``: per system and reader, its
    reactant and product molecules and how many are gold molecules of the figure (each gold
    component claimed once, in document order).
    """
    forms = molecule_forms(con, [gold, a, b])
    gold_docs = stored_documents(con, gold)
    regions: dict[str, dict[tuple[str, str], tuple[str, Any]]] = {}
    readers: dict[str, dict[str, list[int]]] = {}
    for system in (a, b):
        docs = {f: d for f, d in stored_documents(con, system).items() if f in gold_docs}
        pools = {f: gold_components(gold_docs[f], forms) for f in docs}
        seen: dict[tuple[str, str], tuple[str, Any]] = {}
        tally: dict[str, list[int]] = {}
        for figure_id, mol in readings(docs):
            reader = _reader(mol)
            counts = tally.setdefault(reader, [0, 0])
            counts[0] += 1
            counts[1] += claim(forms.get(mol.smiles), pools[figure_id])
            region = mol.provenance.region if mol.provenance is not None else None
            if region is not None:
                seen.setdefault((figure_id, region), (reader, forms.get(mol.smiles)))
        regions[system] = seen
        readers[system] = tally
    pairs: dict[tuple[str, str], list[int]] = {}
    for key in sorted(set(regions[a]) & set(regions[b])):
        (reader_a, form_a), (reader_b, form_b) = regions[a][key], regions[b][key]
        cell = pairs.setdefault((reader_a, reader_b), [0, 0])
        cell[0] += 1
        cell[1] += form_a is not None and form_a == form_b
    return {"pairs": [{"reader_a": ra, "reader_b": rb, "regions": n, "same": same, "share": same / n}
                      for (ra, rb), (n, same) in sorted(pairs.items())],
            "regions_only_a": len(set(regions[a]) - set(regions[b])),
            "regions_only_b": len(set(regions[b]) - set(regions[a])),
            "readers": {system: {r: {"molecules": n, "gold": hit, "share": hit / n if n else None}
                                 for r, (n, hit) in sorted(tally.items())} for system, tally in readers.items()}}


def diff_systems(gold: str, a: str, b: str, *, profile: str = "strict", seed: int = 0, resamples: int = RESAMPLES,
                 top: int = 5, bins: int = 10) -> dict[str, Any]:
    """``labrecord rxn diff``: systems ``a`` and ``b`` (each a path or ``SYSTEM@corpus``)
    against the gold ``gold`` under one profile.

    Returns ``{"profile", "gold", "a", "b", "figures", "macro": {a: {…}, b: {…}},
    "coverage": {a, b}, "bootstrap": {…}, "per_figure": [{figure_id, f1_a, f1_b, delta,
    status_a, status_b}], "largest": [...top by |delta|], "agreement": {…},
    "calibration": {a, b}}``; ``a`` and ``b`` are the systems' names (a ``~2`` suffix tells
    them apart when both carry one name).
    """
    import numpy as np

    from labrecord.scorers.reaction import coverage, figure_counts, profile_summary

    if profile.strip() == "all":
        raise LabrecordError("rxn diff compares under one profile; give one name, not 'all'")
    chosen = parse_profile(profile)
    if top < 0:
        raise LabrecordError(f"--top must be at least 0, got {top}")
    gold_docs = load_source(gold, gold=True)
    gold_name = _one_system(gold_docs, gold)
    sides: list[tuple[str, list[Any]]] = []
    for text in (a, b):
        docs = load_source(text)
        name = _one_system(docs, text)
        if name == gold_name or (sides and name == sides[0][0]):
            name = f"{name}~{len(sides) + 1}"
            docs = [msgspec.structs.replace(d, system=name) for d in docs]
        sides.append((name, docs))
    (name_a, docs_a), (name_b, docs_b) = sides
    con = connect(tables=RXN_TABLES)
    try:
        ingest_documents(con, gold_docs, gold=True)
        ingest_documents(con, docs_a)
        ingest_documents(con, docs_b)
        inputs = {n: ProfileInputs(con, gold_name, n, base=figure_counts(con, gold_name, n)) for n in (name_a, name_b)}
        counts = {n: {c.figure_id: c for c in inputs[n].counts(chosen)} for n in (name_a, name_b)}
        figures = sorted(counts[name_a])
        f1 = {n: np.array([prf(counts[n][f].matched, counts[n][f].n_gold, counts[n][f].n_pred)[2] for f in figures])
              for n in (name_a, name_b)}
        rng = np.random.default_rng(seed)
        per_figure = [{"figure_id": f, "f1_a": float(f1[name_a][i]), "f1_b": float(f1[name_b][i]),
                       "delta": float(f1[name_a][i] - f1[name_b][i]),
                       "status_a": counts[name_a][f].status, "status_b": counts[name_b][f].status}
                      for i, f in enumerate(figures)]
        largest = sorted((r for r in per_figure if r["delta"]), key=lambda r: (-abs(r["delta"]), r["figure_id"]))[:top]
        return {"profile": chosen.name, "gold": gold_name, "a": name_a, "b": name_b, "figures": len(figures),
                "macro": {n: profile_summary(list(counts[n].values())) for n in (name_a, name_b)},
                "coverage": {n: coverage(inputs[n].base) for n in (name_a, name_b)},
                "bootstrap": {**paired_bootstrap(f1[name_a], f1[name_b], rng, resamples), "seed": seed},
                "per_figure": per_figure, "largest": largest,
                "agreement": reader_agreement(con, gold_name, name_a, name_b),
                "calibration": {n: reliability(con, gold_name, n, bins) for n in (name_a, name_b)}}
    finally:
        con.close()
