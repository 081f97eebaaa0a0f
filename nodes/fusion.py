"""RGB-T fusion: rectified thermal (mono16) + colour (rgb8) pairs with the same trigger time ->
fused class ids (mono8) + coloured mask (rgb8), through ``rgbt.seg.fusion.FusionStage``.

Pairs are matched on identical header stamps (``rgbt.graph.sync_adapter.StampPairer``; the rectify
node publishes both with the trigger time). Overload policy: frames arrive as raw CDR, a pair is
handed to a low-priority worker (``rgbt.ros.mailbox``) and only the newest pair is fused; stale
pairs are dropped unread and counted (``latest.dropped_stale``).
"""

from __future__ import annotations

from typing import Any

from sensor_msgs.msg import Image

from rgbt.graph.options import FusionNodeOptions
from rgbt.graph.seg_adapter import make_fusion
from rgbt.image.codec import cdr_to_image
from rgbt.ros.mailbox import LatestFrameNode
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main


class FusionNode(LatestFrameNode, RgbtNode):
    options_model = FusionNodeOptions
    options: FusionNodeOptions
    default_name = "fusion"
    prewarm_modules = ("rgbt.graph.seg_adapter", "onnxruntime")

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

        o = self.options
        self.stage = make_fusion(o.fusion)
        self.colorize = None
        if o.publish_color:
            from rgbt.seg.classes import colorize

            self.colorize = colorize
        self.pub_ids = self.create_publisher(Image, f"{o.output_prefix}/class_ids", self.out_qos)
        self.pub_color = self.create_publisher(Image, f"{o.output_prefix}/color", self.out_qos)
        self.mailbox = self.latest_pairs(self.on_pair, (o.thermal_topic, o.color_topic))  # by trigger stamp

    def on_pair(self, pair: tuple[bytes, bytes]) -> None:  # worker thread: the newest pair
        thermal, color = (cdr_to_image(raw) for raw in pair)
        t_ns = thermal.t_ns
        result = self.stage.process(thermal.pixels, color.pixels)
        self.publish_image(self.pub_ids, result.class_ids, t_ns, thermal.frame_id, "mono8")
        if self.colorize is not None and self.subscribed(self.pub_color):
            self.publish_image(self.pub_color, self.colorize(result.class_ids), t_ns, thermal.frame_id, "rgb8")
        self.diag.topic("pairs").tick(self.now_ns() - t_ns)
        self.diag.set_values("timing", result.timing)


NODE = FusionNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
