"""Task contracts: measurements → task state, legal sets, confirmations, terminal dwell.

``get_contract(family)`` returns the registered contract of a task family; the online
scorer in a recorder and the replay audit (:mod:`labrecord.scorers.audit`) call the same
one.  See :mod:`labrecord.scorers.contracts.base` for how a recorder drives it.
"""
from __future__ import annotations

from labrecord.errors import LabrecordError
from labrecord.scorers.contracts.base import ContractEvent, TaskContract, Tracker



def families() -> list[str]:
    """Task families with a registered contract (:data:`labrecord.families.FAMILIES`)."""
    from labrecord.families import FAMILIES

    return sorted(FAMILIES)


def get_contract(family: str) -> TaskContract:
    """The contract of ``family`` with its registered thresholds."""
    from labrecord.families import FAMILIES, load

    entry = FAMILIES.get(family)
    if entry is None:
        raise LabrecordError(f"task family {family!r} has no contract (known: {', '.join(families())})")
    contract: TaskContract = load(entry.contract)()  # type: ignore[operator]
    return contract


__all__ = ["ContractEvent", "TaskContract", "Tracker", "families", "get_contract"]
