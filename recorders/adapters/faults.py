"""How a served policy can fail, split by who is responsible.

The split decides how a run is scored: a :class:`PolicyServiceFault` is written as a
``validity`` event and leaves the run unresolved (never a policy failure); an
:class:`InterfaceViolation` is the policy's own doing — a reply that decoded but broke
the interface it declared — and stays a measured outcome.  A reply that arrives after
the response deadline is neither: it is an ordinary late answer, judged by the deadline.
"""
from __future__ import annotations

from typing import Literal

from labrecord.errors import LabrecordError

FaultKind = Literal["service_fault", "transport_fault"]


class PolicyServiceFault(LabrecordError):
    """The policy service could not answer: refused or lost connection, undecodable
    frame, HTTP 5xx, transport timeout.  ``kind`` is the ``validity`` event kind."""

    def __init__(self, kind: FaultKind, source: str, detail: str) -> None:
        super().__init__(f"{source}: {kind}: {detail}")
        self.kind: FaultKind = kind
        self.source = source
        self.detail = detail


class InterfaceViolation(LabrecordError):
    """A decoded reply that breaks the declared interface (wrong action shape, unknown
    tool, missing field).  ``field`` names the offending part, ``value`` a short excerpt."""

    def __init__(self, source: str, field: str, value: object, expected: str) -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{source}: reply field {field!r} = {shown}: expected {expected}")
        self.source = source
        self.field = field
        self.expected = expected
