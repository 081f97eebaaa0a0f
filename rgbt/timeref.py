"""The ``sensor_msgs/TimeReference.source`` convention of the driver-level counter topics (no rclpy).

Drivers (and the virtual stack) publish, beside each host-stamped frame or IMU sample, a
``TimeReference`` with the same header stamp whose ``source`` carries the device counters the
trigger sync node needs (``nodes/trigger_sync.py``):

- frames (``{raw_prefix}/<camera>/frame_info``): ``"<frame counter>"``, plus ``";ffc"`` when the
  frame was frozen by a flat-field correction, e.g. ``"1234"``, ``"1235;ffc"``;
- IMU samples (``{raw_prefix}/imu/sync_info``): ``"<SyncInCnt>;<TimeSyncIn_ns>"`` (VN-100: trigger
  pulses counted, ns since the last pulse), e.g. ``"812;4166666"``; ``time_ref`` is the sample's
  time on the IMU clock.

This module is the one writer and reader of that text.
"""

from __future__ import annotations

from dataclasses import dataclass

from rgbt.errors import DecodeError

FFC_FLAG = "ffc"


@dataclass(frozen=True)
class FrameCounter:
    """A camera frame's device counter and whether a flat-field correction froze it."""

    counter: int
    ffc: bool = False


@dataclass(frozen=True)
class ImuSync:
    """A VN-100 sample's SyncIn count and its time since the last SyncIn pulse (ns)."""

    syncin_count: int
    t_since_sync_ns: int


def encode_frame(counter: int, ffc: bool = False) -> str:
    """``source`` of a frame's ``frame_info``."""
    return f"{int(counter)}" + (f";{FFC_FLAG}" if ffc else "")


def decode_frame(source: str) -> FrameCounter:
    """Inverse of :func:`encode_frame`; :class:`DecodeError` naming the text when it is not one."""
    counter, _, flags = source.partition(";")
    try:
        return FrameCounter(int(counter), FFC_FLAG in flags.split(";"))
    except ValueError:
        raise DecodeError(f"frame_info source {source!r}: expected '<counter>' or '<counter>;ffc'") from None


def encode_imu(syncin_count: int | None, t_since_sync_ns: int | None) -> str:
    """``source`` of an IMU sample's ``sync_info`` (a missing field is written as 0)."""
    return f"{int(syncin_count or 0)};{int(t_since_sync_ns or 0)}"


def decode_imu(source: str) -> ImuSync:
    """Inverse of :func:`encode_imu`; :class:`DecodeError` naming the text when it is not one."""
    count, sep, since = source.partition(";")
    try:
        if not sep:
            raise ValueError
        return ImuSync(int(count), int(since))
    except ValueError:
        raise DecodeError(f"imu sync_info source {source!r}: expected '<SyncInCnt>;<TimeSyncIn_ns>'") from None
