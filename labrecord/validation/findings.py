"""Validation findings: collected, never stop-at-first, each naming where and what."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal


Severity = Literal["error", "warning"]

#: a finding quotes input values (an id, a field): never more than this of it
MAX_MESSAGE_CHARS = 400


def _shorten(message: str) -> str:
    """Cut the middle of an over-long message: its start names the value, its end what is wrong."""
    if len(message) <= MAX_MESSAGE_CHARS:
        return message
    cut = len(message) - MAX_MESSAGE_CHARS + 100
    return f"{message[:MAX_MESSAGE_CHARS - 100]} …({cut} chars)… {message[-100:]}"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int | None
    field: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where} {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("severity")
        return data


@dataclass
class Report:
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    def error(self, path: str, line: int | None, field_: str, message: str) -> None:
        self.errors.append(Finding(path, line, field_, _shorten(message), "error"))

    def warn(self, path: str, line: int | None, field_: str, message: str) -> None:
        self.warnings.append(Finding(path, line, field_, _shorten(message), "warning"))

    def extend(self, other: Report) -> None:
        self.errors.extend(other.errors)
        self.warnings.extend(other.warnings)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> dict[str, list[dict[str, object]]]:
        return {"errors": [f.to_json() for f in self.errors], "warnings": [f.to_json() for f in self.warnings]}
