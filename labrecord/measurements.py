"""The measurement schema of ``measurements.parquet``.

One row per physics step (or recorded step).  Every family shares the columns in
:data:`COMMON_COLUMNS`; a task family registers the extra columns its contract replays
from in :data:`FAMILY_COLUMNS` (the contracts live in ``labrecord.scorers.contracts``;
``docs/contracts.md`` explains each column).  :data:`OPTIONAL_COLUMNS` are checked for
their type when present.  Kept in the core so ``labrecord validate`` can check a run
without importing a wing.

Conventions: float columns are written as float64 (the replay audit recomputes the
online scorer's thresholds from them bit for bit; float32 rounding can flip a threshold);
SI units (newtons, metres, m/s, radians unless the name says ``_deg``),
world frame with z up, positions of a body's reference point; a ``*_contact`` flag is
true when any robot link (fingers, hand, arm) touches the body; ``*_grasped`` is the
stricter bilateral finger contact with the gripper closed on the body.

Feedback weighing (standards ``w10 w20 w50 w100``), for each standard ``{w}``:

* ``pan_force_n`` – upward support force through the pan's load-cell joint, F↑ of eq. 8
  (the empty-pan bias F↑_empty is stored in ``run.json`` task.variant ``f_empty_n``);
* ``sensor_ok`` – false while the load cell reports an error or overload (the window is
  invalid);
* ``pan_speed`` – speed of the pan body;
* ``hand_pan_contact`` – a robot link touches the pan or the sample (hand pressure);
* ``{w}_on_pan`` – the standard's support path ends at the pan (it touches the pan, or a
  body that rests on the pan), whoever else touches it;
* ``{w}_contact`` / ``{w}_grasped`` – robot contact / bilateral grasp of the standard;
* ``{w}_speed`` – linear speed of the standard;
* optional ``{w}_over_pan`` – the standard is above the pan's footprint (a release there
  that does not land is a *miss*; a release elsewhere is a put-back);
* optional ``{w}_on_table`` – the standard touches the table (with ``{w}_on_pan`` it tells
  a release onto a support from a release in free air);
* optional ``{w}_x, {w}_y, {w}_z`` – its position (``{w}_z`` measures the fall of a drop);
* optional ``arm_speed`` – the largest joint speed of the arm (rad/s): a still arm with a
  stable reading at the end of an incomplete episode is an *early stop*;
* optional ``robot_balance_force_n`` – magnitude of the net contact force (N) of the robot
  (any arm link, the gripper included) on the balance (its base and pan): above the safety
  limit it is a *safety* violation, like hand pressure on the load.

Centrifuge loading (tubes ``tube_a tube_b``):

* ``rotor_x, rotor_y, rotor_z, rotor_yaw`` – rotor frame in the world;
* ``{tube}_x, _y, _z`` – tube bottom tip; ``{tube}_ax, _ay, _az`` – unit tube axis
  pointing from cap to tip (the insertion direction);
* ``{tube}_supported`` – the rotor carries the tube (socket contact), ``{tube}_contact``,
  ``{tube}_grasped``, ``{tube}_speed`` as above.

Placement recall (target ``tube``; distractors are optional):

* ``rack_x, rack_y, rack_z, rack_yaw`` – rack frame (origin at slot-grid centre, top face);
* ``tube_x, _y, _z`` – tube bottom tip; ``tube_in_rack`` – the rack carries the tube;
  ``tube_on_table`` – the table carries the tube; ``tube_contact``, ``tube_grasped``,
  ``tube_speed``;
* ``grip_x, grip_y, grip_z, grip_vz`` – gripper centre and its vertical velocity;
* ``occluded`` – the environment transition of eq. 10 is in progress (cameras occluded,
  policy paused).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: column -> pyarrow type family ("int", "float", "bool", "string", "list")
COMMON_COLUMNS: dict[str, str] = {"step": "int", "t": "float"}

WEIGHING_STANDARDS: tuple[str, ...] = ("w10", "w20", "w50", "w100")
CENTRIFUGE_TUBES: tuple[str, ...] = ("tube_a", "tube_b")


def _weighing_columns() -> dict[str, str]:
    columns = {"pan_force_n": "float", "sensor_ok": "bool", "pan_speed": "float", "hand_pan_contact": "bool"}
    for w in WEIGHING_STANDARDS:
        columns.update({f"{w}_on_pan": "bool", f"{w}_contact": "bool", f"{w}_grasped": "bool", f"{w}_speed": "float"})
    return columns


def _centrifuge_columns() -> dict[str, str]:
    columns = {"rotor_x": "float", "rotor_y": "float", "rotor_z": "float", "rotor_yaw": "float"}
    for tube in CENTRIFUGE_TUBES:
        for axis in ("x", "y", "z", "ax", "ay", "az"):
            columns[f"{tube}_{axis}"] = "float"
        columns.update({f"{tube}_supported": "bool", f"{tube}_contact": "bool", f"{tube}_grasped": "bool",
                        f"{tube}_speed": "float"})
    return columns


def _rack_columns() -> dict[str, str]:
    columns = {name: "float" for name in ("rack_x", "rack_y", "rack_z", "rack_yaw", "tube_x", "tube_y", "tube_z",
                                          "tube_speed", "grip_x", "grip_y", "grip_z", "grip_vz")}
    columns.update({"tube_in_rack": "bool", "tube_on_table": "bool", "tube_contact": "bool", "tube_grasped": "bool",
                    "occluded": "bool"})
    return columns


#: family -> {column: type family}; what each family's contract replays from
FAMILY_COLUMNS: dict[str, dict[str, str]] = {
    "weighing": _weighing_columns(),
    "centrifuge": _centrifuge_columns(),
    "rack": _rack_columns(),
}

#: columns any family may add; their type is checked when present
OPTIONAL_COLUMNS: dict[str, dict[str, str]] = {
    "weighing": {**{f"{w}_{axis}": "float" for w in WEIGHING_STANDARDS for axis in ("x", "y", "z")},
                 **{f"{w}_over_pan": "bool" for w in WEIGHING_STANDARDS},
                 **{f"{w}_on_table": "bool" for w in WEIGHING_STANDARDS}, "arm_speed": "float",
                 "robot_balance_force_n": "float"},
    "centrifuge": {},
    "rack": {},
}
COMMON_OPTIONAL_COLUMNS: dict[str, str] = {"episode": "int", "wall": "float"}


def _type_family(arrow_type: Any) -> str:
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        return "int"
    if pa.types.is_floating(arrow_type):
        return "float"
    if pa.types.is_boolean(arrow_type):
        return "bool"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_dictionary(arrow_type):
        return "string"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return "list"
    return str(arrow_type)


def _compatible(expected: str, actual: str) -> bool:
    return expected == actual or (expected == "float" and actual == "int")


def check_measurement_schema(schema: Any, family: str | None) -> list[tuple[str, str]]:
    """Return ``(column, message)`` for each missing or mistyped column.

    ``schema`` is a ``pyarrow.Schema``; a family without registered columns is checked
    for the common columns only.
    """
    problems: list[tuple[str, str]] = []
    required = dict(COMMON_COLUMNS)
    optional = dict(COMMON_OPTIONAL_COLUMNS)
    if family is not None:
        required.update(FAMILY_COLUMNS.get(family, {}))
        optional.update(OPTIONAL_COLUMNS.get(family, {}))
    names = set(schema.names)
    for column, kind in required.items():
        if column not in names:
            problems.append((column, f"missing column {column!r} ({kind}) required for family {family!r}"))
            continue
        actual = _type_family(schema.field(column).type)
        if not _compatible(kind, actual):
            problems.append((column, f"column {column!r} is {actual}, expected {kind}"))
    for column, kind in optional.items():
        if column in names:
            actual = _type_family(schema.field(column).type)
            if not _compatible(kind, actual):
                problems.append((column, f"column {column!r} is {actual}, expected {kind}"))
    return problems


def nonfinite_columns(table: Any) -> list[tuple[str, int, int]]:
    """``(column, count, first row)`` for each float column holding NaN or infinity.

    A non-finite value breaks every threshold the replay computes from its column (a NaN
    ``t`` never orders, a NaN force never reads as stable), so it is refused, not replayed.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    found = []
    for field in table.schema:
        if not pa.types.is_floating(field.type):
            continue
        bad = pc.invert(pc.fill_null(pc.is_finite(table.column(field.name)), True))
        count = pc.sum(bad).as_py() or 0
        if count:
            found.append((field.name, count, pc.index(bad, True).as_py()))
    return found


#: column names the store adds to every measurement row (and its readers' file column);
#: a measurements file may not use them, in any letter case (DuckDB names ignore case)
RESERVED_COLUMNS = ("run_id", "filename")


def column_name_problems(names: Sequence[str]) -> list[tuple[str, str]]:
    """``(column, message)`` for each reserved name and each name repeated (letter case
    ignored, as the corpus ignores it)."""
    problems: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for name in names:
        folded = name.casefold()
        if folded in RESERVED_COLUMNS:
            problems.append((name, f"column {name!r} is a name the store reserves ({', '.join(RESERVED_COLUMNS)})"))
        elif folded in seen:
            problems.append((name, f"column {name!r} repeats column {seen[folded]!r} (names ignore letter case)"))
        seen.setdefault(folded, name)
    return problems


def _nested_columns(schema: Any) -> list[tuple[str, str]]:
    """Columns of a record type (struct, map, union, at any list depth): measurements hold
    scalars or lists of scalars, and a record's field names would reach the store's SQL."""
    import pyarrow as pa

    problems = []
    for field in schema:
        kind = field.type
        while pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
            kind = kind.value_type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if pa.types.is_struct(kind) or pa.types.is_map(kind) or pa.types.is_union(kind):
            problems.append((field.name, f"column {field.name!r} is of a record type ({excerpt_type(field.type)}); "
                                         "measurement columns hold scalars or lists of scalars"))
    return problems


def excerpt_type(arrow_type: Any) -> str:
    text = str(arrow_type)
    return text if len(text) <= 60 else text[:60] + "…"


def open_measurements(data: bytes, where: str) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` over the bytes of a measurements file, after its
    footer has been checked against the row, cell and size limits (nothing of a column is
    decoded before that, so a small file declaring millions of rows is refused unread) and
    its column names against :func:`column_name_problems`.  Raises :class:`LabrecordError`
    naming ``where``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from labrecord.errors import LabrecordError
    from labrecord.safeio import (
        MAX_MEASUREMENT_CELLS, MAX_MEASUREMENT_COLUMNS, MAX_MEASUREMENT_ROWS, MAX_MEASUREMENT_UNCOMPRESSED_BYTES,
    )

    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        meta = parquet.metadata
        rows, columns = meta.num_rows, meta.num_columns
        declared = sum(meta.row_group(g).num_rows for g in range(meta.num_row_groups))
        unpacked = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
        names = parquet.schema_arrow.names
    except Exception as error:  # pyarrow raises several types for damaged files
        raise LabrecordError(f"{where}: not a readable Parquet file: {error}") from error
    if rows != declared or rows < 0:
        raise LabrecordError(f"{where}: footer declares {rows} rows but its row groups {declared}; refused")
    if columns > MAX_MEASUREMENT_COLUMNS:
        raise LabrecordError(f"{where}: {columns} columns, over the {MAX_MEASUREMENT_COLUMNS}-column limit; refused unread")
    if rows > MAX_MEASUREMENT_ROWS:
        raise LabrecordError(f"{where}: declares {rows} rows, over the {MAX_MEASUREMENT_ROWS}-row limit; refused unread")
    if rows * max(columns, 1) > MAX_MEASUREMENT_CELLS:
        raise LabrecordError(f"{where}: declares {rows} rows x {columns} columns, over the "
                             f"{MAX_MEASUREMENT_CELLS}-cell limit; refused unread")
    if unpacked > MAX_MEASUREMENT_UNCOMPRESSED_BYTES:
        raise LabrecordError(f"{where}: declares {unpacked} uncompressed bytes, over the "
                             f"{MAX_MEASUREMENT_UNCOMPRESSED_BYTES}-byte limit; refused unread")
    problems = column_name_problems(names) + _nested_columns(parquet.schema_arrow)
    if problems:
        raise LabrecordError(f"{where}: {problems[0][1]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    return parquet
