"""Nodes in-process with real rclpy + Fast DDS: the recorder's services and diagnostics, the thermal
query service (JSON over std_msgs/String), the MAVLink armed-state filter."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rgbt.image import radiometry
from helpers import need, wait_until


class Graph:
    """One rclpy context with an EventsExecutor spinning in a thread; nodes added by the test."""

    def __init__(self) -> None:
        import rclpy
        from rclpy.experimental import EventsExecutor
        from rclpy.node import Node

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.executor = EventsExecutor(context=self.context)
        self.helper = Node("rgbt_test_helper", context=self.context)
        self.nodes = [self.helper]
        self.executor.add_node(self.helper)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        from rclpy.task import Future

        while not self._stop.is_set():
            self.executor.spin_until_future_complete(Future(), timeout_sec=0.05)

    def add(self, executable: str, name: str, **params):  # type: ignore[no-untyped-def]
        from rclpy.parameter import Parameter

        from rgbt.ros.spin import node_class

        node = node_class(executable)(name, context=self.context,
                                      parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def call(self, srv_type, name: str, timeout: float = 10.0):  # type: ignore[no-untyped-def]
        client = self.helper.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=timeout), name
        future = client.call_async(srv_type.Request())
        deadline = time.monotonic() + timeout
        while not future.done():
            assert time.monotonic() < deadline, f"{name} did not answer"
            time.sleep(0.02)
        return future.result()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for node in self.nodes[1:]:
            node.close()
        self.executor.shutdown()
        for node in self.nodes:
            node.destroy_node()
        self.context.try_shutdown()


@pytest.mark.slow
@pytest.mark.ros
def test_recorder_services_split_and_diagnostics(ros_env: dict, tmp_path: Path, read_bag) -> None:
    from diagnostic_msgs.msg import DiagnosticArray
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger

    from rgbt.ros.qos import qos_profile

    g = Graph()
    try:
        out = tmp_path / "bags"
        g.add("recorder", "recorder", out_dir=str(out), start="manual", topics=["/rgbt/armed"], min_free_mb=10.0,
              diagnostics_period_s=0.2)
        diags: list = []
        g.helper.create_subscription(DiagnosticArray, "/diagnostics", diags.append, qos_profile("reliable", 50))
        pub = g.helper.create_publisher(Bool, "/rgbt/armed", qos_profile("latched"))
        wait_until(lambda: pub.get_subscription_count() >= 2)  # the armed listener and the recording subscription
        time.sleep(0.5)
        assert g.call(Trigger, "/recorder/start").success
        for i in range(5):
            pub.publish(Bool(data=False))
            time.sleep(0.05)
        time.sleep(0.3)
        split = g.call(Trigger, "/recorder/split")
        assert split.success
        for i in range(3):
            pub.publish(Bool(data=False))
            time.sleep(0.05)
        time.sleep(0.3)
        stop = g.call(Trigger, "/recorder/stop")
        assert stop.success and not g.call(Trigger, "/recorder/stop").success  # nothing left to stop
        report = g.call(Trigger, "/recorder/prearm_check")
        checks = json.loads(report.message)["checks"]
        assert set(checks) == {"sync_locked", "sensors_at_rate", "disk_space"}
        assert checks["sync_locked"]["ok"] is False  # no trigger sync node in this graph
        assert checks["sensors_at_rate"]["ok"] is True  # only /rgbt/armed recorded: no nominal rate
        assert checks["disk_space"]["free_mb"] > 0
        assert report.success is False
        wait_until(lambda: any(s.name == "recorder" and any(kv.key == "state" for kv in s.values)
                          for m in diags for s in m.status))
    finally:
        g.close()
    bags = sorted(out.iterdir())
    assert len(bags) == 2
    assert [len(read_bag(b)["/rgbt/armed"]) for b in bags] == [5, 3]
    manifests = [json.loads((b / "rgbt_manifest.json").read_text()) for b in bags]
    assert [m["stop_reason"] for m in manifests] == ["split", "manual stop"]


@pytest.mark.slow
@pytest.mark.ros
def test_thermal_query_pixel_region_class(ros_env: dict) -> None:
    from sensor_msgs.msg import Image
    from std_msgs.msg import String

    from rgbt.ros.image import numpy_to_image
    from rgbt.ros.qos import qos_profile

    temps = np.full((64, 80), 20.0)
    temps[10:20, 30:50] = 55.0  # a hot box (class 5)
    counts = radiometry.celsius_to_tlinear(temps, gain="high")
    classes = np.zeros((64, 80), np.uint8)
    classes[10:20, 30:50] = 5
    g = Graph()
    try:
        g.add("thermal_query", "thermal_query", thermal_topic="/q/thermal", class_topic="/q/classes",
              **{"radiometry.mode": "tlinear", "radiometry.gain": "high"})
        answers: list = []
        g.helper.create_subscription(String, "/rgbt/thermal_query/response", lambda m: answers.append(json.loads(m.data)),
                                     qos_profile("reliable"))
        req = g.helper.create_publisher(String, "/rgbt/thermal_query/request", qos_profile("reliable"))
        pub_t = g.helper.create_publisher(Image, "/q/thermal", qos_profile("sensor_data"))
        pub_c = g.helper.create_publisher(Image, "/q/classes", qos_profile("sensor_data"))
        wait_until(lambda: req.get_subscription_count() and pub_t.get_subscription_count() and pub_c.get_subscription_count())
        time.sleep(0.5)
        pub_t.publish(numpy_to_image(counts, 123, "thermal", "mono16"))
        pub_c.publish(numpy_to_image(classes, 123, "thermal", "mono8"))
        time.sleep(0.5)
        for r in ({"id": "p", "pixel": [35, 12]}, {"id": "r", "region": [0, 0, 10, 10]}, {"id": "c", "class_id": 5},
                  {"id": "out", "pixel": [500, 1]}, {"id": "none"}):
            req.publish(String(data=json.dumps(r)))
        req.publish(String(data="not json"))
        wait_until(lambda: len(answers) == 6)
    finally:
        g.close()
    by = {a["id"]: a for a in answers}
    assert by["p"]["celsius"] == pytest.approx(55.0, abs=0.01) and by["p"]["stamp_ns"] == 123
    assert by["r"]["stats"]["mean"] == pytest.approx(20.0, abs=0.01) and by["r"]["stats"]["n"] == 100
    assert by["c"]["stats"]["n"] == 200 and by["c"]["stats"]["min"] == pytest.approx(55.0, abs=0.01)
    assert "outside" in by["out"]["error"] and "pixel" in by["none"]["error"]
    assert by[None]["error"].startswith("request is not a JSON object")


@pytest.mark.slow
def test_mavlink_companion_heartbeats_do_not_disarm(fixtures_dir: Path) -> None:
    """Only the vehicle's HEARTBEATs count (the ArduSub log interleaves a companion's armed flags):
    the bridge's tracker, ``rgbt.sensors.mavlink.ArmTracker``."""
    from pymavlink import mavutil

    from rgbt.sensors.mavlink import ArmTracker

    conn = mavutil.mavlink_connection(str(fixtures_dir / "mavlink" / "ardusub_small.tlog"))
    tracker, raw_flags = ArmTracker(), set()
    while (msg := conn.recv_match(type="HEARTBEAT")) is not None:
        raw_flags.add(bool(msg.base_mode & mavutil.mavlink.MAV_MODE_FLAG_SAFETY_ARMED))
        tracker.update(msg, msg._timestamp)
    assert raw_flags == {True, False}
    assert [a for _, a in tracker.events] == [True, False]  # one arm, one disarm (SOURCES.md)


@pytest.mark.slow
@pytest.mark.ros
def test_latched_armed_state_reaches_a_late_recorder_and_is_latched_in_the_bag(ros_env: dict, tmp_path: Path,
                                                                               read_bag) -> None:
    """/rgbt/armed is transient-local on both ends (rgbt.ros.qos.TOPIC_QOS): a recorder started after
    the arm learns it at once and records; the bag stores the topic's offered QoS (latched) so
    ``ros2 bag play`` republishes it latched. A publisher with a mismatching QoS is counted
    (``qos_incompatible`` in the recorder's diagnostics), not silently ignored."""
    import yaml
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
    from std_msgs.msg import Bool
    from std_srvs.srv import Trigger

    from rgbt.ros.qos import qos_profile, topic_qos

    g = Graph()
    try:
        pub = g.helper.create_publisher(Bool, "/rgbt/armed", topic_qos("/rgbt/armed"))
        pub.publish(Bool(data=True))  # the arm, before any recorder exists
        time.sleep(0.3)
        out = tmp_path / "bags"
        rec = g.add("recorder", "recorder", out_dir=str(out), start="arm", topics=["/rgbt/armed"], min_free_mb=10.0)
        wait_until(lambda: out.exists() and any(out.iterdir()))  # recording started without a new message
        subs = g.helper.get_subscriptions_info_by_topic("/rgbt/armed")
        assert len(subs) == 2 and all(s.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
                                      and s.qos_profile.reliability == ReliabilityPolicy.RELIABLE for s in subs)
        assert rec.diag.values["qos_incompatible"] == "0"
        g.helper.create_publisher(Bool, "/rgbt/armed", qos_profile("reliable"))  # volatile: cannot serve them
        wait_until(lambda: int(rec.diag.values["qos_incompatible"]) >= 2)  # both of the recorder's subscriptions
        assert "incompatible QoS (DURABILITY" in rec.diag.last_error and "/rgbt/armed" in rec.diag.last_error
        assert g.call(Trigger, "/recorder/stop").success
    finally:
        g.close()
    bag = next(out.iterdir())
    manifest = json.loads((bag / "rgbt_manifest.json").read_text())
    assert manifest["start_reason"] == "arm"
    # the latched arm itself (it arrived before the bag opened) is in the bag as the mavros state
    assert [m.armed for _, m, _ in read_bag(bag)["/uav1/mavros/state"]] == [True]
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    armed = next(t for t in meta["topics_with_message_count"] if t["topic_metadata"]["name"] == "/rgbt/armed")
    offered = armed["topic_metadata"]["offered_qos_profiles"]
    if isinstance(offered, str):
        offered = yaml.safe_load(offered)
    assert offered[0]["durability"] in (1, "transient_local") and offered[0]["reliability"] in (1, "reliable")


@pytest.mark.slow
@pytest.mark.ros
def test_mavlink_bridge_on_the_real_tlog_locks_to_the_vehicle(ros_env: dict, fixtures_dir: Path) -> None:
    """The bridge node (rgbt.sensors.mavlink.Autopilot) fed the real ArduSub tlog over UDP on
    127.0.0.1, 8x faster, with a second "vehicle" (system 42, armed) injected after the first real
    heartbeat: only system 1's arm and disarm reach /rgbt/armed; pose and global fix are published."""
    import socket

    from geometry_msgs.msg import PoseStamped
    from pymavlink import mavutil
    from pymavlink.dialects.v20 import ardupilotmega as apm
    from sensor_msgs.msg import NavSatFix
    from std_msgs.msg import Bool

    from rgbt.ros.qos import qos_profile, topic_qos
    from rgbt.sensors.mavlink import is_vehicle_heartbeat

    tlog = need(fixtures_dir / "mavlink" / "ardusub_small.tlog", "ArduSub tlog")
    conn = mavutil.mavlink_connection(str(tlog))
    window = []
    while (m := conn.recv_match()) is not None:
        if m.get_type() != "BAD_DATA" and 1683220744.0 <= m._timestamp <= 1683220765.0:  # arm at 747.8, disarm 763.8
            window.append((m._timestamp, bytes(m.get_msgbuf()), is_vehicle_heartbeat(m)))
    conn.close()
    intruder = apm.MAVLink(None, srcSystem=42, srcComponent=1)
    fake = bytes(intruder.heartbeat_encode(apm.MAV_TYPE_QUADROTOR, apm.MAV_AUTOPILOT_ARDUPILOTMEGA,
                                          apm.MAV_MODE_FLAG_SAFETY_ARMED, 0, 4).pack(intruder))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    g = Graph()
    try:
        node = g.add("mavlink_bridge", "mavlink_bridge", url=f"udpin:127.0.0.1:{port}")
        armed, poses, fixes = [], [], []
        g.helper.create_subscription(Bool, "/rgbt/armed", lambda m: armed.append(m.data), topic_qos("/rgbt/armed"))
        g.helper.create_subscription(PoseStamped, node.pose_topic, poses.append, qos_profile("sensor_data", 100))
        g.helper.create_subscription(NavSatFix, node.global_topic, fixes.append, qos_profile("sensor_data", 100))
        wait_until(lambda: all(g.helper.count_publishers(t) >= 1 for t in ("/rgbt/armed", node.pose_topic, node.global_topic)),
                   10, "the bridge's publishers")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            wall0, t0 = time.monotonic(), window[0][0]
            locked_at = None  # the intruder speaks once the real vehicle's first heartbeat is in
            for i, (t, buf, vehicle_heartbeat) in enumerate(window):
                delay = wall0 + (t - t0) / 8 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                sock.sendto(buf, ("127.0.0.1", port))
                if locked_at is None and vehicle_heartbeat:
                    locked_at = i
                    time.sleep(0.2)
                if locked_at is not None and (i - locked_at) % 50 == 1:
                    sock.sendto(fake, ("127.0.0.1", port))
        wait_until(lambda: armed and armed[-1] is False and len(armed) >= 3)
    finally:
        g.close()
    changes = [a for i, a in enumerate(armed) if i == 0 or a != armed[i - 1]]
    assert changes == [False, True, False], armed
    assert node.arm.sysid == 1
    assert poses and fixes
    q = poses[-1].pose.orientation
    assert (q.x ** 2 + q.y ** 2 + q.z ** 2 + q.w ** 2) == pytest.approx(1.0)
    assert -90 < fixes[-1].latitude < 90 and fixes[-1].latitude != 0


@pytest.mark.slow
@pytest.mark.ros
def test_a_source_waits_for_the_named_nodes_subscription_not_any_subscriber(ros_env: dict) -> None:
    """``wait_for_nodes`` (the virtual stack waits for the recorder itself): a processing node on the
    same topic does not count, the recorder's subscription does."""
    from rclpy.node import Node
    from std_msgs.msg import String

    from rgbt.ros.node import RgbtNode

    graph = Graph()
    recorder = None
    try:
        source = RgbtNode("source", context=graph.context)
        graph.nodes.append(source)
        graph.helper.create_subscription(String, "/rgbt_test/recorded", lambda _m: None, 10)  # not the recorder
        stop = threading.Event()
        assert source.wait_for_subscribers(["/rgbt_test/recorded"], 10.0, stop)
        assert not source.wait_for_subscribers([], 1.5, stop, {"recorder": ["/rgbt_test/recorded"]})
        recorder = Node("recorder", context=graph.context)
        recorder.create_subscription(String, "/rgbt_test/recorded", lambda _m: None, 10)
        assert source.wait_for_subscribers([], 10.0, stop, {"recorder": ["/rgbt_test/recorded"]})
    finally:
        if recorder is not None:
            recorder.destroy_node()
        graph.close()
