"""Task contracts: measurements → task state, legal sets, confirmations, terminal dwell.

``get_contract(family)`` returns the registered contract of a task family; the online
scorer in a recorder and the replay audit (:mod:`labrecord.scorers.audit`) call the same
one.  See :mod:`labrecord.scorers.contracts.base` for how a recorder drives it.
"""
from __future__ import annotations

from labrecord.errors import LabrecordError
from labrecord.scorers.contracts.base import ContractEvent, TaskContract, Tracker

_REGISTRY: dict[str, str] = {
    "weighing": "labrecord.scorers.contracts.weighing:WeighingContract",
    "centrifuge": "labrecord.scorers.contracts.centrifuge:CentrifugeContract",
    "rack": "labrecord.scorers.contracts.rack:RackContract",
}


def families() -> list[str]:
    """Task families with a registered contract."""
    return sorted(_REGISTRY)


def get_contract(family: str) -> TaskContract:
    """The contract of ``family`` with its registered thresholds."""
    import importlib

    target = _REGISTRY.get(family)
    if target is None:
        raise LabrecordError(f"task family {family!r} has no contract (known: {', '.join(families())})")
    module_name, cls_name = target.split(":")
    return getattr(importlib.import_module(module_name), cls_name)()


__all__ = ["ContractEvent", "TaskContract", "Tracker", "families", "get_contract"]
