"""Bulk ingestion of figure documents into the reaction tables of the corpus.

The tables are declared with the rest of the corpus schema in
:mod:`labrecord.store.schema` (open a corpus with :func:`labrecord.store.connect`);
this module only fills them:

- ``rxn_figures``   one row per (system, figure): status, layout, counts, the document JSON
- ``rxn_reactions`` one row per concrete reaction, in document order
- ``rxn_molecules`` one row per reactant, product or condition molecule occurrence
- ``rxn_smiles``    one row per distinct input string: its canonical components (strict and
  stereo-blind) or the reason it can never match, and the normalizer that produced them

``rxn_smiles`` is the canonicalization cache: ingestion canonicalizes only the strings
not already stored under the current :data:`NORMALIZER_VERSION`.  Rows go in as Arrow
tables, never one by one.  Canonicalization (RDKit, on untrusted strings) runs before
anything is written; the stored rows are then replaced in one transaction, so a failure
leaves the corpus as it was.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.models.rxn import FigureDocument
from labrecord.store.schema import create_schema, table

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

def normalizer_tag() -> str:
    from labrecord.chemdata.normalize import NORMALIZER_VERSION, rdkit_version

    return f"{NORMALIZER_VERSION} rdkit {rdkit_version()}"


Row = tuple[Any, ...]


def _figure_rows(docs: Sequence[FigureDocument], gold: bool) -> list[Row]:
    return [(doc.system, doc.figure_id, gold, doc.status, doc.error, doc.layout, list(doc.tags),
             len(doc.reactions), len(doc.templates), doc.source,
             doc.timing.wall_s if doc.timing else None, msgspec.json.encode(doc).decode()) for doc in docs]


def _reaction_rows(docs: Sequence[FigureDocument]) -> tuple[list[Row], list[Row]]:
    """Rows of ``rxn_reactions`` and ``rxn_molecules`` (column order of the registered tables).

    Plain tuples: this loop runs once per molecule occurrence, so it stays lean."""
    reactions: list[Row] = []
    molecules: list[Row] = []
    for doc in docs:
        system, figure_id = doc.system, doc.figure_id
        for index, rxn in enumerate(doc.reactions):
            reactions.append((system, figure_id, index, rxn.id, rxn.step, len(rxn.reactants), len(rxn.products),
                              len(rxn.conditions), rxn.yield_, rxn.selectivity, rxn.outcome, list(rxn.identifiers),
                              [c.role.lower() for c in rxn.conditions]))
            for role, mols in (("reactant", rxn.reactants), ("product", rxn.products)):
                for position, mol in enumerate(mols):
                    prov = mol.provenance
                    if prov is None:
                        molecules.append((system, figure_id, index, role, position, mol.smiles, mol.label,
                                          None, None, None, None))
                    else:
                        molecules.append((system, figure_id, index, role, position, mol.smiles, mol.label,
                                          None, prov.origin, prov.template, prov.region))
            for position, cond in enumerate(rxn.conditions):
                if cond.smiles is not None:
                    molecules.append((system, figure_id, index, "condition", position, cond.smiles, None,
                                      cond.role, None, None, None))
    return reactions, molecules


def _insert(con: DuckDBPyConnection, name: str, rows: Sequence[Row]) -> None:
    """Bulk insert ``rows`` (tuples in the table's column order) through one Arrow table."""
    import pyarrow as pa

    if not rows:
        return
    names = table(name).names
    arrow = pa.table({column: list(values) for column, values in zip(names, zip(*rows))})
    con.register("_rxn_rows", arrow)
    try:
        con.execute(f"INSERT INTO {name} ({', '.join(chr(34) + c + chr(34) for c in names)}) "
                    f"SELECT * FROM _rxn_rows")
    finally:
        con.unregister("_rxn_rows")


def _new_smiles(con: DuckDBPyConnection, strings: Iterable[str]) -> tuple[str, list[str], list[Row]]:
    """Canonicalize the strings not yet in ``rxn_smiles`` for this normalizer; writes nothing.

    Returns ``(normalizer tag, stored strings of an older normalizer, new rows)``.
    """
    from labrecord.chemdata.normalize import canonicalize_many

    tag = normalizer_tag()
    distinct = sorted(set(strings))
    if not distinct:
        return tag, [], []
    import pyarrow as pa

    con.register("_rxn_new", pa.table({"smiles": distinct}))
    try:
        stored = dict(con.execute("SELECT n.smiles, s.normalizer FROM _rxn_new n JOIN rxn_smiles s USING (smiles)").fetchall())
    finally:
        con.unregister("_rxn_new")
    stale = sorted(s for s, normalizer in stored.items() if normalizer != tag)
    todo = [s for s in distinct if stored.get(s) != tag]
    forms = canonicalize_many(todo)
    return tag, stale, [(s, tag, f.status, f.reason, list(f.strict), list(f.nonstereo)) for s, f in forms.items()]


def ingest_documents(con: DuckDBPyConnection, docs: Sequence[FigureDocument], *, gold: bool = False, replace: bool = True) -> dict[str, int]:
    """Write documents into the reaction tables of ``con`` (a corpus connection, see
    :func:`labrecord.store.connect`).

    A (system, figure) already present is replaced when ``replace`` (re-ingesting a run
    directory is idempotent), else refused.  Every new string is canonicalized first; then
    old rows are deleted and new ones inserted in one transaction, so an error at any point
    leaves the stored figures as they were.  Returns counts: figures, reactions, molecules,
    new_smiles (strings canonicalized by this call).
    """
    create_schema(con)
    seen: dict[tuple[str, str], str | None] = {}
    for doc in docs:
        key = (doc.system, doc.figure_id)
        if key in seen:
            raise LabrecordError(f"{doc.source or '?'}: figure {doc.figure_id!r} of system {doc.system!r} "
                                 f"appears twice (also in {seen[key] or '?'})")
        seen[key] = doc.source
    if not docs:
        return {"figures": 0, "reactions": 0, "molecules": 0, "new_smiles": 0}
    reactions, molecules = _reaction_rows(docs)
    figures = _figure_rows(docs, gold)
    _, stale, smiles = _new_smiles(con, [row[5] for row in molecules])
    con.execute("BEGIN TRANSACTION")
    try:
        _delete_existing(con, list(seen), replace)
        _delete_smiles(con, stale + [row[0] for row in smiles])
        _insert(con, "rxn_smiles", smiles)
        _insert(con, "rxn_figures", figures)
        _insert(con, "rxn_reactions", reactions)
        _insert(con, "rxn_molecules", molecules)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return {"figures": len(docs), "reactions": len(reactions), "molecules": len(molecules), "new_smiles": len(smiles)}


def _delete_smiles(con: DuckDBPyConnection, strings: list[str]) -> None:
    """Drop cached forms about to be rewritten (an older normalizer's, or a concurrent writer's)."""
    import pyarrow as pa

    if not strings:
        return
    con.register("_rxn_stale", pa.table({"smiles": strings}))
    try:
        con.execute("DELETE FROM rxn_smiles WHERE smiles IN (SELECT smiles FROM _rxn_stale)")
    finally:
        con.unregister("_rxn_stale")


def _delete_existing(con: DuckDBPyConnection, keys: list[tuple[str, str]], replace: bool) -> None:
    """Delete the stored rows of ``keys`` (system, figure id); refused unless ``replace``."""
    import pyarrow as pa

    con.register("_rxn_keys", pa.table({"system": [k[0] for k in keys], "figure_id": [k[1] for k in keys]}))
    try:
        rows = con.execute("SELECT f.system, f.figure_id FROM rxn_figures f JOIN _rxn_keys k "
                           "USING (system, figure_id) LIMIT 1").fetchall()
        clash = rows[0] if rows else None
        if clash is None:
            return
        if not replace:
            raise LabrecordError(f"figure {clash[1]!r} of system {clash[0]!r} is already in the corpus")
        for name in ("rxn_figures", "rxn_reactions", "rxn_molecules"):
            con.execute(f"DELETE FROM {name} t USING _rxn_keys k WHERE t.system = k.system AND t.figure_id = k.figure_id")
    finally:
        con.unregister("_rxn_keys")


def systems(con: DuckDBPyConnection) -> list[tuple[str, bool, int]]:
    """``[(system, gold, figures)]`` stored in the corpus."""
    create_schema(con)
    return [tuple(row) for row in con.execute(
        "SELECT system, bool_or(gold), count(*) FROM rxn_figures GROUP BY system ORDER BY system").fetchall()]
