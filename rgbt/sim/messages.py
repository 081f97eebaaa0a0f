"""ROS 2 messages (rosbags dataclasses) for simulated samples, and the bag topics of a simulated run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial.transform import Rotation

from rgbt.bag.images import numpy_to_image_msg
from rgbt.bag.types import ros2_typestore
from rgbt.sim.simstack import GnssData, ImuData, SimSample, StateData

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

    from rgbt.stack import Stack

WORLD_FRAME = "map"


def typestore() -> Typestore:
    """The shared ROS 2 Jazzy typestore with rgbt's extra types (``mavros_msgs/msg/State``)."""
    return ros2_typestore()


class MessageFactory:
    """Builds rosbags message objects for the sim's samples (rosbags' message classes are made at
    run time from the typestore, so the builders return ``Any``)."""

    def __init__(self, store: Typestore, stack: Stack) -> None:
        self.store = store
        self.stack = stack
        T = store.types
        self.Time = T["builtin_interfaces/msg/Time"]
        self.Header = T["std_msgs/msg/Header"]
        self.Image = T["sensor_msgs/msg/Image"]
        self.Imu = T["sensor_msgs/msg/Imu"]
        self.Vector3 = T["geometry_msgs/msg/Vector3"]
        self.Quaternion = T["geometry_msgs/msg/Quaternion"]
        self.Point = T["geometry_msgs/msg/Point"]
        self.Pose = T["geometry_msgs/msg/Pose"]
        self.PoseStamped = T["geometry_msgs/msg/PoseStamped"]
        self.NavSatFix = T["sensor_msgs/msg/NavSatFix"]
        self.NavSatStatus = T["sensor_msgs/msg/NavSatStatus"]
        self.TimeReference = T["sensor_msgs/msg/TimeReference"]
        self.State = T["mavros_msgs/msg/State"]
        n = stack.imu.noise
        rate = stack.imu.rate_hz
        self._gyr_cov = np.diag([n.gyr_n ** 2 * rate] * 3).ravel().astype(np.float64)
        self._acc_cov = np.diag([n.acc_n ** 2 * rate] * 3).ravel().astype(np.float64)

    def stamp(self, t_ns: int) -> Any:
        return self.Time(sec=int(t_ns // 1_000_000_000), nanosec=int(t_ns % 1_000_000_000))

    def header(self, t_ns: int, frame_id: str) -> Any:
        return self.Header(stamp=self.stamp(t_ns), frame_id=frame_id)

    def image(self, arr: np.ndarray, t_ns: int, frame_id: str, encoding: str) -> Any:
        return numpy_to_image_msg(arr, t_ns, frame_id, encoding)

    def imu(self, s: SimSample, frame_id: str) -> Any:
        d: ImuData = s.data
        return self.Imu(
            header=self.header(s.t_ns, frame_id),
            orientation=self.Quaternion(x=0.0, y=0.0, z=0.0, w=1.0),
            orientation_covariance=np.array([-1.0] + [0.0] * 8),
            angular_velocity=self.Vector3(x=float(d.gyro_rad_s[0]), y=float(d.gyro_rad_s[1]), z=float(d.gyro_rad_s[2])),
            angular_velocity_covariance=self._gyr_cov,
            linear_acceleration=self.Vector3(
                x=float(d.accel_m_s2[0]), y=float(d.accel_m_s2[1]), z=float(d.accel_m_s2[2])
            ),
            linear_acceleration_covariance=self._acc_cov,
        )

    def navsatfix(self, s: SimSample, frame_id: str, rtk: bool) -> Any:
        d: GnssData = s.data
        cov = np.diag([d.sigma_h_m ** 2, d.sigma_h_m ** 2, d.sigma_v_m ** 2]).ravel().astype(np.float64)
        status = self.NavSatStatus(status=2 if rtk else 0, service=1)
        return self.NavSatFix(header=self.header(s.t_ns, frame_id), status=status, latitude=d.lat,
                              longitude=d.lon, altitude=d.alt, position_covariance=cov,
                              position_covariance_type=2)

    def pose(self, T: np.ndarray, t_ns: int, frame_id: str = WORLD_FRAME,
             quat_xyzw: np.ndarray | None = None) -> Any:
        """PoseStamped of a 4x4 transform (``quat_xyzw``: its rotation precomputed, optional)."""
        q = Rotation.from_matrix(T[:3, :3]).as_quat() if quat_xyzw is None else quat_xyzw
        return self.PoseStamped(
            header=self.header(t_ns, frame_id),
            pose=self.Pose(position=self.Point(x=float(T[0, 3]), y=float(T[1, 3]), z=float(T[2, 3])),
                           orientation=self.Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3]))))

    def state(self, s: SimSample) -> Any:
        d: StateData = s.data
        return self.State(header=self.header(s.t_ns, ""), connected=d.connected, armed=d.armed, guided=True,
                          manual_input=False, mode=d.mode, system_status=4 if d.armed else 3)

    def imu_sync(self, s: SimSample, frame_id: str) -> Any:
        d: ImuData = s.data
        return self.TimeReference(header=self.header(s.t_ns, frame_id), time_ref=self.stamp(s.t_ns - d.t_since_sync_ns),
                                  source=str(d.syncin_count))

    def trigger(self, s: SimSample) -> Any:
        return self.TimeReference(header=self.header(s.t_host_ns, ""), time_ref=self.stamp(s.t_ns),
                                  source=str(s.seq))
