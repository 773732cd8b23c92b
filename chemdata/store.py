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
from labrecord.store.schema import RXN_TABLES, create_schema, table

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

def normalizer_tag() -> str:
    from labrecord.chemdata.normalize import NORMALIZER_VERSION, rdkit_version

    return f"{NORMALIZER_VERSION} rdkit {rdkit_version()}"


#: a table's rows column by column: column name -> values (every list one length)
Columns = dict[str, list[Any]]


def _columns(name: str) -> Columns:
    return {column: [] for column in table(name).names}


def _figure_rows(docs: Sequence[FigureDocument], gold: bool) -> Columns:
    out = _columns("rxn_figures")
    out["system"] = [doc.system for doc in docs]
    out["figure_id"] = [doc.figure_id for doc in docs]
    out["gold"] = [gold] * len(docs)
    out["status"] = [doc.status for doc in docs]
    out["error"] = [doc.error for doc in docs]
    out["layout"] = [doc.layout for doc in docs]
    out["tags"] = [list(doc.tags) for doc in docs]
    out["n_reactions"] = [len(doc.reactions) for doc in docs]
    out["n_templates"] = [len(doc.templates) for doc in docs]
    out["source"] = [doc.source for doc in docs]
    out["wall_s"] = [doc.timing.wall_s if doc.timing else None for doc in docs]
    out["document"] = [msgspec.json.encode(doc).decode() for doc in docs]
    return out


def _reaction_rows(docs: Sequence[FigureDocument]) -> tuple[Columns, Columns]:
    """Columns of ``rxn_reactions`` and ``rxn_molecules``.

    Gathered column by column: this loop runs once per molecule occurrence, and appending
    to a few long lists allocates no per-row container (a tuple per row, transposed later,
    cost twice as much, most of it in the cycle collector walking the new tuples)."""
    reactions, molecules = _columns("rxn_reactions"), _columns("rxn_molecules")
    (r_system, r_figure, r_index, r_id, r_step, r_reactants, r_products, r_conditions, r_yield, r_selectivity,
     r_outcome, r_identifiers, r_roles) = (values.append for values in reactions.values())
    (m_system, m_figure, m_index, m_role, m_position, m_smiles, m_label, m_condition_role, m_origin, m_template,
     m_region) = (values.append for values in molecules.values())
    for doc in docs:
        system, figure_id = doc.system, doc.figure_id
        for index, rxn in enumerate(doc.reactions):
            r_system(system)
            r_figure(figure_id)
            r_index(index)
            r_id(rxn.id)
            r_step(rxn.step)
            r_reactants(len(rxn.reactants))
            r_products(len(rxn.products))
            r_conditions(len(rxn.conditions))
            r_yield(rxn.yield_)
            r_selectivity(rxn.selectivity)
            r_outcome(rxn.outcome)
            r_identifiers(list(rxn.identifiers))
            r_roles([c.role.lower() for c in rxn.conditions])
            for role, mols in (("reactant", rxn.reactants), ("product", rxn.products)):
                for position, mol in enumerate(mols):
                    m_system(system)
                    m_figure(figure_id)
                    m_index(index)
                    m_role(role)
                    m_position(position)
                    m_smiles(mol.smiles)
                    m_label(mol.label)
                    m_condition_role(None)
                    prov = mol.provenance
                    if prov is None:
                        m_origin(None)
                        m_template(None)
                        m_region(None)
                    else:
                        m_origin(prov.origin)
                        m_template(prov.template)
                        m_region(prov.region)
            for position, cond in enumerate(rxn.conditions):
                if cond.smiles is not None:
                    m_system(system)
                    m_figure(figure_id)
                    m_index(index)
                    m_role("condition")
                    m_position(position)
                    m_smiles(cond.smiles)
                    m_label(None)
                    m_condition_role(cond.role)
                    m_origin(None)
                    m_template(None)
                    m_region(None)
    return reactions, molecules


def _insert(con: DuckDBPyConnection, name: str, columns: Columns) -> None:
    """Bulk insert ``columns`` (every column of the table) through one Arrow table."""
    import pyarrow as pa

    names = table(name).names
    if not columns[names[0]]:
        return
    con.register("_rxn_rows", pa.table({column: columns[column] for column in names}))
    try:
        con.execute(f"INSERT INTO {name} ({', '.join(chr(34) + c + chr(34) for c in names)}) "
                    f"SELECT * FROM _rxn_rows")
    finally:
        con.unregister("_rxn_rows")


def _new_smiles(con: DuckDBPyConnection, strings: Iterable[str]) -> tuple[str, list[str], Columns]:
    """Canonicalize the strings not yet in ``rxn_smiles`` for this normalizer; writes nothing.

    Returns ``(normalizer tag, stored strings of an older normalizer, the new rows' columns)``.
    """
    from labrecord.chemdata.normalize import canonicalize_many

    tag = normalizer_tag()
    distinct = sorted(set(strings))
    out = _columns("rxn_smiles")
    if not distinct:
        return tag, [], out
    import pyarrow as pa

    con.register("_rxn_new", pa.table({"smiles": distinct}))
    try:
        stored = dict(con.execute("SELECT n.smiles, s.normalizer FROM _rxn_new n JOIN rxn_smiles s USING (smiles)").fetchall())
    finally:
        con.unregister("_rxn_new")
    stale = sorted(s for s, normalizer in stored.items() if normalizer != tag)
    todo = [s for s in distinct if stored.get(s) != tag]
    forms = canonicalize_many(todo)
    out["smiles"] = list(forms)
    out["normalizer"] = [tag] * len(forms)
    out["status"] = [f.status for f in forms.values()]
    out["reason"] = [f.reason for f in forms.values()]
    out["strict"] = [list(f.strict) for f in forms.values()]
    out["nonstereo"] = [list(f.nonstereo) for f in forms.values()]
    return tag, stale, out


def ingest_documents(con: DuckDBPyConnection, docs: Sequence[FigureDocument], *, gold: bool = False, replace: bool = True) -> dict[str, int]:
    """Write documents into the reaction tables of ``con`` (a corpus connection, see
    :func:`labrecord.store.connect`).

    A (system, figure) already present is replaced when ``replace`` (re-ingesting a run
    directory is idempotent), else refused.  Every new string is canonicalized first; then
    old rows are deleted and new ones inserted in one transaction, so an error at any point
    leaves the stored figures as they were.  Returns counts: figures, reactions, molecules,
    new_smiles (strings canonicalized by this call).
    """
    return ingest_sets(con, [(docs, gold)], replace=replace)


def ingest_sets(con: DuckDBPyConnection, sets: Sequence[tuple[Sequence[FigureDocument], bool]], *,
                replace: bool = True) -> dict[str, int]:
    """:func:`ingest_documents` of several document sets at once, each with its ``gold``
    flag (a gold set and a prediction): one schema check, one canonicalization pass over
    their strings together and one transaction, as if ingested one after the other.  A
    (system, figure) may appear once across all the sets."""
    create_schema(con, RXN_TABLES)
    seen: dict[tuple[str, str], str | None] = {}
    for docs, _ in sets:
        for doc in docs:
            key = (doc.system, doc.figure_id)
            if key in seen:
                raise LabrecordError(f"{doc.source or '?'}: figure {doc.figure_id!r} of system {doc.system!r} "
                                     f"appears twice (also in {seen[key] or '?'})")
            seen[key] = doc.source
    if not seen:
        return {"figures": 0, "reactions": 0, "molecules": 0, "new_smiles": 0}
    every = [doc for docs, _ in sets for doc in docs]
    reactions, molecules = _reaction_rows(every)
    figures = _columns("rxn_figures")
    for docs, gold in sets:
        for column, values in _figure_rows(docs, gold).items():
            figures[column].extend(values)
    _, stale, smiles = _new_smiles(con, molecules["smiles"])
    con.execute("BEGIN TRANSACTION")
    try:
        _delete_existing(con, list(seen), replace)
        _delete_smiles(con, stale + smiles["smiles"])
        _insert(con, "rxn_smiles", smiles)
        _insert(con, "rxn_figures", figures)
        _insert(con, "rxn_reactions", reactions)
        _insert(con, "rxn_molecules", molecules)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return {"figures": len(every), "reactions": len(reactions["system"]), "molecules": len(molecules["system"]),
            "new_smiles": len(smiles["smiles"])}


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
    create_schema(con, RXN_TABLES)
    return [tuple(row) for row in con.execute(
        "SELECT system, bool_or(gold), count(*) FROM rxn_figures GROUP BY system ORDER BY system").fetchall()]
