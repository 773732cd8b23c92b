"""Constructed measurement streams: row tables keep every column of every row."""
from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.contracts import get_contract
from labrecord.scorers.contracts.streams import WeighingStream, rows_table
from labrecord.scorers.contracts.weighing import WeighingInstance

CONTRACT = get_contract("weighing")


def test_rows_table_keeps_a_column_that_appears_late() -> None:
    table = rows_table([{"step": 0, "t": 0.0}, {"step": 1, "t": 0.5, "w10_over_pan": False}])
    assert table.column_names == ["step", "t", "w10_over_pan"]
    assert table.column("w10_over_pan").to_pylist() == [None, False]


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.booleans()), max_size=8))
def test_rows_table_reads_back_every_value(rows: list[dict]) -> None:
    table = rows_table(rows)
    assert table.num_rows == len(rows) or not table.column_names
    for name in table.column_names:
        assert table.column(name).to_pylist() == [row.get(name) for row in rows]


def test_weighing_stream_backfills_over_pan_as_unknown() -> None:
    inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}))
    s = WeighingStream(inst).hold(0.01)
    assert "w10_over_pan" not in s.rows[0]
    s.set(over_pan={"w20"}).hold(0.01)
    table = pa.Table.from_pylist(s.rows)  # the first row now names the over-pan columns too
    assert table.column("w10_over_pan").to_pylist() == [None] * 5 + [False] * 5
    assert table.column("w20_over_pan").to_pylist() == [None] * 5 + [True] * 5


def test_put_back_after_over_pan_appears_is_no_miss_in_bulk() -> None:
    """The falsifying stream: w10 grasped, over-pan columns appear, w10 put back away from the pan."""
    inst = WeighingInstance(target_g=220.0, sample_g=100.0, goal=frozenset({"w100", "w20"}), start=frozenset({"w50"}))
    s = WeighingStream(inst).hold(1.2).set(grasped={"w10"}, speed=0.1).hold(1.0).set(over_pan={"w20"}).hold(1.0)
    s.set(grasped=set(), speed=0.0).hold(2.0)
    f = CONTRACT.features_bulk(s.table(), inst)
    assert f["over"][0] == 15 and f["over"][-1] == 2  # unknown counts as over; then only w20
    events, _ = CONTRACT.replay(s.table(), [], inst)
    assert not [e for e in events if e.type == "failure"]
