"""Trailing windows and hold timers of the feature kernels: by hand, against brute force,
and continued across blocks (:class:`KernelTimers`) exactly as over the whole series."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from labrecord.scorers.contracts.base import KernelTimers, hold_flags, hold_key
from labrecord.scorers.contracts.windows import range_of, window_left

times = st.lists(st.floats(0.0, 0.5), min_size=1, max_size=80).map(lambda d: np.cumsum(np.asarray(d)))


def test_window_and_range_by_hand() -> None:
    """Width 1 s over t = 0, 0.4, 0.8, 1.2, 1.6: row 3 (1.2 s) reaches back to 0.4 s (row 1),
    row 4 to 0.8 s; ranges max − min: [1], [1, 3] → 2, [1, 3, 2] → 2, [3, 2, 2.5] → 1,
    [2, 2.5, 2.4] → 0.5."""
    t = np.array([0.0, 0.4, 0.8, 1.2, 1.6])
    m = np.array([1.0, 3.0, 2.0, 2.5, 2.4])
    left = window_left(t, 1.0)
    assert left.tolist() == [0, 0, 0, 1, 2]
    assert range_of(m, left).tolist() == [0.0, 2.0, 2.0, 1.0, 0.5]


def test_hold_timers_by_hand() -> None:
    """A flag true at 0, 0.5, 1.0 s holds 1 s at 1.0 s; broken at 1.5 s it restarts at 2.0 s.
    Key 2 from 0 s holds 0.5 s at 0.5 s; key 3 from 1.5 s holds at 2.0 s."""
    t = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    flag = np.array([True, True, True, False, True])
    start, held = hold_flags(flag, t, 1.0)
    assert held.tolist() == [False, False, True, False, False]
    assert np.isnan(start[3]) and start[4] == 2.0
    held_key, started = hold_key(np.array([2, 2, 2, 3, 3]), t, 0.5)
    assert held_key.tolist() == [-1, 2, 2, -1, 3] and started.tolist() == [0.0, 0.0, 0.0, 1.5, 1.5]


@settings(max_examples=60, deadline=None)
@given(t=times, data=st.data())
def test_range_matches_brute_force(t: np.ndarray, data: st.DataObject) -> None:
    values = np.asarray(data.draw(st.lists(st.floats(-100, 100), min_size=len(t), max_size=len(t))))
    width = data.draw(st.floats(0.0, 2.0))
    bulk = range_of(values, window_left(t, width))
    brute = [float(np.ptp(values[[j for j in range(k + 1) if t[k] - t[j] <= width]])) for k in range(len(t))]
    assert bulk.tolist() == brute


@settings(max_examples=60, deadline=None)
@given(t=times, data=st.data())
def test_timers_continue_across_blocks(t: np.ndarray, data: st.DataObject) -> None:
    """Timers carried across any block edges give the whole series' values, and the whole
    series matches the definition row by row."""
    keys = np.asarray(data.draw(st.lists(st.integers(-1, 2), min_size=len(t), max_size=len(t))), dtype=np.int64)
    duration = data.draw(st.floats(0.0, 1.5))
    cuts = sorted(set(data.draw(st.lists(st.integers(1, max(len(t) - 1, 1)), max_size=5))))
    whole = KernelTimers()
    whole.t = t
    want_key, want_flag = whole.key("k", keys, duration), whole.flag("f", keys >= 0, duration)
    timers = KernelTimers()
    got_key, got_flag = [], []
    for a, b in zip([0, *cuts], [*cuts, len(t)]):
        timers.t = t[a:b]
        got_key.append(timers.key("k", keys[a:b], duration))
        got_flag.append(timers.flag("f", keys[a:b] >= 0, duration))
    assert np.concatenate(got_key).tolist() == want_key.tolist()
    assert np.concatenate(got_flag).tolist() == want_flag.tolist()
    for k in range(len(t)):  # the definition: the run of equal keys (of true flags) ending at k
        j = k
        while j > 0 and keys[j - 1] == keys[k]:
            j -= 1
        assert want_key[k] == (keys[k] if keys[k] >= 0 and t[k] - t[j] >= duration else -1)
        j = k
        while j > 0 and keys[j - 1] >= 0 and keys[k] >= 0:
            j -= 1
        assert want_flag[k] == (keys[k] >= 0 and t[k] - t[j] >= duration)
