"""One content, two message kinds: the rclpy messages of rgbt.ros.messages and the rosbags messages
of rgbt.sim.messages are filled by the same rgbt.msgcontent functions, so equal content gives equal
messages (the rosbags message's CDR bytes read back by rclpy; rclpy's own CDR leaves its padding bytes
unset, so bytes are not compared)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 wheels (ros-jazzy-rclpy) not installed: real sensor_msgs messages needed",
                    exc_type=ImportError)

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from sensor_msgs.msg import Imu, NavSatFix, TimeReference  # noqa: E402

from rgbt.msgcontent import fill_imu, fill_navsatfix, fill_pose_stamped, fill_time_reference  # noqa: E402
from rgbt.ros import messages  # noqa: E402
from rgbt.sim.messages import blank_maker, typestore  # noqa: E402

T_NS = 1_700_000_123_456_789_012


@pytest.fixture(scope="module")
def store():  # type: ignore[no-untyped-def]
    return typestore()


def _rosbags(store, msgtype: str, fill, *args):  # type: ignore[no-untyped-def]
    """The rosbags message filled by ``fill``, as rclpy reads its CDR bytes."""
    cls = {"sensor_msgs/msg/Imu": Imu, "sensor_msgs/msg/TimeReference": TimeReference,
           "geometry_msgs/msg/PoseStamped": PoseStamped, "sensor_msgs/msg/NavSatFix": NavSatFix}[msgtype]
    return deserialize_message(bytes(store.serialize_cdr(fill(blank_maker(store, msgtype)(), *args), msgtype)), cls)


@pytest.mark.parametrize("quat", [None, (0.1, 0.2, 0.3, 0.927)])
def test_imu_match(store, quat) -> None:  # type: ignore[no-untyped-def]
    args = (T_NS, "imu_link", (0.01, -0.02, 0.03), (0.1, 0.2, 9.81), quat)
    live = messages.imu(*args)
    assert live == _rosbags(store, "sensor_msgs/msg/Imu", fill_imu, *args)


def test_frame_info_and_sync_match(store) -> None:  # type: ignore[no-untyped-def]
    live = messages.frame_info(T_NS, "thermal", 42, True)
    assert live == _rosbags(store, "sensor_msgs/msg/TimeReference", fill_time_reference,
                                T_NS, T_NS, "42;ffc", "thermal")
    live = messages.imu_sync_info(T_NS, T_NS - 5, 7, 1000)
    assert live == _rosbags(store, "sensor_msgs/msg/TimeReference", fill_time_reference,
                                T_NS, T_NS - 5, "7;1000")


def test_pose_and_navsatfix_match(store) -> None:  # type: ignore[no-untyped-def]
    live = messages.pose_stamped(T_NS, (1.0, 2.0, 3.0), (0.0, 0.0, 0.6, 0.8))
    assert live == _rosbags(store, "geometry_msgs/msg/PoseStamped", fill_pose_stamped,
                                T_NS, np.array([1.0, 2.0, 3.0]), (0.0, 0.0, 0.6, 0.8))
    live = messages.navsatfix(T_NS, 48.1, 11.5, 520.0, "gnss")
    assert live == _rosbags(store, "sensor_msgs/msg/NavSatFix", fill_navsatfix, T_NS, 48.1, 11.5, 520.0, "gnss")
