"""rclpy messages that several nodes publish: the drivers' and the virtual stack's IMU samples and
counter ``TimeReference``s (``source`` text: ``rgbt.timeref``), autopilot poses and GNSS fixes.

What each message contains is :mod:`rgbt.msgcontent` (shared with the simulated bags' rosbags
messages); these functions make the rclpy message and fill it by attribute assignment (cheaper than
keyword construction on the 200 Hz IMU path). Images: ``rgbt.ros.image.numpy_to_image``."""

from __future__ import annotations

from collections.abc import Sequence

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Imu, NavSatFix, TimeReference

from rgbt.msgcontent import fill_imu, fill_navsatfix, fill_pose_stamped, fill_time_reference
from rgbt.timeref import encode_frame, encode_imu


def time_reference(t_ns: int, time_ref_ns: int, source: str, frame_id: str = "") -> TimeReference:
    """``TimeReference`` stamped ``t_ns`` carrying ``time_ref_ns`` (another clock's time) and ``source``."""
    return fill_time_reference(TimeReference(), t_ns, time_ref_ns, source, frame_id)


def frame_info(t_host_ns: int, frame_id: str, counter: int, ffc: bool = False) -> TimeReference:
    """A frame's counter message (``frame_info``): same stamp as the frame, ``source`` = counter [+ ``;ffc``]."""
    return fill_time_reference(TimeReference(), t_host_ns, t_host_ns, encode_frame(counter, ffc), frame_id)


def imu_sync_info(t_host_ns: int, t_sensor_ns: int, syncin_count: int | None,
                  t_since_sync_ns: int | None) -> TimeReference:
    """An IMU sample's SyncIn message (``sync_info``): ``time_ref`` = the sample on the IMU clock."""
    return fill_time_reference(TimeReference(), t_host_ns, t_sensor_ns, encode_imu(syncin_count, t_since_sync_ns))


def imu(t_ns: int, frame_id: str, gyro_rad_s: Sequence[float] | None, accel_m_s2: Sequence[float] | None,
        quat_xyzw: Sequence[float] | None = None) -> Imu:
    """``Imu`` at ``t_ns`` (rad/s, m/s^2, orientation x, y, z, w; no orientation: covariance[0] = -1)."""
    return fill_imu(Imu(), t_ns, frame_id, gyro_rad_s, accel_m_s2, quat_xyzw)


def pose_stamped(t_ns: int, position: Sequence[float], quat_xyzw: Sequence[float],
                 frame_id: str = "map") -> PoseStamped:
    """``PoseStamped`` at ``t_ns``: position in metres and orientation (x, y, z, w) in ``frame_id``."""
    return fill_pose_stamped(PoseStamped(), t_ns, position, quat_xyzw, frame_id)


def navsatfix(t_ns: int, lat_deg: float, lon_deg: float, alt_m: float, frame_id: str) -> NavSatFix:
    """``NavSatFix`` at ``t_ns`` (WGS84 degrees, altitude in metres)."""
    return fill_navsatfix(NavSatFix(), t_ns, lat_deg, lon_deg, alt_m, frame_id)
