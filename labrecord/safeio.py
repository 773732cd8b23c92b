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
from labrecord.fileio import dumps

#: JSON documents (run.json, scores.json, judge files) larger than this are refused unread
MAX_DOCUMENT_BYTES = 64 << 20
#: append-only logs and population registries larger than this are refused unread
MAX_LOG_BYTES = 1 << 30
#: binary files labrecord hands to a library (Parquet, HDF5) larger than this are refused
MAX_BINARY_BYTES = 64 << 30
#: ``measurements.parquet`` is read into memory once (checked, then loaded from the same
#: bytes): larger files are refused unread
MAX_MEASUREMENTS_BYTES = 1 << 30
#: a measurements file declaring more rows, or more cells (rows x columns), or more
#: uncompressed bytes than this in its footer is refused before any column is read
MAX_MEASUREMENT_ROWS = 10_000_000
MAX_MEASUREMENT_CELLS = 200_000_000
#: each column of a measurements file may become a corpus column: more are refused
MAX_MEASUREMENT_COLUMNS = 1024
MAX_MEASUREMENT_UNCOMPRESSED_BYTES = 4 << 30
#: deeper JSON nesting is refused (the formats need fewer than ten levels)
MAX_JSON_DEPTH = 64
#: longest quote of input text inside a message
EXCERPT_CHARS = 80
#: the range of the integer columns of the stored run tables (DuckDB ``BIGINT``): a JSON
#: integer outside it is refused, since the store could not hold it as written
STORED_INT_MIN, STORED_INT_MAX = -(1 << 63), (1 << 63) - 1
#: a run of this many digits may be an integer outside the stored range (shorter never is):
#: found by mapping every digit to "0" and everything else to " " (``bytes.translate``)
LONG_DIGIT_RUN = b"0" * 19
DIGITS_ONLY = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))
_compact_encoder = msgspec.json.Encoder()

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


_CHUNK = 1 << 24


def read_bounded(path: str | os.PathLike[str], limit: int = MAX_LOG_BYTES) -> bytes:
    """The bytes of a regular file, checked before reading and never more than ``limit``."""
    path = Path(path)
    check_file(path, limit)
    flags = os.O_RDONLY | (0 if symlinks_allowed() else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise LabrecordError(f"{path}: cannot read: {error.strerror}") from error
    with os.fdopen(fd, "rb", buffering=0) as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise LabrecordError(f"{path}: not a regular file; refused")
        # one read sized by the file, not by the limit (a read of ``limit`` bytes allocates
        # them up front); a file that grows while open is read on in bounded chunks
        chunks = [fh.read(min(limit, info.st_size) + 1)]
        total = len(chunks[0])
        while chunks[-1] and total <= limit:
            chunks.append(fh.read(min(_CHUNK, limit + 1 - total)))
            total += len(chunks[-1])
    if total > limit:
        raise LabrecordError(f"{path}: grew past the {limit}-byte limit while being read; refused")
    return b"".join(chunks)


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
    """``msgspec.json.decode`` with the nesting limit and the :func:`strict_problem` checks
    (no repeated key, no integer the store cannot hold); every failure is one
    :class:`LabrecordError`."""
    problem = depth_problem(raw)
    if problem is not None:
        raise LabrecordError(f"{where}: {problem}")
    try:
        value = msgspec.json.decode(raw, **options)
        problem = strict_problem(raw)
        if problem is not None:
            raise LabrecordError(f"{where}: {problem}")
        return value
    except RecursionError as error:
        raise LabrecordError(f"{where}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from error
    except msgspec.DecodeError as error:
        raise LabrecordError(f"{where}: invalid JSON: {error}") from error
    except msgspec.ValidationError as error:
        raise LabrecordError(f"{where}: {error}") from error


class RecordProblem(LabrecordError):
    """A JSON line that decodes but may not be stored (nesting, a repeated key, a huge integer)."""


def decode_record(raw: bytes, decoder: msgspec.json.Decoder[Any]) -> tuple[Any, bytes]:
    """Decode one JSONL record strictly: ``(typed record, canonical JSON text)``.

    The one line decoder of every reader (validation, the replay audit, the writer
    resuming a log), so they all see the same record.  The canonical text is the typed
    record encoded again as the writer encodes it (sorted keys, defaults left out), which
    is what the store loads; a line the writer wrote is its own canonical text, which
    proves at once that it repeats no key.  Raises :class:`RecordProblem` (message only,
    no path) for nesting past :data:`MAX_JSON_DEPTH` or a :func:`strict_problem`, and
    msgspec's own errors for text that does not decode to the record type.

    (:func:`labrecord.validation.jsonl.decode_jsonl` does the same checks a chunk of lines
    at a time, which is much cheaper.)
    """
    problem = depth_problem(raw)
    if problem is not None:
        raise RecordProblem(problem)
    record = decoder.decode(raw)
    canonical = dumps(record)
    if raw != canonical or LONG_DIGIT_RUN in raw.translate(DIGITS_ONLY):
        problem = strict_problem(raw)
        if problem is not None:
            raise RecordProblem(problem)
    return record, canonical


def canonical_json(value: Any) -> bytes:
    """The canonical JSON text of a decoded value (:func:`labrecord.fileio.dumps`): what
    every later reader (the DuckDB load) parses instead of the input bytes, so no reader
    can see a value the checks did not."""
    return dumps(value)


def strict_problem(raw: bytes) -> str | None:
    """Why JSON text that decodes may still not be stored, else None.

    * A key repeated in one object: decoders disagree on which copy wins (msgspec and
      Python keep the last, DuckDB the first), so a record could mean one thing to the
      checks and another to the store.
    * An integer outside the stored 64-bit range (:data:`STORED_INT_MIN` ..
      :data:`STORED_INT_MAX`).

    The repeated-key test is exact and needs two counts for most text.  Each member of an
    object is written with one colon, and a string holds a colon only literally or as a
    ``\\u`` escape.  The untyped decoding keeps every distinct key with the same
    strings, so when the text has no backslash and as many colons as that decoding
    encoded again, no member was lost to a repeat; otherwise the text is read member by
    member.
    """
    plain = msgspec.json.decode(raw)
    again = _compact_encoder.encode(plain)
    if b"\\" in raw or raw.count(b":") != again.count(b":"):
        repeated = _repeated_key(raw)
        if repeated is not None:
            return repeated
    if LONG_DIGIT_RUN in again.translate(DIGITS_ONLY):
        return _int_out_of_range(plain)
    return None


def _repeated_key(raw: bytes) -> str | None:
    import json

    found: list[tuple[str, str]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen and not found:
                found.append((key, ", ".join(sorted(k for k, _ in pairs))))
            seen.add(key)
        return dict(pairs)

    try:
        json.loads(raw, object_pairs_hook=pairs_hook)
    except (ValueError, RecursionError):
        return None  # msgspec decoded it: nothing more to learn here
    if not found:
        return None
    key, members = found[0]
    return (f"key {excerpt(key)!r} appears more than once in one object (of keys {excerpt(members)}); "
            "readers disagree on which copy counts, so the record is refused")


def _int_out_of_range(plain: Any) -> str | None:
    stack: list[tuple[Any, str]] = [(plain, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not STORED_INT_MIN <= item <= STORED_INT_MAX:
                at = f" at `{where.lstrip('.')}`" if where else ""
                return (f"integer {excerpt(str(item))}{at} is outside the stored 64-bit range "
                        f"({STORED_INT_MIN} .. {STORED_INT_MAX})")
        elif isinstance(item, dict):
            stack.extend((v, f"{where}.{k}") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))
    return None


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
