"""Result identities: which runs may be aggregated into one result (sec. 7.4).

Two runs belong to the same group only when every field of :data:`IDENTITY_FIELDS`
agrees: task and evaluation versions with the contract hash, the asset revision and the
layout revision of the bench (``assets.revision``, ``assets.layout_hash``, computed by
:mod:`labrecord.sim.assets` for the embedded benches), the tested system, observation
condition, action convention, history protocol, intervention mode and site.  Anything that pools runs across groups calls :func:`require_same_identity`,
which refuses and names the first differing field.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labrecord.errors import LabrecordError

#: corpus ``runs`` columns forming a result identity, in report order
IDENTITY_FIELDS: tuple[str, ...] = (
    "task_id", "task_version", "contract_hash", "evaluation_version", "asset_revision", "layout_hash",
    "system_name", "system_revision", "observation_condition", "action_convention", "history_protocol",
    "intervention_mode", "intervention_site", "oracle",
)
#: the fields a matched Oracle pair is allowed to differ in (base vs supported branch)
INTERVENTION_FIELDS: tuple[str, ...] = ("intervention_mode", "intervention_site", "oracle")
SYSTEM_FIELDS: tuple[str, ...] = ("system_name", "system_revision")

Identity = tuple[Any, ...]


def identity_of(row: Mapping[str, Any], fields: Sequence[str] = IDENTITY_FIELDS) -> Identity:
    return tuple(row.get(f) for f in fields)


def identity_dict(identity: Identity, fields: Sequence[str] = IDENTITY_FIELDS) -> dict[str, Any]:
    return dict(zip(fields, identity))


def first_difference(a: Mapping[str, Any], b: Mapping[str, Any], fields: Sequence[str] = IDENTITY_FIELDS) -> str | None:
    for field in fields:
        if a.get(field) != b.get(field):
            return field
    return None


def require_same_identity(rows: Sequence[Mapping[str, Any]], fields: Sequence[str] = IDENTITY_FIELDS,
                          what: str = "aggregate") -> dict[str, Any]:
    """Return the common identity of ``rows`` or raise naming the differing field."""
    if not rows:
        raise LabrecordError(f"cannot {what}: no runs selected")
    first = rows[0]
    for row in rows[1:]:
        field = first_difference(first, row, fields)
        if field is not None:
            raise LabrecordError(
                f"cannot {what} across different result identities: {field} differs "
                f"({first.get(field)!r} in run {first.get('run_id')!r} vs {row.get(field)!r} in run {row.get('run_id')!r})")
    return {f: first.get(f) for f in fields}
