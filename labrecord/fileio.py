"""Low-level file helpers: atomic writes, deterministic JSON, line-numbered JSONL reads."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def json_default(value: Any) -> Any:
    """``default=`` for :func:`json.dumps`: numpy scalars and arrays, msgspec structs and
    whatever else :func:`msgspec.to_builtins` converts; ``TypeError`` for the rest."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return msgspec.to_builtins(value)


def umask() -> int:
    """The process umask, read without changing it where the system allows (Linux
    ``/proc/self/status``); elsewhere set and restored at once."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temp_beside(path: str | os.PathLike[str], *, folder: bool = False) -> Path:
    """A new, uniquely named temporary file (or empty folder) in ``path``'s folder, for
    :func:`commit` to rename over ``path`` later; hidden (leading dot), ending ``.tmp``."""
    path = Path(path)
    if folder:
        return Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def commit(tmp: str | os.PathLike[str], path: str | os.PathLike[str], *, durable: bool = True) -> None:
    """Make the finished ``tmp`` (from :func:`temp_beside`) the new ``path``, atomically.

    Every file is fsynced, modes honour the umask (0644 files and 0755 folders under the
    usual 022; the temporary names were private), then one rename.  A folder replaces an
    existing ``path`` by renaming the old one aside first and removing it afterwards (a
    reader sees the old tree or the new one); a file replaces it in one ``os.replace``.
    The containing folder is fsynced last, so the rename itself is durable.

    ``durable=False`` leaves out every fsync: for a file inside a staging folder that is
    made durable as a whole later (:func:`sync_filesystem`) before anything in it is seen.
    """
    tmp, path = Path(tmp), Path(path)
    mask = umask()
    if tmp.is_dir():
        for root, _dirs, _files in os.walk(tmp):
            os.chmod(root, 0o777 & ~mask)
        if durable:
            sync_tree(tmp)
        old = None
        if path.exists() or path.is_symlink():
            old = temp_beside(path, folder=True)
            os.replace(path, old / path.name)
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return
    os.chmod(tmp, 0o666 & ~mask)
    if durable:
        _fsync_file(tmp)
    os.replace(tmp, path)
    if durable:
        fsync_dir(path.parent)


def sync_tree(folder: str | os.PathLike[str]) -> None:
    """fsync every file and folder under ``folder``, ``folder`` itself last."""
    folder = Path(folder)
    for root, dirs, files in os.walk(folder):
        for name in files:
            _fsync_file(Path(root) / name)
        for name in dirs:
            fsync_dir(Path(root) / name)
    fsync_dir(folder)


def _load_syncfs() -> Callable[[int], int] | None:
    """libc's ``syncfs`` (Linux), or None where the C library has none.  Python's ``os``
    module offers ``sync`` (every filesystem) and ``fsync`` (one file) but not this."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        function = libc.syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


_syncfs: Callable[[int], int] | None | bool = False  # False: not looked up yet


def sync_filesystem(folder: str | os.PathLike[str]) -> None:
    """Make everything written under ``folder`` durable.

    One ``syncfs(2)`` of the filesystem holding ``folder`` (it flushes every file and
    folder of that filesystem, so one call covers a whole staged batch); where the system
    has no ``syncfs`` or it fails, every file and folder under ``folder`` is fsynced
    instead (:func:`sync_tree`)."""
    global _syncfs
    if _syncfs is False:
        _syncfs = _load_syncfs()
    if callable(_syncfs):
        fd = os.open(folder, os.O_RDONLY)
        try:
            if _syncfs(fd) == 0:
                return
            # failed (ENOSYS on an old kernel, EIO): every file is fsynced below instead
        finally:
            os.close(fd)
    sync_tree(folder)


def discard(tmp: str | os.PathLike[str]) -> None:
    """Remove an unfinished temporary file or folder (no error when it is gone)."""
    tmp = Path(tmp)
    if tmp.is_dir() and not tmp.is_symlink():
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, folder: bool = False, durable: bool = True) -> Iterator[Path]:
    """``with atomic_path(out) as tmp:`` write ``tmp`` (a file path, or an empty folder when
    ``folder``); on a clean exit it becomes ``out`` (:func:`commit`), on an exception it is
    removed and ``out`` is left as it was.  The one way labrecord writes a file or a tree
    that a reader must never see half-written.  ``durable=False``: see :func:`commit`."""
    tmp = temp_beside(path, folder=folder)
    try:
        yield tmp
        commit(tmp, path, durable=durable)
    except BaseException:
        discard(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same folder, fsync, rename.

    A reader sees either the old file or the whole new one, never a partial write; the
    file mode honours the umask (:func:`commit`).
    """
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(folder: Path) -> None:
    """fsync a folder (its entries: a rename or a new file in it is durable after this); a
    folder that cannot be opened or synced is passed over."""
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
