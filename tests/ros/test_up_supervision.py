"""``rgbt up`` supervision end to end (real processes, small graph: health monitor + recorder):
``kill -9`` of a group -> restarted, listed in the bag manifest, the recording goes on; ``--strict``
-> the graph stops with exit 1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import start_up, wait_for_line, write_small_profile

pytestmark = pytest.mark.ros


def _up(profile: Path, log: Path, *extra: str) -> subprocess.Popen:
    return start_up(profile, log, *extra)


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 90) -> re.Match:
    return wait_for_line(log, pattern, proc, timeout, may_exit=pattern.startswith("rgbt up: process group"))


class RecorderCounts:
    """What the recorder says on ``/diagnostics`` it has recorded of ``topic`` (its ``TOPIC.count``),
    with the monotonic time (s) each report arrived here: a real rclpy participant in this process."""

    def __init__(self, topic: str) -> None:
        from diagnostic_msgs.msg import DiagnosticArray

        from rgbt.ros.qos import qos_profile
        from rgbt.ros.spin import BackgroundNode

        self.reports: list[tuple[float, int]] = []  # (arrival, count)
        self.listener = BackgroundNode("rgbt_test_recorder_counts", handle_signals=False)
        key = f"{topic}.count"

        def on_diagnostics(msg: DiagnosticArray) -> None:
            for status in msg.status:
                counts = [int(kv.value) for kv in status.values if kv.key == key]
                if status.name == "recorder" and counts:
                    self.reports.append((time.monotonic(), counts[0]))

        self.listener.node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics,
                                               qos_profile("reliable", 50))
        self.listener.start()

    def wait_until(self, done, timeout: float, what: str, proc: subprocess.Popen, log: Path) -> None:
        deadline = time.monotonic() + timeout
        while not done(list(self.reports)):
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"{what} not within {timeout} s; recorder reports " \
                                                f"{self.reports[-5:]}\n{log.read_text()}"
            time.sleep(0.05)

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def small_profile(tmp_path: Path) -> Path:
    return write_small_profile(tmp_path)


@pytest.mark.slow
def test_kill_9_is_restarted_and_listed_in_the_manifest(ros_env: dict, tmp_path: Path, small_profile: Path,
                                                         read_bag) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "up.log"
    up = _up(small_profile, log)
    counts = None
    try:
        assert "restart failed groups" in _wait_for(log, r"supervision: .*", up).group(0)
        pid = int(_wait_for(log, r"health\[(\d+)\]", up).group(1))
        counts = RecorderCounts("/rgbt/health")
        counts.wait_until(lambda r: len(r) >= 2 and r[-1][1] > r[0][1], 60, "the recorder recording health", up, log)
        os.kill(pid, signal.SIGKILL)  # mostly a cold restart: the warm spare comes 5 s after the graph
        killed = time.monotonic()
        _wait_for(log, r"restarted process group 'health'", up)

        def recorded_after_restart(reports: list[tuple[float, int]]) -> bool:
            # what the dead process sent is in within 0.3 s; the new one starts >= 0.25 s (backoff) after
            before = [c for t, c in reports if t >= killed + 0.3]
            return bool(before) and reports[-1][1] >= before[0] + 3

        # A cold restart reuses the dead participant's ports, and Fast DDS finds its old shared-memory
        # port stale only after a while (1-2.5 s here): wait for the recording, not a fixed time.
        counts.wait_until(recorded_after_restart, 30, "the restarted health monitor recorded", up, log)
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
    finally:
        if counts is not None:
            counts.close()
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, log.read_text()
    (bag,) = sorted((tmp_path / "bags").iterdir())
    manifest = json.loads((bag / "rgbt_manifest.json").read_text())
    (restart,) = manifest["restarts"]
    assert restart["group"] == "health" and restart["exit_code"] == -signal.SIGKILL
    assert manifest["supervisor"]["restarts"] == {"health": 1, "recorder": 0}
    stamps = [t for t, _, _ in read_bag(bag)["/rgbt/health"]]
    assert any(t > restart["restart_wall_ns"] for t in stamps)  # recorded on across the restart


def test_strict_stops_the_graph(ros_env: dict, tmp_path: Path, small_profile: Path) -> None:
    log = tmp_path / "up.log"
    up = _up(small_profile, log, "--strict")
    try:
        _wait_for(log, r"supervision: strict", up)
        pid = int(_wait_for(log, r"health\[(\d+)\]", up).group(1))
        os.kill(pid, signal.SIGKILL)
        up.wait(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    text = log.read_text()
    assert up.returncode == 1 and "--strict" in text and "restarted" not in text, text
