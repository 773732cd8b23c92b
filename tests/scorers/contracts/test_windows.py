"""Trailing windows and hold timers: bulk (numpy) and step-at-a-time forms agree."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.contracts.base import HoldTimer, KeyHold, hold_flags, hold_key
from labrecord.scorers.contracts.windows import SlidingRange, range_of, window_left

times = st.lists(st.floats(0.0, 0.5), min_size=1, max_size=80).map(lambda d: np.cumsum(np.asarray(d)))


def test_window_and_range_by_hand() -> None:
    t = np.array([0.0, 0.4, 0.8, 1.2, 1.6])
    m = np.array([1.0, 3.0, 2.0, 2.5, 2.4])
    left = window_left(t, 1.0)
    assert left.tolist() == [0, 0, 0, 1, 2]
    assert range_of(m, left).tolist() == [0.0, 2.0, 2.0, 1.0, 0.5]


def test_hold_timers_by_hand() -> None:
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    flag = np.array([True, True, True, False, True])
    start, held = hold_flags(flag, t, 1.0)
    assert held.tolist() == [False, False, True, False, False]
    assert np.isnan(start[3]) and start[4] == 2.0
    assert hold_key(np.array([2, 2, 2, 3, 3]), t, 0.5).tolist() == [-1, 2, 2, -1, 3]


@settings(max_examples=60, deadline=None)
@given(t=times, data=st.data())
def test_sliding_range_matches_bulk(t: np.ndarray, data: st.DataObject) -> None:
    values = np.asarray(data.draw(st.lists(st.floats(-100, 100), min_size=len(t), max_size=len(t))))
    width = data.draw(st.floats(0.0, 2.0))
    bulk = range_of(values, window_left(t, width))
    window = SlidingRange(width)
    assert [window.push(float(a), float(b)) for a, b in zip(t, values)] == bulk.tolist()
    brute = [float(np.ptp(values[[j for j in range(k + 1) if t[k] - t[j] <= width]])) for k in range(len(t))]
    assert bulk.tolist() == brute


@settings(max_examples=60, deadline=None)
@given(t=times, data=st.data())
def test_hold_timers_match_bulk(t: np.ndarray, data: st.DataObject) -> None:
    keys = np.asarray(data.draw(st.lists(st.integers(-1, 2), min_size=len(t), max_size=len(t))), dtype=np.int64)
    duration = data.draw(st.floats(0.0, 1.5))
    key_timer, flag_timer = KeyHold(duration), HoldTimer(duration)
    assert [key_timer.push(int(k), float(x)) for k, x in zip(keys, t)] == hold_key(keys, t, duration).tolist()
    flags = keys >= 0
    assert [flag_timer.push(bool(f), float(x)) for f, x in zip(flags, t)] == hold_flags(flags, t, duration)[1].tolist()
