"""Arm-to-disarm recording from the real ArduSub tlog (fixtures/mavlink/ardusub_small.tlog) replayed
over UDP on 127.0.0.1 into ``rgbt up`` (MAVLink bridge + recorder, real processes).

In the log the vehicle arms at 206.30 s and disarms at 222.28 s (its own HEARTBEATs; companion
heartbeats on the same link must not count). The log's window 202-226 s is replayed 4x faster; the
recorder must start at the arm and close the bag ``debounce_s`` after the disarm.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rgbt.paths import REPO_ROOT
from helpers import need

pytestmark = [pytest.mark.ros, pytest.mark.slow]  # the whole rgbt up graph fed a replayed tlog (~15 s)

SPEED = 4.0
WINDOW = (202.0, 226.0)
DEBOUNCE_S = 0.5


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_nodes(names: set[str], proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Block until every node in ``names`` has published on /diagnostics (the graph is up)."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.experimental import EventsExecutor
    from rclpy.node import Node
    from rclpy.task import Future

    from rgbt.ros.qos import qos_profile

    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node("rgbt_test_wait", context=context)
    seen: set[str] = set()
    node.create_subscription(DiagnosticArray, "/diagnostics", lambda m: seen.update(s.name for s in m.status),
                             qos_profile("reliable", 50))
    executor = EventsExecutor(context=context)
    executor.add_node(node)
    try:
        deadline = time.monotonic() + timeout
        while not names <= seen:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, f"nodes not up: {names - seen}"
            executor.spin_until_future_complete(Future(), timeout_sec=0.1)
    finally:
        executor.shutdown()
        node.destroy_node()
        context.try_shutdown()


def _tlog_messages(path: Path) -> list[tuple[float, bytes, object]]:
    from pymavlink import mavutil

    conn = mavutil.mavlink_connection(str(path))
    out, t0 = [], None
    while (msg := conn.recv_match()) is not None:
        if msg.get_type() == "BAD_DATA":
            continue
        t0 = msg._timestamp if t0 is None else t0
        out.append((msg._timestamp - t0, msg.get_msgbuf(), msg))
    return out


def test_tlog_arm_and_disarm_start_and_stop_recording(ros_env: dict, tmp_path: Path, fixtures_dir: Path,
                                                       read_bag) -> None:
    from rgbt.sensors.mavlink import ArmTracker

    tlog = need(fixtures_dir / "mavlink" / "ardusub_small.tlog", "ArduSub tlog")
    messages = [(t, buf, m) for t, buf, m in _tlog_messages(tlog) if WINDOW[0] <= t <= WINDOW[1]]
    port = _free_udp_port()
    out = tmp_path / "bags"
    profile = tmp_path / "arm.yaml"
    profile.write_text(yaml.safe_dump({"nodes": [
        {"name": "mavlink_bridge", "parameters": {"url": f"udpin:127.0.0.1:{port}"}},
        {"name": "recorder", "parameters": {
            "out_dir": str(out), "start": "arm", "debounce_s": DEBOUNCE_S, "min_free_mb": 10.0,
            "topics": ["/uav1/mavros/global_position/global", "/uav1/mavros/local_position/pose", "/rgbt/armed"]}},
    ]}))
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    up = subprocess.Popen([sys.executable, "-m", "rgbt", "up", str(profile), "--duration", "90"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sent: dict[str, int] = {}
    try:
        _wait_for_nodes({"mavlink_bridge", "recorder"}, up)  # both publishing diagnostics
        time.sleep(1.0)  # and the armed topic matched
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            wall0, t_first = time.monotonic(), messages[0][0]
            tracker = ArmTracker()  # the sender's own view of the vehicle's transitions
            for t, buf, msg in messages:
                delay = wall0 + (t - t_first) / SPEED - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sock.sendto(buf, ("127.0.0.1", port))
                if (event := tracker.update(msg, t)) is not None:
                    sent["arm" if event[1] else "disarm"] = time.time_ns()
        time.sleep(DEBOUNCE_S + 1.0)  # the debounced stop
        up.send_signal(signal.SIGINT)
        log, _ = up.communicate(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, log
    assert set(sent) == {"arm", "disarm"}  # the log does arm and disarm inside the window
    bags = sorted(out.iterdir())
    assert len(bags) == 1, (bags, log)
    manifest = json.loads((bags[0] / "rgbt_manifest.json").read_text())
    assert manifest["start_reason"] == "arm" and manifest["stop_reason"] == "disarmed"
    # started at the arm, stopped debounce_s after the disarm (host delays allowed: 0.5 s)
    assert 0 <= (manifest["start_wall_ns"] - sent["arm"]) / 1e9 < 0.5
    stop_delay = (manifest["end_wall_ns"] - sent["disarm"]) / 1e9
    assert DEBOUNCE_S - 0.05 <= stop_delay < DEBOUNCE_S + 0.5
    recorded = read_bag(bags[0])
    fixes = recorded["/uav1/mavros/global_position/global"]
    armed_interval_s = (sent["disarm"] - sent["arm"]) / 1e9
    assert len(fixes) >= 2.5 * armed_interval_s * SPEED * 0.8  # GLOBAL_POSITION_INT at ~3 Hz of log time
    logged = {m.lat / 1e7 for _, _, m in messages if m.get_type() == "GLOBAL_POSITION_INT"}
    assert {round(m.latitude, 7) for _, m, _ in fixes} <= {round(v, 7) for v in logged}
    states = [m.data for _, m, _ in recorded["/rgbt/armed"]]
    assert states and states[-1] is False  # the disarm is in the bag
    mavros = [m.armed for _, m, _ in recorded["/uav1/mavros/state"]]  # the real mavros_msgs/State type
    assert mavros[0] is True and mavros[-1] is False
