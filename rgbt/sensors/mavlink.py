"""ArduPilot over MAVLink (pymavlink): armed state, pose, global fix, camera events.

Connections are pymavlink connection strings: ``udpin:127.0.0.1:14550``,
``udpout:HOST:PORT``, ``tcp:HOST:PORT``, ``/dev/ttyACM0`` (with ``baudrate``), or a
``.tlog`` file. Outputs mirror mavros so the ROS shells can publish them unchanged:

- :class:`State` like ``mavros_msgs/State`` (``connected``, ``armed``, ``mode``),
- :class:`GlobalFix` like ``sensor_msgs/NavSatFix`` on ``global_position/global``
  (lat/lon deg, altitude m AMSL as reported by GLOBAL_POSITION_INT),
- :class:`LocalPose` like ``geometry_msgs/PoseStamped`` on ``local_position/pose``:
  position in ENU (x east, y north, z up) and orientation of the FLU body (x forward,
  y left, z up) in ENU, converted from LOCAL_POSITION_NED and ATTITUDE (NED / FRD) the way
  mavros does (ATTITUDE_QUATERNION when the vehicle sends it).

The armed state comes only from the *vehicle's* HEARTBEAT: heartbeats from ground stations
(``MAV_TYPE_GCS``) and from components that are not an autopilot
(``MAV_AUTOPILOT_INVALID``: cameras, companion computers, gimbals) are ignored.
"""

from __future__ import annotations

import mmap
import os
import struct
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rgbt.errors import DecodeError
from rgbt.geometry import ned_frd_to_enu_flu, quat_from_euler_zyx
from rgbt.sensors.stats import DecodeStats

MAV_TYPE_GCS = 6
MAV_AUTOPILOT_INVALID = 8
MAV_MODE_FLAG_SAFETY_ARMED = 128


def is_vehicle_heartbeat(msg: Any) -> bool:  # msg: a pymavlink message (untyped)
    """A HEARTBEAT sent by an autopilot (not a GCS, not a camera / companion component)."""
    return msg.get_type() == "HEARTBEAT" and msg.type != MAV_TYPE_GCS and msg.autopilot != MAV_AUTOPILOT_INVALID


class ArmTracker:
    """Armed/disarmed transitions of one vehicle from its heartbeats.

    The first vehicle heartbeat fixes the vehicle (system id); a vehicle that starts
    disarmed gives no event until it first arms. ``update`` returns ``(t_s, armed)`` on a
    transition, else None.
    """

    def __init__(self) -> None:
        self.sysid: int | None = None
        self.armed: bool | None = None
        self.events: list[tuple[float, bool]] = []

    def update(self, msg: Any, t_s: float) -> tuple[float, bool] | None:
        if not is_vehicle_heartbeat(msg):
            return None
        if self.sysid is None:
            self.sysid = msg.get_srcSystem()
        elif msg.get_srcSystem() != self.sysid:
            return None
        armed = bool(msg.base_mode & MAV_MODE_FLAG_SAFETY_ARMED)
        first = self.armed is None
        changed = armed != self.armed
        self.armed = armed
        if changed and not (first and not armed):
            ev = (t_s, armed)
            self.events.append(ev)
            return ev
        return None


MAVLINK_STX_V1, MAVLINK_STX_V2 = 0xFE, 0xFD
_TLOG_STAMP = 8  # big-endian u64 microseconds (Unix) before every frame


def _frame_size(data: bytes | bytearray | mmap.mmap, s: int) -> int:
    """Bytes of the MAVLink frame starting at ``data[s]`` (v1 or v2, signature included)."""
    if data[s] == MAVLINK_STX_V1:
        return 6 + data[s + 1] + 2
    signed = data[s + 2] & 0x01
    return 10 + data[s + 1] + 2 + (13 if signed else 0)


def tlog_messages(data: bytes | mmap.mmap, stats: DecodeStats | None = None) -> Iterator[tuple[float | None, Any]]:
    """``(t_s, message)`` for every CRC-valid MAVLink frame of a ``.tlog`` (each frame preceded
    by its 8-byte big-endian log time in us since the Unix epoch), decoded by pymavlink
    (ardupilotmega dialect, v1 and v2).

    Framing is done here: bytes that start no valid frame are skipped one at a time
    (``stats.bytes_skipped``); a frame of a known message whose CRC is wrong counts one
    ``checksum_failures``; a frame of a message id the dialect does not know cannot be
    checked and is skipped. ``t_s`` is None when fewer than 8 bytes precede the frame.
    """
    from pymavlink.dialects.v20 import ardupilotmega as apm

    st = stats if stats is not None else DecodeStats()
    mav = apm.MAVLink(None)
    known = apm.mavlink_map
    n = len(data)
    pos = 0  # bytes before pos are accounted for (a frame, its stamp, or skipped)
    scan = 0  # next byte to search for a start marker
    expect: int | None = _TLOG_STAMP  # where the next frame starts if the log is intact
    rejected = -1  # an expected start already tried (not to count its failure twice)
    # the next v2 / v1 start marker at or after scan, cached (-1: none left), so that a stream
    # without one kind of marker is not searched to its end for every candidate
    next_v2, next_v1 = data.find(b"\xfd"), data.find(b"\xfe")

    def decode_at(s: int) -> tuple[Any, int]:
        if n - s < 8:
            return None, 0
        size = _frame_size(data, s)
        if data[s] == MAVLINK_STX_V1:
            msgid = data[s + 5]
        elif n - s >= 10:
            msgid = data[s + 7] | (data[s + 8] << 8) | (data[s + 9] << 16)
        else:
            return None, 0
        if s + size > n or msgid not in known:
            return None, 0
        try:
            return mav.decode(bytearray(data[s:s + size])), size
        except apm.MAVError as exc:
            if "CRC" in str(exc):
                st.checksum_failures += 1
        except (ValueError, TypeError, IndexError, KeyError, UnicodeDecodeError, struct.error):
            st.undecodable += 1
        return None, 0

    while True:
        if expect is not None and expect < n and data[expect] in (MAVLINK_STX_V1, MAVLINK_STX_V2):
            s, from_expect = expect, True
        else:
            if 0 <= next_v2 < scan:
                next_v2 = data.find(b"\xfd", scan)
            if 0 <= next_v1 < scan:
                next_v1 = data.find(b"\xfe", scan)
            found = [x for x in (next_v2, next_v1) if x >= 0]
            s, from_expect = (min(found) if found else -1), False
            if s >= 0 and s == rejected:
                scan = s + 1
                continue
        expect = None
        if s < 0:
            break
        msg, size = decode_at(s)
        if msg is None:
            if from_expect:
                rejected = s
            else:
                scan = s + 1
            continue
        stamp_at = s - _TLOG_STAMP
        t = struct.unpack_from(">Q", data, stamp_at)[0] * 1e-6 if stamp_at >= 0 else None
        st.bytes_skipped += max(0, stamp_at - pos)  # the 8 bytes before a frame are its stamp
        st.packets += 1
        yield t, msg
        pos = scan = s + size
        expect = pos + _TLOG_STAMP
        rejected = -1
    st.bytes_skipped += n - pos


def decode_tlog(path: str | Path, stats: DecodeStats | None = None) -> dict:
    """Arm events (log time, Unix s) and message counts of a ``.tlog``; ``stats`` (if given)
    gets the packets decoded, checksum failures and bytes skipped."""
    p = Path(path)
    if not p.is_file():
        raise DecodeError(f"{p}: no such file (expected a MAVLink .tlog)")
    st = stats if stats is not None else DecodeStats()
    tracker = ArmTracker()
    counts: Counter[str] = Counter()
    with open(p, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        st.bytes_total = size
        # memory-mapped: a large log is read by the OS page by page, never copied whole
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        try:
            for t, msg in tlog_messages(data, st):
                counts[msg.get_type()] += 1
                if t is not None:
                    tracker.update(msg, t)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
    return {"arm_events": [[round(t, 3), a] for t, a in tracker.events], "messages": dict(sorted(counts.items()))}


# ----------------------------------------------------------------------------- frames

def ned_to_enu(x: float, y: float, z: float) -> tuple[float, float, float]:
    return (y, x, -z)


def attitude_enu_flu(roll: float, pitch: float, yaw: float) -> tuple[float, float, float, float]:
    """The FLU body's orientation in ENU ``(x, y, z, w)`` from MAVLink ATTITUDE (FRD body in NED,
    rad), as mavros publishes it (``rgbt.geometry``: numpy only, no scipy onboard)."""
    return ned_frd_to_enu_flu(*quat_from_euler_zyx(yaw, pitch, roll))


# ----------------------------------------------------------------------------- outputs

@dataclass
class State:
    """mavros_msgs/State: ``t_ns`` host time of the heartbeat."""

    t_ns: int
    connected: bool
    armed: bool
    mode: str
    system_status: int


@dataclass
class GlobalFix:
    """sensor_msgs/NavSatFix from GLOBAL_POSITION_INT: deg, deg, m (AMSL), status 0 = fix."""

    t_ns: int
    latitude: float
    longitude: float
    altitude: float
    status: int = 0
    position_covariance_type: int = 0  # COVARIANCE_TYPE_UNKNOWN


@dataclass
class LocalPose:
    """geometry_msgs/PoseStamped: position ENU (m), orientation FLU-in-ENU quaternion (x, y, z, w)."""

    t_ns: int
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    frame_id: str = "map"


@dataclass
class CameraEvent:
    """CAMERA_FEEDBACK (ArduPilot) or CAMERA_TRIGGER: autopilot time (us) and image index."""

    t_ns: int
    time_usec: int
    index: int
    kind: str


@dataclass
class MavlinkOptions:
    """``url`` is a pymavlink connection string; ``stream_rate_hz`` is requested on connect."""

    url: str = "udpin:127.0.0.1:14550"
    baudrate: int = 921600
    source_system: int = 254
    stream_rate_hz: int = 20
    heartbeat_timeout_s: float = 3.0


class Autopilot:
    """A live MAVLink link with mavros-like outputs.

    ``clock`` returns the time in ns used to stamp outputs (default ``time.time_ns``: the
    host wall clock, like a tlog); tests replaying a log pass the log's clock. ``arm``: the tracker
    of an earlier link to keep (a reopened link stays locked to the same vehicle).
    """

    def __init__(self, options: MavlinkOptions, clock: Callable[[], int] = time.time_ns,
                 arm: ArmTracker | None = None) -> None:
        from pymavlink import mavutil

        self.options = options
        self.clock = clock
        self.conn = mavutil.mavlink_connection(options.url, baud=options.baudrate, dialect="ardupilotmega",
                                               source_system=options.source_system, autoreconnect=True)
        self.arm = arm if arm is not None else ArmTracker()
        self.counts: Counter[str] = Counter()
        self.state: State | None = None
        self.fix: GlobalFix | None = None
        self.pose: LocalPose | None = None
        self.camera_events: list[CameraEvent] = []
        self._attitude: tuple[float, float, float, float] | None = None  # ENU/FLU (x, y, z, w)
        self._last_hb_ns: int | None = None
        self._streams_requested = False

    def request_streams(self, rate_hz: int | None = None) -> None:
        """Ask the vehicle for its data streams (ArduPilot REQUEST_DATA_STREAM, all streams)."""
        from pymavlink import mavutil

        rate = rate_hz or self.options.stream_rate_hz
        self.conn.mav.request_data_stream_send(self.conn.target_system, self.conn.target_component,
                                               mavutil.mavlink.MAV_DATA_STREAM_ALL, rate, 1)

    def handle(self, msg: Any) -> list[object]:
        """Update from one message; returns the outputs it produced."""
        t = self.clock()
        kind = msg.get_type()
        self.counts[kind] += 1
        out: list[object] = []
        if kind == "HEARTBEAT" and is_vehicle_heartbeat(msg):
            ev = self.arm.update(msg, t / 1e9)
            if self.arm.sysid == msg.get_srcSystem():
                from pymavlink import mavutil

                mode = mavutil.mode_string_v10(msg)
                self.state = State(t, True, bool(msg.base_mode & MAV_MODE_FLAG_SAFETY_ARMED), mode, msg.system_status)
                self._last_hb_ns = t
                out.append(self.state)
                if not self._streams_requested:
                    self.conn.target_system = msg.get_srcSystem()
                    self.conn.target_component = msg.get_srcComponent()
                    self.request_streams()
                    self._streams_requested = True
            if ev is not None:
                out.append(ev)
        elif kind == "GLOBAL_POSITION_INT":
            self.fix = GlobalFix(t, msg.lat * 1e-7, msg.lon * 1e-7, msg.alt * 1e-3)
            out.append(self.fix)
        elif kind == "ATTITUDE":
            self._attitude = attitude_enu_flu(msg.roll, msg.pitch, msg.yaw)
        elif kind == "ATTITUDE_QUATERNION":
            self._attitude = ned_frd_to_enu_flu(msg.q1, msg.q2, msg.q3, msg.q4)
        elif kind == "LOCAL_POSITION_NED" and self._attitude is not None:
            self.pose = LocalPose(t, ned_to_enu(msg.x, msg.y, msg.z), self._attitude)
            out.append(self.pose)
        elif kind == "CAMERA_FEEDBACK":
            ev2 = CameraEvent(t, int(msg.time_usec), int(msg.img_idx), kind)
            self.camera_events.append(ev2)
            out.append(ev2)
        elif kind == "CAMERA_TRIGGER":
            ev2 = CameraEvent(t, int(msg.time_usec), int(msg.seq), kind)
            self.camera_events.append(ev2)
            out.append(ev2)
        return out

    def poll(self, timeout: float = 0.05) -> list[object]:
        """Handle every message that arrives within ``timeout`` s (0: only those already received)."""
        out: list[object] = []
        msg = self.conn.recv_match(blocking=timeout > 0, timeout=timeout or None)
        while msg is not None:
            if msg.get_type() != "BAD_DATA":
                out.extend(self.handle(msg))
            msg = self.conn.recv_match(blocking=False)
        if self.state is not None and self._last_hb_ns is not None:
            if self.clock() - self._last_hb_ns > self.options.heartbeat_timeout_s * 1e9:
                self.state.connected = False
        return out

    def close(self) -> None:
        self.conn.close()
