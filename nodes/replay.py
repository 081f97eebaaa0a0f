"""Replay: plays a ROS 1 (CART) or ROS 2 bag onto its topics, with ``/clock``.

Reading, clipping (``start_s`` / ``duration_s``) and topic renames are ``rgbt.bag.reader``'s
``messages()``. ROS 2 bags are published as their raw CDR bytes; ROS 1 messages are converted
field by field (:mod:`rgbt.ros.convert`). ``rate`` scales time (2 = twice as fast); ``rate: 0``
plays as fast as the subscribers keep up: every message waits until all reliable subscribers
acknowledged it (``Publisher.wait_for_all_acked``). ``/clock`` carries each message's log time.
"""

from __future__ import annotations

import threading
from typing import Any

from rclpy.duration import Duration
from rosgraph_msgs.msg import Clock

from rgbt.errors import ConfigError
from rgbt.graph.options import ReplayOptions
from rgbt.pacing import pace
from rgbt.ros.convert import to_rclpy
from rgbt.ros.msgtypes import get_message
from rgbt.ros.node import RgbtNode
from rgbt.ros.qos import qos_profile, topic_qos
from rgbt.ros.spin import node_main
from rgbt.stamps import ns_to_stamp
from rgbt.threadname import name_native_thread


class ReplayNode(RgbtNode):
    options_model = ReplayOptions
    options: ReplayOptions
    default_name = "replay"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        from rgbt.bag.reader import open_bag

        o = self.options
        if not o.path:
            raise ConfigError(f"node {self.get_name()}", "path", o.path, "a bag path")
        self.bag = open_bag(o.path)
        self.renames = dict(r.split(":=", 1) for r in o.renames)
        self.pubs: dict[str, Any] = {}  # topic -> rclpy publisher
        self.ros1 = self.bag.kind == "ros1"  # ROS 1 raw bytes are not CDR: convert field by field
        for topic, info in self.bag.topics.items():
            if o.topics and topic not in o.topics:
                continue
            out = self.renames.get(topic, topic)
            # a topic with a fixed QoS (/rgbt/armed latched) keeps it: its subscribers require it
            self.pubs[out] = self.create_publisher(get_message(info.msgtype), out, topic_qos(out, o.output_qos))
        self.clock_pub = self.create_publisher(Clock, "/clock", qos_profile("reliable")) if o.clock else None
        self.published = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._play, name="replay", daemon=True)
        self._thread.start()

    def _play(self) -> None:
        name_native_thread()
        o = self.options
        try:
            self.wait_for_subscribers(o.wait_for, o.wait_timeout_s, self._stop)
            if self._stop.wait(o.start_delay_s):
                return
            while True:
                self._play_once()
                if not o.loop or self._stop.is_set():
                    break
        except Exception as exc:  # noqa: BLE001 - reported in diagnostics
            self.report_error("replay failed", exc)
        for pub in [*self.pubs.values(), self.clock_pub]:  # reliable subscribers get the tail too
            if pub is not None:
                pub.wait_for_all_acked(Duration(seconds=5))
        self.get_logger().info(f"replay done: {self.published} messages")
        if o.exit_when_done:
            self.finished = True

    def _play_once(self) -> None:
        o = self.options
        start_ns = self.bag.start_ns + int(o.start_s * 1e9)
        end_ns = start_ns + int(o.duration_s * 1e9) if o.duration_s else None
        topics = list(o.topics) or None
        clock = Clock()
        records = self.bag.messages(topics=topics, start_ns=start_ns, end_ns=end_ns, renames=self.renames or None)
        if o.rate > 0:  # at log time x rate (rgbt.pacing); rate 0: as fast as the subscribers acknowledge
            records = (rec for rec, _due in pace(records, lambda r: r.t_ns, speed=o.rate, sleep=self._stop.wait))
        for rec in records:
            if self._stop.is_set():
                return
            if self.clock_pub is not None:
                ns_to_stamp(rec.t_ns, clock.clock)
                self.clock_pub.publish(clock)
            pub = self.pubs.get(rec.topic)
            if pub is None:
                continue
            if self.ros1:
                pub.publish(to_rclpy(rec.msg, rec.msgtype))
            else:
                pub.publish(bytes(rec.raw))
            if o.rate == 0:
                pub.wait_for_all_acked(Duration(seconds=5))
            self.published += 1
            self.diag.topic(rec.topic).tick()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


NODE = ReplayNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
