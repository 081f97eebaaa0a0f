"""Build the messages that several nodes publish (one place for their layout): the drivers' and
the virtual stack's IMU samples and counter ``TimeReference``s (``source`` text: ``rgbt.timeref``),
autopilot poses and GNSS fixes. Images: ``rgbt.ros.image.numpy_to_image``."""

from __future__ import annotations

from typing import Sequence

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Imu, NavSatFix, TimeReference

from rgbt.stamps import ns_to_stamp
from rgbt.timeref import encode_frame, encode_imu


def time_reference(t_ns: int, time_ref_ns: int, source: str, frame_id: str = "") -> TimeReference:
    """``TimeReference`` stamped ``t_ns`` carrying ``time_ref_ns`` (another clock's time) and ``source``."""
    msg = TimeReference()
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    ns_to_stamp(time_ref_ns, msg.time_ref)
    msg.source = source
    return msg


def frame_info(t_host_ns: int, frame_id: str, counter: int, ffc: bool = False) -> TimeReference:
    """A frame's counter message (``frame_info``): same stamp as the frame, ``source`` = counter [+ ``;ffc``]."""
    return time_reference(t_host_ns, t_host_ns, encode_frame(counter, ffc), frame_id)


def imu_sync_info(t_host_ns: int, t_sensor_ns: int, syncin_count: int | None,
                  t_since_sync_ns: int | None) -> TimeReference:
    """An IMU sample's SyncIn message (``sync_info``): ``time_ref`` = the sample on the IMU clock."""
    return time_reference(t_host_ns, t_sensor_ns, encode_imu(syncin_count, t_since_sync_ns))


def imu(t_ns: int, frame_id: str, gyro_rad_s: Sequence[float] | None, accel_m_s2: Sequence[float] | None,
        quat_xyzw: Sequence[float] | None = None) -> Imu:
    """``Imu`` at ``t_ns`` (rad/s, m/s^2, orientation x, y, z, w; no orientation: covariance[0] = -1)."""
    msg = Imu()
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    if gyro_rad_s is not None:
        msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = map(float, gyro_rad_s)
    if accel_m_s2 is not None:
        msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = map(float, accel_m_s2)
    if quat_xyzw is not None:
        o = msg.orientation
        o.x, o.y, o.z, o.w = map(float, quat_xyzw)
    else:
        msg.orientation_covariance[0] = -1.0
    return msg


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
