"""Read reaction outputs of several systems, and gold annotations, as figure documents.

:func:`load_documents` accepts a ``.json`` file (one document, or a list of documents as in
OpenChemIE's annotation file), a ``.jsonl`` file (one document per line) or a folder of
those (searched recursively, in sorted order).  Prediction files that cannot be read or
converted become documents with status ``malformed`` (they stay in the manifest with zero
credit); gold files must convert, otherwise :class:`~labrecord.errors.LabrecordError`.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import msgspec

from labrecord.chemdata.adapters.common import ConversionError, document_figure_id, figure_id_from
from labrecord.chemdata.adapters.formats import CONVERTERS, convert, detect
from labrecord.errors import LabrecordError
from labrecord.models.rxn import FigureDocument

SUFFIXES = (".json", ".jsonl")


def document_files(path: str | os.PathLike[str]) -> list[Path]:
    """The document files under ``path`` (itself when a file), sorted."""
    root = Path(path)
    if root.is_file():
        return [root]
    if root.is_dir():
        return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    raise LabrecordError(f"{root}: no such file or folder")


def _objects(path: Path) -> list[tuple[str, Any, str | None]]:
    """``[(where, object or None, parse error)]`` for one file."""
    data = path.read_bytes()
    if path.suffix.lower() == ".jsonl":
        out = []
        for number, raw in enumerate(data.split(b"\n"), start=1):
            if raw.strip():
                out.append(_parse(f"{path}:{number}", raw))
        return out
    where, obj, error = _parse(str(path), data)
    if error is None and isinstance(obj, list):
        return [(f"{where}[{i}]", item, None) for i, item in enumerate(obj)]
    return [(where, obj, error)]


def _parse(where: str, raw: bytes) -> tuple[str, Any, str | None]:
    try:
        return where, json.loads(raw), None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return where, None, f"not JSON: {error}"
    except RecursionError:
        return where, None, "not JSON: nested too deeply"


def load_documents(path: str | os.PathLike[str], *, system: str | None = None, gold: bool = False) -> list[FigureDocument]:
    """Figure documents from ``path``.

    ``system`` names the system for every document (default: ``"gold"`` for gold; else the
    document's own ``system``/``model`` field, else the file or folder name).  A figure's
    id is the document's ``figure_id``/``file_name``/``image`` field, else the file stem
    (``X.png``, ``X.jpg`` and ``X`` name one figure); a multi-document file without ids
    uses ``stem#index``.
    """
    root = Path(path)
    default_system = system or ("gold" if gold else root.stem if root.is_file() else root.name)
    docs: list[FigureDocument] = []
    for file in document_files(root):
        objects = _objects(file)
        for index, (where, obj, error) in enumerate(objects):
            fallback = figure_id_from(file.stem) if len(objects) == 1 else f"{figure_id_from(file.stem)}#{index}"
            docs.append(_document(where, obj, error, fallback, system, default_system, gold))
    return docs


def _own_system(obj: Any) -> str | None:
    if isinstance(obj, dict):
        for key in ("system", "model"):
            if isinstance(obj.get(key), str) and obj[key].strip():
                return obj[key].strip()
    return None


def _document(where: str, obj: Any, error: str | None, fallback: str, system: str | None,
              default_system: str, gold: bool) -> FigureDocument:
    figure_id = document_figure_id(obj) or fallback
    # a gold set is one reference: its documents share one name whatever they call themselves
    name = system or (default_system if gold else _own_system(obj) or default_system)
    if error is None:
        try:
            doc = convert(obj, figure_id, name)
        except ConversionError as exc:
            error = str(exc)
        else:
            if gold and doc.status != "ok":
                raise LabrecordError(f"{where}: gold document for figure {doc.figure_id!r} has status {doc.status!r}; "
                                     "a reference must be a finished annotation")
            replace: dict[str, Any] = {"source": where}
            if system or gold:
                replace["system"] = name
            return msgspec.structs.replace(doc, **replace)
    if gold:
        raise LabrecordError(f"{where}: gold document cannot be read: {error}")
    return FigureDocument(figure_id=figure_id, system=name, status="malformed", error=error, source=where)


__all__ = ["CONVERTERS", "ConversionError", "convert", "detect", "document_files", "figure_id_from", "load_documents"]
