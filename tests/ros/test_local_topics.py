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
