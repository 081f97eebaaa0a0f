"""Build the autopilot / GNSS messages that several nodes publish (one place for their layout)."""

from __future__ import annotations

from typing import Sequence

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import NavSatFix

from rgbt.ros.stamps import ns_to_stamp


def pose_stamped(t_ns: int, position: Sequence[float], quat_xyzw: Sequence[float],
                 frame_id: str = "map") -> PoseStamped:
    """``PoseStamped`` at ``t_ns``: position in metres and orientation (x, y, z, w) in ``frame_id``."""
    msg = PoseStamped()
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = map(float, position)
    o.x, o.y, o.z, o.w = map(float, quat_xyzw)
    return msg


def navsatfix(t_ns: int, lat_deg: float, lon_deg: float, alt_m: float, frame_id: str) -> NavSatFix:
    """``NavSatFix`` at ``t_ns`` (WGS84 degrees, altitude in metres)."""
    msg = NavSatFix()
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    msg.latitude, msg.longitude, msg.altitude = float(lat_deg), float(lon_deg), float(alt_m)
    return msg
