"""RGB-T rectify: colour + thermal frames with the same (restamped) trigger time -> a stereo-rectified
960x600 pair (``rgbt.image.rectify.RgbtRectifier``) on ``{output_prefix}/color`` and ``/thermal``.

Pairs are matched on identical header stamps, which the trigger sync makes exact (colour at every
second trigger, thermal at every trigger). Unmatched thermal frames are normal (30 of 60 Hz).
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
        self.color_topic = o.color_topic or stack.cameras["color"].topic
        self.thermal_topic = o.thermal_topic or stack.cameras["thermal"].topic
        self.color_frame = stack.cameras["color"].frame_id
        self.pending: dict[str, OrderedDict] = {"color": OrderedDict(), "thermal": OrderedDict()}
        self.pub_color = self.create_publisher(Image, f"{o.output_prefix}/color", self.out_qos)
        self.pub_thermal = self.create_publisher(Image, f"{o.output_prefix}/thermal", self.out_qos)
        self.create_subscription(Image, self.color_topic, self.guard(lambda m: self.on_image("color", m),
                                                                     self.color_topic), self.in_qos)
        self.create_subscription(Image, self.thermal_topic, self.guard(lambda m: self.on_image("thermal", m),
                                                                       self.thermal_topic), self.in_qos)

    def on_image(self, kind: str, msg: Image) -> None:
        t_ns = stamp_to_ns(msg.header.stamp)
        other = "thermal" if kind == "color" else "color"
        match = self.pending[other].pop(t_ns, None)
        if match is None:
            self.pending[kind][t_ns] = msg
            while len(self.pending[kind]) > self.options.max_pending:
                self.pending[kind].popitem(last=False)
            return
        color, thermal = (msg, match) if kind == "color" else (match, msg)
        c_rect, t_rect = self.rectifier.rectify(image_to_numpy(color), image_to_numpy(thermal))
        self.pub_color.publish(numpy_to_image(c_rect, t_ns, self.color_frame, color.encoding))
        self.pub_thermal.publish(numpy_to_image(t_rect, t_ns, self.color_frame, thermal.encoding))
        self.diag.topic("pairs").tick(self.now_ns() - t_ns)


NODE = RectifyNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
