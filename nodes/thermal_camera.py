"""FLIR Boson / ADK driver node: raw Y16 frames over V4L2 with telemetry frame counters and the FFC
state from the serial link (``rgbt.sensors.boson``) -> driver-level thermal topics.

``port`` is the Boson's serial control port; ``driver.device`` the V4L2 device (default
/dev/video0); other ``driver.*`` keys go to ``V4l2Options``. A camera missing at start or unplugged
is reopened with back-off (``rgbt.ros.driver_node``); the serial control link reconnects on its own
with the same back-off bounds, and its errors never stop the video.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rgbt.graph.options import ThermalCameraOptions
from rgbt.ros.driver_node import CameraDriverNode
from rgbt.ros.spin import node_main
from rgbt.sensors.reconnect import ReadFailed

if TYPE_CHECKING:
    from rgbt.sensors.boson import BosonCamera


class ThermalCameraNode(CameraDriverNode):
    options_model = ThermalCameraOptions
    default_name = "thermal_camera"

    def open_device(self) -> BosonCamera:
        from rgbt.sensors.boson import BosonCamera, BosonControl, BosonOptions, V4l2Options, V4l2Source

        o = self.options
        control = BosonControl(BosonOptions(port=o.port, baudrate=o.baud,  # opens its port when first used
                                            reconnect_backoff_s=(o.reopen_first_s, o.reopen_max_s))) if o.port else None
        return BosonCamera(V4l2Source(V4l2Options(**o.driver), control), control)

    def device_label(self) -> str:
        return str(self.options.driver.get("device", "/dev/video0"))

    def read_once(self) -> None:
        frame = self.device.read()
        if frame is None:
            raise ReadFailed(f"{self.device_label()}: no frame")
        self.publish_frame(self.pubs, self.options.camera, frame.image, frame.frame_counter,
                           self.to_wall(frame.t_host_ns), frame.ffc)


NODE = ThermalCameraNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
