"""Recorder robustness with real rclpy + Fast DDS: SIGTERM mid-write, an exception while writing,
the size cap (disk-full stand-in), manual services. Every bag must open (rosbags) and hold a
gap-free prefix of what was published before the event."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import wait_until
from rgbt.paths import REPO_ROOT

pytestmark = pytest.mark.ros

TOPIC = "/rgbt_test/frames"


def _index(msg) -> int:  # type: ignore[no-untyped-def]
    return int(msg.header.frame_id)


class Publisher:
    """A test-side rclpy publisher of numbered 64 KiB images (index in ``header.frame_id``)."""

    def __init__(self, rate_hz: float = 200.0) -> None:
        import rclpy
        from rclpy.node import Node
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import Image

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node("rgbt_test_publisher", context=self.context)
        self.pub = self.node.create_publisher(Image, TOPIC, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))
        self.rate_hz = rate_hz
        self.sent = 0
        self.send_times: list[float] = []
        self._stop = threading.Event()
        self._payload = np.random.default_rng(1).integers(0, 255, 256 * 256, dtype=np.uint8).tobytes()
        self._thread: threading.Thread | None = None

    def wait_for_subscriber(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while self.pub.get_subscription_count() == 0:
            assert time.monotonic() < deadline, "recorder never subscribed"
            time.sleep(0.05)
        time.sleep(0.3)

    def publish_one(self) -> None:
        from sensor_msgs.msg import Image

        msg = Image(height=256, width=256, encoding="mono8", step=256)
        msg.header.frame_id = str(self.sent)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
        msg.data = self._payload
        self.pub.publish(msg)
        self.send_times.append(time.monotonic())
        self.sent += 1

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                self.publish_one()
                time.sleep(1.0 / self.rate_hz)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()

    def close(self) -> None:
        self.stop()
        self.node.destroy_node()
        self.context.try_shutdown()


def _recorder_process(out: Path, *params: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-m", "rgbt.ros.spin", "--node", "recorder:recorder", "--ros-args",
            "-p", f"out_dir:={out}", "-p", f"topics:=['{TOPIC}']", "-p", "min_free_mb:=10.0"]
    for p in params:
        args += ["-p", p]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _check_prefix(read_bag, bag: Path) -> list[int]:  # type: ignore[no-untyped-def]
    msgs = read_bag(bag)[TOPIC]
    idx = [_index(m) for _, m, _ in msgs]
    assert idx == list(range(len(idx))), f"{bag}: not a gap-free prefix: {idx[:5]}...{idx[-5:]}"
    return idx


@pytest.mark.slow
def test_sigterm_mid_write_leaves_a_complete_bag(ros_env: dict, tmp_path: Path, read_bag) -> None:
    out_dir = tmp_path / "bags"
    proc = _recorder_process(out_dir, "start:=always")
    pub = Publisher()
    try:
        pub.wait_for_subscriber()
        pub.start()
        # frames keep arriving; 120 of them sent at least 0.4 s before the signal (the check below: > 100)
        wait_until(lambda: len(pub.send_times) > 120 and pub.send_times[120] < time.monotonic() - 0.4, 60,
                   "120 frames sent")
        t_event = time.monotonic()
        proc.send_signal(signal.SIGTERM)  # while frames keep arriving
        out, _ = proc.communicate(timeout=30)
    finally:
        pub.close()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    sent_before = sum(1 for t in pub.send_times if t < t_event - 0.3)
    bags = sorted(out_dir.iterdir())
    assert len(bags) == 1
    idx = _check_prefix(read_bag, bags[0])
    assert len(idx) >= sent_before > 100
    manifest = json.loads((bags[0] / "rgbt_manifest.json").read_text())
    assert manifest["stop_reason"] == "shutdown" and manifest["topics"][TOPIC]["count"] == len(idx)


@pytest.mark.slow
def test_size_cap_closes_the_bag_with_everything_before_it(ros_env: dict, tmp_path: Path, read_bag) -> None:
    out_dir = tmp_path / "bags"
    proc = _recorder_process(out_dir, "start:=always", "max_total_mb:=3.0")
    pub = Publisher()
    try:
        pub.wait_for_subscriber()
        for _ in range(120):  # 120 x 64 KiB = 7.9 MB: well past the 3 MB cap
            pub.publish_one()
            time.sleep(0.005)
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    finally:
        pub.close()
        if proc.poll() is None:
            proc.kill()
    bags = sorted(out_dir.iterdir())
    assert len(bags) == 1, bags  # no new bag after the cap: it would fill the disk
    idx = _check_prefix(read_bag, bags[0])
    assert 3e6 / 65536 <= len(idx) < 3e6 / 65536 + 2  # everything up to the cap, nothing after
    manifest = json.loads((bags[0] / "rgbt_manifest.json").read_text())
    assert manifest["stop_reason"].startswith("flight size cap reached")


@pytest.mark.slow
def test_exception_while_writing_closes_the_bag_and_recording_goes_on(
        ros_env: dict, tmp_path: Path, read_bag, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: the bag writer raises on the 40th message (as a full or failing disk would)."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from rclpy.task import Future

    from rgbt.bag import writer as bag_writer
    from rgbt.ros.spin import node_class

    calls = {"n": 0}
    real_write = bag_writer.BagWriter.write

    def failing_write(self, topic, t_ns, raw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 40:
            raise OSError(28, "No space left on device")
        return real_write(self, topic, t_ns, raw)

    monkeypatch.setattr(bag_writer.BagWriter, "write", failing_write)
    out_dir = tmp_path / "bags"
    context = rclpy.Context()
    rclpy.init(context=context)
    recorder = node_class("recorder")("recorder", context=context, parameter_overrides=[
        Parameter("out_dir", value=str(out_dir)), Parameter("topics", value=[TOPIC]),
        Parameter("start", value="always"), Parameter("min_free_mb", value=10.0)])
    executor = EventsExecutor(context=context)
    executor.add_node(recorder)
    pub = Publisher(rate_hz=100)
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: [executor.spin_until_future_complete(Future(), timeout_sec=0.1)
                                               for _ in iter(stop.is_set, True)], daemon=True)
    spinner.start()
    try:
        pub.wait_for_subscriber()
        pub.start()
        # the error at message 40, a new bag about a second later, then 20 more writes into it
        wait_until(lambda: len(list(out_dir.iterdir())) == 2 and calls["n"] >= 60, 30, "a second bag after the error")
        pub.stop()
        time.sleep(0.5)
    finally:
        stop.set()
        spinner.join()
        recorder.close()
        pub.close()
        executor.shutdown()
        recorder.destroy_node()
        context.try_shutdown()
    bags = sorted(out_dir.iterdir())
    assert len(bags) == 2, bags
    first = _check_prefix(read_bag, bags[0])
    assert len(first) == 39  # everything before the failing write
    first_manifest = json.loads((bags[0] / "rgbt_manifest.json").read_text())
    assert first_manifest["stop_reason"].startswith("write error: OSError")
    second = [_index(m) for _, m, _ in read_bag(bags[1])[TOPIC]]
    assert second and second == list(range(second[0], second[0] + len(second)))  # gap-free again
    assert recorder.rec.write_errors == 1 and recorder.diag.errors == 1


@pytest.mark.slow
def test_stack_topics_reliable_and_a_best_effort_publisher_is_still_recorded(ros_env: dict, tmp_path: Path,
                                                                             read_bag) -> None:
    """The stack's camera / IMU topics are subscribed reliable (what the trigger sync offers); a
    best-effort publisher on one of them cannot match a reliable reader, so the recorder falls back to
    best effort for that topic (logged) instead of recording nothing."""
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image, Imu

    from rgbt.stack import load_stack

    stack = load_stack()
    thermal, imu = stack.cameras["thermal"].topic, stack.imu.topic
    out_dir = tmp_path / "bags"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "recorder:recorder", "--ros-args",
                             "-p", f"out_dir:={out_dir}", "-p", f"topics:=['{thermal}', '{imu}']",
                             "-p", "min_free_mb:=10.0", "-p", "start:=always"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("rgbt_test_qos_publisher", context=context)
    try:
        frames = node.create_publisher(Image, thermal, QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
        samples = node.create_publisher(Imu, imu, QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT))
        deadline = time.monotonic() + 60
        while frames.get_subscription_count() == 0 or samples.get_subscription_count() == 0:
            assert time.monotonic() < deadline and proc.poll() is None, "the recorder never subscribed both"
            time.sleep(0.1)
        time.sleep(0.5)
        for i in range(40):
            msg = Image(height=4, width=4, encoding="mono8", step=4, data=bytes(16))
            msg.header.frame_id = str(i)
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns(), 1_000_000_000)
            frames.publish(msg)
            sample = Imu()
            sample.header.stamp = msg.header.stamp
            samples.publish(sample)
            time.sleep(0.05)
    finally:
        node.destroy_node()
        context.try_shutdown()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert f"{imu}: a publisher offers best effort; recording it best effort" in out, out
    (bag,) = sorted(out_dir.iterdir())
    recorded = read_bag(bag)
    assert [_index(m) for _, m, _ in recorded[thermal]] == list(range(40))  # reliable end to end
    assert len(recorded[imu]) > 0  # best effort after the fall-back (samples before it are not there)
