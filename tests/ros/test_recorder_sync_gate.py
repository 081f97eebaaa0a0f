"""The recorder node's sync-lock gate with real rclpy + Fast DDS: armed before the trigger sync locks
-> no bag, the deferral counted in diagnostics; the lock (a ``sync.locked`` diagnostics value, as the
trigger sync node publishes it) -> recording starts while still armed."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from helpers import wait_until

pytestmark = pytest.mark.ros


def test_arm_waits_for_sync_lock(ros_env: dict, tmp_path: Path) -> None:
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from rclpy.experimental import EventsExecutor
    from rclpy.node import Node
    from rclpy.parameter import Parameter
    from rclpy.task import Future
    from std_msgs.msg import Bool

    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import node_class

    context = rclpy.Context()
    rclpy.init(context=context)
    executor = EventsExecutor(context=context)
    out = tmp_path / "bags"
    params = {"out_dir": str(out), "start": "arm", "require_sync_lock": True, "sync_lock_timeout_s": 0.0,
              "topics": ["/rgbt/armed"], "min_free_mb": 10.0, "diagnostics_period_s": 0.2}
    recorder = node_class("recorder")("recorder", context=context,
                                      parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    helper = Node("rgbt_test_gate", context=context)
    for n in (recorder, helper):
        executor.add_node(n)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            executor.spin_until_future_complete(Future(), timeout_sec=0.05)

    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    seen: dict[str, str] = {}

    def on_diag(msg: DiagnosticArray) -> None:
        for s in msg.status:
            if s.name == "recorder":
                seen.update({kv.key: kv.value for kv in s.values})

    try:
        helper.create_subscription(DiagnosticArray, "/diagnostics", on_diag, qos_profile("reliable", 50))
        armed = helper.create_publisher(Bool, "/rgbt/armed", qos_profile("latched"))
        diag = helper.create_publisher(DiagnosticArray, "/diagnostics", qos_profile("reliable", 50))

        def sync_status(locked: bool) -> None:
            msg = DiagnosticArray()
            msg.status = [DiagnosticStatus(name="trigger_sync", values=[KeyValue(key="sync.locked", value=str(locked))])]
            diag.publish(msg)

        wait_until(lambda: armed.get_subscription_count() >= 2, 20, "the recorder's armed subscriptions")
        sync_status(False)
        for _ in range(3):  # armed, repeated like the bridges do: one deferral
            armed.publish(Bool(data=True))
            time.sleep(0.2)
        wait_until(lambda: seen.get("state") == "waiting_for_sync", 10, "the deferral")
        assert seen["sync_deferrals"] == "1" and not out.exists()
        sync_status(True)
        wait_until(lambda: seen.get("state") == "recording", 10, "recording after the lock")
        assert seen["sync_deferrals"] == "1" and seen["sync_timeouts"] == "0"
        assert len([p for p in out.iterdir() if p.is_dir()]) == 1
    finally:
        stop.set()
        thread.join()
        recorder.close()
        executor.shutdown()
        recorder.destroy_node()
        helper.destroy_node()
        context.try_shutdown()
