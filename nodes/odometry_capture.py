"""Odometry capture: ``nav_msgs/Odometry`` of VINS-Fusion / OpenVINS -> a TUM file.

Subscribes (reliable, deep queue) to ``topics`` (default: every estimator's odometry topic from
``rgbt.vio.runners.SPECS``: ``/vins_estimator/odometry``, ``/odometry``, ``/ov_msckf/odomimu``) and
writes the first topic that publishes to ``out_path`` (``rgbt.graph.odometry.TumWriter``: header
stamp, ``pose.pose`` = T_world_child). ``rgbt.vio.runners.capture_command`` starts it beside an
estimator; ``rgbt vio ate --est out_path`` scores the result.
"""

from __future__ import annotations

from typing import Any

from nav_msgs.msg import Odometry

from rgbt.graph.odometry import TumWriter, odometry_topics
from rgbt.graph.options import OdometryCaptureOptions
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main
from rgbt.stamps import stamp_to_ns


class OdometryCaptureNode(RgbtNode):
    options_model = OdometryCaptureOptions
    options: OdometryCaptureOptions
    default_name = "odometry_capture"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        o = self.options
        self.writer = TumWriter(o.out_path)
        self.source: str | None = None  # the first topic heard; the others are ignored (counted)
        for topic in o.topics or odometry_topics():
            self.create_subscription(Odometry, topic, self.guard(lambda m, t=topic: self.on_odometry(t, m), topic),
                                     self.in_qos)
        self.diag.values["ignored"] = "0"

    def on_odometry(self, topic: str, msg: Odometry) -> None:
        if self.source is None:
            self.source = topic
            self.diag.values["source"] = topic
            self.get_logger().info(f"capturing {topic} -> {self.writer.path}")
        if topic != self.source:
            self.diag.values["ignored"] = str(int(self.diag.values["ignored"]) + 1)
            return
        p, q = msg.pose.pose.position, msg.pose.pose.orientation
        t_ns = stamp_to_ns(msg.header.stamp)
        self.writer.add(t_ns, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w))
        self.diag.topic(topic).tick(self.now_ns() - t_ns)

    def publish_diagnostics(self) -> None:
        self.diag.values.update({f"tum.{k}": str(v) for k, v in self.writer.counters.items()})
        super().publish_diagnostics()

    def close(self) -> None:
        self.writer.close()


NODE = OdometryCaptureNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
