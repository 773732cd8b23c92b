"""The msgpack-with-numpy wire format of OpenPI policy servers.

An array travels as a map ``{b"__ndarray__": True, b"data": raw bytes, b"dtype":
dtype.str, b"shape": shape}`` and a numpy scalar as ``{b"__npgeneric__": True, b"data":
value, b"dtype": dtype.str}`` — the layout openpi-client's ``msgpack_numpy`` module
defines.  We keep our own encoder because openpi-client 0.1.2 pins ``numpy<2`` and
labrecord's core runs on numpy 2; a test checks the bytes against openpi-client's.

Decoding is defensive, since the frame comes from another process: object, void and
complex dtypes are refused (openpi refuses them too), and the byte count must match the
declared shape, so a hostile frame cannot make us allocate or read past its own size.
"""
from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

_REFUSED_KINDS = ("V", "O", "c")


class FrameError(ValueError):
    """A frame that is not valid msgpack-numpy."""


def _encode_default(obj: Any) -> Any:
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in _REFUSED_KINDS:
        raise FrameError(f"dtype {obj.dtype} cannot be sent")
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(f"cannot encode {type(obj).__name__}")


def _decode_hook(obj: dict[Any, Any]) -> Any:
    if b"__ndarray__" in obj:
        try:
            dtype = np.dtype(obj[b"dtype"])
            shape = tuple(int(n) for n in obj[b"shape"])
            data = obj[b"data"]
        except (KeyError, TypeError, ValueError) as error:
            raise FrameError(f"bad array header: {error}") from error
        if dtype.kind in _REFUSED_KINDS:
            raise FrameError(f"array dtype {dtype} is refused")
        if any(n < 0 for n in shape) or not isinstance(data, bytes):
            raise FrameError(f"bad array shape {shape}")
        if int(np.prod(shape, dtype=np.int64)) * dtype.itemsize != len(data):
            raise FrameError(f"array of shape {shape} and dtype {dtype} does not fit {len(data)} bytes")
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    if b"__npgeneric__" in obj:
        try:
            dtype = np.dtype(obj[b"dtype"])
        except (KeyError, TypeError, ValueError) as error:
            raise FrameError(f"bad scalar header: {error}") from error
        if dtype.kind in _REFUSED_KINDS:
            raise FrameError(f"scalar dtype {dtype} is refused")
        return dtype.type(obj[b"data"])
    return obj


def packb(obj: Any) -> bytes:
    """Encode ``obj`` (dicts, lists, numbers, strings, numpy arrays and scalars)."""
    return msgpack.packb(obj, default=_encode_default, use_bin_type=True)


def unpackb(data: bytes, *, max_bytes: int = 256 * 1024 * 1024) -> Any:
    """Decode one frame; raises :class:`FrameError` for anything that is not a valid frame."""
    if len(data) > max_bytes:
        raise FrameError(f"frame of {len(data)} bytes exceeds the {max_bytes}-byte limit")
    try:
        return msgpack.unpackb(data, object_hook=_decode_hook, raw=False, strict_map_key=False)
    except FrameError:
        raise
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError, TypeError) as error:
        raise FrameError(f"undecodable frame: {error}") from error
