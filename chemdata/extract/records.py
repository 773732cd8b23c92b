"""Writing ``labrecord.rxn/1`` documents so every reader recognizes them.

The model omits default values when encoding, which would drop ``schema``, ``status``
and an empty ``reactions`` list; readers detect the format by ``schema``, so those three
are always written explicitly here.
"""
from __future__ import annotations

import os
from typing import Any

from labrecord.fileio import atomic_write_bytes, dumps_pretty


def document_json(document: Any) -> dict[str, Any]:
    """A ``FigureDocument`` (or its plain-data form) with schema, status and reactions spelled out."""
    import msgspec

    from labrecord.models.rxn import RXN_SCHEMA

    data = document if isinstance(document, dict) else msgspec.to_builtins(document)
    return {"schema": RXN_SCHEMA, "status": "ok", "reactions": [], **data}


def write_document(path: str | os.PathLike[str], document: Any) -> None:
    """Atomic, deterministic (sorted keys, 2-space indent) write of one document."""
    atomic_write_bytes(path, dumps_pretty(document_json(document)))
