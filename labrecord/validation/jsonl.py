"""Decode a JSONL file record by record, turning every problem into a finding."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from labrecord.errors import TruncatedLogError
from labrecord.fileio import Line, LineProblem, decode_error_message, iter_lines
from labrecord.validation.findings import Report


def decode_jsonl(path: str, data: bytes, decoder: msgspec.json.Decoder[Any], report: Report) -> Iterator[tuple[int, Any]]:
    """Yield ``(line, record)`` for every line that decodes; report the others."""
    if not data.strip():
        report.error(path, None, "", "empty file")
        return
    for item in iter_lines(path, data):
        if isinstance(item, Line):
            try:
                yield item.number, decoder.decode(item.raw)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                field, message = decode_error_message(error, item.raw)
                report.error(path, item.number, field, message)
        elif isinstance(item, TruncatedLogError):
            report.error(path, item.line, "", f"truncated last line ({item.size} bytes without a newline)")
        elif isinstance(item, LineProblem):
            report.error(path, item.line, "", item.detail)
