"""labrecord: a record store and replay scorer for scientific evaluation data.

Importing this package stays light: it pulls in the core models only, never a wing
(``labrecord.sim``, ``labrecord.chemdata`` …) or an optional extra.
"""
from labrecord.errors import LabrecordError
from labrecord.models import RUN_SCHEMA, Operation

__version__ = "0.1.0"
__all__ = ["LabrecordError", "Operation", "RUN_SCHEMA", "__version__"]
