"""What the messages rgbt publishes and records contain: one place for their field values, frames,
covariances and units, used by both message kinds.

Each ``fill_*`` function sets a message's fields by attribute assignment on the message it is given:
an rclpy message (:mod:`rgbt.ros.messages`, the live drivers, virtual stack and MAVLink bridge) or a
rosbags dataclass (:mod:`rgbt.sim.messages`, the simulated bags). Both have the same field names, so
this module needs no ROS package. Time is integer nanoseconds; vectors are in the message's
``frame_id``; fixed-size arrays (covariances) are assigned in place or replaced by a float64 array of
the same length.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from rgbt.stamps import ns_to_stamp

WORLD_FRAME = "map"
"""Frame of poses in the world (ground truth, autopilot local position)."""

# sensor_msgs/NavSatStatus and NavSatFix constants
NAVSAT_STATUS_FIX = 0
NAVSAT_STATUS_GBAS_FIX = 2  # RTK-corrected
NAVSAT_SERVICE_GPS = 1
COVARIANCE_TYPE_DIAGONAL_KNOWN = 2


def fill_header(msg: Any, t_ns: int, frame_id: str) -> Any:
    """``msg.header``: stamp ``t_ns`` and ``frame_id``; returns ``msg``."""
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    return msg


def fill_time_reference(msg: Any, t_ns: int, time_ref_ns: int, source: str, frame_id: str = "") -> Any:
    """``TimeReference`` stamped ``t_ns`` carrying ``time_ref_ns`` (another clock's time) and ``source``."""
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    ns_to_stamp(time_ref_ns, msg.time_ref)
    msg.source = source
    return msg


def fill_imu(msg: Any, t_ns: int, frame_id: str, gyro_rad_s: Iterable[float] | None,
             accel_m_s2: Iterable[float] | None, quat_xyzw: Iterable[float] | None = None,
             gyro_cov: np.ndarray | None = None, accel_cov: np.ndarray | None = None) -> Any:
    """``Imu`` at ``t_ns`` (rad/s, m/s^2, orientation x, y, z, w in ``frame_id``). No orientation:
    orientation_covariance[0] = -1 (ROS: orientation unknown), orientation left at identity.
    ``gyro_cov`` / ``accel_cov``: the 9 row-major entries of the 3x3 covariances ((rad/s)^2,
    (m/s^2)^2), left at zero ("unknown") when not given. A message made by the caller, so its
    orientation must start at identity and its covariances at zero."""
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
    if gyro_cov is not None:
        msg.angular_velocity_covariance = gyro_cov
    if accel_cov is not None:
        msg.linear_acceleration_covariance = accel_cov
    return msg


def imu_covariances(gyr_n: float, acc_n: float, rate_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample white-noise covariances (gyro, accel; 9 row-major float64 entries each) of an IMU
    with continuous-time noise densities ``gyr_n`` (rad/s/sqrt(Hz)), ``acc_n`` (m/s^2/sqrt(Hz))
    sampled at ``rate_hz``: sigma^2 = n^2 * rate on the diagonal."""
    gyr = np.diag([gyr_n ** 2 * rate_hz] * 3).ravel().astype(np.float64)
    acc = np.diag([acc_n ** 2 * rate_hz] * 3).ravel().astype(np.float64)
    return gyr, acc


def fill_pose_stamped(msg: Any, t_ns: int, position: Iterable[float], quat_xyzw: Iterable[float],
                      frame_id: str = WORLD_FRAME) -> Any:
    """``PoseStamped`` at ``t_ns``: position in metres and orientation (x, y, z, w) in ``frame_id``."""
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = map(float, position)
    o.x, o.y, o.z, o.w = map(float, quat_xyzw)
    return msg


def fill_navsatfix(msg: Any, t_ns: int, lat_deg: float, lon_deg: float, alt_m: float, frame_id: str,
                   sigma_h_m: float | None = None, sigma_v_m: float | None = None,
                   rtk: bool | None = None) -> Any:
    """``NavSatFix`` at ``t_ns`` (WGS84 degrees, altitude in metres). With ``sigma_h_m`` and
    ``sigma_v_m`` (1-sigma, m): a known diagonal position covariance (E, N, U). With ``rtk``: the
    status (RTK-corrected or plain fix) and the GPS service; without, status and covariance stay
    unset (the receiver does not say)."""
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = frame_id
    msg.latitude, msg.longitude, msg.altitude = float(lat_deg), float(lon_deg), float(alt_m)
    if rtk is not None:
        msg.status.status = NAVSAT_STATUS_GBAS_FIX if rtk else NAVSAT_STATUS_FIX
        msg.status.service = NAVSAT_SERVICE_GPS
    if sigma_h_m is not None and sigma_v_m is not None:
        msg.position_covariance = np.diag([sigma_h_m ** 2, sigma_h_m ** 2, sigma_v_m ** 2]).ravel().astype(np.float64)
        msg.position_covariance_type = COVARIANCE_TYPE_DIAGONAL_KNOWN
    return msg
