"""Pieces every adapter shares: figure ids, molecules, conditions, reactions.

Adapters convert representations; they never consult the gold set and never repair a
prediction toward it.  Anything a converter cannot read becomes an empty SMILES string
(a malformed molecule that stays in precision denominators) or a failure status.
"""
from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from labrecord.models.rxn import Condition, Molecule, Provenance, Reaction, Template

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".tif", ".tiff", ".bmp", ".webp", ".svg", ".pdf")
ID_FIELDS = ("figure_id", "file_name", "image")
_CONDITION_LISTS = {"reagents": "reagent", "catalysts": "catalyst", "solvents": "solvent",
                    "catalyst": "catalyst", "solvent": "solvent", "reagent": "reagent"}


class ConversionError(ValueError):
    """The input has no usable reading in this adapter's format."""


def figure_id_from(value: str) -> str:
    """``dir/X.png`` -> ``X``: last path part, one trailing image extension dropped."""
    name = PureWindowsPath(PurePosixPath(value.strip()).name).name
    lower = name.lower()
    for ext in IMAGE_EXTENSIONS:
        if lower.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def document_figure_id(obj: Any) -> str | None:
    """The figure id a document names for itself (``figure_id``, ``file_name``, ``image``)."""
    if isinstance(obj, dict):
        for key in ID_FIELDS:
            value = obj.get(key)
            if isinstance(value, str) and value.strip():
                return figure_id_from(value)
    return None


def molecule(value: Any, origin_default: str | None = None) -> Molecule:
    """A molecule from a SMILES string or a ``{smiles|SMILES|esmiles, label, provenance}`` dict."""
    if isinstance(value, str):
        return Molecule(smiles=value)
    if not isinstance(value, dict):
        return Molecule(smiles="")
    smiles = value.get("smiles", value.get("SMILES"))
    esmiles = value.get("esmiles", value.get("e_smiles", value.get("E-SMILES")))
    if not isinstance(smiles, str):
        smiles = esmiles if isinstance(esmiles, str) else ""
    label = value.get("label", value.get("id"))
    return Molecule(smiles=smiles, esmiles=esmiles if isinstance(esmiles, str) else None,
                    label=str(label) if isinstance(label, (str, int)) else None,
                    provenance=provenance(value.get("provenance")))


def provenance(value: Any) -> Provenance | None:
    if not isinstance(value, dict):
        return None
    origin = value.get("origin")
    bindings = value.get("bindings")
    bbox = value.get("bbox")
    return Provenance(
        origin=origin if origin in ("tool_read", "template_derived", "model_written") else None,
        region=str(value["region"]) if value.get("region") is not None else None,
        bbox=[float(x) for x in bbox] if isinstance(bbox, list) and all(isinstance(x, (int, float)) for x in bbox) else None,
        template=str(value["template"]) if value.get("template") is not None else None,
        bindings={str(k): str(v) for k, v in bindings.items()} if isinstance(bindings, dict) else {},
    )


def molecules(value: Any) -> list[Molecule]:
    """A list of molecules; a single string or dict counts as a one-element list, and a
    dot-joined string stays one molecule (salt splitting is the normalizer's job)."""
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        return [molecule(value)]
    if isinstance(value, list):
        return [molecule(v) for v in value]
    return [Molecule(smiles="")]


def conditions(obj: dict[str, Any]) -> list[Condition]:
    """Conditions from a ``conditions`` list (strings or ``{role, smiles, text}``) and from
    ``reagents`` / ``catalysts`` / ``solvents`` lists."""
    found: list[Condition] = []
    raw = obj.get("conditions")
    if isinstance(raw, (str, dict)):
        raw = [raw]
    for item in raw if isinstance(raw, list) else []:
        found.append(condition(item, "condition"))
    for key, role in _CONDITION_LISTS.items():
        value = obj.get(key)
        if isinstance(value, (str, dict)):
            value = [value]
        for item in value if isinstance(value, list) else []:
            found.append(condition(item, role))
    return found


def condition(item: Any, role: str) -> Condition:
    if isinstance(item, dict):
        text = item.get("text")
        if isinstance(text, list):
            text = " ".join(str(t) for t in text)
        smiles = item.get("smiles", item.get("SMILES"))
        return Condition(role=str(item.get("role", item.get("category", role)) or role),
                         smiles=smiles if isinstance(smiles, str) else None,
                         text=str(text) if text is not None else None)
    # a bare string may be a name or a SMILES; telling them apart would need RDKit here, and
    # conditions are not part of reaction F1, so it is kept verbatim as text
    return Condition(role=role, text=str(item))


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, sort_keys=True)
    return str(value)


def _identifiers(obj: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("identifiers", "identifier", "entry", "label"):
        value = obj.get(key)
        if isinstance(value, list):
            out.extend(str(v) for v in value)
        elif isinstance(value, (str, int)):
            out.append(str(value))
    return out


def _step(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*\d+\s*", value):
        return int(value)
    return None


def reactions(value: Any) -> list[Reaction]:
    """Concrete reactions from a list of reaction objects.  An object with a ``steps`` list
    is a multistep entry and becomes one reaction per step (``step`` numbered from 1 when
    the step carries none).  A non-object entry becomes a malformed reaction (kept)."""
    if not isinstance(value, list):
        raise ConversionError(f"reactions is {type(value).__name__}, not a list")
    out: list[Reaction] = []
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("steps"), list):
            for number, step in enumerate(item["steps"], start=1):
                rxn = reaction(step)
                out.append(rxn if rxn.step is not None else _with_step(rxn, number))
        else:
            out.append(reaction(item))
    return out


def _with_step(rxn: Reaction, step: int) -> Reaction:
    import msgspec

    return msgspec.structs.replace(rxn, step=step)


def reaction(item: Any) -> Reaction:
    if not isinstance(item, dict):
        return Reaction(reactants=[Molecule(smiles="")])
    ident = item.get("id", item.get("reaction_id"))
    selectivity = item.get("selectivity")
    if selectivity is None:
        parts = [f"{k} {item[k]}" for k in ("ee", "dr", "er", "rr") if item.get(k) not in (None, "")]
        selectivity = "; ".join(parts) or None
    return Reaction(
        id=str(ident) if isinstance(ident, (str, int)) else None,
        step=_step(item.get("step")),
        reactants=molecules(item.get("reactants")),
        products=molecules(item.get("products")),
        conditions=conditions(item),
        yield_=_text(item.get("yield")),
        selectivity=_text(selectivity),
        identifiers=_identifiers(item),
        outcome=_text(item.get("outcome")),
    )


def templates(value: Any) -> list[Template]:
    """Generic templates (context only): a list or a single object with reactants/products."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        ident = item.get("id", index)
        out.append(Template(id=str(ident), reactants=molecules(item.get("reactants")),
                            products=molecules(item.get("products")), conditions=conditions(item)))
    return out
