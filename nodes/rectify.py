"""RGB-T rectify: the two images of a stack pair (``color_thermal``: colour = cam0, thermal = cam1) with
the same (restamped) trigger time -> both stereo-rectified onto the pair's 960x600 canvas
(``rgbt.image.rectify.RgbtRectifier``), published on ``{output_prefix}/<camera name>``.

Pairs are matched on identical header stamps, which the trigger sync makes exact (colour at every
second trigger, thermal at every trigger); unmatched thermal frames are normal (30 of 60 Hz).
"""

from __future__ import annotations

from collections import OrderedDict

from sensor_msgs.msg import Image

from rgbt.ros.image import image_to_numpy, numpy_to_image
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import RectifyOptions
from rgbt.ros.spin import node_main
from rgbt.ros.stamps import stamp_to_ns


class RectifyNode(RgbtNode):
    options_model = RectifyOptions
    default_name = "rectify"

    def __init__(self, name: str | None = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name, **kwargs)
        from rgbt.image.rectify import RgbtRectifier

        o = self.options
        stack = self.stack()
        self.rectifier = RgbtRectifier.from_stack(stack, pair=o.pair)
        pair = stack.pairs[o.pair]
        self.cams = (pair.cam0, pair.cam1)
        topics = (o.cam0_topic or stack.camera(pair.cam0).topic, o.cam1_topic or stack.camera(pair.cam1).topic)
        self.frame_id = stack.camera(pair.cam0).frame_id  # rectified canvas = cam0's rectified frame
        self.pending: tuple[OrderedDict, OrderedDict] = (OrderedDict(), OrderedDict())
        self.pubs = [self.create_publisher(Image, f"{o.output_prefix}/{cam}", self.out_qos) for cam in self.cams]
        for side, topic in enumerate(topics):
            self.create_subscription(Image, topic, self.guard(lambda m, s=side: self.on_image(s, m), topic),
                                     self.in_qos)

    def on_image(self, side: int, msg: Image) -> None:
        t_ns = stamp_to_ns(msg.header.stamp)
        match = self.pending[1 - side].pop(t_ns, None)
        if match is None:
            self.pending[side][t_ns] = msg
            while len(self.pending[side]) > self.options.max_pending:
                self.pending[side].popitem(last=False)
            return
        msgs = (msg, match) if side == 0 else (match, msg)
        rect = self.rectifier.rectify(image_to_numpy(msgs[0]), image_to_numpy(msgs[1]))
        for pub, img, src in zip(self.pubs, rect, msgs):
            pub.publish(numpy_to_image(img, t_ns, self.frame_id, src.encoding))
        self.diag.topic("pairs").tick(self.now_ns() - t_ns)


NODE = RectifyNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
