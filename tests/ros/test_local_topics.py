"""In-process delivery between nodes of one process (``rgbt.ros.local_topics``), with real rclpy + Fast DDS:
a co-located subscriber is called directly and creates no middleware reader; a reader in the
middleware still gets every message; a trigger sync co-located with the virtual stack restamps
what the drivers' threads hand it."""

from __future__ import annotations

import time

import pytest

pytestmark = pytest.mark.ros


def _spin_until(executor, cond, timeout_s: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    from rclpy.task import Future

    deadline = time.monotonic() + timeout_s
    while not cond() and time.monotonic() < deadline:
        executor.spin_until_future_complete(Future(), timeout_sec=0.05)
    return bool(cond())


@pytest.mark.slow
def test_local_subscriber_is_called_directly_and_a_middleware_reader_still_gets_every_message(ros_env: dict) -> None:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import TimeReference

    from rgbt.ros import local_topics
    from rgbt.ros.messages import frame_info
    from rgbt.ros.node import RgbtNode
    from rgbt.ros.qos import qos_profile

    topic = "/rgbt/test/local/frame_info"
    qos = qos_profile("reliable", 50)
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    early = RgbtNode("early_reader", context=context)  # created before any local publisher of the topic
    driver = RgbtNode("driver", context=context)
    sync = RgbtNode("sync", context=context)
    outside = rclpy.create_node("outside_reader", context=context)  # a plain middleware reader
    got_early: list = []
    got_obj: list = []
    got_raw: list = []
    got_outside: list = []
    try:
        assert early.subscribe_local_first(TimeReference, topic, got_early.append, qos) == "middleware"
        pub = driver.create_local_publisher(TimeReference, topic, qos)
        assert sync.subscribe_local_first(TimeReference, topic, got_obj.append, qos) == "in-process"
        assert sync.subscribe_local_first(TimeReference, topic, got_raw.append, qos, raw=True) == "in-process"
        assert local_topics.subscriber_count(topic) == 2
        for n in (early, driver, sync, outside):
            executor.add_node(n)
        # in-process subscribers are counted beside the middleware's (the virtual stack waits for them)
        assert _spin_until(executor, lambda: pub.get_subscription_count() == 1)
        assert driver.count_subscribers(topic) == 3

        first = frame_info(1_000_000_123, "thermal", 7, False)
        pub.publish(first)
        # called on the publishing thread, before publish() returns: the object itself, and its CDR
        assert got_obj == [first] and len(got_raw) == 1
        assert deserialize_message(got_raw[0], TimeReference).source == "7"
        assert _spin_until(executor, lambda: len(got_early) == 1)

        outside.create_subscription(TimeReference, topic, got_outside.append, qos)
        assert _spin_until(executor, lambda: pub.get_subscription_count() == 2)
        for counter in range(8, 13):
            pub.publish(serialize_message(frame_info(1_000_000_000 + counter, "thermal", counter, False)))
        assert _spin_until(executor, lambda: len(got_outside) == 5 and len(got_early) == 6)
        assert [m.source for m in got_outside] == ["8", "9", "10", "11", "12"]
        # each message exactly once in-process (no second copy through the middleware), as an object for
        # the object subscriber though the driver published CDR bytes
        assert [m.source for m in got_obj] == ["7", "8", "9", "10", "11", "12"]
        assert len(got_raw) == 6

        sync.destroy_node()  # its in-process subscriptions end with it
        assert local_topics.subscriber_count(topic) == 0 and local_topics.has_local_publisher(topic)
    finally:
        executor.shutdown()
        for n in (early, driver, sync, outside):
            if n.handle is not None:  # type: ignore[truthy-function]
                n.destroy_node()
        context.try_shutdown()
    assert not local_topics.has_local_publisher(topic)


@pytest.mark.slow
def test_fusion_takes_the_rectified_pairs_of_its_process_in_process(ros_env: dict) -> None:
    """Rectify and fusion in one process (the profiles' ``pipeline``): fusion pairs the rectified images
    by a direct call on rectify's worker thread, not through the middleware, and every pair still
    reaches a reader in another process (the recorder's place) and comes out fused."""
    import numpy as np
    from sensor_msgs.msg import Image

    from helpers import spawn_nodes, stop_nodes, watch_diagnostics
    from rgbt.image.codec import cdr_to_image, image_to_cdr
    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import BackgroundNode

    proc = spawn_nodes("rectify:rectify", "fusion:fusion",
                       params=["diagnostics_period_s:=0.2", "input_qos:=reliable", "input_depth:=50",
                               "output_qos:=reliable", "late_after_periods:=0.0"])
    side = BackgroundNode("pairs_test", handle_signals=False)
    qos = qos_profile("reliable", 50)
    pub_color = side.node.create_publisher(Image, "/eo/color/image_raw", qos)
    pub_thermal = side.node.create_publisher(Image, "/boson/thermal/image_raw", qos)
    rectified: list[int] = []
    fused: list[int] = []
    side.node.create_subscription(Image, "/rgbt/rectified/thermal", lambda raw: rectified.append(cdr_to_image(raw).t_ns),
                                  qos, raw=True)
    side.node.create_subscription(Image, "/rgbt/fusion/class_ids", lambda raw: fused.append(cdr_to_image(raw).t_ns),
                                  qos, raw=True)
    diag = watch_diagnostics(side.node, "fusion")
    side.start()
    n = 12
    try:
        deadline = time.monotonic() + 90
        while not (pub_color.get_subscription_count() and pub_thermal.get_subscription_count()
                   and side.node.count_publishers("/rgbt/fusion/class_ids") and diag):
            assert proc.poll() is None and time.monotonic() < deadline, "rectify + fusion never came up"
            time.sleep(0.1)
        time.sleep(0.5)
        rng = np.random.default_rng(5)
        color = rng.integers(0, 255, (600, 960, 3), dtype=np.uint8)  # SYNTHETIC
        thermal = rng.integers(20000, 30000, (512, 640), dtype=np.uint16)  # SYNTHETIC
        stamps = [1_700_000_000_000_000_000 + i * 100_000_000 for i in range(n)]
        for t_ns in stamps:  # 5 pairs a second: slow enough that no pair is stale
            pub_color.publish(image_to_cdr(color, t_ns, "color", "rgb8"))
            pub_thermal.publish(image_to_cdr(thermal, t_ns, "thermal", "mono16"))
            time.sleep(0.2)
        deadline = time.monotonic() + 30
        while not (len(rectified) == n and fused and fused[-1] == stamps[-1]):
            assert time.monotonic() < deadline, (len(rectified), fused, diag)
            time.sleep(0.1)
    finally:
        side.close()
        out = stop_nodes(proc)
    assert proc.returncode == 0, out
    assert rectified == stamps  # every rectified pair reached the middleware reader, in order
    assert "pairs of /rgbt/rectified/thermal + /rgbt/rectified/color: in-process + in-process" in out, out
    assert "pairs of /eo/color/image_raw + /boson/thermal/image_raw: middleware + middleware" in out, out
    assert "OpenCV threads (process-wide): 1" in out, out  # the processing nodes' default: no pool competing
    assert set(fused) <= set(stamps) and fused == sorted(fused)  # fused the rectify node's pairs, newest first
