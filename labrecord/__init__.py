"""labrecord: a record store and replay scorer for scientific evaluation data.

Importing this package stays light: it pulls in the core models only, never a wing
(``labrecord.sim``, ``labrecord.chemdata`` …) or an optional extra.  The Python entry
points are reachable from here all the same; each loads its module on first use::

    import labrecord

    corpus = labrecord.Corpus("corpus.duckdb")       # polars frames of a corpus (scorers wing)
    with labrecord.RunWriter.create("runs", manifest) as run: ...
"""
from __future__ import annotations

import importlib
from typing import Any

from labrecord.errors import LabrecordError
from labrecord.models import RUN_SCHEMA, Operation

__version__ = "0.1.0"

#: public name -> the module that defines it, imported on first attribute access.  The
#: names are not imported here even for type checkers: the import graph would then run from
#: the core through this package into every wing.  Typed code imports from the module.
LAZY: dict[str, str] = {
    # run directories (core)
    "RunWriter": "labrecord.rundir", "read_manifest": "labrecord.rundir", "read_events": "labrecord.rundir",
    "validate_run": "labrecord.validation", "validate_folder": "labrecord.validation",
    # the DuckDB corpus (core)
    "connect": "labrecord.store", "ingest_runs": "labrecord.store",
    "open_snapshot": "labrecord.store", "write_snapshot": "labrecord.store",
    # scoring (scorers wing)
    "Corpus": "labrecord.scorers.dataframes", "score_corpus": "labrecord.scorers.corpus",
    "audit_corpus": "labrecord.scorers.corpus", "get_contract": "labrecord.scorers.contracts",
    # producing runs (sim wing; MuJoCo loads when an episode runs)
    "run_weighing": "labrecord.sim", "run_centrifuge": "labrecord.sim", "run_rack": "labrecord.sim",
    # training data (exporters wing)
    "export_lerobot": "labrecord.exporters.lerobot", "export_hdf5": "labrecord.exporters.hdf5",
    "export_parquet": "labrecord.exporters.parquet",
    # reaction records (chemdata wing)
    "load_documents": "labrecord.chemdata",
}

__all__ = ["LabrecordError", "Operation", "RUN_SCHEMA", "__version__", *LAZY]


def __getattr__(name: str) -> Any:
    module = LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'labrecord' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *LAZY})
