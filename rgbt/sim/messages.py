"""ROS 2 messages (rosbags dataclasses) for simulated samples, and the bag topics of a simulated run.

What each message contains is :mod:`rgbt.msgcontent` (shared with the live nodes' rclpy messages);
this module makes blank rosbags messages and hands them to its ``fill_*`` functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.spatial.transform import Rotation

from rgbt.bag.images import numpy_to_image_msg
from rgbt.bag.types import ros2_typestore
from rgbt.msgcontent import (
    WORLD_FRAME,
    fill_header,
    fill_imu,
    fill_navsatfix,
    fill_pose_stamped,
    fill_time_reference,
    imu_covariances,
)
from rgbt.sim.simstack import GnssData, ImuData, SimSample, StateData

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

    from rgbt.stack import Stack

__all__ = ["WORLD_FRAME", "MessageFactory", "typestore"]

_NUMPY_DTYPES = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "byte": np.uint8, "char": np.uint8,
                 "int16": np.int16, "uint16": np.uint16, "int32": np.int32, "uint32": np.uint32,
                 "int64": np.int64, "uint64": np.uint64, "float32": np.float32, "float64": np.float64}


def typestore() -> Typestore:
    """The shared ROS 2 Jazzy typestore with rgbt's extra types (``mavros_msgs/msg/State``)."""
    return ros2_typestore()


# the default values of ROS message definitions that are not zero (rosbags' types do not carry them)
_NONZERO_DEFAULTS: dict[tuple[str, str], Any] = {
    ("geometry_msgs/msg/Quaternion", "w"): 1.0,
    ("sensor_msgs/msg/NavSatStatus", "status"): -2,  # STATUS_UNKNOWN (Jazzy)
}


def _const(value: Any) -> Callable[[], Any]:
    return lambda: value


def _blank_base(typename: str) -> Callable[[], Any]:
    if typename == "string":
        return _const("")
    if typename == "bool":
        return _const(False)
    return _const(0.0 if typename.startswith("float") else 0)


def _blank_array(dtype: Any, n: int) -> Callable[[], Any]:
    if dtype is None:
        return list  # a sequence of messages or strings (no message of a simulated run has one)
    return lambda: np.zeros(n, dtype=dtype)


def blank_maker(store: Typestore, msgtype: str) -> Callable[[], Any]:
    """A function that makes a rosbags ``msgtype`` with ROS's default field values (zeros, empty
    strings and sequences; the non-zero defaults of ``_NONZERO_DEFAULTS``), as an rclpy message
    starts: the ``fill_*`` functions of :mod:`rgbt.msgcontent` then set what they set."""
    from rosbags.interfaces import Nodetype

    cls: Any = store.types[msgtype]
    fields: Any = store.fielddefs[msgtype][1]  # [(name, (Nodetype, detail))]
    makers: list[tuple[str, Callable[[], Any]]] = []
    for name, (kind, sub) in fields:
        if kind == Nodetype.NAME:
            makers.append((name, blank_maker(store, sub)))
        elif kind == Nodetype.BASE:
            makers.append((name, _blank_base(sub[0])))
        else:  # ARRAY (fixed length) or SEQUENCE (empty)
            (elem_kind, elem), length = sub
            dtype = _NUMPY_DTYPES.get(elem[0]) if elem_kind == Nodetype.BASE else None
            n = length if kind == Nodetype.ARRAY else 0
            makers.append((name, _blank_array(dtype, n)))
    makers = [(name, _const(_NONZERO_DEFAULTS[msgtype, name]) if (msgtype, name) in _NONZERO_DEFAULTS else m)
              for name, m in makers]

    def make() -> Any:
        return cls(**{name: m() for name, m in makers})

    return make


class MessageFactory:
    """Builds rosbags message objects for the sim's samples (rosbags' message classes are made at
    run time from the typestore, so the builders return ``Any``)."""

    def __init__(self, store: Typestore, stack: Stack) -> None:
        self.store = store
        self.stack = stack
        self._imu = blank_maker(store, "sensor_msgs/msg/Imu")
        self._pose = blank_maker(store, "geometry_msgs/msg/PoseStamped")
        self._navsatfix = blank_maker(store, "sensor_msgs/msg/NavSatFix")
        self._time_reference = blank_maker(store, "sensor_msgs/msg/TimeReference")
        self._state = blank_maker(store, "mavros_msgs/msg/State")
        n = stack.imu.noise
        self._gyr_cov, self._acc_cov = imu_covariances(n.gyr_n, n.acc_n, stack.imu.rate_hz)

    def image(self, arr: np.ndarray, t_ns: int, frame_id: str, encoding: str) -> Any:
        return numpy_to_image_msg(arr, t_ns, frame_id, encoding)

    def imu(self, s: SimSample, frame_id: str) -> Any:
        d: ImuData = s.data
        return fill_imu(self._imu(), s.t_ns, frame_id, d.gyro_rad_s, d.accel_m_s2,
                        gyro_cov=self._gyr_cov, accel_cov=self._acc_cov)

    def navsatfix(self, s: SimSample, frame_id: str, rtk: bool) -> Any:
        d: GnssData = s.data
        return fill_navsatfix(self._navsatfix(), s.t_ns, d.lat, d.lon, d.alt, frame_id,
                              sigma_h_m=d.sigma_h_m, sigma_v_m=d.sigma_v_m, rtk=rtk)

    def pose(self, T: np.ndarray, t_ns: int, frame_id: str = WORLD_FRAME,
             quat_xyzw: np.ndarray | None = None) -> Any:
        """PoseStamped of a 4x4 transform (``quat_xyzw``: its rotation precomputed, optional)."""
        q = Rotation.from_matrix(T[:3, :3]).as_quat() if quat_xyzw is None else quat_xyzw
        return fill_pose_stamped(self._pose(), t_ns, T[:3, 3], q, frame_id)

    def state(self, s: SimSample) -> Any:
        """``mavros_msgs/State`` of the autopilot (guided, no manual input; system status 4 =
        MAV_STATE_ACTIVE when armed, 3 = MAV_STATE_STANDBY otherwise)."""
        d: StateData = s.data
        msg = fill_header(self._state(), s.t_ns, "")
        msg.connected, msg.armed, msg.guided, msg.manual_input = d.connected, d.armed, True, False
        msg.mode, msg.system_status = d.mode, 4 if d.armed else 3
        return msg

    def imu_sync(self, s: SimSample, frame_id: str) -> Any:
        """The SyncIn pulse of an IMU sample: ``time_ref`` = pulse time, ``source`` = SyncIn count."""
        d: ImuData = s.data
        return fill_time_reference(self._time_reference(), s.t_ns, s.t_ns - d.t_since_sync_ns,
                                   str(d.syncin_count), frame_id)

    def trigger(self, s: SimSample) -> Any:
        """A trigger pulse: stamped at its host time, ``time_ref`` = the pulse, ``source`` = its sequence."""
        return fill_time_reference(self._time_reference(), s.t_host_ns, s.t_ns, str(s.seq))
