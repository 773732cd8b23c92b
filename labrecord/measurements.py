"""The measurement schema of ``measurements.parquet``.

Every family shares the columns in :data:`COMMON_COLUMNS`; a task family registers the
extra columns its contract replays from in :data:`FAMILY_COLUMNS` (see the task
contracts in ``labrecord.scorers.contracts``).  Kept in the core so ``labrecord
validate`` can check a run without importing a wing.
"""
from __future__ import annotations

from typing import Any

#: column -> pyarrow type family ("int", "float", "bool", "string", "list")
COMMON_COLUMNS: dict[str, str] = {"step": "int", "t": "float"}

#: family -> {column: type family}; filled in by the families' contract documentation
FAMILY_COLUMNS: dict[str, dict[str, str]] = {}


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
    """Return ``(column, message)`` for each missing or mistyped column."""
    problems: list[tuple[str, str]] = []
    expected = dict(COMMON_COLUMNS)
    if family is not None:
        expected.update(FAMILY_COLUMNS.get(family, {}))
    names = set(schema.names)
    for column, kind in expected.items():
        if column not in names:
            problems.append((column, f"missing column {column!r} ({kind}) required for family {family!r}"))
            continue
        actual = _type_family(schema.field(column).type)
        if not _compatible(kind, actual):
            problems.append((column, f"column {column!r} is {actual}, expected {kind}"))
    return problems
