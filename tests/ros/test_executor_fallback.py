"""The nodes run on the standard SingleThreadedExecutor (what Humble's rclpy offers): the fallback is
forced with ``RGBT_EXECUTOR=single`` on the wheels installed here, in a real node process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rgbt.paths import REPO_ROOT

pytestmark = pytest.mark.ros


def test_executor_choice_follows_the_environment() -> None:
    from rclpy.executors import SingleThreadedExecutor

    from rgbt.errors import ConfigError
    from rgbt.ros import spin

    assert spin.executor_choice({"RGBT_EXECUTOR": "single"}) == "single"
    assert spin.executor_choice({}) == ("events" if spin.EventsExecutor is not None else "single")
    with pytest.raises(ConfigError, match="RGBT_EXECUTOR"):
        spin.executor_choice({"RGBT_EXECUTOR": "fast"})
    old = os.environ.get("RGBT_EXECUTOR")
    os.environ["RGBT_EXECUTOR"] = "single"
    try:
        import rclpy

        ctx = rclpy.Context()
        rclpy.init(context=ctx)
        ex = spin.make_executor(ctx)
        assert type(ex) is SingleThreadedExecutor
        ex.shutdown()
        ctx.try_shutdown()
    finally:
        if old is None:
            os.environ.pop("RGBT_EXECUTOR")
        else:
            os.environ["RGBT_EXECUTOR"] = old


def test_missing_events_executor_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on Humble: no ``rclpy.experimental.EventsExecutor`` -> auto picks single, events is an error."""
    from rgbt.errors import ConfigError
    from rgbt.ros import spin

    monkeypatch.setattr(spin, "EventsExecutor", None)
    assert spin.executor_choice({}) == "single"
    with pytest.raises(ConfigError, match="no rclpy.experimental.EventsExecutor"):
        spin.executor_choice({"RGBT_EXECUTOR": "events"})


@pytest.mark.slow
def test_node_process_publishes_on_the_fallback_executor(ros_env: dict, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``python -m rgbt.ros.spin --node health:health`` with RGBT_EXECUTOR=single: logs the executor,
    publishes /rgbt/health at its period and stops cleanly on SIGINT."""
    from diagnostic_msgs.msg import DiagnosticArray

    from rgbt.ros.spin import BackgroundNode

    env = dict(os.environ, RGBT_EXECUTOR="single",
               PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    topic = "/rgbt/test_fallback/health"
    proc = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "health:health", "--ros-args",
                             "-p", f"topic:={topic}", "-p", "period_s:=0.2", "-p", f"disk_path:={tmp_path}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    got: list = []
    bg = BackgroundNode("rgbt_test_fallback_listener", period_s=0.05)
    bg.node.create_subscription(DiagnosticArray, topic, got.append, 10)
    bg.start()
    try:
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
    finally:
        bg.close()
        proc.send_signal(signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
    assert len(got) >= 3, f"no health messages from the node on the fallback executor:\n{out}"
    assert "executor: SingleThreadedExecutor (RGBT_EXECUTOR=single" in out, out
    assert proc.returncode == 0, out


def test_drain_handles_queued_messages_and_stops_timers(ros_env: dict) -> None:
    """On the way out (Ctrl-C) a process first handles what is already queued for it: 50 messages
    published while nothing spun are all handled by :func:`rgbt.ros.spin.drain`, and the node's
    timers (a source's production) are stopped before it."""
    import rclpy
    from rclpy.node import Node
    from std_msgs.msg import UInt32

    from rgbt.ros import spin
    from rgbt.ros.qos import qos_profile

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    got: list[int] = []
    try:
        sub_node = Node("drain_sub", context=ctx)
        pub_node = Node("drain_pub", context=ctx)
        sub_node.callbacks_run = 0  # type: ignore[attr-defined]

        def on_msg(msg: UInt32) -> None:
            sub_node.callbacks_run += 1  # type: ignore[attr-defined]
            got.append(msg.data)

        sub_node.create_subscription(UInt32, "/rgbt/test/drain", on_msg, qos_profile("reliable", 100))
        ticks = []
        timer = sub_node.create_timer(0.01, lambda: ticks.append(1))
        pub = pub_node.create_publisher(UInt32, "/rgbt/test/drain", qos_profile("reliable", 100))
        ex = spin.make_executor(ctx)
        ex.add_node(sub_node)
        deadline = time.monotonic() + 10
        while (pub.get_subscription_count() == 0 or sub_node.count_publishers("/rgbt/test/drain") == 0) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # both ends matched (discovery is asynchronous on each side)
        for i in range(50):
            pub.publish(UInt32(data=i))
        spin.drain(ex, [sub_node], max_s=5.0, idle_s=0.3)
        assert got == list(range(50))
        assert timer.is_canceled()
        ex.shutdown()
    finally:
        ctx.try_shutdown()


def test_startup_objects_are_frozen_out_of_the_cyclic_collector() -> None:
    """After start-up the heap built so far is frozen (``gc.freeze``): a full collection during the
    flight walks only what was allocated since, not the modules, types and preloaded data."""
    import gc

    from rgbt.ros.spin import freeze_startup_objects

    gc.unfreeze()
    junk = [[i] for i in range(10_000)]  # containers the collector tracks
    freeze_startup_objects()
    try:
        assert gc.get_freeze_count() >= len(junk)
        assert not any(gc.is_tracked(x) and x in gc.get_objects(generation=2) for x in junk[:3])
    finally:
        gc.unfreeze()
