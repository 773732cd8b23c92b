from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labrecord.errors import LabrecordError
from labrecord.scorers.identity import IDENTITY_FIELDS, require_same_identity


def _row(run_id: str, **fields: str) -> dict:
    row = {f: "x" for f in IDENTITY_FIELDS}
    row.update(fields, run_id=run_id)
    return row


def test_differing_field_is_named_with_both_values():
    with pytest.raises(LabrecordError, match=r"evaluation_version differs \('1' in run 'a' vs '2' in run 'b'\)"):
        require_same_identity([_row("a", evaluation_version="1"), _row("b", evaluation_version="2")])


@given(st.sampled_from(IDENTITY_FIELDS))
def test_any_single_differing_field_is_refused(field):
    with pytest.raises(LabrecordError, match=f"{field} differs"):
        require_same_identity([_row("a"), _row("b", **{field: "y"})])


def test_equal_identities_pool():
    assert require_same_identity([_row("a"), _row("b")])["task_id"] == "x"
