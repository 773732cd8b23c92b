"""chemdata wing of labrecord: reaction records, RDKit normalization, adapters, the
reaction tables of the corpus (see docs/design.md, Reaction records).

Importing this package is light; RDKit is imported inside the functions that need it.
"""
from __future__ import annotations

from typing import Any


def load_documents(path: Any, *, system: str | None = None, gold: bool = False) -> list[Any]:
    """Figure documents from a file or folder in any supported format (see ``adapters``)."""
    from labrecord.chemdata.adapters import load_documents as _load

    return _load(path, system=system, gold=gold)


__all__ = ["load_documents"]
