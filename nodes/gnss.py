"""u-blox GNSS driver node: UBX NAV-PVT over serial (pyubx2 framing, ``rgbt.sensors.ubx`` decoding)
-> ``sensor_msgs/NavSatFix`` on the stack's GNSS topic, host-stamped when the message is parsed
(through the driver's monotonic -> wall offset, ``rgbt.hostclock``), and beside it
``sensor_msgs/TimeReference`` on ``rgbt.topics.time_reference_topic`` (``/gps/fix`` ->
``/gps/time_reference``, as ``nmea_navsat_driver`` names it): the same header stamp, ``time_ref`` =
the fix's UTC time from the receiver, ``source`` = ``"ubx:NAV-PVT"``. A fix without a valid UTC
date and time gets no TimeReference (counted as ``no_utc``). A port missing at start or gone (a serial
error) is closed and reopened with the driver's back-off (``rgbt.ros.driver_node``); a message that
does not parse is skipped by the UBX reader."""

from __future__ import annotations

import time
from typing import Any

from sensor_msgs.msg import NavSatFix, NavSatStatus, TimeReference

from rgbt.graph.options import DriverOptions
from rgbt.ros.driver_node import DriverNode
from rgbt.ros.messages import navsatfix, time_reference
from rgbt.ros.spin import node_main
from rgbt.sensors.ubx import fix_from_nav_pvt
from rgbt.topics import time_reference_topic


class GnssNode(DriverNode):
    options_model = DriverOptions
    options: DriverOptions
    default_name = "gnss"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.topic = self.stack_model.gnss.topic
        self.pub = self.create_publisher(NavSatFix, self.topic, self.out_qos)
        self.time_topic = time_reference_topic(self.topic)
        self.pub_time = self.create_publisher(TimeReference, self.time_topic, self.out_qos)
        self.diag.values["no_utc"] = "0"
        self.start()

    def open_device(self) -> Any:  # a pyserial port (untyped)
        import serial
        from pyubx2 import UBXReader

        port = serial.serial_for_url(self.options.port, baudrate=self.options.baud, timeout=0.2)
        self._reader = UBXReader(port)
        return port

    def read_once(self) -> None:
        _raw, parsed = self._reader.read()
        if parsed is None or getattr(parsed, "identity", "") != "NAV-PVT":
            return
        fix = fix_from_nav_pvt(parsed)
        t_ns = self.to_wall(time.monotonic_ns())  # the driver's one clock offset
        frame_id = self.stack_model.gnss.frame_id
        msg = navsatfix(t_ns, fix.lat, fix.lon, fix.height_m, frame_id)
        msg.status.status = int(fix.status)
        msg.status.service = NavSatStatus.SERVICE_GPS
        if fix.position_covariance is not None:
            msg.position_covariance = [float(v) for v in fix.position_covariance]
            msg.position_covariance_type = NavSatFix.COVARIANCE_TYPE_APPROXIMATED
        self.pub.publish(msg)
        self.diag.topic(self.topic).tick()
        if fix.t_utc_ns is None:
            self.diag.values["no_utc"] = str(int(self.diag.values["no_utc"]) + 1)
            return
        self.pub_time.publish(time_reference(t_ns, fix.t_utc_ns, f"ubx:{fix.source}", frame_id))
        self.diag.topic(self.time_topic).tick()


NODE = GnssNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
