"""One converter per input format, found through a detection table.

Formats (checked in this order on each JSON object):

=================  ==========================================================
``native``         ``{"schema": "labrecord.rxn/1", ...}`` — our own documents
``rollout``        a wrapper holding the final answer under ``answer`` (object or
                   JSON text); trajectories, tool logs and timing are ignored
``gold_v2``        ``selected_examples`` (the scorable reactions),
                   ``reaction_templates`` (context), ``is_multistep``
``openchemie``     OpenChemIE R-group resolution: ``reaction_template`` (context)
                   and ``detailed_reactions`` {label: {reactants, products}}
``chemeagle``      ``{"reactions": [{"reactants": [{"smiles"}], "products": …,
                   "conditions": …}]}``
=================  ==========================================================
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import msgspec

from labrecord.chemdata.adapters.common import ConversionError, document_figure_id, reactions, templates
from labrecord.models.rxn import RXN_SCHEMA, FigureDocument, Reaction, Timing

#: wrapper status words that mean the run did not finish
_TIMEOUT_WORDS = {"timeout", "timed_out", "time_out", "deadline_exceeded"}
_FAILED_WORDS = {"failed", "failure", "error", "errored", "crashed", "tool_error", "exception", "cancelled"}
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


def detect(obj: Any) -> str | None:
    """The name of the format ``obj`` is in, or None."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("schema"), str) and obj["schema"].startswith("labrecord.rxn/"):
        return "native"
    if "answer" in obj:
        return "rollout"
    if "selected_examples" in obj:
        return "gold_v2"
    if "detailed_reactions" in obj or "reaction_template" in obj:
        return "openchemie"
    if "reactions" in obj:
        return "chemeagle"
    return None


def _doc(obj: dict[str, Any], figure_id: str, system: str, **fields: Any) -> FigureDocument:
    layout = obj.get("layout")
    tags = obj.get("tags")
    return FigureDocument(figure_id=figure_id, system=system,
                          layout=str(layout) if isinstance(layout, str) else None,
                          tags=[str(t) for t in tags] if isinstance(tags, list) else [], **fields)


def from_native(obj: dict[str, Any], figure_id: str, system: str) -> FigureDocument:
    major = str(obj.get("schema", "")).partition("/")[2].partition(".")[0]
    if major != RXN_SCHEMA.partition("/")[2]:
        raise ConversionError(f"schema {obj.get('schema')!r} is not readable by this labrecord (reads {RXN_SCHEMA})")
    try:
        doc = msgspec.convert(obj, FigureDocument)
    except msgspec.ValidationError as error:
        raise ConversionError(f"not a valid {RXN_SCHEMA} document: {error}") from error
    replace: dict[str, Any] = {}
    unknown = {k: v for k, v in obj.items() if k not in FigureDocument.__struct_encode_fields__}
    if unknown:
        # keep fields this version does not know, so a read-write round trip loses nothing
        replace["extra"] = {**doc.extra, **unknown}
    if not doc.system and system:
        replace["system"] = system
    return msgspec.structs.replace(doc, **replace) if replace else doc


def from_chemeagle(obj: dict[str, Any], figure_id: str, system: str) -> FigureDocument:
    return _doc(obj, figure_id, system, reactions=reactions(obj["reactions"]))


def from_openchemie(obj: dict[str, Any], figure_id: str, system: str) -> FigureDocument:
    detailed = obj.get("detailed_reactions") or {}
    if isinstance(detailed, dict):
        items = list(detailed.items())
    elif isinstance(detailed, list):
        items = [(str(i), v) for i, v in enumerate(detailed)]
    else:
        raise ConversionError(f"detailed_reactions is {type(detailed).__name__}, not an object")
    found = []
    for label, item in items:
        rxn = reactions([item])[0]
        found.append(msgspec.structs.replace(rxn, identifiers=rxn.identifiers or [str(label)]))
    return _doc(obj, figure_id, system, reactions=found, templates=templates(obj.get("reaction_template")))


def from_gold_v2(obj: dict[str, Any], figure_id: str, system: str) -> FigureDocument:
    examples = obj.get("selected_examples") or []
    multistep = bool(obj.get("is_multistep"))
    found: list[Reaction] = reactions(examples)
    extra = {"is_multistep": multistep} if multistep else {}
    return _doc(obj, figure_id, system, reactions=found, templates=templates(obj.get("reaction_templates")), extra=extra)


def _answer(value: Any) -> Any:
    """The final answer of a rollout: an object, or JSON text (a single code fence allowed)."""
    if isinstance(value, str):
        text = value.strip()
        fence = _FENCE.match(text)
        if fence:
            text = fence.group(1)
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise ConversionError(f"answer is not JSON: {error.msg} at column {error.colno}") from error
    return value


def from_rollout(obj: dict[str, Any], figure_id: str, system: str) -> FigureDocument:
    status_word = str(obj.get("status", "")).strip().lower()
    timing = _timing(obj)
    if status_word in _TIMEOUT_WORDS or status_word in _FAILED_WORDS or obj.get("answer") is None:
        status = "timeout" if status_word in _TIMEOUT_WORDS else "failed"
        error = obj.get("error") or (f"run status {status_word!r}" if status_word else "no answer")
        return _doc(obj, figure_id, system, status=status, error=str(error), timing=timing)
    answer = _answer(obj["answer"])
    inner_id = document_figure_id(answer) or figure_id
    doc = convert(answer, inner_id, system)
    return msgspec.structs.replace(doc, timing=doc.timing or timing)


def _timing(obj: dict[str, Any]) -> Timing | None:
    wall = obj.get("wall_s", obj.get("elapsed_s", obj.get("duration_s")))
    if isinstance(wall, (int, float)) and not isinstance(wall, bool):
        return Timing(wall_s=float(wall))
    return None


CONVERTERS: dict[str, Callable[[dict[str, Any], str, str], FigureDocument]] = {
    "native": from_native, "rollout": from_rollout, "gold_v2": from_gold_v2,
    "openchemie": from_openchemie, "chemeagle": from_chemeagle,
}


def convert(obj: Any, figure_id: str, system: str) -> FigureDocument:
    """One figure document from one JSON object; :class:`ConversionError` when it has no
    reading in any format."""
    fmt = detect(obj)
    if fmt is None:
        kind = type(obj).__name__ if not isinstance(obj, dict) else "object with keys " + ", ".join(sorted(obj)[:6])
        raise ConversionError(f"unrecognized reaction output ({kind})")
    return CONVERTERS[fmt](obj, figure_id, system)


__all__ = ["CONVERTERS", "ConversionError", "convert", "detect"]
