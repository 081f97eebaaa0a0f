"""RGB-T fusion: rectified thermal (mono16) + colour (rgb8) pairs with the same trigger time ->
fused class ids (mono8) + coloured mask (rgb8), through ``rgbt.seg.fusion.FusionStage``.

Pairs are matched on identical header stamps (the rectify node publishes both with the trigger
time). When colour is missing for ``max_wait`` thermal frames, thermal is fused alone (the stage's
darkness gate then relies on thermal only).
"""

from __future__ import annotations

from collections import OrderedDict

from sensor_msgs.msg import Image

from rgbt.ros.image import image_to_numpy, numpy_to_image
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import FusionOptions
from rgbt.ros.spin import node_main
from rgbt.ros.stamps import stamp_to_ns


class FusionNode(RgbtNode):
    options_model = FusionOptions
    default_name = "fusion"

    def __init__(self, name: str | None = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name, **kwargs)
        from rgbt.ros.seg_adapter import make_fusion

        o = self.options
        self.stage = make_fusion(o.fusion)
        self.pending: dict[str, OrderedDict] = {"thermal": OrderedDict(), "color": OrderedDict()}
        self.pub_ids = self.create_publisher(Image, f"{o.output_prefix}/class_ids", self.out_qos)
        self.pub_color = self.create_publisher(Image, f"{o.output_prefix}/color", self.out_qos)
        self.create_subscription(Image, o.thermal_topic, self.guard(lambda m: self.on_image("thermal", m),
                                                                    o.thermal_topic), self.in_qos)
        self.create_subscription(Image, o.color_topic, self.guard(lambda m: self.on_image("color", m),
                                                                  o.color_topic), self.in_qos)

    def on_image(self, kind: str, msg: Image) -> None:
        t_ns = stamp_to_ns(msg.header.stamp)
        other = "color" if kind == "thermal" else "thermal"
        match = self.pending[other].pop(t_ns, None)
        if match is None:
            self.pending[kind][t_ns] = msg
            while len(self.pending[kind]) > 8:
                self.pending[kind].popitem(last=False)
            return
        thermal, color = (msg, match) if kind == "thermal" else (match, msg)
        result = self.stage.process(image_to_numpy(thermal), image_to_numpy(color))
        self.pub_ids.publish(numpy_to_image(result.class_ids, t_ns, thermal.header.frame_id, "mono8"))
        if result.color is not None:
            self.pub_color.publish(numpy_to_image(result.color, t_ns, thermal.header.frame_id, "rgb8"))
        self.diag.topic("pairs").tick(self.now_ns() - t_ns)


NODE = FusionNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
