"""The per-family measurement schema and its check in ``labrecord validate``."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.measurements import (
    COMMON_COLUMNS, FAMILY_COLUMNS, OPTIONAL_COLUMNS, check_measurement_schema,
)
from labrecord.scorers.contracts.centrifuge import CentrifugeInstance
from labrecord.scorers.contracts.rack import RackInstance
from labrecord.scorers.contracts.streams import CentrifugeStream, RackStream, WeighingStream
from labrecord.scorers.contracts.weighing import WeighingInstance

STREAMS = {
    "weighing": lambda: WeighingStream(WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}))),
    "centrifuge": lambda: CentrifugeStream(CentrifugeInstance()),
    "rack": lambda: RackStream(RackInstance()),
}


@pytest.mark.parametrize("family", sorted(FAMILY_COLUMNS))
def test_constructed_streams_satisfy_their_family_schema(family: str) -> None:
    table = STREAMS[family]().hold(0.01).table()
    assert check_measurement_schema(table.schema, family) == []
    assert set(table.column_names) == set(COMMON_COLUMNS) | set(FAMILY_COLUMNS[family])


def test_weighing_columns_by_hand() -> None:
    columns = FAMILY_COLUMNS["weighing"]
    assert columns["pan_force_n"] == "float" and columns["sensor_ok"] == "bool"
    assert {f"{w}_on_pan" for w in ("w10", "w20", "w50", "w100")} <= set(columns)
    assert len(columns) == 4 + 4 * 4


def test_missing_and_mistyped_columns_are_named() -> None:
    table = STREAMS["weighing"]().hold(0.01).table()
    table = table.drop_columns(["sensor_ok"]).set_column(0, "step", pa.array([0.5] * table.num_rows))
    problems = dict(check_measurement_schema(table.schema, "weighing"))
    assert "missing column 'sensor_ok' (bool)" in problems["sensor_ok"]
    assert problems["step"] == "column 'step' is float, expected int"


def test_optional_columns_are_type_checked_when_present() -> None:
    table = STREAMS["weighing"]().hold(0.01).table()
    assert "w10_x" in OPTIONAL_COLUMNS["weighing"]
    bad = table.append_column("w10_x", pa.array(["left"] * table.num_rows))
    assert check_measurement_schema(bad.schema, "weighing") == [("w10_x", "column 'w10_x' is string, expected float")]
    good = table.append_column("w10_x", pa.array([0.1] * table.num_rows))
    assert check_measurement_schema(good.schema, "weighing") == []


@given(family=st.sampled_from(sorted(FAMILY_COLUMNS)), data=st.data())
def test_dropping_any_required_column_is_reported(family: str, data: st.DataObject) -> None:
    required = sorted(set(COMMON_COLUMNS) | set(FAMILY_COLUMNS[family]))
    dropped = data.draw(st.lists(st.sampled_from(required), min_size=1, unique=True))
    schema = pa.schema([pa.field(name, pa.float64()) for name in required if name not in dropped])
    missing = {column for column, message in check_measurement_schema(schema, family) if message.startswith("missing")}
    assert missing == set(dropped)


def test_unknown_family_checks_common_columns_only() -> None:
    schema = pa.schema([pa.field("step", pa.int64()), pa.field("t", pa.float64())])
    assert check_measurement_schema(schema, "pipetting") == []
    assert check_measurement_schema(pa.schema([pa.field("t", pa.float64())]), None)[0][0] == "step"


def test_validate_reports_a_measurement_schema_problem(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from labrecord.examples import example_manifest
    from labrecord.scorers.contracts import get_contract
    from labrecord.scorers.contracts.streams import record_run
    from labrecord.validation import validate_paths

    inst = WeighingInstance(target_g=180.0, sample_g=130.0, goal=frozenset({"w50"}))
    manifest = example_manifest("m-1")
    manifest.task.variant = inst.variant()
    run_dir = record_run(tmp_path, manifest, get_contract("weighing"), inst, WeighingStream(inst).hold(2.0).rows)
    assert validate_paths([str(run_dir)]).ok
    table = pq.read_table(run_dir / "measurements.parquet").drop_columns(["pan_force_n"])
    pq.write_table(table, run_dir / "measurements.parquet")
    report = validate_paths([str(run_dir)])
    assert [(f.field, "missing column 'pan_force_n'" in f.message) for f in report.errors] == [("pan_force_n", True)]
