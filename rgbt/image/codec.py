"""numpy <-> ``sensor_msgs/Image``: one codec for the live graph and for bags.

Arrays follow the rgbt image convention: ``HxW`` for one channel, ``HxWxC`` otherwise, the
channels in the message's own order (``bgr8`` stays BGR unless ``rgb=True`` is asked for).
Reading (:func:`image_to_numpy`) works on rclpy and on rosbags message objects alike (duck typing
on ``height/width/encoding/step/is_bigendian/data``) and is zero-copy (``np.frombuffer`` on
``msg.data``) unless the rows are padded (``step`` > the pixels of a row: one copy of the useful
bytes) or the data are big-endian (converted to native order, one copy).

Raw CDR (``raw=True`` subscriptions, ``publish(bytes)``): :func:`cdr_to_image` reads a serialized
``sensor_msgs/Image`` without deserializing it (the pixels are a view of the received bytes) and
:func:`image_to_cdr` serializes an array in one copy of its pixels. Processing nodes use them so
that a frame they drop as stale costs nothing but its stamp, and a published frame is copied once
instead of three times (array -> ``msg.data`` -> rclpy's own serialization).

The message builders: ``rgbt.ros.image.numpy_to_image`` (rclpy) and
``rgbt.bag.images.numpy_to_image_msg`` (rosbags), both on :func:`dense_pixels`.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

from rgbt.errors import ImageError

#: encoding -> (dtype, channels)
ENCODINGS: dict[str, tuple[str, int]] = {
    "mono8": ("u1", 1), "8UC1": ("u1", 1),
    "mono16": ("u2", 1), "16UC1": ("u2", 1),
    "rgb8": ("u1", 3), "bgr8": ("u1", 3), "8UC3": ("u1", 3),
    "rgba8": ("u1", 4), "bgra8": ("u1", 4),
    "32FC1": ("f4", 1),
}
_BGR = {"bgr8", "bgra8"}


def _encoding(encoding: str) -> tuple[str, int]:
    try:
        return ENCODINGS[encoding]
    except KeyError:
        raise ImageError(f"unsupported image encoding {encoding!r}, expected one of {sorted(ENCODINGS)}") from None


def image_to_numpy(msg: Any, *, rgb: bool = False) -> np.ndarray:
    """Pixels of an Image message as ``HxW`` or ``HxWxC`` (a view of ``msg.data`` when possible).

    Honours ``step`` (row padding) and ``is_bigendian``; raises :class:`ImageError` naming the
    encoding / size when the buffer does not match the header (it must hold ``height x step``
    bytes). ``rgb``: ``bgr8`` / ``bgra8`` come back in RGB(A) order (a reversed-channel view).
    """
    kind, channels = _encoding(msg.encoding)
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    dtype = np.dtype(kind).newbyteorder(">" if msg.is_bigendian else "<")
    row_bytes = w * channels * dtype.itemsize
    buf = np.frombuffer(msg.data, dtype=np.uint8)
    if step < row_bytes or buf.size < step * h:
        raise ImageError(f"{msg.encoding} image {w}x{h}: step {step} and {buf.size} data bytes, "
                         f"expected step >= {row_bytes} and >= {step * h} bytes")
    if step == row_bytes:
        arr = buf[: step * h].view(dtype)
    else:  # padded rows: one copy of the useful bytes
        arr = np.ascontiguousarray(buf[: step * h].reshape(h, step)[:, :row_bytes]).view(dtype)
    shape = (h, w) if channels == 1 else (h, w, channels)
    arr = arr.reshape(shape)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))  # native order (one copy)
    if rgb and msg.encoding in _BGR:
        arr = arr[..., [2, 1, 0, 3]] if channels == 4 else arr[..., ::-1]
    return arr


def check_encoding(arr: np.ndarray, encoding: str) -> int:
    """The channel count of ``encoding``; :class:`ImageError` when ``arr`` (dtype, channels) does not match it."""
    kind, channels = _encoding(encoding)
    got_channels = 1 if arr.ndim == 2 else arr.shape[2]
    if arr.ndim not in (2, 3) or arr.dtype != np.dtype(kind) or got_channels != channels:
        raise ImageError(f"array {arr.dtype} {arr.shape} does not match encoding {encoding} "
                         f"(expected {np.dtype(kind)} with {channels} channel(s))")
    return channels


def dense_pixels(arr: np.ndarray, encoding: str) -> tuple[np.ndarray, int]:
    """``arr`` as a message carries it: row-major, no padding, little-endian (a copy only when
    ``arr`` is not that already), and its ``step`` (bytes per row). ``encoding`` must match the
    array (:func:`check_encoding`)."""
    channels = check_encoding(arr, encoding)
    dense = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<"), copy=False)
    return dense, int(arr.shape[1]) * channels * arr.dtype.itemsize


class CdrImage(NamedTuple):
    """A ``sensor_msgs/Image`` read from raw CDR: stamp (int ns), frame id, encoding, pixels (a view)."""

    t_ns: int
    frame_id: str
    encoding: str
    pixels: np.ndarray


_U32 = struct.Struct("<I")
_CDR_LE = b"\x00\x01\x00\x00"  # encapsulation: plain CDR, little endian


def _cdr_string(raw: memoryview, pos: int) -> tuple[str, int]:
    """A CDR string at payload offset ``pos`` (4-aligned length incl. NUL) -> (text, next offset)."""
    pos = (pos + 3) & ~3
    (n,) = _U32.unpack_from(raw, 4 + pos)
    return bytes(raw[8 + pos: 8 + pos + max(n - 1, 0)]).decode(), pos + 4 + n


class _RawImage:  # the fields image_to_numpy reads
    __slots__ = ("height", "width", "encoding", "step", "is_bigendian", "data")
    height: int
    width: int
    encoding: str
    step: int
    is_bigendian: int
    data: memoryview


def cdr_to_image(raw: bytes | bytearray | memoryview) -> CdrImage:
    """Read a serialized (little-endian CDR) ``sensor_msgs/Image``; the pixels are a view of ``raw``.

    Raises :class:`ImageError` for a big-endian payload, a truncated one, or pixels that do not
    match the header (see :func:`image_to_numpy`).
    """
    mv = memoryview(raw)
    if len(mv) < 48 or bytes(mv[:2]) != b"\x00\x01":
        raise ImageError(f"not a little-endian CDR sensor_msgs/Image ({len(mv)} bytes, "
                         f"encapsulation {bytes(mv[:4]).hex()})")
    try:
        sec, nsec = struct.unpack_from("<iI", mv, 4)
        frame_id, pos = _cdr_string(mv, 8)
        pos = (pos + 3) & ~3
        img = _RawImage()
        img.height, img.width = struct.unpack_from("<II", mv, 4 + pos)
        img.encoding, pos = _cdr_string(mv, pos + 8)
        img.is_bigendian = mv[4 + pos]
        pos = (pos + 1 + 3) & ~3
        img.step, n = struct.unpack_from("<II", mv, 4 + pos)
    except (struct.error, UnicodeDecodeError, IndexError) as exc:
        raise ImageError(f"truncated or malformed CDR sensor_msgs/Image ({len(mv)} bytes): {exc}") from None
    img.data = mv[12 + pos: 12 + pos + n]
    return CdrImage(sec * 1_000_000_000 + nsec, frame_id, img.encoding, image_to_numpy(img))


def image_to_cdr(arr: np.ndarray, t_ns: int, frame_id: str, encoding: str) -> bytes:
    """Serialize ``arr`` as a little-endian CDR ``sensor_msgs/Image`` (what ``publish(bytes)`` takes);
    the pixels are copied once. ``encoding`` must match the array (:func:`check_encoding`)."""
    arr, step = dense_pixels(arr, encoding)
    head = bytearray(_CDR_LE)
    sec, nsec = divmod(int(t_ns), 1_000_000_000)
    fid, enc = frame_id.encode() + b"\0", encoding.encode() + b"\0"
    head += struct.pack("<iII", sec, nsec, len(fid)) + fid
    head += bytes(-(len(head) - 4) % 4) + struct.pack("<III", arr.shape[0], arr.shape[1], len(enc)) + enc
    head += b"\0"  # is_bigendian
    head += bytes(-(len(head) - 4) % 4) + struct.pack("<II", step, arr.nbytes)
    return b"".join((head, arr.data.cast("B")))
