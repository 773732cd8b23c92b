import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.models import ActionSpec
from labrecord.recorders.actions import check_chunk

SPEC = ActionSpec(representation="eef", dim=2, mode="absolute", control_hz=10.0, max_chunk=3, low=[0.0, -1.0], high=[1.0, 1.0])


def test_clipping_by_hand():
    check = check_chunk([[0.5, 2.0], [-0.5, 0.0]], SPEC)
    assert check.rejected is None
    assert check.applied.tolist() == [[0.5, 1.0], [0.0, 0.0]]
    assert check.clipped.tolist() == [True, True]
    assert check.requested.tolist() == [[0.5, 2.0], [-0.5, 0.0]]


@pytest.mark.parametrize("actions, match", [
    ([[0.1, 0.2, 0.3]], "shape"),
    ([[0.1, 0.2]] * 4, "max_chunk"),
    ([[np.nan, 0.0]], "non-finite"),
    (np.zeros((0, 2)), "empty"),
    ("abc", "not numeric"),
])
def test_rejections(actions, match):
    check = check_chunk(actions, SPEC)
    assert check.rejected is not None and match in check.rejected
    assert len(check.applied) == 0


def test_single_row_is_a_chunk_of_one():
    assert check_chunk([0.2, 0.3], SPEC).applied.shape == (1, 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5)), min_size=1, max_size=3))
def test_applied_always_within_bounds_and_unchanged_inside(rows):
    check = check_chunk(rows, SPEC)
    assert check.rejected is None
    assert (check.applied >= np.array(SPEC.low)).all() and (check.applied <= np.array(SPEC.high)).all()
    inside = ~check.clipped
    assert np.array_equal(check.applied[inside], check.requested[inside])
