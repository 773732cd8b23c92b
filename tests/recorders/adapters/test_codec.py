"""The OpenPI wire codec: byte-for-byte equal to openpi-client's, defensive on decode."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from labrecord.recorders.adapters.codec import FrameError, packb, unpackb
from tests.support import require_module

DTYPES = st.sampled_from([np.uint8, np.int32, np.int64, np.float32, np.float64, np.bool_])


def observation(arrays: list[np.ndarray]) -> dict:
    return {"observation/image": arrays[0], "observation/state": arrays[-1], "prompt": "put the 20 g standard on the pan",
            "meta": {"k": np.float32(1.5), "n": [1, 2, 3]}}


@given(st.lists(hnp.arrays(DTYPES, hnp.array_shapes(max_dims=3, max_side=5)), min_size=1, max_size=3))
def test_bytes_equal_openpi_client(arrays: list[np.ndarray]) -> None:
    openpi = require_module("openpi_client.msgpack_numpy", "pip install --no-deps openpi-client==0.1.2")
    obs = observation(arrays)
    assert packb(obs) == openpi.packb(obs)
    back = unpackb(openpi.packb(obs))
    for key in ("observation/image", "observation/state"):
        np.testing.assert_array_equal(back[key], obs[key])
        assert back[key].dtype == obs[key].dtype
    theirs = openpi.unpackb(packb(obs))
    np.testing.assert_array_equal(theirs["observation/image"], obs["observation/image"])


def test_round_trip_scalar_and_nested() -> None:
    frame = {"actions": np.arange(80, dtype=np.float32).reshape(10, 8), "server_timing": {"infer_ms": np.float64(3.5)}}
    back = unpackb(packb(frame))
    assert back["actions"].shape == (10, 8)
    assert back["server_timing"]["infer_ms"] == 3.5


@pytest.mark.parametrize(("frame", "match"), [
    (b"\xc1", "undecodable"),
    (b"\x92\x01", "undecodable"),  # a cut array
    (None, "does not fit"),
])
def test_hostile_frames_refused(frame: bytes | None, match: str) -> None:
    import msgpack

    if frame is None:  # a header claiming 10^12 elements over 8 bytes of data
        frame = msgpack.packb({b"__ndarray__": True, b"data": b"\0" * 8, b"dtype": "<f8", b"shape": [10**6, 10**6]})
    with pytest.raises(FrameError, match=match):
        unpackb(frame)


def test_object_dtype_refused_both_ways() -> None:
    import msgpack

    with pytest.raises(FrameError, match="cannot be sent"):
        packb({"x": np.array([object()], dtype=object)})
    frame = msgpack.packb({b"__ndarray__": True, b"data": b"", b"dtype": "|O", b"shape": [0]})
    with pytest.raises(FrameError, match="refused"):
        unpackb(frame)


def test_frame_size_limit() -> None:
    with pytest.raises(FrameError, match="exceeds"):
        unpackb(packb({"a": np.zeros(100, np.uint8)}), max_bytes=50)
