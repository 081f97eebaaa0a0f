"""VectorNav VN-100 driver node: binary output over serial (``rgbt.sensors.vn100``) -> driver-level
IMU topics with SyncIn count / time for the trigger sync node.

A port that is missing at start or goes away (the USB adapter unplugged) is closed and reopened with
the driver's back-off (``rgbt.ros.driver_node``); the sensor is configured again on every open, and
samples it repeats after a reopen are dropped (``rgbt.sensors.vn100.Vn100``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sensor_msgs.msg import Imu, TimeReference

from rgbt.graph.options import Vn100DriverOptions
from rgbt.ros.driver_node import DriverNode, imu_messages
from rgbt.ros.spin import node_main
from rgbt.sensors.reconnect import DeviceError

if TYPE_CHECKING:
    from rgbt.sensors.vn100 import Vn100


class Vn100Node(DriverNode):
    options_model = Vn100DriverOptions
    options: Vn100DriverOptions
    default_name = "vn100"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        p = self.options.raw_prefix
        self.pub = self.create_local_publisher(Imu, f"{p}/imu", self.out_qos)
        self.pub_info = self.create_local_publisher(TimeReference, f"{p}/imu/sync_info", self.out_qos)
        self.last_t_sensor_ns: int | None = None  # the device time of the last sample, kept across reopens
        self.start()

    def open_device(self) -> Vn100:
        from rgbt.sensors.vn100 import Vn100, Vn100Options

        o = self.options  # the driver (re)configures the sensor on every connection
        vn = Vn100(Vn100Options.from_stack(self.stack_model, port=o.port, baudrate=o.baud, **o.driver))
        vn.last_t_sensor_ns = self.last_t_sensor_ns  # what a replay after the reopen repeats is dropped
        if not vn.link.poll():
            raise DeviceError(f"VN-100: cannot open {vn.link.last_error}")
        return vn

    def read_once(self) -> None:
        frame_id = self.stack_model.imu.frame_id
        for sample in self.device.read(timeout=0.05):
            t_host = self.to_wall(sample.t_host_ns)
            msg, info = imu_messages(sample, t_host, frame_id)
            self.pub_info.publish(info)
            self.pub.publish(msg)
            self.diag.topic(self.stack_model.imu.topic).tick()
        self.last_t_sensor_ns = self.device.last_t_sensor_ns
        if not self.device.link.connected:  # the port went away: closed and reopened by the driver loop
            raise DeviceError(f"VN-100: {self.device.link.last_error}")


NODE = Vn100Node


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
