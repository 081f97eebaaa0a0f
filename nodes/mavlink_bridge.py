"""MAVLink bridge: autopilot over UDP or serial -> armed state, local pose, global position.

The link is ``rgbt.sensors.mavlink.Autopilot`` (the core's: the armed state comes only from the
first vehicle's HEARTBEATs, locked to its system id, so ground stations, companion computers and
cameras on the same link cannot disarm the recorder; attitude through ``rgbt.geometry``).
Armed state: ``std_msgs/Bool`` on ``/rgbt/armed`` (latched, ``rgbt.ros.qos.TOPIC_QOS``; published
on every change and once a second) because ``mavros_msgs`` has no PyPI wheel; the recorder writes
the real ``mavros_msgs/msg/State`` into bags. Pose: ``geometry_msgs/PoseStamped`` in ENU like
mavros' ``local_position/pose``; global: ``sensor_msgs/NavSatFix``. Stamps: the ROS clock at arrival.
A link that cannot be opened (a serial port missing at start) or fails (unplugged) is closed and
reopened with back-off (``rgbt.sensors.reconnect``, ``MavlinkBridgeOptions``): the node runs
meanwhile and reports the link in its diagnostics (``device.*``; ERROR missing, WARN lost).
"""

from __future__ import annotations

from typing import Any

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Bool

from rgbt.graph.options import MavlinkBridgeOptions
from rgbt.ros.driver_node import report_devices
from rgbt.ros.messages import navsatfix, pose_stamped
from rgbt.ros.node import RgbtNode
from rgbt.ros.qos import topic_qos
from rgbt.ros.spin import node_main
from rgbt.sensors.mavlink import ArmTracker, Autopilot, GlobalFix, LocalPose, MavlinkOptions, State
from rgbt.sensors.reconnect import DeviceLink, DeviceRunner
from rgbt.topics import ARMED_TOPIC


class MavlinkBridgeNode(RgbtNode):
    options_model = MavlinkBridgeOptions
    options: MavlinkBridgeOptions
    default_name = "mavlink_bridge"

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        o = self.options
        stack = self.stack()
        self.arm = ArmTracker()  # kept across reopened links: locked to the first vehicle for good
        log = self.get_logger()  # the link: opened now when it is there, else (and after a failure) by poll()
        self.link = DeviceLink("", o.reconnect_policy(), log=log.warning, info=log.info)
        self.runner = DeviceRunner(self.link, self._open, self.read_once, report=self.report_error, label=o.url)
        self.armed: bool | None = None
        self.pub_armed = self.create_publisher(Bool, o.armed_topic, topic_qos(ARMED_TOPIC))
        self.pose_topic = o.pose_topic or stack.autopilot.pose_topic
        self.global_topic = o.global_topic or stack.autopilot.global_topic
        self.pub_pose = self.create_publisher(PoseStamped, self.pose_topic, self.out_qos)
        self.pub_global = self.create_publisher(NavSatFix, self.global_topic, self.out_qos)
        self.runner.step()  # at once when the link is there (UDP: bound before the first poll)
        self.create_timer(o.poll_period_s, self.guard(self.poll))
        self.create_timer(1.0, self.guard(self.republish_armed))

    @property
    def autopilot(self) -> Autopilot | None:
        """The open link (None while it is not open)."""
        return self.runner.device

    def _open(self) -> Autopilot:
        return Autopilot(MavlinkOptions(url=self.options.url), clock=self.now_ns, arm=self.arm)

    def poll(self) -> None:
        self.runner.step()  # opens the link when due, else reads what arrived; the timer paces it

    def read_once(self) -> None:
        autopilot = self.autopilot
        assert autopilot is not None  # the runner reads only while the link is open
        for out in autopilot.poll(timeout=0.0):
            if isinstance(out, State):
                if out.armed != self.armed:
                    self.armed = out.armed
                    self.pub_armed.publish(Bool(data=out.armed))
                    self.get_logger().info(f"autopilot {'armed' if out.armed else 'disarmed'} "
                                           f"(system {self.arm.sysid}, mode {out.mode})")
                    self.diag.values["armed"] = str(out.armed)
                self.diag.topic("heartbeat").tick()
            elif isinstance(out, LocalPose):
                self.pub_pose.publish(pose_stamped(out.t_ns, out.position, out.orientation, out.frame_id))
                self.diag.topic(self.pose_topic).tick()
            elif isinstance(out, GlobalFix):
                self.pub_global.publish(navsatfix(out.t_ns, out.latitude, out.longitude, out.altitude, "base_link"))
                self.diag.topic(self.global_topic).tick()

    def republish_armed(self) -> None:
        if self.armed is not None:
            self.pub_armed.publish(Bool(data=self.armed))

    def publish_diagnostics(self) -> None:
        self.diag.values["vehicle_sysid"] = str(self.arm.sysid)
        report_devices(self.diag, {"device": self.link})
        super().publish_diagnostics()

    def close(self) -> None:
        self.runner.close()


NODE = MavlinkBridgeNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
