"""Reading files that may be hostile: bounded sizes, limited nesting, no silent symlinks.

Every reader of a run directory goes through :func:`read_bounded` (or :func:`check_file`
for files a library opens itself, such as Parquet and HDF5), so a file that is a link to
``/dev/zero``, a FIFO, a dangling link or a multi-gigabyte blob becomes one finding for its
own run instead of stopping the command.  :func:`decode_json` refuses JSON nested deeper
than :data:`MAX_JSON_DEPTH` before any recursive code sees it, and :func:`excerpt` keeps
a message to a short quote of the offending text.

Symbolic links inside run folders are refused unless they are allowed with
:func:`allow_symlinks` (the ``--follow-symlinks`` option) or the environment variable
``LABRECORD_FOLLOW_SYMLINKS=1`` (which worker processes inherit).
"""
from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from labrecord.errors import LabrecordError

#: JSON documents (run.json, scores.json, judge files) larger than this are refused unread
MAX_DOCUMENT_BYTES = 64 << 20
#: append-only logs and population registries larger than this are refused unread
MAX_LOG_BYTES = 1 << 30
#: binary files labrecord hands to a library (Parquet, HDF5) larger than this are refused
MAX_BINARY_BYTES = 64 << 30
#: deeper JSON nesting is refused (the formats need fewer than ten levels)
MAX_JSON_DEPTH = 64
#: longest quote of input text inside a message
EXCERPT_CHARS = 80

_ENV = "LABRECORD_FOLLOW_SYMLINKS"


def symlinks_allowed() -> bool:
    return os.environ.get(_ENV) == "1"


@contextlib.contextmanager
def allow_symlinks(allowed: bool = True) -> Iterator[None]:
    """Follow symbolic links inside run folders while the block runs (and in its child processes)."""
    before = os.environ.get(_ENV)
    if allowed:
        os.environ[_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(_ENV, None)
        else:
            os.environ[_ENV] = before


def excerpt(text: str | bytes, limit: int = EXCERPT_CHARS) -> str:
    """At most ``limit`` characters of ``text``, marked when cut."""
    if isinstance(text, bytes):
        text = text[: limit * 4].decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def link_problem(path: Path) -> str | None:
    """Why ``path`` may not be read as a symbolic link, or None when it is not one or links are allowed."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISLNK(info.st_mode):
        return None
    target = os.readlink(path)
    if not os.path.exists(path):
        return f"dangling symbolic link (to {excerpt(target)})"
    if not symlinks_allowed():
        return f"symbolic link (to {excerpt(target)}) refused; pass --follow-symlinks to read it"
    return None


def check_file(path: str | os.PathLike[str], limit: int) -> int:
    """Refuse a link, a non-regular file or one over ``limit`` bytes; return its size."""
    path = Path(path)
    problem = link_problem(path)
    if problem is not None:
        raise LabrecordError(f"{path}: {problem}")
    try:
        info = os.stat(path)
    except FileNotFoundError as error:
        raise LabrecordError(f"{path}: no such file") from error
    except OSError as error:
        raise LabrecordError(f"{path}: cannot read: {error.strerror}") from error
    if not stat.S_ISREG(info.st_mode):
        raise LabrecordError(f"{path}: {_kind(info.st_mode)}, not a regular file; refused")
    if info.st_size > limit:
        raise LabrecordError(f"{path}: {info.st_size} bytes, over the {limit}-byte limit; refused")
    return info.st_size


def read_bounded(path: str | os.PathLike[str], limit: int = MAX_LOG_BYTES) -> bytes:
    """The bytes of a regular file, checked before reading and never more than ``limit``."""
    path = Path(path)
    check_file(path, limit)
    flags = os.O_RDONLY | (0 if symlinks_allowed() else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise LabrecordError(f"{path}: cannot read: {error.strerror}") from error
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise LabrecordError(f"{path}: not a regular file; refused")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise LabrecordError(f"{path}: grew past the {limit}-byte limit while being read; refused")
    return data


def depth_problem(raw: bytes) -> str | None:
    """Describe JSON nesting deeper than :data:`MAX_JSON_DEPTH`, else None.

    Counting brackets is done in C and settles almost every line; only a line with more
    brackets than the limit is decoded and walked (iteratively, never recursively).
    """
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return None
    try:
        value = msgspec.json.decode(raw)
    except RecursionError:
        return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
    except msgspec.DecodeError:
        return None  # not JSON at all: the caller's decoder says why
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


def decode_json(raw: bytes, where: str, **options: Any) -> Any:
    """``msgspec.json.decode`` with the nesting limit; every failure is one :class:`LabrecordError`."""
    problem = depth_problem(raw)
    if problem is not None:
        raise LabrecordError(f"{where}: {problem}")
    try:
        return msgspec.json.decode(raw, **options)
    except RecursionError as error:
        raise LabrecordError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from error
    except msgspec.DecodeError as error:
        raise LabrecordError(f"{where}: invalid JSON: {error}") from error
    except msgspec.ValidationError as error:
        raise LabrecordError(f"{where}: {error}") from error


def check_writable(path: str | os.PathLike[str]) -> Path:
    """Refuse an output path whose folder does not exist or cannot be written, before any work."""
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise LabrecordError(f"{path}: folder {parent} does not exist")
    import tempfile

    try:  # permissions alone do not tell (root may "write" to /proc): try it
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as error:
        raise LabrecordError(f"{path}: cannot write in folder {parent}: {error.strerror}") from error
    return path


def check_apart(out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]], *, what: str = "output") -> Path:
    """Refuse an output path that is one of ``inputs``, lies inside an input folder or holds
    an input, whatever ``--overwrite`` says: writing it would replace or delete what the
    command reads.  Links are resolved first, and an existing output that is a hard link
    to an input is caught too.  Every command with an output and an input calls this
    before any work."""
    out = Path(out)
    real_out = Path(os.path.realpath(out))
    for given in inputs:
        real_in = Path(os.path.realpath(given))
        if real_out == real_in or _same_file(out, Path(given)):
            relation = "is the input"
        elif real_in in real_out.parents:
            relation = "lies inside the input"
        elif real_out in real_in.parents:
            relation = "holds the input"
        else:
            continue
        raise LabrecordError(f"{out}: {what} {relation} {given}; choose a path outside the inputs "
                             "(--overwrite does not change this)")
    return out


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
