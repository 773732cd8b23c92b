"""Decode a JSONL file record by record, turning every problem into a finding."""
from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import count
from typing import Any

import msgspec

from labrecord.errors import TruncatedLogError
from labrecord.fileio import MAX_LINE_BYTES, Line, LineProblem, decode_error_message, iter_lines
from labrecord.safeio import (
    DIGITS_ONLY, LONG_DIGIT_RUN, MAX_JSON_DEPTH, canonical_json, depth_problem, excerpt, strict_problem,
)
from labrecord.validation.findings import Report

#: line-level findings listed per file; the rest are counted in one closing finding, so
#: a file that is not a log at all (a link to /etc/passwd) is never echoed whole
MAX_LINE_FINDINGS = 10


#: records checked together against their canonical texts (bounds what is held at once)
CHUNK = 4096

#: every byte but the brackets that open a level and the newline, deleted to count levels per line
_NOT_OPENING = bytes(c for c in range(256) if c not in b"[{\n")
#: a line with more opening brackets than :data:`MAX_JSON_DEPTH` (in the text left by ``_NOT_OPENING``)
_MANY_OPENINGS = re.compile(rb"[^\n]{%d}" % (MAX_JSON_DEPTH + 1))

class KeptTexts:
    """The canonical texts of the records a log yielded, in order, held as blocks of
    newline-terminated lines (a canonical text never holds a raw newline: JSON escapes it).

    A log whose every line is its own canonical text is kept as the one block of bytes
    read, with no object per line; the store builds its Arrow columns from the blocks
    (:func:`labrecord.store.ingest.text_column`).
    """

    __slots__ = ("blocks", "count")

    def __init__(self) -> None:
        self.blocks: list[bytes] = []
        self.count = 0

    def add_block(self, block: bytes, count: int) -> None:
        """Keep ``block``: ``count`` canonical texts, each ending with a newline."""
        if count:
            self.blocks.append(block)
            self.count += count

    def extend(self, texts: Sequence[bytes]) -> None:
        if texts:
            self.add_block(b"\n".join(texts) + b"\n", len(texts))

    def lines(self) -> list[bytes]:
        """The kept texts, one per record."""
        return b"".join(self.blocks).split(b"\n")[:-1]

    def __len__(self) -> int:
        return self.count


_list_decoders: dict[int, tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]] = {}


def _list_decoder(decoder: msgspec.json.Decoder[Any]) -> msgspec.json.Decoder[Any]:
    """The decoder of a JSON array of ``decoder``'s records, with the same settings (the
    same type, strictness and hook: each element decodes exactly as one line would)."""
    cached = _list_decoders.get(id(decoder))
    if cached is None or cached[0] is not decoder:
        cached = (decoder, msgspec.json.Decoder(list[decoder.type], strict=decoder.strict,  # type: ignore[name-defined]
                                                dec_hook=decoder.dec_hook))
        _list_decoders[id(decoder)] = cached
    return cached[1]


def _decode_whole(data: bytes, decoder: msgspec.json.Decoder[Any]) -> list[Any] | None:
    """Every record of a log decoded in one call, or None when the file needs reading line
    by line (which then finds and names whatever is wrong with it).

    The lines are decoded as the elements of one JSON array (the newlines turned into
    commas), which gives the same records as decoding each line and leaves no per-line
    work to Python.  It stands for the line-by-line reading only where that would find
    nothing about the lines themselves: the file ends with a newline (no cut last line), no
    line is over :data:`~labrecord.fileio.MAX_LINE_BYTES` or opens more than
    :data:`~labrecord.safeio.MAX_JSON_DEPTH` levels, the array decodes, and it holds one
    record per newline.  A blank line leaves two commas in a row (invalid JSON) and a
    record spread over lines leaves fewer records than newlines, so both are read line by
    line.
    """
    if not data.endswith(b"\n") or data.startswith(b"\n"):
        return None
    if len(data) > MAX_LINE_BYTES and max(map(len, data.split(b"\n"))) > MAX_LINE_BYTES:
        return None
    if data.count(b"[") + data.count(b"{") > MAX_JSON_DEPTH and _MANY_OPENINGS.search(data.translate(None, _NOT_OPENING)):
        return None
    try:
        records: list[Any] = _list_decoder(decoder).decode(b"[" + data[:-1].replace(b"\n", b",") + b"]")
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return records if len(records) == data.count(b"\n") else None


def decode_jsonl(path: str, data: bytes, decoder: msgspec.json.Decoder[Any], report: Report, *,
                 interrupted: bool = False, keep: KeptTexts | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, record)`` for every line that decodes; report the others.

    ``interrupted``: the run's writer never closed it, so a cut last line is the expected
    trace of the crash (a warning, the line is ignored) rather than damage (an error).
    ``keep``: receives the canonical text of every record yielded (see
    :func:`labrecord.safeio.decode_record`), which is what the store loads: a line that
    was ignored or refused here is never loaded.  (:func:`decode_log` is the same reading,
    handing over the whole list of records where the file is its own canonical text.)
    """
    return decode_log(path, data, decoder, report, interrupted=interrupted, keep=keep)[1]


def decode_log(path: str, data: bytes, decoder: msgspec.json.Decoder[Any], report: Report, *,
               interrupted: bool = False, keep: KeptTexts | None = None) -> tuple[list[Any] | None, Iterator[tuple[int, Any]]]:
    """``(records, items)``: the reading of :func:`decode_jsonl` as ``items`` (an iterator
    of ``(line, record)``), and ``records``, every record in line order, when no finding
    can come from the reading (the file decoded whole and every line is its own
    canonical text, already in ``keep``), else None.  A caller holding ``records`` may
    check them in bulk; the findings and records of ``items`` are the same either way.

    Repeated keys and integers outside the stored range (:func:`~labrecord.safeio.strict_problem`)
    are screened for a chunk of records at a time: the chunk encoded again in one call
    equals its lines joined exactly when every line is its own canonical text (as every
    line the writer wrote is), which proves that no line repeats a key; only the lines of
    a chunk that does not pass are checked one by one, and reported after the chunk.  A
    file that decodes whole but is not its own canonical text is screened so from the
    records of that one decode (no line is decoded a second time).
    """
    if not data.strip():
        report.error(path, None, "", "empty file")
        return None, iter(())
    whole = _decode_whole(data, decoder)
    if whole is not None and canonical_json(whole) == b"[" + data[:-1].replace(b"\n", b",") + b"]" \
            and LONG_DIGIT_RUN not in data.translate(DIGITS_ONLY):
        # every line is its own canonical text (as every line the writer wrote is): no line
        # repeats a key or holds an integer out of range, and the lines are what is kept
        if keep is not None:
            keep.add_block(data, len(whole))
        return whole, zip(count(1), whole)
    return None, _read_lines(path, data, decoder, report, interrupted, keep, whole)


def _read_lines(path: str, data: bytes, decoder: msgspec.json.Decoder[Any], report: Report, interrupted: bool,
                keep: KeptTexts | None, whole: list[Any] | None) -> Iterator[tuple[int, Any]]:
    """The line-by-line reading; ``whole``: the records of a file that decoded whole (one
    per line, no line problem), screened here without decoding any line again."""
    problems = quotes = 0

    def problem(line: int, field: str, message: str) -> None:
        nonlocal problems
        problems += 1
        if problems <= MAX_LINE_FINDINGS:
            report.error(path, line, field, message)

    numbers: list[int] = []
    raws: list[bytes] = []
    records: list[Any] = []

    def settle() -> None:
        """Screen the pending chunk; keep its canonical texts, report its strict problems."""
        joined = b",".join(raws)
        if canonical_json(records) == b"[" + joined + b"]" and LONG_DIGIT_RUN not in joined.translate(DIGITS_ONLY):
            if keep is not None:
                keep.extend(raws)
        else:
            canonicals = []
            for number, raw, record in zip(numbers, raws, records):
                canonical = canonical_json(record)
                message = None if raw == canonical and LONG_DIGIT_RUN not in raw.translate(DIGITS_ONLY) else strict_problem(raw)
                if message is not None:
                    problem(number, "", message)
                canonicals.append(canonical)
            if keep is not None:
                keep.extend(canonicals)
        numbers.clear()
        raws.clear()
        records.clear()

    expected = 1
    if whole is not None:
        # the same order of work as the loop below over lines that all decode
        for number, (raw, record) in enumerate(zip(data.split(b"\n"), whole), 1):
            numbers.append(number)
            raws.append(raw)
            records.append(record)
            if len(records) >= CHUNK:
                settle()
            yield number, record
        expected = len(whole) + 1
    else:
        for item in iter_lines(path, data):
            number = item.number if isinstance(item, Line) else item.line
            for blank in range(expected, number):
                problem(blank, "", "blank line (every line of a JSONL log holds one record)")
            expected = number + 1
            if isinstance(item, Line):
                depth = depth_problem(item.raw)
                if depth is not None:
                    problem(item.number, "", depth)
                    continue
                try:
                    record = decoder.decode(item.raw)
                except (msgspec.DecodeError, msgspec.ValidationError) as error:
                    field, message = decode_error_message(error, item.raw)
                    text, quoted, _ = message.rpartition(" (line: ")
                    if quoted:
                        # one short quote per file: a file that is not a log is never echoed line by line
                        message = text if quotes else f"{text} (line: {excerpt(item.raw)})"
                        quotes += 1
                    problem(item.number, field, message)
                    continue
                except RecursionError:
                    problem(item.number, "", "JSON nested too deeply to decode")
                    continue
                numbers.append(item.number)
                raws.append(item.raw)
                records.append(record)
                if len(records) >= CHUNK:
                    settle()
                yield item.number, record
            elif isinstance(item, TruncatedLogError):
                expected = number
                if interrupted:
                    report.warn(path, item.line, "", f"cut last line ({item.size} bytes without a newline): the run was "
                                                     "interrupted mid-write; the line is ignored")
                else:
                    problem(item.line, "", f"truncated last line ({item.size} bytes without a newline)")
            elif isinstance(item, LineProblem):
                problem(item.line, "", item.detail)
    settle()
    for blank in range(expected, data.count(b"\n") + 1):
        problem(blank, "", "blank line (every line of a JSONL log holds one record)")
    if problems > MAX_LINE_FINDINGS:
        report.error(path, None, "", f"{problems - MAX_LINE_FINDINGS} more line problem(s) not listed "
                                     f"({problems} in all)")
