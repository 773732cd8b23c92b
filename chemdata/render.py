"""Draw reaction figures from reaction SMILES and write the gold record beside each one.

A benchmark generator whose answers are known: ``labrecord rxn render REACTIONS.smi --out
FIGURES/`` writes ``FIGURES/<figure_id>.png`` and ``FIGURES/<figure_id>.json`` (a
``labrecord.rxn/1`` document with ``system = "gold"``).

Input lines (``#`` at a line start or after a space starts a comment — ``C#N`` is a
triple bond; blank lines are skipped)::

    CC(=O)Cl.OCC>>CC(=O)OCC  ester-1                         # one reaction
    Brc1ccccc1>>OB(O)c1ccccc1>>c1ccc(-c2ccccc2)cc1 two-step  # multi-step: one arrow per step
    @scope-table [*:1]c1ccc(I)cc1>>[*:1]c1ccc(-c2ccccc2)cc1 R1=Me,OMe,Cl suzuki   # template + R table
    @scope-grid  [*:1]c1ccc(I)cc1>>[*:1]c1ccc(-c2ccccc2)cc1 R1=Me,OMe,Cl suzuki-g # template + drawn products

The figure id is the last token when there are more than one (else ``rxn-<line>``).
Reaction SMILES agents (``A>B>C``) are printed over the arrow and kept as gold conditions
(role ``agent``); conditions never enter the primary score.  Scope
layouts take one variable; each value is an abbreviation or a fragment SMILES understood
by :func:`labrecord.chemdata.rgroup.instantiate`.

Drawing choices favour optical structure recognition: black-and-white atoms, a fixed bond
length, generous white space between structures, and a plain arrow; they are documented
so a reader knows the benchmark is the easy end of real literature figures.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labrecord.chemdata import rgroup
from labrecord.errors import LabrecordError
from labrecord.chemdata.extract.records import write_document
from labrecord.fileio import atomic_write_bytes
from labrecord.models.rxn import FIGURE_ID_PATTERN

FONT_CANDIDATES = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
                   "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf")
MARGIN = 40
GAP = 50          # white space between a structure and a "+" or an arrow
ARROW_LEN = 150
CONDITION_FONT = 22  # px; conditions are printed over the arrow
ROW_GAP = 70
LABEL_GAP = 32      # white space between a drawn product and its entry label
#: "#" starts a comment only at a line start or after white space: "C#N" is a triple bond
_COMMENT = re.compile(r"(^|\s)#.*$")
_FIGURE_ID = re.compile(FIGURE_ID_PATTERN)


@dataclass
class FigureSpec:
    """One figure to draw: ``layout`` is single | multistep | scope-table | scope-grid."""

    figure_id: str
    layout: str
    stages: list[list[str]]                 # molecules per stage: stage 0 -> 1 -> 2 …
    agents: list[list[str]] = field(default_factory=list)
    variable: str | None = None
    values: list[str] = field(default_factory=list)
    line: int = 0


# --------------------------------------------------------------------------- parsing

def parse_reactions_file(path: str | os.PathLike[str]) -> list[FigureSpec]:
    """Read a ``.smi`` file of reactions and scope templates (format in the module doc)."""
    specs: list[FigureSpec] = []
    seen: set[str] = set()
    text = Path(path).read_text(encoding="utf-8")
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        spec = _parse_line(str(path), number, line)
        if spec.figure_id in seen:
            raise LabrecordError(f"{path}:{number}: figure id {spec.figure_id!r} used twice")
        seen.add(spec.figure_id)
        specs.append(spec)
    if not specs:
        raise LabrecordError(f"{path}: no reactions (every line blank or a comment)")
    return specs


def _parse_line(path: str, number: int, line: str) -> FigureSpec:
    tokens = line.split()
    layout = None
    if tokens[0].startswith("@"):
        layout = tokens.pop(0)[1:]
        if layout not in {"scope-table", "scope-grid"}:
            raise LabrecordError(f"{path}:{number}: unknown layout {('@' + layout)!r} (use @scope-table or @scope-grid)")
    if not tokens or ">" not in tokens[0]:
        raise LabrecordError(f"{path}:{number}: expected reaction SMILES with '>>', got {line[:80]!r}")
    reaction = tokens.pop(0)
    variable, values = None, []
    if layout:
        if not tokens or "=" not in tokens[0]:
            raise LabrecordError(f"{path}:{number}: scope line needs LABEL=v1,v2,… after the template, got {line[:80]!r}")
        variable, _, listed = tokens.pop(0).partition("=")
        values = [v for v in listed.split(",") if v]
        if not values:
            raise LabrecordError(f"{path}:{number}: scope variable {variable!r} has no values")
    figure_id = tokens.pop() if tokens else f"rxn-{number:04d}"
    if tokens:
        raise LabrecordError(f"{path}:{number}: unexpected text {' '.join(tokens)!r}")
    if not _FIGURE_ID.match(figure_id):
        raise LabrecordError(f"{path}:{number}: bad figure id {figure_id!r} (letters, digits, . _ -)")
    stages, agents = _split_reaction(path, number, reaction)
    if layout is None:
        layout = "single" if len(stages) == 2 else "multistep"
    elif len(stages) != 2:
        raise LabrecordError(f"{path}:{number}: a scope template must be one step, got {len(stages) - 1}")
    return FigureSpec(figure_id, layout, stages, agents, variable, values, number)


def _split_reaction(path: str, number: int, reaction: str) -> tuple[list[list[str]], list[list[str]]]:
    parts = reaction.split(">")
    if len(parts) < 3 or len(parts) % 2 == 0:
        raise LabrecordError(f"{path}:{number}: bad reaction SMILES {reaction!r}")
    stages = [[s for s in part.split(".") if s] for part in parts[0::2]]
    agents = [[s for s in part.split(".") if s] for part in parts[1::2]]
    for stage in stages:
        if not stage:
            raise LabrecordError(f"{path}:{number}: empty reactant or product side in {reaction!r}")
    return stages, agents


# --------------------------------------------------------------------------- gold

def gold_document(spec: FigureSpec) -> Any:
    """The gold ``FigureDocument`` for one spec (molecules canonicalized by RDKit)."""
    from labrecord.models.rxn import Condition, FigureDocument, Molecule, Reaction, Template

    if spec.variable is None:
        reactions = []
        for step in range(len(spec.stages) - 1):
            conditions = [Condition(role="agent", smiles=s) for s in (spec.agents[step] if step < len(spec.agents) else [])]
            reactions.append(Reaction(id=f"{spec.figure_id}-s{step + 1}", step=step + 1,
                                      reactants=[Molecule(smiles=_canon(spec, s)) for s in spec.stages[step]],
                                      products=[Molecule(smiles=_canon(spec, s)) for s in spec.stages[step + 1]],
                                      conditions=conditions))
        return FigureDocument(figure_id=spec.figure_id, system="gold", layout=spec.layout, reactions=reactions)
    reactions = []
    for index, value in enumerate(spec.values):
        entry = entry_id(index)
        bindings = {spec.variable: value}
        reactants = [_derived(spec, t, bindings) for t in spec.stages[0]]
        products = [_derived(spec, t, bindings) for t in spec.stages[1]]
        reactions.append(Reaction(id=f"{spec.figure_id}-{entry}", step=1, reactants=reactants, products=products,
                                  identifiers=[entry]))
    template = Template(id=f"{spec.figure_id}-t", reactants=[Molecule(smiles=t) for t in spec.stages[0]],
                        products=[Molecule(smiles=t) for t in spec.stages[1]],
                        variables={spec.variable: list(spec.values)})
    return FigureDocument(figure_id=spec.figure_id, system="gold", layout=spec.layout, reactions=reactions,
                          templates=[template])


def entry_id(index: int) -> str:
    """Printed entry identifiers: 1a, 1b, … 1z, 2a …"""
    return f"{index // 26 + 1}{chr(ord('a') + index % 26)}"


def _canon(spec: FigureSpec, smiles: str) -> str:
    from rdkit import Chem

    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise LabrecordError(f"line {spec.line}: RDKit cannot parse {smiles!r} (figure {spec.figure_id})")
    return Chem.MolToSmiles(mol)


def _derived(spec: FigureSpec, template: str, bindings: dict[str, str]) -> Any:
    from labrecord.models.rxn import Molecule, Provenance

    try:
        labels = rgroup.template_labels(template)
        smiles = rgroup.instantiate(template, bindings)
    except rgroup.RGroupError as error:
        raise LabrecordError(f"line {spec.line}: figure {spec.figure_id}: {error}") from None
    used = {k: v for k, v in bindings.items() if rgroup.normalize_label(k) in labels}
    return Molecule(smiles=smiles, provenance=Provenance(origin="template_derived", template=template, bindings=used))


# --------------------------------------------------------------------------- drawing

def draw_molecule(smiles: str) -> Any:
    """A cropped black-and-white PIL image of one structure; attachment points show their label."""
    from io import BytesIO

    from PIL import Image, ImageOps
    from rdkit.Chem.Draw import rdMolDraw2D

    mol, labels = rgroup._parse_template(smiles)
    for index, label in labels.items():
        mol.GetAtomWithIdx(index).SetProp("atomLabel", "R" if label == "*" else label)
    drawer = rdMolDraw2D.MolDraw2DCairo(600, 500)
    options = drawer.drawOptions()
    options.useBWAtomPalette()
    options.bondLineWidth = 2  # type: ignore[assignment]  # the rdkit stubs give these properties the options type
    options.fixedBondLength = 40  # type: ignore[assignment]
    options.minFontSize = 14  # type: ignore[assignment]
    rdMolDraw2D.PrepareAndDrawMolecule(drawer, mol)
    drawer.FinishDrawing()
    image = Image.open(BytesIO(drawer.GetDrawingText())).convert("L")
    box = ImageOps.invert(image).getbbox() or (0, 0, image.width, image.height)
    return image.crop(box)


def _font(size: int) -> Any:
    from PIL import ImageFont

    for candidate in FONT_CANDIDATES:
        if Path(candidate).exists():
            return ImageFont.truetype(candidate, size)
    return ImageFont.load_default(size)


def _row_images(stages: list[list[str]], agents: list[list[str]] | None = None) -> list[tuple[str, Any]]:
    """Items of one drawn row: ("mol", image), ("plus", None), ("arrow", conditions text or None)."""
    items: list[tuple[str, Any]] = []
    for index, stage in enumerate(stages):
        if index:
            printed = agents[index - 1] if agents and index - 1 < len(agents) else []
            items.append(("arrow", ", ".join(printed) or None))
        for position, smiles in enumerate(stage):
            if position:
                items.append(("plus", None))
            items.append(("mol", draw_molecule(smiles)))
    return items


def _item_width(kind: str, payload: Any) -> int:
    if kind == "mol":
        return payload.width
    if kind == "arrow":
        return max(ARROW_LEN, int(_font(CONDITION_FONT).getlength(payload)) + 30) if payload else ARROW_LEN
    return 30


def _draw_row(canvas: Any, items: list[tuple[str, Any]], top: int, height: int) -> None:
    from PIL import ImageDraw

    pen = ImageDraw.Draw(canvas)
    x, middle = MARGIN, top + height // 2
    for kind, image in items:
        width = _item_width(kind, image)
        if kind == "mol":
            canvas.paste(image, (x, middle - image.height // 2))
        elif kind == "plus":
            pen.line([(x + 5, middle), (x + 25, middle)], fill=0, width=3)
            pen.line([(x + 15, middle - 10), (x + 15, middle + 10)], fill=0, width=3)
        else:
            pen.line([(x, middle), (x + width - 14, middle)], fill=0, width=3)
            pen.polygon([(x + width, middle), (x + width - 16, middle - 8), (x + width - 16, middle + 8)], fill=0)
            if image:  # conditions printed centred over the arrow
                font = _font(CONDITION_FONT)
                pen.text((x + (width - font.getlength(image)) / 2, middle - 16 - CONDITION_FONT), image, fill=0, font=font)
        x += width + GAP


def _row_size(items: list[tuple[str, Any]]) -> tuple[int, int]:
    width = sum(_item_width(k, i) for k, i in items) + GAP * (len(items) - 1)
    height = max((i.height for k, i in items if k == "mol"), default=40)
    return width, height


def draw_figure(spec: FigureSpec) -> Any:
    """The PIL image of one figure (white background, 8-bit grey)."""
    from PIL import Image, ImageDraw

    items = _row_images(spec.stages, spec.agents)
    row_w, row_h = _row_size(items)
    font = _font(26)
    below: list[tuple[str, Any]] = []
    if spec.layout == "scope-table":
        below = [("text", f"{entry_id(i)}    {_display(spec.variable)} = {v}") for i, v in enumerate(spec.values)]
    elif spec.layout == "scope-grid":
        products = [rgroup.instantiate(spec.stages[1][0], {spec.variable or "*": v}) for v in spec.values]
        below = [("mol", draw_molecule(p)) for p in products]
    grid_w, grid_h, cells = _below_layout(below, max(row_w, 1200), font)
    width = max(row_w, grid_w) + 2 * MARGIN
    height = MARGIN + row_h + (ROW_GAP + grid_h if below else 0) + MARGIN
    canvas = Image.new("L", (width, height), 255)
    _draw_row(canvas, items, MARGIN, row_h)
    pen = ImageDraw.Draw(canvas)
    top = MARGIN + row_h + ROW_GAP
    for index, ((kind, payload), (x, y, _)) in enumerate(zip(below, cells)):
        if kind == "text":
            pen.text((MARGIN + x, top + y), payload, fill=0, font=font)
        else:
            canvas.paste(payload, (MARGIN + x, top + y))
            label = entry_id(index)
            pen.text((MARGIN + x + payload.width // 2 - 15, top + y + payload.height + LABEL_GAP), label, fill=0, font=font)
    return canvas


def _display(variable: str | None) -> str:
    label = rgroup.normalize_label(variable or "R")
    return "R" if label == "*" else label


def _below_layout(below: list[tuple[str, Any]], max_width: int, font: Any) -> tuple[int, int, list[tuple[int, int, int]]]:
    """Positions of the table lines or product cells under the template row."""
    if not below:
        return 0, 0, []
    if below[0][0] == "text":
        line_h = 44
        cells = [(0, i * line_h, 0) for i in range(len(below))]
        width = max(int(font.getlength(t)) for _, t in below)
        return width, line_h * len(below), cells
    cell_w = max(i.width for _, i in below) + 2 * GAP
    cell_h = max(i.height for _, i in below) + LABEL_GAP + 70
    per_row = max(1, max_width // cell_w)
    cells = [((i % per_row) * cell_w, (i // per_row) * cell_h, cell_w) for i in range(len(below))]
    rows = (len(below) + per_row - 1) // per_row
    return per_row * cell_w, rows * cell_h, cells


# --------------------------------------------------------------------------- entry point

def render(reactions_file: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> list[Path]:
    """Draw every figure of ``reactions_file`` into ``out_dir``; return the PNG paths.

    Each ``<figure_id>.png`` gets its gold record ``<figure_id>.json`` beside it.
    """
    from io import BytesIO

    specs = parse_reactions_file(reactions_file)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        document = gold_document(spec)  # validates every SMILES before anything is drawn
        image = draw_figure(spec)
        buffer = BytesIO()
        image.save(buffer, format="PNG")
        png = out / f"{spec.figure_id}.png"
        atomic_write_bytes(png, buffer.getvalue())
        write_document(out / f"{spec.figure_id}.json", document)
        written.append(png)
    return written
