"""Thermal query service: temperature at a pixel, over a region or over a segmentation class.

JSON over ``std_msgs/String`` request / response topics (reliable); see
:mod:`rgbt.ros.thermal_query` for the request and response format. Keeps the latest raw thermal
frame and the latest class-id mask with the same stamp.
"""

from __future__ import annotations

import json

from sensor_msgs.msg import Image
from std_msgs.msg import String

from rgbt.ros.image import image_to_numpy
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import ThermalQueryOptions
from rgbt.ros.qos import qos_profile
from rgbt.ros.spin import node_main
from rgbt.ros.stamps import stamp_to_ns
from rgbt.ros.thermal_query import answer, converter


class ThermalQueryNode(RgbtNode):
    options_model = ThermalQueryOptions
    default_name = "thermal_query"

    def __init__(self, name: str | None = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name, **kwargs)
        o = self.options
        self.to_celsius = converter(o.radiometry)
        self.thermal_topic = o.thermal_topic or self.stack().cameras["thermal"].topic
        self.frame = None
        self.stamp_ns = None
        self.class_ids = None
        self.create_subscription(Image, self.thermal_topic, self.guard(self.on_thermal, self.thermal_topic),
                                 qos_profile(o.input_qos, depth=1))
        self.create_subscription(Image, o.class_topic, self.guard(self.on_classes, o.class_topic),
                                 qos_profile(o.input_qos, depth=1))
        self.pub = self.create_publisher(String, o.response_topic, qos_profile("reliable"))
        self.create_subscription(String, o.request_topic, self.guard(self.on_request, o.request_topic),
                                 qos_profile("reliable"))

    def on_thermal(self, msg: Image) -> None:
        self.frame = image_to_numpy(msg).copy()  # the message buffer is not kept
        self.stamp_ns = stamp_to_ns(msg.header.stamp)

    def on_classes(self, msg: Image) -> None:
        self.class_ids = image_to_numpy(msg).copy()

    def on_request(self, msg: String) -> None:
        response = answer(msg.data, self.frame, self.stamp_ns, self.to_celsius, self.class_ids)
        self.pub.publish(String(data=json.dumps(response)))
        self.diag.topic(self.options.request_topic).tick()


NODE = ThermalQueryNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
