"""MAVLink bridge: autopilot over UDP or serial -> armed state, local pose, global position.

Armed state: ``std_msgs/Bool`` on ``/rgbt/armed`` (latched, published on every change and once a
second) because ``mavros_msgs`` has no PyPI wheel; the recorder writes the real
``mavros_msgs/msg/State`` into bags. Pose: ``geometry_msgs/PoseStamped`` in ENU like mavros'
``local_position/pose``; global: ``sensor_msgs/NavSatFix``. Parsing is ``rgbt.ros.mavlink_io``.
"""

from __future__ import annotations

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import NavSatFix
from std_msgs.msg import Bool

from rgbt.ros.mavlink_io import MavlinkSource
from rgbt.ros.messages import navsatfix, pose_stamped
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import MavlinkBridgeOptions
from rgbt.ros.qos import qos_profile
from rgbt.ros.spin import node_main


class MavlinkBridgeNode(RgbtNode):
    options_model = MavlinkBridgeOptions
    default_name = "mavlink_bridge"

    def __init__(self, name: str | None = None, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(name, **kwargs)
        o = self.options
        stack = self.stack()
        self.source = MavlinkSource(o.url)
        self.armed: bool | None = None
        self.pub_armed = self.create_publisher(Bool, o.armed_topic, qos_profile("latched"))
        self.pose_topic = o.pose_topic or stack.autopilot.pose_topic
        self.global_topic = o.global_topic or stack.autopilot.global_topic
        self.pub_pose = self.create_publisher(PoseStamped, self.pose_topic, self.out_qos)
        self.pub_global = self.create_publisher(NavSatFix, self.global_topic, self.out_qos)
        self.create_timer(o.poll_period_s, self.guard(self.poll))
        self.create_timer(1.0, self.guard(self.republish_armed))

    def poll(self) -> None:
        for event in self.source.poll():
            now = self.now_ns()
            if event.kind == "armed":
                if event.value != self.armed:
                    self.armed = event.value
                    self.pub_armed.publish(Bool(data=bool(event.value)))
                    self.get_logger().info(f"autopilot {'armed' if event.value else 'disarmed'}")
                    self.diag.values["armed"] = str(event.value)
                self.diag.topic("heartbeat").tick()
            elif event.kind == "pose":
                msg = pose_stamped(now, event.value["position_enu"], event.value["orientation_xyzw"])
                self.pub_pose.publish(msg)
                self.diag.topic(self.pose_topic).tick()
            elif event.kind == "global":
                msg = navsatfix(now, *event.value, frame_id="base_link")
                self.pub_global.publish(msg)
                self.diag.topic(self.global_topic).tick()

    def republish_armed(self) -> None:
        if self.armed is not None:
            self.pub_armed.publish(Bool(data=bool(self.armed)))

    def close(self) -> None:
        self.source.close()


NODE = MavlinkBridgeNode


def main(args=None) -> int:  # type: ignore[no-untyped-def]
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
