"""``rgbt replay``: real ROS 2 (``ros2 bag record`` MCAP) and ROS 1 bags played onto topics with
``/clock``, renames, start/duration clipping and a rate factor; checked against rosbags' own reading."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rgbt.paths import REPO_ROOT

pytestmark = pytest.mark.ros


class Listener:
    """Test-side subscriber (reliable, deep queue) collecting messages and /clock in a thread."""

    def __init__(self, subscriptions: dict[str, type]) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rosgraph_msgs.msg import Clock

        from rgbt.ros.spin import BackgroundNode

        self._bg = BackgroundNode("rgbt_test_listener", period_s=0.1)
        qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
        self.got: dict[str, list] = {t: [] for t in [*subscriptions, "/clock"]}
        self.times: dict[str, list[float]] = {t: [] for t in self.got}
        for topic, cls in {**subscriptions, "/clock": Clock}.items():
            self._bg.node.create_subscription(cls, topic, lambda m, t=topic: self._on(t, m), qos)
        self._bg.start()

    def _on(self, topic: str, msg: object) -> None:
        self.got[topic].append(msg)
        self.times[topic].append(time.monotonic())

    def close(self) -> None:
        self._bg.close()


def _replay(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "rgbt", "replay", *args, "--delay", "0.5"], env=env,
                          capture_output=True, text=True, timeout=90)


def _rosbags_messages(path: Path, topics: list[str], start_ns=None, stop_ns=None):  # type: ignore[no-untyped-def]
    from rosbags.highlevel import AnyReader

    with AnyReader([path]) as reader:
        conns = [c for c in reader.connections if c.topic in topics]
        return [(c.topic, t, reader.deserialize(raw, c.msgtype)) for c, t, raw in
                reader.messages(connections=conns, start=start_ns, stop=stop_ns)], reader.start_time


def _mcap_messages(path: Path, topic: str) -> list:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(path, "rb") as fh:
        reader = make_reader(fh, decoder_factories=[DecoderFactory()])
        return [(ch.topic, m.log_time, msg) for _, ch, m, msg in reader.iter_decoded_messages(topics=[topic])]


@pytest.mark.slow  # replay process + listener graph, waits for discovery (~35 s here)
def test_replay_ros2_mcap_with_rename_and_clock(ros_env: dict, fixtures_dir: Path) -> None:
    from std_msgs.msg import String

    bag = fixtures_dir / "bags" / "ros2_talker_mcap"
    expected = _mcap_messages(next(bag.glob("*.mcap")), "/topic")  # independent reader (mcap-ros2-support)
    assert len(expected) == 10  # SOURCES.md: /topic std_msgs/String x10
    listener = Listener({"/chatter": String})
    try:
        proc = _replay(str(bag), "--rate", "0", "--rename", "/topic:=/chatter", "--topics", "/topic",
                       "--wait-for", "/chatter", "/clock")
        time.sleep(0.5)
    finally:
        listener.close()
    assert proc.returncode == 0, proc.stderr
    assert [m.data for m in listener.got["/chatter"]] == [m.data for _, _, m in expected]
    clock = [c.clock.sec * 1_000_000_000 + c.clock.nanosec for c in listener.got["/clock"]]
    assert clock == [t for _, t, _ in expected]  # /clock = each message's log time


@pytest.mark.slow
def test_replay_ros1_bag_clipped_and_scaled(ros_env: dict, fixtures_dir: Path) -> None:
    from sensor_msgs.msg import Imu, NavSatFix

    bag = fixtures_dir / "bags" / "ros1" / "robot_localization_test1.bag"
    _, start = _rosbags_messages(bag, [])
    window = (start + 20_000_000_000, start + 22_000_000_000)
    expected, _ = _rosbags_messages(bag, ["/imu/data", "/fix"], *window)
    assert len(expected) > 50
    listener = Listener({"/imu/data": Imu, "/fix": NavSatFix})
    try:
        proc = _replay(str(bag), "--rate", "4", "--start", "20", "--duration", "2", "--topics", "/imu/data", "/fix",
                       "--wait-for", "/imu/data", "/fix", "/clock")
        time.sleep(0.5)
    finally:
        listener.close()
    assert proc.returncode == 0, proc.stderr
    exp_imu = [m for topic, _, m in expected if topic == "/imu/data"]
    got_imu = listener.got["/imu/data"]
    assert len(got_imu) == len(exp_imu) > 50
    assert len(listener.got["/fix"]) == sum(1 for topic, _, _ in expected if topic == "/fix")
    for got, exp in zip(got_imu, exp_imu):  # converted from ROS 1 field by field, values kept
        assert (got.header.stamp.sec, got.header.stamp.nanosec) == (exp.header.stamp.sec, exp.header.stamp.nanosec)
        assert got.linear_acceleration.x == exp.linear_acceleration.x
        assert list(got.orientation_covariance) == list(exp.orientation_covariance)
    clock = [c.clock.sec * 1_000_000_000 + c.clock.nanosec for c in listener.got["/clock"]]
    assert clock == sorted(clock) and window[0] <= clock[0] and clock[-1] < window[1]
