"""MAVLink input for the bridge node (no rclpy import): pymavlink messages -> plain events.

Only the vehicle's own heartbeat (autopilot != MAV_AUTOPILOT_INVALID, not a GCS) sets the armed
state, so companion computers and cameras sharing the link cannot disarm the recorder. Local
position NED + attitude quaternion become an ENU pose like mavros (x east, y north, z up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from pymavlink import mavutil

ARMED_FLAG = mavutil.mavlink.MAV_MODE_FLAG_SAFETY_ARMED


@dataclass
class MavEvent:
    kind: str  # "armed" | "pose" | "global"
    value: Any


def heartbeat_armed(msg: Any) -> bool | None:
    """The armed flag of a vehicle HEARTBEAT, None for heartbeats of GCSs and companion components."""
    if msg.autopilot == mavutil.mavlink.MAV_AUTOPILOT_INVALID or msg.type == mavutil.mavlink.MAV_TYPE_GCS:
        return None
    return bool(msg.base_mode & ARMED_FLAG)


class MavlinkSource:
    """Non-blocking reader of a MAVLink connection (``udpin:127.0.0.1:14550``, ``/dev/ttyACM0``, a tlog)."""

    def __init__(self, url: str, baud: int = 115200) -> None:
        self.conn = mavutil.mavlink_connection(url, baud=baud, source_system=255, autoreconnect=True)
        self._q_xyzw: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)

    def poll(self, max_messages: int = 200) -> Iterator[MavEvent]:
        for _ in range(max_messages):
            msg = self.conn.recv_match(blocking=False)
            if msg is None:
                return
            kind = msg.get_type()
            if kind == "HEARTBEAT":
                armed = heartbeat_armed(msg)
                if armed is not None:
                    yield MavEvent("armed", armed)
            elif kind == "ATTITUDE_QUATERNION":
                # NED/FRD body -> ENU/FLU: mavros' frame change, q_enu_flu = q_ned_enu^-1 * q * q_frd_flu
                self._q_xyzw = _ned_frd_to_enu_flu(msg.q1, msg.q2, msg.q3, msg.q4)
            elif kind == "ATTITUDE":
                from rgbt.geometry import quat_from_euler_zyx  # numpy only: no scipy onboard

                self._q_xyzw = _ned_frd_to_enu_flu(*quat_from_euler_zyx(msg.yaw, msg.pitch, msg.roll))
            elif kind == "LOCAL_POSITION_NED":
                yield MavEvent("pose", {"position_enu": (float(msg.y), float(msg.x), float(-msg.z)),
                                        "orientation_xyzw": self._q_xyzw})
            elif kind == "GLOBAL_POSITION_INT":
                yield MavEvent("global", (msg.lat / 1e7, msg.lon / 1e7, msg.alt / 1e3))

    def close(self) -> None:
        self.conn.close()


def _ned_frd_to_enu_flu(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    from rgbt.geometry import ned_frd_to_enu_flu  # numpy only: no scipy onboard

    return ned_frd_to_enu_flu(w, x, y, z)
