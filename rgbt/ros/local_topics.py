"""In-process delivery between nodes of one process: the drivers -> trigger sync hop without the middleware.

rclpy has no intra-process communication: two nodes of one process that talk over a topic pay for
a serialization, a shared-memory write, a middleware read and an executor wake-up, all under the
one GIL they share. On the hop that carries the whole stack (driver topics -> trigger sync, ~110
MB/s of frames at 640 messages/s) that was most of the first hop's tail on a 2-core host, and the
trigger sync's executor competed for the GIL with the drivers' own threads.

A publisher made with :meth:`rgbt.ros.node.RgbtNode.create_local_publisher` registers its topic in
this process. A node created after it that subscribes with
:meth:`rgbt.ros.node.RgbtNode.subscribe_local_first` gets each message by a direct call on the
publishing thread (no copy; serialized once when the subscriber wants CDR bytes and the publisher
gave an object) and creates no middleware subscription for that topic. The publisher still
publishes through the middleware whenever a reader elsewhere is matched (``ros2 topic echo``, a
trigger sync in another process, a recorder of driver topics), so the topic stays an ordinary ROS
topic; with no local subscriber it is an ordinary publisher. A node created before any local
publisher of its topic subscribes through the middleware as usual (profiles list drivers first).

Callbacks run on the publisher's thread: a subscriber whose state is also touched by its
executor (timers, other subscriptions) locks it (``nodes/trigger_sync.py`` does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rclpy.serialization import deserialize_message, serialize_message

_lock = threading.Lock()
_sources: dict[str, list[LocalPublisher]] = {}  # topic -> local publishers in this process
_subscribers: dict[str, list[LocalSubscriber]] = {}  # topic -> in-process subscribers


@dataclass(frozen=True, eq=False)
class LocalSubscriber:
    """An in-process subscription: ``callback`` gets CDR bytes when ``raw`` else a ``msg_type`` object."""

    topic: str
    msg_type: Any
    callback: Callable[[Any], None]
    raw: bool

    def deliver(self, obj: Any, raw: bytes | None) -> bytes | None:
        """Call back with the form this subscriber wants; returns the CDR bytes if it serialized them."""
        if self.raw:
            raw = raw if raw is not None else serialize_message(obj)
            self.callback(raw)
            return raw
        if obj is None:
            assert raw is not None, "a local publish carries the message or its CDR bytes"
            obj = deserialize_message(raw, self.msg_type)
        self.callback(obj)
        return raw

    def close(self) -> None:
        with _lock:
            subs = _subscribers.get(self.topic, [])
            if self in subs:
                subs.remove(self)


class LocalPublisher:
    """A middleware publisher that also delivers to in-process subscribers of its topic.

    ``publish(msg)`` takes a message object or its CDR bytes (as rclpy's ``publish`` does); other
    attributes are the wrapped publisher's (``get_subscription_count``, ``topic_name``, ...)."""

    def __init__(self, publisher: Any, topic: str) -> None:
        self.publisher, self.topic = publisher, topic
        with _lock:
            _sources.setdefault(topic, []).append(self)

    def publish(self, msg: Any) -> None:
        subs = _subscribers.get(self.topic)
        if subs:
            raw = bytes(msg) if isinstance(msg, (bytearray, memoryview)) else msg if isinstance(msg, bytes) else None
            obj = None if raw is not None else msg
            for sub in list(subs):
                raw = sub.deliver(obj, raw)
            if self.publisher.get_subscription_count() == 0:  # nobody outside this process listens
                return
            msg = raw if raw is not None else msg  # serialized once, for a raw local subscriber and the middleware
        self.publisher.publish(msg)

    def close(self) -> None:
        with _lock:
            pubs = _sources.get(self.topic, [])
            if self in pubs:
                pubs.remove(self)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.publisher, name)


def has_local_publisher(topic: str) -> bool:
    """Whether a node of this process publishes ``topic`` through a :class:`LocalPublisher`."""
    return bool(_sources.get(topic))


def subscribe(topic: str, msg_type: Any, callback: Callable[[Any], None], raw: bool = False) -> LocalSubscriber:
    """Register an in-process subscriber of ``topic`` (see the module docstring)."""
    sub = LocalSubscriber(topic, msg_type, callback, raw)
    with _lock:
        _subscribers.setdefault(topic, []).append(sub)
    return sub


def subscriber_count(topic: str) -> int:
    """In-process subscribers of ``topic`` (they are invisible to the middleware's graph)."""
    return len(_subscribers.get(topic, ()))
