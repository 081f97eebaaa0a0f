"""VIO bridge: one camera stream + the IMU -> the estimator feed (VINS-Fusion, OpenVINS), reliable QoS.

Subscribes best effort to the restamped camera topic (thermal ``mono16``, or ``mono8`` / ``rgb8``
converted to mono8) and to the restamped IMU; publishes on the topics ``rgbt vio export`` writes
into the estimator configs (``rgbt.vio.feed``: ``/rgbt/vio/<camera>/image_mono8``,
``/rgbt/vio/imu``) with the reliable profile. The frame logic is ``rgbt.vio.feed.StreamFeed``:
thermal normalized with the temporally stable mode (``TemporalNormalizer``, 5-95 %) to mono8,
decimated on the trigger grid (60 Hz -> 20 Hz keeps every 3rd pulse), FFC-frozen frames dropped,
non-increasing stamps dropped. Overload policy: camera frames arrive as raw CDR and only the
newest is processed, on a low-priority worker (``rgbt.ros.mailbox``); stale ones are dropped unread
and counted (``latest.dropped_stale``). IMU samples are relayed byte for byte when their stamp strictly
increases (``ImuRelay``); duplicates and out-of-order samples are dropped. All counts are in
diagnostics (``feed.*``, ``imu.*``).

Stamps: the restamped trigger time is kept (camera time); ``t_imu = t_cam + td`` is applied by the
estimator from the exported config (VINS ``td``, OpenVINS ``timeshift_cam_imu``), never here, so
it is applied exactly once.
"""

from __future__ import annotations

from typing import Any

from sensor_msgs.msg import Image, Imu

from rgbt.graph.options import VioBridgeOptions
from rgbt.image.codec import cdr_to_image
from rgbt.ros.mailbox import LatestFrameNode
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main
from rgbt.stamps import cdr_stamp_ns
from rgbt.vio.feed import ImuRelay, StreamFeed, feed_rate_hz, grid_step


class VioBridgeNode(LatestFrameNode, RgbtNode):
    options_model = VioBridgeOptions
    options: VioBridgeOptions
    default_name = "vio_bridge"
    prewarm_modules = ("rgbt.vio.feed",)

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        from rgbt.topics import VIO_FEED_IMU_TOPIC, vio_feed_image_topic

        o = self.options
        stack = self.stack()
        cam = stack.cameras[o.camera]
        trigger_hz, divider = float(stack.trigger.rate_hz), int(cam.trigger_divider)
        self.rate_hz = feed_rate_hz(trigger_hz, divider, o.rate_hz or None)
        self.feed = StreamFeed(o.normalization, trigger_hz, grid_step(trigger_hz, divider, self.rate_hz),
                               drop_frozen=o.drop_frozen)
        self.relay = ImuRelay()
        self.input_topic = o.input_topic or cam.topic
        self.output_topic = o.output_topic or vio_feed_image_topic(o.camera)
        self.frame_id = cam.frame_id
        self.pub_image = self.create_publisher(Image, self.output_topic, self.out_qos)
        self.mailbox = self.latest_from(Image, self.input_topic, self.on_image, self.in_qos)
        if o.relay_imu:
            self.imu_input_topic = o.imu_input_topic or stack.imu.topic
            self.imu_output_topic = o.imu_output_topic or VIO_FEED_IMU_TOPIC
            self.pub_imu = self.create_publisher(Imu, self.imu_output_topic, self.out_qos)
            self.create_subscription(Imu, self.imu_input_topic, self.guard(self.on_imu, self.imu_input_topic),
                                     self.small_qos, raw=True)
        self.diag.values["feed.rate_hz"] = f"{self.rate_hz:g}"
        self.get_logger().info(f"feed {self.input_topic} -> {self.output_topic} at {self.rate_hz:g} Hz "
                               f"({o.normalization}); IMU -> {getattr(self, 'imu_output_topic', 'not relayed')}")

    def on_image(self, raw: bytes) -> None:  # worker thread: the newest frame
        t_ns, frame_id, _, pixels = cdr_to_image(raw)
        mono8 = self.feed.frame(t_ns, pixels)
        if mono8 is not None:
            self.publish_image(self.pub_image, mono8, t_ns, frame_id or self.frame_id, "mono8")
        self.diag.topic(self.input_topic).tick(self.now_ns() - t_ns)

    def on_imu(self, raw: bytes) -> None:
        t_ns = cdr_stamp_ns(raw)
        if self.relay.accept(t_ns):
            self.pub_imu.publish(raw)
        self.diag.topic(self.imu_input_topic).tick(self.now_ns() - t_ns)

    def publish_diagnostics(self) -> None:
        self.diag.set_values("feed", self.feed.counters)
        self.diag.set_values("imu", self.relay.counters)
        super().publish_diagnostics()


NODE = VioBridgeNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
