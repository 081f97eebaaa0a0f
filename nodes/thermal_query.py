"""Thermal query node: temperature at a pixel, over a region or over a segmentation class.

Two interfaces, one logic (:mod:`rgbt.graph.thermal_query`, which documents the request and
response):

* the typed service ``rgbt_interfaces/srv/ThermalQuery`` on ``service`` (default
  ``/rgbt/thermal_query``), offered whenever the ``rgbt_interfaces`` package
  (``ros2_ws/src/rgbt_interfaces``) is built and importable: ``colcon build`` on a ROS 2 install,
  ``scripts/build_interfaces.sh`` on the PyPI wheels;
* JSON over ``std_msgs/String`` on ``request_topic`` / ``response_topic`` (reliable), always: the
  fallback where the interface package is not built.

Start-up logs which of them are served (and, without the typed service, why). Keeps the latest raw
thermal frame and the latest class-id mask with the same stamp.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sensor_msgs.msg import Image
from std_msgs.msg import String

from rgbt.graph.options import ThermalQueryOptions
from rgbt.image.codec import image_to_numpy
from rgbt.ros.node import RgbtNode
from rgbt.ros.qos import qos_profile
from rgbt.ros.spin import node_main
from rgbt.stamps import stamp_to_ns

if TYPE_CHECKING:
    import numpy as np
from rgbt.graph.thermal_query import answer, answer_typed, converter

try:  # built from ros2_ws/src/rgbt_interfaces; absent where that package is not built
    from rgbt_interfaces.srv import ThermalQuery
    TYPED_MISSING = ""
except ImportError as exc:
    ThermalQuery = None
    TYPED_MISSING = (f"rgbt_interfaces not importable ({exc}): build ros2_ws/src/rgbt_interfaces with colcon, "
                     "or scripts/build_interfaces.sh on the PyPI wheels")


class ThermalQueryNode(RgbtNode):
    options_model = ThermalQueryOptions
    options: ThermalQueryOptions
    default_name = "thermal_query"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        o = self.options
        self.to_celsius = converter(o.radiometry)
        self.thermal_topic = o.thermal_topic or self.stack().cameras["thermal"].topic
        self.frame: np.ndarray | None = None
        self.stamp_ns: int | None = None
        self.class_ids = None
        self.create_subscription(Image, self.thermal_topic, self.guard(self.on_thermal, self.thermal_topic),
                                 qos_profile(o.input_qos, depth=1))
        self.create_subscription(Image, o.class_topic, self.guard(self.on_classes, o.class_topic),
                                 qos_profile(o.input_qos, depth=1))
        self.pub = self.create_publisher(String, o.response_topic, qos_profile("reliable"))
        self.create_subscription(String, o.request_topic, self.guard(self.on_request, o.request_topic),
                                 qos_profile("reliable"))
        json_line = f"JSON over std_msgs/String on {o.request_topic} -> {o.response_topic}"
        why = TYPED_MISSING or ("" if o.service else "the 'service' option is empty")
        if not why:
            try:
                self.create_service(ThermalQuery, o.service, self.on_service)
            except Exception as exc:  # noqa: BLE001 - rosidl's UnsupportedTypeSupport: built, but its libraries do not load
                why = (f"rgbt_interfaces is importable but its type support does not load ({exc}): "
                       "its lib folder must be on LD_LIBRARY_PATH (source its install's setup.bash)")
        self.typed = not why
        if self.typed:
            self.get_logger().info(f"thermal query: typed service {o.service} (rgbt_interfaces/srv/ThermalQuery), "
                                   f"and {json_line}")
        elif ThermalQuery is None or not o.service:
            self.get_logger().info(f"thermal query: {json_line} only (no typed service: {why})")
        else:
            self.get_logger().warning(f"thermal query: {json_line} only (no typed service: {why})")

    def on_thermal(self, msg: Image) -> None:
        self.frame = image_to_numpy(msg).copy()  # the message buffer is not kept
        self.stamp_ns = stamp_to_ns(msg.header.stamp)

    def on_classes(self, msg: Image) -> None:
        self.class_ids = image_to_numpy(msg).copy()

    def on_request(self, msg: String) -> None:
        response = answer(msg.data, self.frame, self.stamp_ns, self.to_celsius, self.class_ids)
        self.pub.publish(String(data=json.dumps(response)))
        self.diag.topic(self.options.request_topic).tick()

    def on_service(self, request: Any, response: Any) -> Any:
        """The typed service: answered through the same logic as the JSON topics. An unexpected
        exception is logged and counted like any callback's and answered with ``success = False``."""
        self.callbacks_run += 1
        try:
            response = answer_typed(request, response, self.frame, self.stamp_ns, self.to_celsius, self.class_ids)
        except Exception as exc:  # noqa: BLE001 - a node keeps running and a caller always gets an answer
            self.report_error("on_service", exc, self.options.service)
            response.success, response.error = False, f"{type(exc).__name__}: {exc}"
        self.diag.topic(self.options.service).tick()
        return response


NODE = ThermalQueryNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
