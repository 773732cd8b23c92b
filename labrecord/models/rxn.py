"""Reaction records (schema ``labrecord.rxn/1``): one document per figure and system.

See docs/design.md, Reaction records.  A :class:`FigureDocument` holds the concrete reactions a
system (or the gold annotation) read from one figure, the generic templates it used as
context, and how the run ended.  Gold uses the same document.  Only concrete reactions are
scored; templates are context.  This module is core: it never imports RDKit.
"""
from __future__ import annotations

from typing import Any, Literal

import msgspec

RXN_SCHEMA = "labrecord.rxn/1"

#: how a run for one figure ended; anything but ``ok`` scores zero for that figure
FigureStatus = Literal["ok", "failed", "timeout", "malformed"]
FIGURE_STATUSES: tuple[str, ...] = ("ok", "failed", "timeout", "malformed")
#: a figure id that may name a file or folder: one path component of letters, digits and ``. _ -``
FIGURE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


def check_figure_id(figure_id: Any, where: str) -> str:
    """``figure_id`` if it may name a file or folder (:data:`FIGURE_ID_PATTERN`), else a
    one-line :class:`~labrecord.errors.LabrecordError` naming ``where``: commands write
    ``OUT/<figure_id>…``, so an id such as ``../x`` or ``a/b`` would write elsewhere."""
    import re

    from labrecord.errors import LabrecordError

    if not isinstance(figure_id, str) or not re.match(FIGURE_ID_PATTERN, figure_id):
        shown = (figure_id[:80] + "…") if isinstance(figure_id, str) and len(figure_id) > 80 else figure_id
        raise LabrecordError(f"{where}: figure id {shown!r} is not a safe file name "
                             "(letters, digits, . _ -; at most 128; not starting with . _ -)")
    return figure_id

#: where a molecule's structure came from
Origin = Literal["tool_read", "template_derived", "model_written"]
ORIGINS: tuple[str, ...] = ("tool_read", "template_derived", "model_written")


class RxnModel(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Base for reaction records: keyword-only, defaults left out of the written JSON."""


class Provenance(RxnModel, kw_only=True):
    """Where a structure came from: read by a recognition tool from a figure ``region``,
    derived from ``template`` with R-group ``bindings`` (label -> substituent SMILES), or
    written by the model itself.  ``reader`` names the structure reader that produced a
    ``tool_read`` structure (``osra``, ``decimer``, a model name) and ``confidence`` its own
    confidence in that reading (0..1), where the reader gives one."""

    origin: Origin | None = None
    region: str | None = None
    bbox: list[float] | None = None
    template: str | None = None
    bindings: dict[str, str] = {}
    reader: str | None = None
    confidence: float | None = None


class Molecule(RxnModel, kw_only=True):
    """One participant.  ``smiles`` is what gets scored; ``esmiles`` keeps an Extended-SMILES
    reading (placeholders and all) for inspection; ``label`` is the printed identifier."""

    smiles: str
    esmiles: str | None = None
    label: str | None = None
    provenance: Provenance | None = None


class Condition(RxnModel, kw_only=True):
    """A reagent, catalyst, solvent, temperature, time … (never part of the primary match)."""

    role: str = "condition"
    smiles: str | None = None
    text: str | None = None


class Reaction(RxnModel, kw_only=True):
    """One concrete reaction record: instantiated reactants and products of one entry."""

    id: str | None = None
    step: int | None = None
    reactants: list[Molecule] = []
    products: list[Molecule] = []
    conditions: list[Condition] = []
    yield_: str | None = msgspec.field(default=None, name="yield")
    selectivity: str | None = None
    identifiers: list[str] = []
    outcome: str | None = None


class Template(RxnModel, kw_only=True):
    """A generic (variable-bearing) reaction shared by several entries: context, not a
    prediction.  Its molecules usually carry R-group placeholders."""

    id: str | None = None
    reactants: list[Molecule] = []
    products: list[Molecule] = []
    conditions: list[Condition] = []
    variables: dict[str, list[str]] = {}


class Timing(RxnModel, kw_only=True):
    """Wall-clock accounting of the run that produced the document (seconds)."""

    started_at: str | None = None
    wall_s: float | None = None
    timeout_s: float | None = None
    steps: dict[str, float] = {}


class FigureDocument(RxnModel, kw_only=True, omit_defaults=False):
    """All concrete reactions one system read from one figure (or the gold annotation).

    Every top-level field is written, ``schema`` and ``status`` included, so a reader
    never has to know the defaults.
    ``status`` other than ``ok`` keeps the figure in the manifest with zero credit;
    ``error`` says why.  ``layout`` and ``tags`` are the figure's taxonomy (gold side).
    ``extra`` keeps fields an adapter did not map, so nothing is silently dropped.
    """

    schema: str = RXN_SCHEMA
    figure_id: str
    system: str = ""
    status: FigureStatus = "ok"
    error: str | None = None
    layout: str | None = None
    tags: list[str] = []
    reactions: list[Reaction] = []
    templates: list[Template] = []
    timing: Timing | None = None
    source: str | None = None
    extra: dict[str, Any] = {}
