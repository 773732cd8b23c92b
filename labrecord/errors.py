"""Errors that carry a one-line, user-facing message.

The CLI prints ``Error: <message>`` for any :class:`LabrecordError` and exits non-zero;
anything else is a bug and keeps its traceback.
"""
from __future__ import annotations


class LabrecordError(Exception):
    """Bad input or an unusable state, described in one line for the user."""


class SchemaVersionError(LabrecordError):
    """A file declares a schema version this labrecord cannot read."""


class TruncatedLogError(LabrecordError):
    """The last line of an append-only log has no newline: a write was cut short."""

    def __init__(self, path: str, line: int, size: int) -> None:
        self.path, self.line, self.size = path, line, size
        super().__init__(
            f"{path}:{line}: truncated last line ({size} bytes without a newline); "
            "the run was interrupted mid-write — inspect or remove that line, nothing was dropped"
        )
