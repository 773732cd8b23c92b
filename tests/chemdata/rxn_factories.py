"""Small builders of figure documents shared by the reaction tests."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labrecord.models.rxn import FigureDocument, Molecule, Reaction

#: (reactants, products) as SMILES lists
Rxn = tuple[Sequence[str], Sequence[str]]


def reaction(reactants: Sequence[str], products: Sequence[str]) -> Reaction:
    return Reaction(reactants=[Molecule(smiles=s) for s in reactants], products=[Molecule(smiles=s) for s in products])


def figure(figure_id: str, reactions: Sequence[Rxn], *, system: str = "sys", status: str = "ok",
           layout: str | None = None) -> FigureDocument:
    return FigureDocument(figure_id=figure_id, system=system, status=status,  # type: ignore[arg-type]
                          layout=layout, reactions=[reaction(r, p) for r, p in reactions])


def gold(figure_id: str, reactions: Sequence[Rxn], layout: str | None = None) -> FigureDocument:
    return figure(figure_id, reactions, system="gold", layout=layout)


def write_folder(folder: Path, docs: Sequence[FigureDocument]) -> str:
    """``folder/<figure_id>.json`` for each document (the folder is created); its path."""
    from labrecord.chemdata.extract.records import write_document

    folder.mkdir()
    for doc in docs:
        write_document(folder / f"{doc.figure_id}.json", doc)
    return str(folder)
