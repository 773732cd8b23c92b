"""The operation value type shared by legal sets, choices and confirmations."""
from __future__ import annotations

from typing import Literal

import msgspec

OperationKind = Literal["pick", "insert", "place", "add", "remove", "wait", "stop", "press", "open", "close"]


class Operation(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``{"kind", "object", "dest"}``; compares and hashes by value.

    ``object`` and ``dest`` are null where they do not apply (wait, stop).
    """

    kind: OperationKind
    object: str | None = None
    dest: str | None = None

    def __str__(self) -> str:
        parts = [p for p in (self.object, self.dest) if p is not None]
        return f"{self.kind}({', '.join(parts)})"
