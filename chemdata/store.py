"""The reaction tables of the DuckDB corpus, and bulk ingestion of figure documents.

Tables (every column carries a ``COMMENT ON`` so ``duckdb_columns()`` documents itself):

- ``rxn_figures``   one row per (system, figure): status, layout, counts, the document JSON
- ``rxn_reactions`` one row per concrete reaction, in document order
- ``rxn_molecules`` one row per reactant, product or condition molecule occurrence
- ``rxn_smiles``    one row per distinct input string: its canonical components (strict and
  stereo-blind) or the reason it can never match, and the normalizer that produced them

``rxn_smiles`` is the canonicalization cache: ingestion canonicalizes only the strings
not already stored under the current :data:`NORMALIZER_VERSION`.  Rows go in as Arrow
tables, never one by one.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from labrecord.errors import LabrecordError
from labrecord.models.rxn import FigureDocument

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS rxn_figures (
    system VARCHAR NOT NULL, figure_id VARCHAR NOT NULL, gold BOOLEAN NOT NULL,
    status VARCHAR NOT NULL, error VARCHAR, layout VARCHAR, tags VARCHAR[],
    n_reactions INTEGER NOT NULL, n_templates INTEGER NOT NULL, source VARCHAR,
    wall_s DOUBLE, document JSON, PRIMARY KEY (system, figure_id));
CREATE TABLE IF NOT EXISTS rxn_reactions (
    system VARCHAR NOT NULL, figure_id VARCHAR NOT NULL, reaction_index INTEGER NOT NULL,
    reaction_id VARCHAR, step INTEGER, n_reactants INTEGER, n_products INTEGER,
    n_conditions INTEGER, yield VARCHAR, selectivity VARCHAR, outcome VARCHAR,
    identifiers VARCHAR[], condition_roles VARCHAR[]);
CREATE TABLE IF NOT EXISTS rxn_molecules (
    system VARCHAR NOT NULL, figure_id VARCHAR NOT NULL, reaction_index INTEGER NOT NULL,
    role VARCHAR NOT NULL, position INTEGER NOT NULL, smiles VARCHAR NOT NULL,
    label VARCHAR, condition_role VARCHAR, origin VARCHAR, template VARCHAR, region VARCHAR);
CREATE TABLE IF NOT EXISTS rxn_smiles (
    smiles VARCHAR PRIMARY KEY, normalizer VARCHAR NOT NULL, status VARCHAR NOT NULL,
    reason VARCHAR, strict VARCHAR[], nonstereo VARCHAR[]);
"""

COLUMN_COMMENTS: dict[str, dict[str, str]] = {
    "rxn_figures": {
        "system": "extraction system name; gold annotations are stored under their own name",
        "figure_id": "figure id: the document's figure_id/file_name/image or file stem, image extension dropped",
        "gold": "true for reference annotations",
        "status": "ok | failed | timeout | malformed; anything but ok scores zero",
        "error": "why the run or the conversion failed",
        "layout": "figure layout tag (gold side), used by score --by layout",
        "tags": "further taxonomy tags",
        "n_reactions": "number of concrete reactions in the document",
        "n_templates": "number of generic templates (context, never scored)",
        "source": "path the document was read from",
        "wall_s": "wall-clock seconds of the run, when recorded",
        "document": "the whole labrecord.rxn/1 document as JSON",
    },
    "rxn_reactions": {
        "system": "extraction system name", "figure_id": "figure id",
        "reaction_index": "0-based position of the reaction in its document",
        "reaction_id": "the reaction's own id, when given", "step": "step number in a multistep scheme",
        "n_reactants": "reactant molecules listed", "n_products": "product molecules listed",
        "n_conditions": "condition entries listed", "yield": "reported yield as written",
        "selectivity": "reported selectivity (ee, dr, er …) as written", "outcome": "reported outcome",
        "identifiers": "printed compound or entry identifiers",
        "condition_roles": "lower-cased roles of the reaction's conditions (reagent, catalyst, solvent …)",
    },
    "rxn_molecules": {
        "system": "extraction system name", "figure_id": "figure id",
        "reaction_index": "the reaction this molecule belongs to",
        "role": "reactant | product | condition", "position": "0-based position within its role list",
        "smiles": "the SMILES string exactly as written; join rxn_smiles for its canonical form",
        "label": "printed label", "condition_role": "for conditions: reagent, catalyst, solvent …",
        "origin": "provenance: tool_read | template_derived | model_written",
        "template": "provenance: template the structure was derived from",
        "region": "provenance: source region in the figure",
    },
    "rxn_smiles": {
        "smiles": "a distinct input string", "normalizer": "normalizer version and RDKit version that produced the row",
        "status": "ok | malformed | unmatchable", "reason": "why the string never matches (null when ok)",
        "strict": "sorted canonical isomeric SMILES of its components (counter-ions dropped)",
        "nonstereo": "the same components with stereochemistry removed (isotopes kept)",
    },
}


def create_tables(con: Any) -> None:
    """Create the reaction tables (idempotent) and their column comments."""
    con.execute(SCHEMA_SQL)
    for table, columns in COLUMN_COMMENTS.items():
        for column, text in columns.items():
            con.execute(f"COMMENT ON COLUMN {table}.\"{column}\" IS '{text.replace(chr(39), chr(39) * 2)}'")


def normalizer_tag() -> str:
    from labrecord.chemdata.normalize import NORMALIZER_VERSION, rdkit_version

    return f"{NORMALIZER_VERSION} rdkit {rdkit_version()}"


Row = tuple[Any, ...]


def _figure_rows(docs: Sequence[FigureDocument], gold: bool) -> list[Row]:
    return [(doc.system, doc.figure_id, gold, doc.status, doc.error, doc.layout, list(doc.tags),
             len(doc.reactions), len(doc.templates), doc.source,
             doc.timing.wall_s if doc.timing else None, msgspec.json.encode(doc).decode()) for doc in docs]


def _reaction_rows(docs: Sequence[FigureDocument]) -> tuple[list[Row], list[Row]]:
    """Rows of ``rxn_reactions`` and ``rxn_molecules`` (column order of COLUMN_COMMENTS).

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


def _insert(con: Any, table: str, rows: Sequence[Row]) -> None:
    """Bulk insert ``rows`` (tuples in the table's column order) through one Arrow table."""
    import pyarrow as pa

    if not rows:
        return
    names = list(COLUMN_COMMENTS[table])
    arrow = pa.table({name: list(column) for name, column in zip(names, zip(*rows))})
    con.register("_rxn_rows", arrow)
    try:
        con.execute(f"INSERT INTO {table} ({', '.join(chr(34) + c + chr(34) for c in names)}) "
                    f"SELECT * FROM _rxn_rows")
    finally:
        con.unregister("_rxn_rows")


def _store_smiles(con: Any, strings: Iterable[str]) -> int:
    """Canonicalize the strings not yet in ``rxn_smiles`` for this normalizer; returns how many."""
    from labrecord.chemdata.normalize import canonicalize_many

    tag = normalizer_tag()
    distinct = sorted(set(strings))
    if not distinct:
        return 0
    import pyarrow as pa

    con.register("_rxn_new", pa.table({"smiles": distinct}))
    try:
        known = {row[0] for row in con.execute(
            "SELECT n.smiles FROM _rxn_new n JOIN rxn_smiles s USING (smiles) WHERE s.normalizer = ?", [tag]).fetchall()}
        stale = [row[0] for row in con.execute(
            "SELECT n.smiles FROM _rxn_new n JOIN rxn_smiles s USING (smiles) WHERE s.normalizer <> ?", [tag]).fetchall()]
    finally:
        con.unregister("_rxn_new")
    if stale:
        con.register("_rxn_stale", pa.table({"smiles": stale}))
        con.execute("DELETE FROM rxn_smiles WHERE smiles IN (SELECT smiles FROM _rxn_stale)")
        con.unregister("_rxn_stale")
    todo = [s for s in distinct if s not in known]
    forms = canonicalize_many(todo)
    _insert(con, "rxn_smiles", [(s, tag, f.status, f.reason, list(f.strict), list(f.nonstereo))
                                for s, f in forms.items()])
    return len(todo)


def ingest_documents(con: Any, docs: Sequence[FigureDocument], *, gold: bool = False, replace: bool = True) -> dict[str, int]:
    """Write documents into the reaction tables of ``con`` (a DuckDB connection).

    A (system, figure) already present is replaced when ``replace`` (re-ingesting a run
    directory is idempotent), else refused.  Returns counts: figures, reactions, molecules,
    new_smiles (strings canonicalized by this call).
    """
    create_tables(con)
    seen: dict[tuple[str, str], str | None] = {}
    for doc in docs:
        key = (doc.system, doc.figure_id)
        if key in seen:
            raise LabrecordError(f"{doc.source or '?'}: figure {doc.figure_id!r} of system {doc.system!r} "
                                 f"appears twice (also in {seen[key] or '?'})")
        seen[key] = doc.source
    if not docs:
        return {"figures": 0, "reactions": 0, "molecules": 0, "new_smiles": 0}
    _delete_existing(con, list(seen), replace)
    reactions, molecules = _reaction_rows(docs)
    new = _store_smiles(con, [row[5] for row in molecules])
    _insert(con, "rxn_figures", _figure_rows(docs, gold))
    _insert(con, "rxn_reactions", reactions)
    _insert(con, "rxn_molecules", molecules)
    return {"figures": len(docs), "reactions": len(reactions), "molecules": len(molecules), "new_smiles": new}


def _delete_existing(con: Any, keys: list[tuple[str, str]], replace: bool) -> None:
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
        for table in ("rxn_figures", "rxn_reactions", "rxn_molecules"):
            con.execute(f"DELETE FROM {table} t USING _rxn_keys k WHERE t.system = k.system AND t.figure_id = k.figure_id")
    finally:
        con.unregister("_rxn_keys")


def systems(con: Any) -> list[tuple[str, bool, int]]:
    """``[(system, gold, figures)]`` stored in the corpus."""
    create_tables(con)
    return [tuple(row) for row in con.execute(
        "SELECT system, bool_or(gold), count(*) FROM rxn_figures GROUP BY system ORDER BY system").fetchall()]


def connect(path: str | None = None) -> Any:
    """A DuckDB connection (in memory when ``path`` is None) with the reaction tables."""
    import duckdb

    try:
        con = duckdb.connect(path or ":memory:")
    except duckdb.Error as error:  # locked by another process, not a DuckDB file, …
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise LabrecordError(f"{path}: cannot open the corpus: {first_line}") from error
    create_tables(con)
    return con
