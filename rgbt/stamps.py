"""Integer-nanosecond time <-> ROS ``builtin_interfaces/Time`` and raw CDR header stamps.

Every message whose first field is a ``std_msgs/Header`` carries its stamp at bytes 4..12 of the
CDR payload (after the 4-byte encapsulation header): ``int32 sec, uint32 nanosec``. Reading and
patching it there lets a node restamp an image without deserializing its pixels.
"""

from __future__ import annotations

import struct
from typing import Any

from rgbt.errors import DecodeError

_STAMP = struct.Struct("<iI")
_STAMP_BE = struct.Struct(">iI")


def ns_to_stamp(t_ns: int, stamp: Any) -> Any:
    """Fill a ``builtin_interfaces/Time`` (an rclpy or rosbags message: the caller owns it, so this
    module needs no ROS package) from integer nanoseconds; returns it."""
    stamp.sec, stamp.nanosec = divmod(int(t_ns), 1_000_000_000)
    return stamp


def stamp_to_ns(stamp: Any) -> int:
    """Integer nanoseconds of a ``builtin_interfaces/Time`` (rclpy or rosbags message)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _struct_for(raw: bytes | bytearray) -> struct.Struct:
    if len(raw) < 12 or raw[0] != 0 or raw[1] not in (0, 1):
        raise DecodeError(f"not a CDR payload with a header stamp ({len(raw)} bytes, "
                          f"encapsulation {bytes(raw[:4]).hex()})")
    return _STAMP if raw[1] == 1 else _STAMP_BE


def cdr_stamp_ns(raw: bytes | bytearray) -> int:
    """The header stamp (ns) of a raw CDR message whose first field is ``std_msgs/Header``."""
    sec, nsec = _struct_for(raw).unpack_from(raw, 4)
    return sec * 1_000_000_000 + nsec


def cdr_with_stamp(raw: bytes | bytearray, t_ns: int) -> bytes:
    """A copy of ``raw`` with its header stamp replaced by ``t_ns``; every other byte is kept."""
    buf = bytearray(raw)
    _struct_for(buf).pack_into(buf, 4, *divmod(int(t_ns), 1_000_000_000))
    return bytes(buf)
