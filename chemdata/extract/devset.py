"""The real-figure development set: gold reactions written from literature figures.

``tests/data/real_figures/`` holds the figures, ``MANIFEST.tsv`` (source repository,
commit, path and licence of each file) and ``gold.txt`` (the project's own annotation;
format in that file's header).  :func:`load_gold` turns ``gold.txt`` into one gold
``labrecord.rxn/1`` document per figure; scope entries are filled from their template by
:func:`labrecord.chemdata.rgroup.instantiate`, so the gold also gives the R-group engine
its test: templates, concrete products and the reactants it must recover
(:func:`scope_cases`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labrecord.errors import LabrecordError

#: the development set shipped with the project's tests
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "real_figures"


@dataclass
class GoldFigure:
    """One figure's gold: concrete reactions, plus its template and scope entries if any."""

    figure_id: str
    layout: str
    reactions: list[tuple[list[str], list[str], str | None]] = field(default_factory=list)
    template: tuple[list[str], list[str]] | None = None
    entries: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@dataclass(frozen=True)
class ScopeCase:
    """One scope entry for the R-group engine: templates, the product, the reactants to recover."""

    figure_id: str
    entry: str
    reactant_templates: list[str]
    product_template: str
    product: str
    reactants: list[str]
    bindings: dict[str, str]


def _split(path: str, number: int, text: str) -> tuple[list[str], list[str]]:
    left, sep, right = text.partition(">>")
    if not sep or not left or not right or ">" in right:
        raise LabrecordError(f"{path}:{number}: expected REACTANTS>>PRODUCTS, got {text!r}")
    return left.split("."), right.split(".")


def _bindings(path: str, number: int, text: str) -> dict[str, str]:
    found = {}
    for pair in text.split(";"):
        key, sep, value = pair.partition("=")
        if not sep or not key or not value:
            raise LabrecordError(f"{path}:{number}: bad binding {pair!r} (want K=V;K=V)")
        found[key] = value
    return found


def parse_gold(path: str | os.PathLike[str]) -> list[GoldFigure]:
    """Read ``gold.txt``; a bad line stops with ``file:line: …``."""
    figures: list[GoldFigure] = []
    text = Path(path).read_text(encoding="utf-8")
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        kind, *rest = line.split()
        if kind == "figure" and len(rest) == 2:
            figures.append(GoldFigure(rest[0], rest[1]))
            continue
        if not figures:
            raise LabrecordError(f"{path}:{number}: {kind!r} before any 'figure' line")
        figure = figures[-1]
        if kind == "rxn" and len(rest) in (1, 2):
            reactants, products = _split(str(path), number, rest[0])
            figure.reactions.append((reactants, products, rest[1] if len(rest) == 2 else None))
        elif kind == "template" and len(rest) == 1:
            figure.template = _split(str(path), number, rest[0])
        elif kind == "entry" and len(rest) == 2:
            if figure.template is None:
                raise LabrecordError(f"{path}:{number}: entry before the figure's template line")
            figure.entries.append((rest[0], _bindings(str(path), number, rest[1])))
        else:
            raise LabrecordError(f"{path}:{number}: cannot read {line[:80]!r}")
    return figures


def _canonical(smiles: str, where: str) -> str:
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise LabrecordError(f"{where}: RDKit cannot parse {smiles!r}")
    return Chem.MolToSmiles(mol)


def figure_reactions(figure: GoldFigure) -> list[tuple[list[str], list[str], str | None, dict[str, str] | None]]:
    """Every concrete reaction of ``figure`` (canonical SMILES), scope entries instantiated."""
    from labrecord.chemdata.rgroup import RGroupError, instantiate

    found: list[tuple[list[str], list[str], str | None, dict[str, str] | None]] = []
    for reactants, products, entry in figure.reactions:
        where = f"{figure.figure_id} {entry or ''}".strip()
        found.append(([_canonical(s, where) for s in reactants], [_canonical(s, where) for s in products], entry, None))
    if figure.template:
        templates, product_templates = figure.template
        for entry, bindings in figure.entries:
            try:
                found.append(([instantiate(t, bindings) for t in templates],
                              [instantiate(t, bindings) for t in product_templates], entry, bindings))
            except RGroupError as error:
                raise LabrecordError(f"{figure.figure_id} entry {entry}: {error}") from None
    return found


def gold_documents(gold_path: str | os.PathLike[str] | None = None) -> list[Any]:
    """One gold ``FigureDocument`` per figure of ``gold.txt``."""
    from labrecord.models.rxn import FigureDocument, Molecule, Provenance, Reaction, Template

    documents = []
    for figure in parse_gold(gold_path or DEFAULT_DIR / "gold.txt"):
        reactions = []
        for index, (reactants, products, entry, bindings) in enumerate(figure_reactions(figure), start=1):
            def molecule(smiles: str, template: str | None = None, bindings: Any = bindings) -> Any:
                if bindings is None or template is None:
                    return Molecule(smiles=smiles)
                return Molecule(smiles=smiles, provenance=Provenance(origin="template_derived", template=template,
                                                                     bindings=dict(bindings)))
            rt, pt = figure.template or ([], [])
            reactions.append(Reaction(
                id=f"{figure.figure_id}-r{index}", step=1 if figure.layout != "multistep" else index,
                reactants=[molecule(s, rt[i] if i < len(rt) else None) for i, s in enumerate(reactants)],
                products=[molecule(s, pt[i] if i < len(pt) else None) for i, s in enumerate(products)],
                identifiers=[entry] if entry else []))
        templates = []
        if figure.template:
            templates.append(Template(id=f"{figure.figure_id}-t", reactants=[Molecule(smiles=s) for s in figure.template[0]],
                                      products=[Molecule(smiles=s) for s in figure.template[1]]))
        documents.append(FigureDocument(figure_id=figure.figure_id, system="gold", layout=figure.layout,
                                        reactions=reactions, templates=templates))
    return documents


def write_gold(out_dir: str | os.PathLike[str], gold_path: str | os.PathLike[str] | None = None) -> list[Path]:
    """Write ``<out_dir>/<figure_id>.json`` for every gold figure; return the paths."""
    from labrecord.chemdata.extract.records import write_document

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for document in gold_documents(gold_path):
        path = out / f"{document.figure_id}.json"
        write_document(path, document)
        written.append(path)
    return written


def scope_cases(gold_path: str | os.PathLike[str] | None = None) -> list[ScopeCase]:
    """Every scope entry of the gold: what the R-group engine gets and must give back."""
    cases = []
    for figure in parse_gold(gold_path or DEFAULT_DIR / "gold.txt"):
        if not figure.template:
            continue
        templates, product_templates = figure.template
        for reactants, products, entry, bindings in figure_reactions(figure):
            if bindings is None:
                continue
            cases.append(ScopeCase(figure.figure_id, entry or "", list(templates), product_templates[0], products[0],
                                   reactants, dict(bindings)))
    return cases


def image_paths(folder: str | os.PathLike[str] | None = None) -> dict[str, Path]:
    """Figure id -> image file of the development set."""
    from labrecord.chemdata.extract.runner import list_figures

    return {p.stem: p for p in list_figures(folder or DEFAULT_DIR)}


def rgroup_recovery(cases: list[ScopeCase] | None = None) -> dict[str, Any]:
    """Share of scope entries whose reactants the R-group engine recovers from the correct
    templates and product, given only the entry's printed bindings of labels the product
    cannot show (leaving groups); refusals are counted by kind."""
    from collections import Counter

    from labrecord.chemdata.rgroup import Failure, derive_reactants, template_labels

    cases = scope_cases() if cases is None else cases
    recovered, kinds, rows = 0, Counter[str](), []
    for case in cases:
        shown = set(template_labels(case.product_template))
        evidence = {k: v for k, v in case.bindings.items() if k not in shown}
        result = derive_reactants(case.reactant_templates, case.product_template, case.product, evidence)
        if isinstance(result, Failure):
            kinds[result.kind] += 1
            rows.append({"figure": case.figure_id, "entry": case.entry, "result": result.kind, "message": result.message})
            continue
        ok = sorted(result) == sorted(case.reactants)
        recovered += ok
        if not ok:
            kinds["wrong"] += 1
        rows.append({"figure": case.figure_id, "entry": case.entry, "result": "recovered" if ok else "wrong"})
    return {"entries": len(cases), "recovered": recovered, "share": recovered / len(cases) if cases else 0.0,
            "refused": dict(sorted(kinds.items())), "rows": rows}
