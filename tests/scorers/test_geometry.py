"""e_p and e_v (eq. 2); zero or non-finite predictions are invalid outputs."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from labrecord.scorers.corpus import score_corpus
from labrecord.scorers.geometry import axis_error, is_valid_vector
from labrecord.scorers.synthetic import GeometrySpec, RolloutSpec, write_rollout


def test_hand_checked_errors_and_invalid_predictions(tmp_path):
    reports = [
        GeometrySpec(p_hat=[3.0, 4.0, 0.0], p_ref=[0.0, 0.0, 0.0], v_hat=[0.0, 0.0, 1.0], v_ref=[0.0, 0.0, -1.0]),
        GeometrySpec(p_hat=[1.0, 1.0, 1.0], p_ref=[1.0, 1.0, 2.0], v_hat=[2.0, 0.0, 0.0], v_ref=[0.0, 1.0, 0.0]),
        GeometrySpec(p_hat=[0.0, 0.0, 0.0], p_ref=[1.0, 0.0, 0.0], v_hat=[0.0, 0.0, 0.0], v_ref=[0.0, 1.0, 0.0]),
        GeometrySpec(p_hat=[None, 1.0, 1.0], p_ref=[1.0, 0.0, 0.0], v_hat=None, v_ref=None),
    ]
    write_rollout(tmp_path, RolloutSpec("r0", geometry=reports))
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    assert (m["e_p"]["value"], m["e_p"]["num"], m["e_p"]["den"]) == (3.0, 6, 2)  # (5 + 1) / 2
    assert (m["geometry.p_valid"]["num"], m["geometry.p_valid"]["den"]) == (2, 4)
    assert math.isclose(m["e_v"]["value"], (math.pi + math.pi / 2) / 2)
    assert (m["geometry.v_valid"]["num"], m["geometry.v_valid"]["den"]) == (2, 3)


unit = st.floats(-10, 10, allow_nan=False)


@given(st.lists(unit, min_size=3, max_size=3), st.lists(unit, min_size=3, max_size=3))
def test_axis_error_matches_numpy_and_is_an_angle(a, b):
    if not (is_valid_vector(a, 3) and is_valid_vector(b, 3)):
        return
    va, vb = np.array(a) / np.linalg.norm(a), np.array(b) / np.linalg.norm(b)
    expected = float(np.arccos(np.clip(va @ vb, -1, 1)))
    assert 0.0 <= axis_error(a, b) <= math.pi
    assert math.isclose(axis_error(a, b), expected, abs_tol=1e-6)


def test_invalid_vectors():
    assert not is_valid_vector([0.0, 0.0, 0.0], 3)
    assert not is_valid_vector([1.0, float("nan"), 0.0], 3)
    assert not is_valid_vector([1.0, 0.0], 3)
    assert not is_valid_vector(None, 3)
    assert is_valid_vector([0.0, 0.0, 1e-9], 3)
    assert not is_valid_vector([0.0, 0.0, 5e-324], 3)


def test_nearly_parallel_axes_agree_between_sql_and_python(tmp_path):
    """Near zero, arccos of a rounded cosine drifts by ~1e-8; the atan2 form does not."""
    v_hat, v_ref = [0.375, 0.0, 0.0], [0.0078125, 0.0, 9.16e-11]
    write_rollout(tmp_path, RolloutSpec("r0", geometry=[
        GeometrySpec(p_hat=[1.0, 0.0, 0.0], p_ref=[1.0, 0.0, 0.0], v_hat=v_hat, v_ref=v_ref)]))
    m = score_corpus(tmp_path, resamples=0)["groups"][0]["metrics"]
    expected = math.atan2(9.16e-11, 0.0078125)
    assert math.isclose(axis_error(v_hat, v_ref), expected, rel_tol=1e-9)
    assert math.isclose(m["e_v"]["value"], expected, rel_tol=1e-9)
