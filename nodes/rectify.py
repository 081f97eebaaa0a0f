"""RGB-T rectify: the two images of a stack pair (``color_thermal``: colour = cam0, thermal = cam1) with
the same (restamped) trigger time -> both stereo-rectified onto the pair's 960x600 canvas
(``rgbt.image.rectify.RgbtRectifier``), published on ``{output_prefix}/<camera name>``.

Pairs are matched on identical header stamps (``rgbt.graph.sync_adapter.StampPairer``), which the
trigger sync makes exact (colour at every second trigger, thermal at every trigger); unmatched
thermal frames are normal (30 of 60 Hz). Overload policy: frames arrive as raw CDR, a pair is
handed to a low-priority worker (``rgbt.ros.mailbox``) and only the newest pair is rectified; stale
pairs are dropped unread and counted (``latest.dropped_stale``).
"""

from __future__ import annotations

from typing import Any

from sensor_msgs.msg import Image

from rgbt.graph.options import RectifyNodeOptions
from rgbt.image.codec import cdr_to_image
from rgbt.ros.mailbox import LatestFrameNode
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main


class RectifyNode(LatestFrameNode, RgbtNode):
    options_model = RectifyNodeOptions
    options: RectifyNodeOptions
    default_name = "rectify"
    prewarm_modules = ("rgbt.image.rectify",)

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        from rgbt.image.rectify import RgbtRectifier

        o = self.options
        stack = self.stack()
        self.rectifier = RgbtRectifier.from_stack(stack, pair=o.pair)
        pair = stack.pairs[o.pair]
        self.cams = (pair.cam0, pair.cam1)
        topics = (o.cam0_topic or stack.camera(pair.cam0).topic, o.cam1_topic or stack.camera(pair.cam1).topic)
        self.frame_id = stack.camera(pair.cam0).frame_id  # rectified canvas = cam0's rectified frame
        # local publishers: a fusion node of this process takes the pairs by a direct call (rgbt.ros.local_topics)
        self.pubs = [self.create_local_publisher(Image, f"{o.output_prefix}/{cam}", self.out_qos) for cam in self.cams]
        self.mailbox = self.latest_pairs(self.on_pair, topics, o.max_pending)  # cam0 meets cam1 by trigger stamp

    def on_pair(self, pair: tuple[bytes, bytes]) -> None:  # worker thread: the newest pair
        imgs = [cdr_to_image(raw) for raw in pair]
        t_ns = imgs[0].t_ns
        self.rectifier.check_pair(imgs[0].pixels, imgs[1].pixels)  # a bad pair publishes nothing
        # each side is published as soon as it is rectified, the smaller image (the thermal) first
        for side in sorted((0, 1), key=lambda i: imgs[i].pixels.nbytes):
            rect = self.rectifier.rectify_image(imgs[side].pixels, side)
            self.publish_image(self.pubs[side], rect, t_ns, self.frame_id, imgs[side].encoding)
        self.diag.topic("pairs").tick(self.now_ns() - t_ns)


NODE = RectifyNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
