"""The VIO bridge node (``nodes/vio_bridge.py``) in its own process with real rclpy + Fast DDS on
loopback, and its core (``rgbt.vio.feed.StreamFeed`` / ``GridDecimator`` / ``ImuRelay``) alone.

Synthetic data: a short mono16 thermal sequence (random texture, 64x80) at the 60 Hz trigger grid
with one FFC freeze (frames repeating exactly) and one frame lost upstream, and a 200 Hz IMU with
one duplicated and one out-of-order sample. Every expected count below is derived from that
construction, not from a previous run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rgbt.paths import REPO_ROOT
from helpers import wait_until

T0_NS = 1_700_000_000_000_000_000
TRIGGER_HZ = 60.0
N_FRAMES = 60  # one second of thermal at 60 Hz
FROZEN = range(20, 28)  # FFC: frames 20..27 repeat frame 19 exactly
LOST = 42  # lost before the host (never published); on the 20 Hz grid
N_IMU = 200  # one second at 200 Hz


def _trigger_ns(k: int) -> int:
    return T0_NS + int(round(k * 1e9 / TRIGGER_HZ))


def _frames() -> list[tuple[int, int, np.ndarray]]:
    """(pulse k, stamp ns, mono16 frame) as published: the freeze repeats frame 19, frame LOST is missing."""
    rng = np.random.default_rng(7)
    out, last = [], None
    for k in range(N_FRAMES):
        frame = last if k in FROZEN else (7000 + rng.integers(0, 800, (64, 80))).astype(np.uint16)
        last = frame
        if k != LOST:
            out.append((k, _trigger_ns(k), frame))
    return out


def _expected_out() -> list[int]:
    """Stamps the bridge must publish at 20 Hz: every 3rd pulse from the first frame, minus the
    frame lost upstream and the frozen frames on the grid."""
    return [_trigger_ns(k) for k in range(0, N_FRAMES, 3) if k != LOST and k not in FROZEN]


# --- the core, without ROS --------------------------------------------------------------------

def test_stream_feed_counts_grid_and_frozen() -> None:
    from rgbt.vio.feed import StreamFeed, grid_step

    feed = StreamFeed("temporal", TRIGGER_HZ, grid_step(TRIGGER_HZ, 1, 20.0))
    kept = []
    for _, t, frame in _frames():
        out = feed.frame(t, frame)
        if out is not None:
            assert out.dtype == np.uint8 and out.shape == frame.shape
            kept.append(t)
    assert kept == _expected_out()
    on_grid = len(range(0, N_FRAMES, 3)) - 1  # LOST is on the grid
    frozen_on_grid = len([k for k in range(0, N_FRAMES, 3) if k in FROZEN])
    assert feed.counters == {"in": N_FRAMES - 1, "stale": 0, "thinned": N_FRAMES - 1 - on_grid,
                             "frozen_dropped": frozen_on_grid, "out": on_grid - frozen_on_grid}
    assert feed.frame(kept[-1], _frames()[0][2]) is None and feed.counters["stale"] == 1  # stamp not increasing


def test_stream_feed_rgb_to_mono8_and_grid_under_drift() -> None:
    import cv2

    from rgbt.vio.feed import StreamFeed

    rgb = np.random.default_rng(1).integers(0, 255, (8, 10, 3), dtype=np.uint8)
    feed = StreamFeed("temporal", 60.0, 4)  # a 30 Hz camera (every 2nd pulse) fed at 15 Hz
    period = 1e9 / 60.0 * (1 + 200e-6)  # host clock 200 ppm fast: the grid must not slip
    kept = [k for k in range(0, 20000, 2) if feed.frame(T0_NS + int(round(k * period)), rgb) is not None]
    assert kept == list(range(0, 20000, 4))
    np.testing.assert_array_equal(feed.frame(T0_NS + int(round(20000 * period)), rgb),
                                  cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))


def test_feed_rates_on_the_trigger_grid() -> None:
    from rgbt.errors import ConfigError
    from rgbt.vio.feed import feed_rate_hz, grid_step

    assert feed_rate_hz(60.0, 1) == 20.0 and feed_rate_hz(60.0, 2) == 15.0
    assert grid_step(60.0, 1, 20.0) == 3 and grid_step(60.0, 2, 10.0) == 6
    for divider, rate in ((2, 20.0), (1, 25.0), (1, 120.0)):
        with pytest.raises(ConfigError, match="rate_hz"):
            grid_step(60.0, divider, rate)


def test_imu_relay_strictly_increasing() -> None:
    from rgbt.vio.feed import ImuRelay

    relay = ImuRelay()
    accepted = [t for t in (1, 2, 2, 3, 1, 4) if relay.accept(t)]
    assert accepted == [1, 2, 3, 4]
    assert relay.counters == {"in": 6, "duplicate": 1, "out_of_order": 1, "out": 4}


def test_export_uses_the_bridge_topics_and_rate(tmp_path: Path) -> None:
    import cv2

    from rgbt.stack import load_stack
    from rgbt.vio.config import ExportOptions, export
    from rgbt.topics import VIO_FEED_IMU_TOPIC, vio_feed_image_topic

    stack = load_stack()
    for camera, rate in (("thermal", 20.0), ("mono", 15.0)):
        (main, _) = export(stack, "vins", tmp_path / camera, ExportOptions(camera=camera))
        fs = cv2.FileStorage(str(main), cv2.FILE_STORAGE_READ)
        assert fs.getNode("image0_topic").string() == vio_feed_image_topic(camera)
        assert fs.getNode("imu_topic").string() == VIO_FEED_IMU_TOPIC
        ov = export(stack, "openvins", tmp_path / f"ov_{camera}", ExportOptions(camera=camera))
        est = cv2.FileStorage(str(ov[0]), cv2.FILE_STORAGE_READ)
        assert est.getNode("track_frequency").real() == rate


# --- the node in its own process ------------------------------------------------------------

class _Side:
    """Test-side rclpy node: best-effort publishers into the bridge, reliable subscribers on its outputs."""

    def __init__(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from sensor_msgs.msg import Image, Imu

        from rgbt.ros.qos import qos_profile
        from rgbt.ros.spin import BackgroundNode
        from rgbt.topics import VIO_FEED_IMU_TOPIC, vio_feed_image_topic

        self._bg = BackgroundNode("rgbt_test_vio_side", period_s=0.05)
        self.node = self._bg.node
        self.out_image, self.out_imu = vio_feed_image_topic("thermal"), VIO_FEED_IMU_TOPIC
        self.images: list = []
        self.imus: list = []
        self.diag: dict[str, str] = {}
        self.pub_image = self.node.create_publisher(Image, "/t/thermal", qos_profile("sensor_data", depth=100))
        self.pub_imu = self.node.create_publisher(Imu, "/t/imu", qos_profile("sensor_data", depth=400))
        self.node.create_subscription(Image, self.out_image, self.images.append, qos_profile("reliable", depth=500))
        self.node.create_subscription(Imu, self.out_imu, self.imus.append, qos_profile("reliable", depth=2000))
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diag, qos_profile("reliable", 50))
        self._bg.start()

    def _on_diag(self, msg) -> None:  # type: ignore[no-untyped-def]
        for s in msg.status:
            if s.name == "vio_bridge":
                self.diag = {kv.key: kv.value for kv in s.values}

    def close(self) -> None:
        self._bg.close()


def _interrupt(proc: subprocess.Popen) -> str:
    """Ctrl-C the node process and return its output; killed if it has not exited within 15 s."""
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


def _imu_msg(t_ns: int):  # type: ignore[no-untyped-def]
    from sensor_msgs.msg import Imu

    from rgbt.stamps import ns_to_stamp

    msg = Imu()
    ns_to_stamp(t_ns, msg.header.stamp)
    msg.header.frame_id = "imu"
    msg.linear_acceleration.z = 9.81
    return msg


@pytest.mark.slow
@pytest.mark.ros
def test_vio_bridge_node(ros_env: dict) -> None:
    from rclpy.qos import ReliabilityPolicy

    from rgbt.image.codec import image_to_numpy
    from rgbt.ros.image import numpy_to_image
    from rgbt.stamps import stamp_to_ns

    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "rgbt.ros.spin", "--node", "vio_bridge:vio_bridge", "--ros-args",
           "-p", "input_topic:=/t/thermal", "-p", "imu_input_topic:=/t/imu", "-p", "input_depth:=200",
           "-p", "diagnostics_period_s:=0.2"]
    proc = subprocess.Popen(cmd, env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    side = _Side()
    try:
        wait_until(lambda: side.pub_image.get_subscription_count() >= 1 and side.pub_imu.get_subscription_count() >= 1
              and side.node.count_publishers(side.out_image) >= 1 and side.node.count_publishers(side.out_imu) >= 1,
              60, "the bridge to match")
        time.sleep(0.5)  # let the reliable readers finish matching
        for topic in (side.out_image, side.out_imu):
            infos = side.node.get_publishers_info_by_topic(topic)
            assert len(infos) == 1 and infos[0].qos_profile.reliability == ReliabilityPolicy.RELIABLE, topic
        for topic in ("/t/thermal", "/t/imu"):
            infos = side.node.get_subscriptions_info_by_topic(topic)
            assert len(infos) == 1 and infos[0].qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT, topic

        # IMU stamps: 200 Hz, sample 50 sent twice (duplicate), sample 98 again after 100 (out of order)
        imu_ns = [T0_NS + i * 5_000_000 for i in range(N_IMU)]
        imu_sent = []
        for i, t in enumerate(imu_ns):
            imu_sent.append(t)
            if i == 50:
                imu_sent.append(t)
            if i == 100:
                imu_sent.append(imu_ns[98])
        frames = _frames()
        j = 0
        for t in imu_sent + [imu_ns[-1] + 10**9]:  # IMU in sending order, frames merged in by stamp (~real time)
            while j < len(frames) and frames[j][1] <= t:
                side.pub_image.publish(numpy_to_image(frames[j][2], frames[j][1], "boson", "mono16"))
                time.sleep(1 / 60)
                j += 1
            if t in imu_ns:
                side.pub_imu.publish(_imu_msg(t))
        n_in = len(_frames())
        # overload policy: a frame still waiting when the next arrives is dropped as stale and counted
        # (latest.dropped_stale); on a loaded machine a few may be, so the exact checks allow for them
        wait_until(lambda: side.diag.get("latest.submitted") == str(n_in) and side.diag.get("latest.processed")
              and int(side.diag["latest.processed"]) + int(side.diag["latest.dropped_stale"]) == n_in
              and side.diag.get("feed.in") == side.diag["latest.processed"]
              and side.diag.get("imu.in") == str(len(imu_sent)) and len(side.imus) == N_IMU, 30, "the bridge's output")
        time.sleep(0.3)  # the last outputs on their way
    finally:
        side.close()
        out = _interrupt(proc)
    assert proc.returncode == 0, out

    d = side.diag
    stamps = [stamp_to_ns(m.header.stamp) for m in side.imus]
    assert stamps == imu_ns and all(b > a for a, b in zip(stamps, stamps[1:]))
    assert (d["imu.in"], d["imu.duplicate"], d["imu.out_of_order"], d["imu.out"]) == (
        str(N_IMU + 2), "1", "1", str(N_IMU))
    assert d["feed.rate_hz"] == "20"
    stale = int(d["latest.dropped_stale"])
    out_stamps = [stamp_to_ns(m.header.stamp) for m in side.images]
    if stale:  # outputs: the expected ones in order, less at most one per stale frame
        assert set(out_stamps) <= set(_expected_out()) and out_stamps == sorted(out_stamps)
        assert len(out_stamps) >= len(_expected_out()) - stale
        return
    assert out_stamps == _expected_out()
    for m in side.images:
        assert m.encoding == "mono8" and (m.height, m.width) == (64, 80) and m.header.frame_id == "boson"
        assert image_to_numpy(m).std() > 10  # normalized texture, not a blank frame
    on_grid = len(range(0, N_FRAMES, 3)) - 1
    frozen_on_grid = len([k for k in range(0, N_FRAMES, 3) if k in FROZEN])
    assert (d["feed.in"], d["feed.thinned"], d["feed.frozen_dropped"], d["feed.out"], d["feed.stale"]) == (
        str(n_in), str(n_in - on_grid), str(frozen_on_grid), str(len(_expected_out())), "0")
    assert d["feed.rate_hz"] == "20"


# --- odometry capture -------------------------------------------------------------------------

def test_tum_writer_round_trip(tmp_path: Path) -> None:
    from rgbt.eval.trajectory import load_trajectory as load_tum
    from rgbt.graph.odometry import TumWriter

    w = TumWriter(tmp_path / "est.tum")
    assert w.add(T0_NS + 5, (1.0, 2.0, 3.0), (0.0, 0.0, 0.0, 1.0))
    assert not w.add(T0_NS + 5, (9.0, 9.0, 9.0), (0.0, 0.0, 0.0, 1.0))  # not increasing: dropped
    assert w.add(T0_NS + 10**8, (1.5, 2.0, 3.0), (0.0, 0.0, 0.7071067811865476, 0.7071067811865476))
    w.close()
    traj = load_tum(tmp_path / "est.tum")
    assert list(traj.t_ns) == [T0_NS + 5, T0_NS + 10**8] and w.counters == {"written": 2, "non_increasing": 1}
    np.testing.assert_allclose(traj.positions[1], [1.5, 2.0, 3.0])


@pytest.mark.slow
@pytest.mark.ros
def test_odometry_capture_node(ros_env: dict, tmp_path: Path) -> None:
    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.node import Node

    from rgbt.ros.qos import qos_profile
    from rgbt.stamps import ns_to_stamp
    from rgbt.vio.runners import capture_command

    out = tmp_path / "openvins.tum"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(capture_command("openvins", out), env=env, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("rgbt_test_odom", context=context)
    try:
        pub = node.create_publisher(Odometry, "/ov_msckf/odomimu", qos_profile("reliable"))
        wait_until(lambda: pub.get_subscription_count() >= 1, 60, "the capture to subscribe")
        time.sleep(0.5)
        for i in range(20):
            msg = Odometry()
            ns_to_stamp(T0_NS + i * 50_000_000, msg.header.stamp)
            msg.pose.pose.position.x = 0.1 * i
            msg.pose.pose.orientation.w = 1.0
            pub.publish(msg)
            time.sleep(0.01)
        wait_until(lambda: out.is_file() and len(out.read_text().splitlines()) == 20, 20, "20 TUM lines")
    finally:
        node.destroy_node()
        context.try_shutdown()
        log = _interrupt(proc)
    assert proc.returncode == 0, log
    from rgbt.eval.trajectory import load_trajectory as load_tum

    traj = load_tum(out)
    assert list(traj.t_ns) == [T0_NS + i * 50_000_000 for i in range(20)]
    np.testing.assert_allclose(traj.positions[:, 0], 0.1 * np.arange(20))
