"""numpy <-> ``sensor_msgs/msg/Image`` (rosbags message objects), honouring ``step`` and endianness.

Arrays follow the rgbt image convention: ``HxW`` for one channel, ``HxWxC`` otherwise, colour in
RGB order. Reading is zero-copy (a strided view on the message buffer) unless the data are
big-endian multi-byte values, which are byte-swapped into a native copy.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from rgbt.bag.types import ros2_typestore
from rgbt.errors import ImageError

#: encoding -> (numpy dtype, channels)
ENCODINGS: dict[str, tuple[str, int]] = {
    "mono8": ("u1", 1),
    "8UC1": ("u1", 1),
    "mono16": ("u2", 1),
    "16UC1": ("u2", 1),
    "rgb8": ("u1", 3),
    "bgr8": ("u1", 3),
    "8UC3": ("u1", 3),
    "rgba8": ("u1", 4),
    "bgra8": ("u1", 4),
    "32FC1": ("f4", 1),
}
_BGR = {"bgr8", "bgra8"}
_NATIVE_BIG = sys.byteorder == "big"


def image_to_numpy(msg: Any, *, rgb: bool = True) -> np.ndarray:
    """Return the pixels of a ``sensor_msgs/Image`` as an array (``HxW`` or ``HxWxC``).

    ``step`` (bytes per row, may include padding) and ``is_bigendian`` are honoured. With
    ``rgb=True`` (default) ``bgr8``/``bgra8`` come back in RGB(A) order as a reversed-channel view.
    Raises :class:`ImageError` for an unsupported encoding or a buffer too short for
    ``height x step``.
    """
    enc = str(msg.encoding)
    if enc not in ENCODINGS:
        raise ImageError(f"image encoding {enc!r} not supported; expected one of {sorted(ENCODINGS)}")
    kind, channels = ENCODINGS[enc]
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    big = bool(msg.is_bigendian)
    dtype = np.dtype(kind).newbyteorder(">" if big else "<")
    row_bytes = width * channels * dtype.itemsize
    if step < row_bytes:
        raise ImageError(f"image step {step} B < width {width} x {channels} ch x {dtype.itemsize} B "
                         f"for encoding {enc!r}")
    buf = msg.data
    if not isinstance(buf, np.ndarray):
        buf = np.frombuffer(buf, dtype=np.uint8)
    need = step * (height - 1) + row_bytes if height else 0
    if buf.size < need:
        raise ImageError(f"image data has {buf.size} B, expected at least {height} rows x step {step} B "
                         f"({enc}, {width}x{height})")
    shape = (height, width, channels) if channels > 1 else (height, width)
    strides = (step, channels * dtype.itemsize, dtype.itemsize)[: len(shape)]
    if not buf.flags.c_contiguous:
        buf = np.ascontiguousarray(buf)
    arr = np.ndarray(shape, dtype=dtype, buffer=buf, offset=0, strides=strides)
    if dtype.itemsize > 1 and big != _NATIVE_BIG:
        arr = arr.astype(dtype.newbyteorder("="))
    if rgb and enc in _BGR:
        arr = arr[..., [2, 1, 0, 3]] if channels == 4 else arr[..., ::-1]
    return arr


def numpy_to_image_msg(arr: np.ndarray, t_ns: int, frame_id: str, encoding: str) -> Any:
    """Build a rosbags ``sensor_msgs/msg/Image`` from ``arr`` (little-endian, dense rows).

    ``t_ns`` becomes ``header.stamp`` (int nanoseconds). ``arr`` must match ``encoding``'s dtype and
    channel count (e.g. ``mono16`` -> uint16 ``HxW``, ``rgb8`` -> uint8 ``HxWx3`` in RGB order).
    """
    if encoding not in ENCODINGS:
        raise ImageError(f"image encoding {encoding!r} not supported; expected one of {sorted(ENCODINGS)}")
    kind, channels = ENCODINGS[encoding]
    want = np.dtype(kind)
    arr = np.asarray(arr)
    shape_ok = arr.ndim == 2 if channels == 1 else (arr.ndim == 3 and arr.shape[2] == channels)
    if arr.dtype.kind != want.kind or arr.dtype.itemsize != want.itemsize or not shape_ok:
        exp = "HxW" if channels == 1 else f"HxWx{channels}"
        raise ImageError(f"array {arr.dtype} {arr.shape} does not match encoding {encoding!r}: "
                         f"expected {want} {exp}")
    arr = np.ascontiguousarray(arr, dtype=want.newbyteorder("<"))
    store = ros2_typestore()
    Image = store.types["sensor_msgs/msg/Image"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    sec, nanosec = divmod(int(t_ns), 1_000_000_000)
    height, width = arr.shape[:2]
    return Image(
        header=Header(stamp=Time(sec=sec, nanosec=nanosec), frame_id=frame_id),
        height=height, width=width, encoding=encoding, is_bigendian=0,
        step=width * channels * want.itemsize,
        data=arr.reshape(-1).view(np.uint8),
    )
