"""Trigger sync: restamps driver frames and IMU samples onto the trigger grid (``rgbt.sync``).

Inputs (driver level, host-stamped): ``{raw_prefix}/<camera>/image`` + ``.../frame_info``
(``sensor_msgs/TimeReference``: ``source`` = frame counter, ``;ffc`` suffix when frozen),
``{raw_prefix}/imu`` + ``{raw_prefix}/imu/sync_info`` (``source`` = ``SyncInCnt;TimeSyncIn_ns``,
``time_ref`` = the sample's time on the IMU clock, VN-100 TimeStartup). From drivers of the same
process they arrive in-process, on the driver's thread (``rgbt.ros.local_topics``; the handlers hold
one lock), else through the middleware (diagnostics ``inputs``). IMU samples are restamped onto the
host clock through the restamper's IMU clock fit. A frame and its info are paired by their
identical header stamp. Outputs: the stack topics (``/boson/thermal/image_raw``, ...) with the
header stamp replaced by the restamped trigger time, patched in the raw CDR bytes (pixels are
forwarded untouched, never deserialized). Before lock, frames and samples have no trigger time:
they are counted (``unlocked``) and kept off the stack topics, published host-stamped on
``{raw_prefix}/<kind>/unlocked`` (``unlocked: separate``, the default; the recorder records them)
or not at all (``unlocked: drop``). Counter text: ``rgbt.timeref``. Diagnostics (``sync.locked`` etc.) go out
every period and at once when a stream gains or loses lock (the recorder's ``require_sync_lock``
waits for it).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from rclpy.qos import QoSProfile
from sensor_msgs.msg import Image, Imu, TimeReference

from rgbt.graph.options import TriggerSyncOptions
from rgbt.graph.sync_adapter import StampPairer, make_restamper
from rgbt.ros.node import RgbtNode
from rgbt.ros.spin import node_main
from rgbt.stamps import cdr_stamp_ns, cdr_with_stamp, stamp_to_ns
from rgbt.timeref import decode_frame, decode_imu
from rgbt.topics import unlocked_topic


class TriggerSyncNode(RgbtNode):
    options_model = TriggerSyncOptions
    options: TriggerSyncOptions
    default_name = "trigger_sync"
    prewarm_modules = ("rgbt.graph.sync_adapter",)
    handles_frames = True

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)

        o = self.options
        self.stack_model = self.stack()
        self.restamper = make_restamper(self.stack_model, o.restamper, o.camera_latency_ms)
        # drivers in this process call the handlers on their own threads; the executor runs the timers
        self._lock = threading.RLock()
        self.inputs: dict[str, str] = {}  # driver topic -> "in-process" | "middleware"
        self.pairs: dict[str, StampPairer] = {}
        self.outputs = {}
        self.unlocked_outputs = {}
        for cam in o.cameras:
            spec = self.stack_model.cameras[cam]
            self.pairs[cam] = StampPairer()
            out = self.out_qos_for(spec.rate_hz, durable=o.durable_output)
            self.outputs[cam] = self.create_publisher(Image, spec.topic, out)
            if o.unlocked == "separate":  # volatile: its history would hold the frames before the lock for good
                self.unlocked_outputs[cam] = self.create_publisher(Image, unlocked_topic(cam, o.raw_prefix),
                                                                   self.out_qos_for(spec.rate_hz))
            self._input(TimeReference, f"{o.raw_prefix}/{cam}/frame_info",
                        functools.partial(self.on_frame_info, cam), spec.topic, self.small_qos)
            self._input(Image, f"{o.raw_prefix}/{cam}/image", functools.partial(self.on_frame, cam), spec.topic,
                        self.in_qos, raw=True)
        self.imu_topic = self.stack_model.imu.topic
        self.pairs["imu"] = StampPairer()
        imu_out = self.out_qos_for(self.stack_model.imu.rate_hz, durable=o.durable_output)
        self.outputs["imu"] = self.create_publisher(Imu, self.imu_topic, imu_out)
        if o.unlocked == "separate":
            self.unlocked_outputs["imu"] = self.create_publisher(Imu, unlocked_topic("imu", o.raw_prefix),
                                                                 self.out_qos_for(self.stack_model.imu.rate_hz))
        self._input(TimeReference, f"{o.raw_prefix}/imu/sync_info", lambda m: self.on_frame_info("imu", m),
                    self.imu_topic, self.small_qos)
        self._input(Imu, f"{o.raw_prefix}/imu", lambda raw: self.on_frame("imu", raw), self.imu_topic, self.small_qos,
                    raw=True)
        self.diag.values["unlocked"] = "0"
        self.locked_kinds: set[str] = set()  # streams whose stamps are restamped (lock reached)
        ways = sorted(set(self.inputs.values()))
        self.diag.values["inputs"] = "+".join(ways)
        self.get_logger().info(f"driver topics received {' and '.join(ways)}: "
                               + ", ".join(f"{t} ({w})" for t, w in self.inputs.items()))

    def _input(self, msg_type: Any, topic: str, handler: Callable[[Any], None], stack_topic: str, qos: QoSProfile,
               raw: bool = False) -> None:
        """Subscribe a driver topic: in-process when its driver runs in this process (the handler then
        runs on the driver's thread, under ``self._lock``), else through the middleware."""
        def locked(m: Any) -> None:
            with self._lock:
                handler(m)

        self.inputs[topic] = self.subscribe_local_first(msg_type, topic, self.guard(locked, stack_topic), qos, raw=raw)

    def on_frame_info(self, kind: str, info: TimeReference) -> None:
        stamp = stamp_to_ns(info.header.stamp)
        raw = self.pairs[kind].add_info(stamp, info)
        if raw is not None:
            self.emit(kind, raw, stamp, info)

    def on_frame(self, kind: str, raw: bytes) -> None:
        stamp = cdr_stamp_ns(raw)
        info, evicted = self.pairs[kind].add_frame(stamp, raw)
        if info is not None:
            self.emit(kind, raw, stamp, info)
        elif evicted:
            topic = self.imu_topic if kind == "imu" else self.stack_model.cameras[kind].topic
            self.diag.error(f"{kind}: frame without counter info dropped", topic)

    def emit(self, kind: str, raw: bytes, t_host_ns: int, info: TimeReference) -> None:
        if kind == "imu":
            sync = decode_imu(info.source)
            t_new = self.restamper.imu(sync.syncin_count, t_host_ns, sync.t_since_sync_ns, stamp_to_ns(info.time_ref))
            topic = self.imu_topic
        else:
            frame = decode_frame(info.source)
            t_new, status = self.restamper.frame(kind, frame.counter, t_host_ns, ffc=frame.ffc)
            topic = self.stack_model.cameras[kind].topic
            if status:
                self.diag.topic(topic).drops += status.get("dropped_before", 0)
        if (t_new is not None) != (kind in self.locked_kinds):
            # a stream gained or lost lock: tell the recorder now (it may be waiting for the lock to
            # start an armed recording), not at the next diagnostics period
            self.locked_kinds.symmetric_difference_update({kind})
            self.publish_diagnostics()
        if t_new is None:
            self.diag.values["unlocked"] = str(int(self.diag.values["unlocked"]) + 1)
            if kind in self.unlocked_outputs:  # host-stamped, off the restamped topic
                self.unlocked_outputs[kind].publish(raw)
        else:
            self.outputs[kind].publish(cdr_with_stamp(raw, t_new))
        self.diag.topic(topic).tick(self.now_ns() - t_host_ns)  # every frame received, locked or not

    def publish_diagnostics(self) -> None:
        with self._lock:  # the restamper is also used on the drivers' threads
            status = self.restamper.status()
        for key, value in status.items():
            self.diag.values[f"sync.{key}"] = str(value)
        super().publish_diagnostics()


NODE = TriggerSyncNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
