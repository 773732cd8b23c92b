"""Reading and writing paths that may be hostile (labrecord.safeio): ``check_apart`` (an
output is never an input, never inside one and never holds one) and the strict JSON
checks (repeated keys and integers the store cannot hold)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.models import Event
from labrecord.safeio import (
    STORED_INT_MAX, STORED_INT_MIN, RecordProblem, check_apart, decode_json, decode_record, strict_problem,
)
from labrecord.validation.findings import Report
from labrecord.validation.jsonl import CHUNK, decode_jsonl


def test_by_hand(tmp_path: Path) -> None:
    """runs/ holds r1/run.json: r1/run.json is it, r1/x lies inside r1, runs/ holds r1, runs2/ is apart."""
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    for out, relation in ((run / "run.json", "is the input"), (run / "new" / "x", "lies inside the input"),
                          (tmp_path / "runs", "holds the input"), (tmp_path, "holds the input")):
        with pytest.raises(LabrecordError, match=f"{relation} .*--overwrite does not change this"):
            check_apart(out, [run / "run.json", run])
    assert check_apart(tmp_path / "runs2", [run]) == tmp_path / "runs2"
    assert check_apart(tmp_path / "runs" / "scores.json", [run]) == tmp_path / "runs" / "scores.json"


def test_links_are_seen_through(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    (tmp_path / "alias").symlink_to(run)
    with pytest.raises(LabrecordError, match="is the input"):
        check_apart(tmp_path / "alias", [run])
    with pytest.raises(LabrecordError, match="lies inside the input"):
        check_apart(tmp_path / "alias" / "out.json", [run])
    os.link(run / "run.json", tmp_path / "hard.json")
    with pytest.raises(LabrecordError, match="is the input"):
        check_apart(tmp_path / "hard.json", [run / "run.json"])


names = st.lists(st.sampled_from(["a", "b", "c"]), min_size=0, max_size=3)


@given(names, names)
def test_refused_exactly_when_one_path_is_a_prefix_of_the_other(
        out: list[str], given_in: list[str]) -> None:
    root = Path("/nonexistent-labrecord-root")
    related = out[:len(given_in)] == given_in or given_in[:len(out)] == out
    try:
        check_apart(root.joinpath(*out), [root.joinpath(*given_in)])
    except LabrecordError:
        assert related
    else:
        assert not related


# -- strict JSON: repeated keys and integers outside 64 bits ----------------------------------

_events = msgspec.json.Decoder(Event)


def test_hand_checked_cases() -> None:
    """Worked by hand: ``{"a":1,"a":2}`` has 2 colons, its decoding ``{"a":2}`` 1, so the key
    is read member by member and found twice; ``"x:y"`` holds its colon in both texts, so a
    colon in a string alone is no finding; 2**63 = 9223372036854775808 is one past the
    largest BIGINT, -2**63 is the smallest."""
    assert "key 'a' appears more than once" in strict_problem(b'{"a":1,"a":2}')
    assert strict_problem(b'{"a":"x:y","b":{"a":1}}') is None  # the same key at another level is fine
    assert "key 'b' appears more than once" in strict_problem(b'{"a":[{"b":1, "b" : 1}]}')
    assert "key 'a'" in strict_problem(b'{"a":"\\u003a","a":1}')  # an escaped colon hides no repeat
    assert "9223372036854775808 at `a.b` is outside" in strict_problem(b'{"a":{"b":9223372036854775808}}')
    assert strict_problem(b'{"a":-9223372036854775808,"b":9223372036854775807,"c":"92233720368547758089"}') is None
    assert "at `a[1]`" in strict_problem(b'{"a":[0,-9223372036854775809]}')


def test_documents_and_records_share_the_checks() -> None:
    with pytest.raises(LabrecordError, match="x.json: key 'status' appears more than once"):
        decode_json(b'{"status": "a", "status": "b"}', "x.json")
    with pytest.raises(RecordProblem, match="outside the stored 64-bit range"):
        decode_record(b'{"type":"episode_start","seq":0,"t":0.0,"episode":18446744073709551615}', _events)
    record, canonical = decode_record(b'{"episode":0,"seq":0,"t":0.0,"type":"episode_start"}', _events)
    assert canonical == b'{"episode":0,"seq":0,"t":0.0,"type":"episode_start"}'  # the writer's own text


KEYS = st.text(st.sampled_from("ab:\\\"é"), min_size=1, max_size=3)
SCALARS = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), st.text(st.sampled_from("x:\\\"9"), max_size=4),
                    st.booleans(), st.none())
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)


def _ints(value: object) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ints(v)]
    if isinstance(value, list):
        return [i for v in value for i in _ints(v)]
    return []


@given(st.dictionaries(KEYS, VALUES, min_size=1, max_size=4), st.booleans(), st.booleans(), st.data())
def test_a_repeat_or_a_huge_integer_is_found_exactly(record: dict, ascii_only: bool, spaced: bool, data: st.DataObject) -> None:
    separators = (", ", " : ") if spaced else (",", ":")
    text = json.dumps(record, ensure_ascii=ascii_only, separators=separators).encode()
    in_range = all(STORED_INT_MIN <= i <= STORED_INT_MAX for i in _ints(record))
    assert (strict_problem(text) is None) == in_range
    key = data.draw(st.sampled_from(sorted(record)))
    forged = json.dumps({key: data.draw(SCALARS)}, ensure_ascii=ascii_only, separators=separators).encode()
    repeated = forged[:-1] + separators[0].encode() + text[1:]
    problem = strict_problem(repeated)
    assert problem is not None and ("appears more than once" in problem or not in_range)


def _log(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


@given(st.integers(0, CHUNK + 10), st.sampled_from(["repeat", "huge", "spaced"]))
def test_a_log_is_screened_a_chunk_at_a_time_without_missing_a_line(at: int, how: str) -> None:
    """Every line of a writer's log is its own canonical text; one altered line anywhere
    (before, inside or after a chunk boundary) is found, or loaded as its canonical text."""
    lines = [b'{"episode":0,"seq":%d,"t":0.0,"type":"episode_start"}' % i for i in range(CHUNK + 12)]
    if how == "repeat":
        lines[at] = b'{"seq":-1,' + lines[at][1:]
    elif how == "huge":
        lines[at] = lines[at].replace(b'"episode":0', b'"episode":%d' % 2**63)
    else:
        lines[at] = lines[at].replace(b":", b": ")
    report, kept = Report(), []
    records = list(decode_jsonl("e.jsonl", _log(lines), _events, report, keep=kept))
    if how == "spaced":
        assert report.ok and len(records) == len(kept) == len(lines)
        assert kept[at] == lines[at].replace(b": ", b":")
    else:
        assert [f.line for f in report.errors] == [at + 1], report.errors


def test_a_small_file_under_a_huge_limit_is_read_without_allocating_the_limit(tmp_path: Path) -> None:
    """``read_bounded`` sizes its read by the file: 5 bytes under a 1 TiB limit are 5 bytes
    (reading ``limit + 1`` bytes at once would ask for a terabyte up front)."""
    from labrecord.safeio import read_bounded

    path = tmp_path / "state.bin"
    path.write_bytes(b"12345")
    assert read_bounded(path, 1 << 40) == b"12345"
    assert read_bounded(path, 5) == b"12345"
    with pytest.raises(LabrecordError, match="limit"):
        read_bounded(path, 4)
