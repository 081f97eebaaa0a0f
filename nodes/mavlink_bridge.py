"""MAVLink bridge: autopilot over UDP or serial -> armed state, local pose, global position.

The link is ``rgbt.sensors.mavlink.Autopilot`` (the core's: the armed state comes only from the
first vehicle's HEARTBEATs, locked to its system id, so ground stations, companion computers and
cameras on the same link cannot disarm the recorder; attitude through ``rgbt.geometry``).
Armed state: ``std_msgs/Bool`` on ``/rgbt/armed`` (latched, ``rgbt.ros.qos.TOPIC_QOS``; published
on every change and once a second) because ``mavros_msgs`` has no PyPI wheel; the recorder writes
the real ``mavros_msgs/msg/State`` into bags. Pose: ``geometry_msgs/PoseStamped`` in ENU like
mavros' ``local_position/pose``; global: ``sensor_msgs/NavSatFix``. Stamps: the ROS clock at arrival.
"""

from __future__ import annotations

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Bool

from rgbt.ros.messages import navsatfix, pose_stamped
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import ARMED_TOPIC, MavlinkBridgeOptions
from rgbt.ros.qos import topic_qos
from rgbt.ros.spin import node_main
from rgbt.sensors.mavlink import Autopilot, GlobalFix, LocalPose, MavlinkOptions, State


class MavlinkBridgeNode(RgbtNode):
    options_model = MavlinkBridgeOptions
    default_name = "mavlink_bridge"

    def __init__(self, name: str | None = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name, **kwargs)
        o = self.options
        stack = self.stack()
        self.autopilot = Autopilot(MavlinkOptions(url=o.url), clock=self.now_ns)
        self.armed: bool | None = None
        self.pub_armed = self.create_publisher(Bool, o.armed_topic, topic_qos(ARMED_TOPIC))
        self.pose_topic = o.pose_topic or stack.autopilot.pose_topic
        self.global_topic = o.global_topic or stack.autopilot.global_topic
        self.pub_pose = self.create_publisher(PoseStamped, self.pose_topic, self.out_qos)
        self.pub_global = self.create_publisher(NavSatFix, self.global_topic, self.out_qos)
        self.create_timer(o.poll_period_s, self.guard(self.poll))
        self.create_timer(1.0, self.guard(self.republish_armed))

    def poll(self) -> None:
        for out in self.autopilot.poll(timeout=0.0):
            if isinstance(out, State):
                if out.armed != self.armed:
                    self.armed = out.armed
                    self.pub_armed.publish(Bool(data=out.armed))
                    self.get_logger().info(f"autopilot {'armed' if out.armed else 'disarmed'} "
                                           f"(system {self.autopilot.arm.sysid}, mode {out.mode})")
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
        self.diag.values["vehicle_sysid"] = str(self.autopilot.arm.sysid)
        super().publish_diagnostics()

    def close(self) -> None:
        self.autopilot.close()


NODE = MavlinkBridgeNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
