"""The process publish thread (``rgbt.ros.publish_thread``): real rclpy + Fast DDS delivery in order
through the GIL-released write, and the queue's rules (order, the byte bound, failures counted,
close writes what is queued) with a write the test holds back."""

from __future__ import annotations

import threading
import time

import pytest


class _Pub:
    """Stands in for a publisher where only ``topic_name`` is read (the write is the test's)."""

    def __init__(self, topic: str) -> None:
        self.topic_name = topic


def test_a_held_write_delays_messages_in_order_and_the_byte_bound_drops_and_counts() -> None:
    pytest.importorskip("rclpy")
    from rgbt.ros.publish_thread import PublishThread

    gate = threading.Event()
    written: list[tuple[str, bytes]] = []

    def write(pub: _Pub, data: bytes) -> None:
        gate.wait(10)
        written.append((pub.topic_name, data))

    thread = PublishThread(max_queued_bytes=30, write=write)
    a, b = _Pub("/a"), _Pub("/b")
    try:
        assert thread.submit(a, b"0123456789")  # taken by the thread, held in write()
        assert thread.submit(b, b"abcdefghij")
        assert thread.submit(a, b"ABCDEFGHIJ")
        assert not thread.submit(b, b"klmnopqrst")  # 40 bytes would be queued: over the bound
        assert thread.stats.dropped == {"/b": 1}
        assert thread.progress() == (4, 1)  # handed 4, one accounted (the drop); the held write pending
        gate.set()
        deadline = time.monotonic() + 10
        while thread.progress()[1] < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert written == [("/a", b"0123456789"), ("/b", b"abcdefghij"), ("/a", b"ABCDEFGHIJ")]
        assert thread.stats.written == 3 and thread.pending == 0
        assert thread.stats.max_queued_bytes == 30
    finally:
        gate.set()
        thread.close()


def test_a_refused_write_is_counted_and_the_next_is_written_and_close_drains_the_queue() -> None:
    pytest.importorskip("rclpy")
    from rgbt.ros.publish_thread import PublishThread

    gate = threading.Event()
    written: list[bytes] = []

    def write(pub: _Pub, data: bytes) -> None:
        gate.wait(10)
        if data == b"bad":
            raise RuntimeError("refused by the middleware")
        written.append(data)

    thread = PublishThread(write=write)
    pub = _Pub("/t")
    for data in (b"one", b"bad", b"two", b"three"):
        assert thread.submit(pub, data)
    gate.set()
    thread.close(timeout_s=10)  # writes what is queued, then stops
    assert written == [b"one", b"two", b"three"]
    assert thread.stats.failed == 1 and "refused by the middleware" in thread.last_error
    assert not thread.submit(pub, b"late")  # closed: dropped and counted
    assert thread.stats.dropped == {"/t": 1}


@pytest.mark.ros
def test_messages_reach_a_real_subscriber_in_order_through_the_released_write(ros_env: dict) -> None:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.task import Future
    from std_msgs.msg import String

    from rgbt.ros.publish_thread import PublishThread, publish_released, to_cdr

    context = rclpy.Context()
    rclpy.init(context=context)
    executor = SingleThreadedExecutor(context=context)
    node = rclpy.create_node("publish_thread_test", context=context)
    executor.add_node(node)
    got: list[str] = []
    thread = PublishThread()
    try:
        node.create_subscription(String, "/rgbt/test/publish_thread", lambda m: got.append(m.data), 100)
        pub = node.create_publisher(String, "/rgbt/test/publish_thread", 100)
        deadline = time.monotonic() + 10
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            executor.spin_until_future_complete(Future(), timeout_sec=0.05)
        for i in range(50):
            assert thread.submit(pub, String(data=f"m{i}") if i % 2 else to_cdr(String(data=f"m{i}")))
        deadline = time.monotonic() + 10
        while len(got) < 50 and time.monotonic() < deadline:
            executor.spin_until_future_complete(Future(), timeout_sec=0.05)
        assert got == [f"m{i}" for i in range(50)]
        assert thread.stats.written == 50 and thread.stats.failed == 0
        node.destroy_publisher(pub)
        with pytest.raises(Exception, match="(?i)destr|invalid"):
            publish_released(pub, to_cdr(String(data="after")))
    finally:
        thread.close()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
