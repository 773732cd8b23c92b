"""Low-level file helpers: atomic writes, deterministic JSON, line-numbered JSONL reads."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from labrecord.errors import LabrecordError, TruncatedLogError

#: a single JSONL line longer than this is refused rather than decoded
MAX_LINE_BYTES = 1 << 20

_encoder = msgspec.json.Encoder(order="sorted")


def dumps(obj: Any) -> bytes:
    """Deterministic JSON (sorted keys) so golden files compare byte for byte."""
    return _encoder.encode(obj)


def dumps_pretty(obj: Any) -> bytes:
    return msgspec.json.format(dumps(obj), indent=2) + b"\n"


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, rename.

    A reader sees either the old file or the whole new one, never a partial write.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Line:
    """One raw JSONL line and its 1-based line number."""

    number: int
    raw: bytes


class LineProblem(LabrecordError):
    """A line that cannot even be handed to a decoder (too long, not UTF-8, truncated)."""

    def __init__(self, path: str, line: int, message: str) -> None:
        self.path, self.line, self.detail = path, line, message
        super().__init__(f"{path}:{line}: {message}")


def iter_lines(path: str | os.PathLike[str], data: bytes | None = None) -> Iterator[Line | LineProblem | TruncatedLogError]:
    """Yield each non-blank line of a JSONL file, or a :class:`LineProblem` in its place.

    UTF-8 is left to the decoder (msgspec refuses bad bytes); :func:`decode_error_message`
    then names the byte and column.

    Problems are yielded rather than raised so a validator can collect them all; the
    truncated last line (no trailing newline) is reported as a :class:`TruncatedLogError`.
    """
    name = str(path)
    if data is None:
        data = Path(path).read_bytes()
    lines = data.split(b"\n")
    last_index = len(lines) - 1
    for index, raw in enumerate(lines):
        number = index + 1
        if index == last_index:
            if raw.strip():
                yield TruncatedLogError(name, number, len(raw))
            return
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES:
            yield LineProblem(name, number, f"line is {len(raw)} bytes, over the {MAX_LINE_BYTES}-byte limit")
            continue
        yield Line(number, raw)


def utf8_problem(raw: bytes) -> str | None:
    """Describe the first non-UTF-8 byte of a line, or None when the line is valid UTF-8.

    Called only after a decode failed, so the common path pays nothing for it.
    """
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8: byte {raw[error.start:error.start + 1]!r} at column {error.start + 1}"
    return None


def decode_error_message(error: msgspec.DecodeError | msgspec.ValidationError, raw: bytes) -> tuple[str, str]:
    """Split a msgspec error into (field path, message with the offending value)."""
    bad_encoding = utf8_problem(raw)
    if bad_encoding is not None:
        return "", bad_encoding
    text = str(error)
    field = ""
    if "- at `$" in text:
        text, _, where = text.rpartition(" - at `$")
        field = where.rstrip("`").lstrip(".")
    snippet = raw[:120].decode("utf-8", "replace")
    if isinstance(error, msgspec.ValidationError):
        return field, f"{text} (line: {snippet})"
    return field, f"invalid JSON: {text} (line: {snippet})"
