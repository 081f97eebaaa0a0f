"""FLIR Blackfly driver node (colour or mono, ``camera`` option) through PySpin
(``rgbt.sensors.blackfly``): hardware-triggered frames with the chunk FrameID as counter ->
driver-level topics. On targets that run the ROS ``spinnaker_camera_driver`` instead (see
``ros2_ws/rgbt.repos``), remap its output to the driver-level topics and publish the frame info.
A camera missing at start or unplugged (a Spinnaker error) is closed and reopened with back-off
(``rgbt.ros.driver_node``); an incomplete image costs that frame only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rgbt.graph.options import ColorCameraOptions
from rgbt.ros.driver_node import CameraDriverNode
from rgbt.ros.spin import node_main

if TYPE_CHECKING:
    from rgbt.sensors.blackfly import PySpinSource


class ColorCameraNode(CameraDriverNode):
    default_name = "color_camera"
    options_model = ColorCameraOptions
    options: ColorCameraOptions

    def open_device(self) -> PySpinSource:
        from rgbt.sensors.blackfly import PySpinSource, spinnaker_params

        o = self.options
        params = spinnaker_params(self.stack_model, o.camera, **{k: v for k, v in o.driver.items() if k != "index"})
        return PySpinSource(params, index=int(o.driver.get("index", 0)))

    def device_label(self) -> str:
        return f"Blackfly index {int(self.options.driver.get('index', 0))}"

    def read_once(self) -> None:
        image, counter, t_host = self.device.read()  # failures raise their class (rgbt.sensors.blackfly)
        self.publish_frame(self.pubs, self.options.camera, image, counter, self.to_wall(t_host))


NODE = ColorCameraNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
