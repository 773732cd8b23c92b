"""The whole-file decode of a log gives exactly what reading it line by line gives."""
from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.models import Event
from labrecord.validation import jsonl
from labrecord.validation.findings import Report

_events = msgspec.json.Decoder(Event)
LINE = b'{"episode":0,"seq":%d,"t":0.0,"type":"episode_start"}'
#: ways a line can go wrong, each found by the line-by-line reading
DAMAGE = {
    "blank": lambda line: b"\n" + line,
    "spaces": lambda line: b"   \n" + line,
    "split": lambda line: line.replace(b',"t"', b',\n"t"'),
    "two": lambda line: line + b"," + line,
    "repeat": lambda line: b'{"seq":-1,' + line[1:],
    "huge": lambda line: line.replace(b'"episode":0', b'"episode":%d' % 2**63),
    "spaced": lambda line: line.replace(b":", b": "),
    "deep": lambda line: line.replace(b'"episode":0', b'"episode":' + b"[" * 70 + b"]" * 70),
    "not json": lambda line: line[:-3],
}


def _read(data: bytes, whole: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list, list, list]:
    with monkeypatch.context() as patch:
        if not whole:
            patch.setattr(jsonl, "_decode_whole", lambda data, decoder: None)
        report, kept = Report(), jsonl.KeptTexts()
        records = list(jsonl.decode_jsonl("e.jsonl", data, _events, report, keep=kept))
    return records, kept.lines(), [str(f) for f in report.errors + report.warnings]


def test_a_writers_log_is_decoded_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three canonical lines: records 1..3 with their own texts kept, no finding, and the
    array decoder called once (no line decoded on its own)."""
    data = b"".join(LINE % i + b"\n" for i in range(3))
    calls = []
    real = jsonl._decode_whole
    monkeypatch.setattr(jsonl, "_decode_whole", lambda d, dec: calls.append(1) or real(d, dec))
    report, kept = Report(), jsonl.KeptTexts()
    records = list(jsonl.decode_jsonl("e.jsonl", data, _events, report, keep=kept))
    assert [(n, r.seq) for n, r in records] == [(1, 0), (2, 1), (3, 2)]
    # the file is kept as the one block read, no copy per line
    assert kept.blocks == [data] and kept.lines() == [LINE % i for i in range(3)] and report.ok and calls == [1]


def test_a_cut_last_line_is_never_decoded_whole() -> None:
    data = LINE % 0 + b"\n" + (LINE % 1)[:10]
    assert jsonl._decode_whole(data, _events) is None


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 6), st.sampled_from(sorted(DAMAGE)), st.booleans())
def test_whole_and_line_by_line_reading_agree(at: int, how: str, cut: bool) -> None:
    """Any one damaged line (or none, when ``at`` is past the end), with or without a cut
    last line: the same records, kept texts and findings either way."""
    monkeypatch = pytest.MonkeyPatch()
    lines = [LINE % i for i in range(6)]
    if at < len(lines):
        lines[at] = DAMAGE[how](lines[at])
    data = b"".join(line + b"\n" for line in lines) + (b'{"seq": 9' if cut else b"")
    fast, slow = _read(data, True, monkeypatch), _read(data, False, monkeypatch)
    assert [(n, msgspec.json.encode(r)) for n, r in fast[0]] == [(n, msgspec.json.encode(r)) for n, r in slow[0]]
    assert fast[1:] == slow[1:]
