"""``rgbt.ros.sendqueue.SendQueue``: a blocked publish holds the queue, not the caller; order kept;
the budget bounds what waits (drops counted); close publishes what is queued."""

from __future__ import annotations

import threading

from rgbt.ros.sendqueue import SendQueue


def test_a_blocked_publish_does_not_block_the_caller_and_order_is_kept() -> None:
    gate, started, out = threading.Event(), threading.Event(), []

    def publish(msg: bytes) -> None:
        started.set()
        gate.wait(10)
        out.append(msg)

    q = SendQueue(budget_bytes=10 * 100)
    q.send(publish, bytes([0]) * 100)
    assert started.wait(5)
    for i in range(1, 15):  # the first is being published (blocked, in the budget): 9 more fit, 5 dropped
        q.send(publish, bytes([i]) * 100)
    assert q.handed == 10 and q.dropped == 5 and out == []  # the caller was never held
    gate.set()
    q.close()
    assert [m[0] for m in out] == list(range(10)) and q.done == 10
    assert q.max_wait_ms > 0


def test_a_failing_publish_is_counted_and_the_rest_go_out() -> None:
    out = []

    def publish(msg: bytes) -> None:
        if msg == b"bad":
            raise RuntimeError("middleware says no")
        out.append(msg)

    q = SendQueue(budget_bytes=1000)
    for msg in (b"a", b"bad", b"c"):
        q.send(publish, msg)
    q.close()
    assert out == [b"a", b"c"] and q.done == 3 and q.errors == ["RuntimeError: middleware says no"]
    assert not q.send(publish, b"late")  # closed
