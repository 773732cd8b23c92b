"""``labrecord import``: evaluations and datasets written by other tools, as run directories.

Each source kind has a reader that lists the source's episode records; every record
becomes one ordinary run written through :class:`labrecord.rundir.RunWriter`, carrying a
``source`` block (kind, path, declared format version, record name, content hash).  What
the source does not state stays null.  A record that cannot be read gives one error line
naming the file and the record, and the other records still import.  docs/imports.md has
the field tables per kind.

Kinds implemented here: ``robomimic`` and ``isaaclab`` (HDF5, :mod:`labrecord.imports.hdf5`), ``lerobot``
(:mod:`labrecord.imports.lerobot`), ``vla-eval`` (a vla-eval recording, :mod:`labrecord.imports.vla_eval`)
and ``lerobot-eval`` (the output folder of a ``lerobot-eval`` run, :mod:`labrecord.imports.lerobot_eval`).
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.imports.runs import ImportOptions, ImportSummary, SourceFile, import_records

#: source kind -> "module:function" returning the source's records (loaded on first use)
KINDS: dict[str, str] = {
    "robomimic": "labrecord.imports.hdf5:robomimic_source",
    "isaaclab": "labrecord.imports.hdf5:isaaclab_source",
    "lerobot": "labrecord.imports.lerobot:lerobot_source",
    "vla-eval": "labrecord.imports.vla_eval:vla_eval_source",
    "lerobot-eval": "labrecord.imports.lerobot_eval:lerobot_eval_source",
}


def open_source(kind: str, path: str | os.PathLike[str], options: ImportOptions | None = None) -> SourceFile:
    """Open the ``kind`` source at ``path`` and list its records (use as a context manager)."""
    target = KINDS.get(kind)
    if target is None:
        raise LabrecordError(f"source kind {kind!r}: expected one of {', '.join(sorted(KINDS))}")
    module_name, function = target.split(":")
    opener: Any = getattr(importlib.import_module(module_name), function)
    source: SourceFile = opener(os.fspath(path), options or ImportOptions())
    return source


def import_source(kind: str, path: str | os.PathLike[str], out: str | os.PathLike[str], *,
                  options: ImportOptions | None = None,
                  progress: Callable[[int], None] | None = None) -> ImportSummary:
    """Import every record of the ``kind`` source at ``path`` into run directories under
    ``out``; ``progress(n)`` is called after each batch of ``n`` records is written."""
    with open_source(kind, path, options) as source:
        return import_records(source, out, options or ImportOptions(), progress=progress)


__all__ = ["KINDS", "ImportOptions", "ImportSummary", "SourceFile", "import_source", "open_source"]
