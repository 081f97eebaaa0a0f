"""Virtual sensor stack: publishes ``rgbt.sim.SimStack.samples()`` at the real rate, as the drivers would:
in host-arrival order (``rgbt.sim.live.host_order``), each at its simulated arrival time.

Frames and IMU samples go to the driver-level topics (host-stamped) with their counters on companion
``sensor_msgs/TimeReference`` topics (frames: ``source`` = device frame counter, ``;ffc`` when frozen
by a flat-field correction; IMU: ``source`` = ``SyncInCnt;TimeSyncIn_ns``, ``time_ref`` = the IMU's own
clock, here the simulator's true clock); the trigger sync node restamps them onto the stack topics. GNSS, autopilot pose
and the armed state (``std_msgs/Bool`` on ``/rgbt/armed``, latched) go straight to their topics.
Samples marked ``dropped`` are never published. Pacing and preloading (``preload_s``: the first
seconds generated before playing) are ``rgbt.sim.live``'s. With ``manifest_path`` set, a JSON manifest of what
was published (counts, CRC32 and true trigger time of every frame) is written once every sample is
out (``"done": true``) and again at exit. Host stamps go through one ``rgbt.hostclock.WallClockOffset``
as a driver's do: a wall-clock step (injected by ``rgbt bench faults`` through ``rgbt.graph.wallstep``)
is detected, counted (diagnostics ``clock.*``, manifest ``clock``) and held or followed by
``on_clock_step``.

``kinds`` (empty: all) chooses the sensor kinds this virtual stack publishes (only those are simulated
and get publishers): several virtual stacks, one per driver, then play one run. With
``schedule_anchor_path`` they share one timeline (``rgbt.sim.live.ScheduleAnchor``): the first to
start writes the anchor, the others (and a restarted one) read it and play on it, skipping the samples
already overdue by more than ``drop_late_s`` (0.1 s when 0) when they start, as real sensors that kept
producing while no driver read them (manifest ``restart_skipped``, ``anchor``). A device unplugged
through ``rgbt.graph.devicecontrol`` (``RGBT_DEVICE_CONTROL``) goes through the drivers' reopen policy;
the samples due while it is not open are not published (manifest ``unplugged``, ``devices``;
diagnostics ``unplugged.*``, ``device.<kind>.*`` and the node's level while one is gone).
"""

from __future__ import annotations

import threading
import time
import zlib
from typing import TYPE_CHECKING, Any

from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Image, Imu, NavSatFix, TimeReference
from std_msgs.msg import Bool

from rgbt.fileio import write_json_atomic
from rgbt.geometry import matrix_to_quat
from rgbt.graph.devicecontrol import DeviceControl, SimulatedDevices
from rgbt.graph.options import VirtualStackOptions
from rgbt.graph.wallstep import WallStep
from rgbt.image.codec import image_to_cdr
from rgbt.ros.driver_node import report_devices
from rgbt.ros.messages import frame_info, imu, imu_sync_info, navsatfix, pose_stamped, time_reference
from rgbt.ros.node import RgbtNode
from rgbt.ros.qos import topic_qos
from rgbt.ros.spin import freeze_startup_objects, node_main
from rgbt.sim.cache import open_cache
from rgbt.threadname import name_native_thread
from rgbt.topics import ARMED_TOPIC, TRIGGER_TOPIC

if TYPE_CHECKING:
    from rclpy.qos import QoSProfile

    from rgbt.sim import SimStack
    from rgbt.sim.cache import SimCache
    from rgbt.sim.simstack import SimSample


class VirtualStackNode(RgbtNode):
    options_model = VirtualStackOptions
    options: VirtualStackOptions
    default_name = "virtual_stack"
    prewarm_modules = ("rgbt.sim", "rgbt.sim.live")
    handles_frames = True

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        from rgbt.sim import SimOptions, SimStack

        o = self.options
        self.stack_model = self.stack()
        sim_fields = dict(o.sim)
        if o.stack_path:
            sim_fields.setdefault("stack_path", o.stack_path)
        sim_options = SimOptions(**sim_fields)
        cache, why = open_cache(o.sim_cache, sim_options) if o.sim_cache else (None, "")
        self.sim: SimCache | SimStack
        if cache is not None:
            self.get_logger().info(f"playing the pre-rendered run in {o.sim_cache} ({len(cache)} samples)")
            self.sim = cache
        else:
            if why:
                self.get_logger().warning(f"{why}: rendering while publishing (may fall behind real time)")
            self.sim = SimStack(sim_options)
        out = self.out_qos
        self.kinds = set(o.kinds)  # empty: every kind
        self.pubs: dict[str, Any] = {}  # kind -> publisher (rclpy or local)
        self.info_pubs: dict[str, Any] = {}
        self.topics: dict[str, str] = {}
        # driver topics: delivered in-process to a trigger sync of this process (rgbt.ros.local_topics)
        for cam in ("thermal", "color", "mono"):
            if cam in self.stack_model.cameras and self._wanted(cam):
                self._pub(cam, Image, f"{o.raw_prefix}/{cam}/image", out, local=True)
                self.info_pubs[cam] = self.create_local_publisher(
                    TimeReference, f"{o.raw_prefix}/{cam}/frame_info", out
                )
        if self._wanted("imu"):
            self._pub("imu", Imu, f"{o.raw_prefix}/imu", out, local=True)
            self.info_pubs["imu"] = self.create_local_publisher(TimeReference, f"{o.raw_prefix}/imu/sync_info", out)
        for kind, msg_type, topic, qos in (
                ("gnss", NavSatFix, self.stack_model.gnss.topic, out),
                ("global", NavSatFix, self.stack_model.autopilot.global_topic, out),
                ("pose", PoseStamped, self.stack_model.autopilot.pose_topic, out),
                ("trigger", TimeReference, TRIGGER_TOPIC, out),
                ("state", Bool, ARMED_TOPIC, topic_qos(ARMED_TOPIC))):
            if self._wanted(kind):
                self._pub(kind, msg_type, topic, qos)
        self.manifest: dict = {"synthetic": True, "sim": sim_fields, "topics": {}, "frames": {},
                               "kinds": sorted(self.kinds), "unplugged": {}, "restart_skipped": {}}
        log = self.get_logger()
        # devices unplugged through the control file (rgbt bench faults): the drivers' reopen policy
        self.devices = SimulatedDevices(DeviceControl(log=log.warning), o.reconnect_policy(), log=log.warning,
                                        info=log.info)
        self.late_ns = 0  # how late the last sample went out (simulator slower than real time)
        self.wall_step = WallStep()  # an injected host-clock step (rgbt bench faults); 0 otherwise
        # host stamps as a driver makes them: monotonic arrival -> ROS time through one offset whose wall
        # clock carries the injected step (held or followed by on_clock_step, counted in diagnostics)
        self.clock = o.host_clock(log=self.get_logger().warn, wall=lambda: time.time_ns() + self.wall_step.offset_ns())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._play, name="virtual_stack", daemon=True)
        self._thread.start()

    def _wanted(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds

    def _pub(self, kind: str, msg_type: Any, topic: str, qos: QoSProfile, local: bool = False) -> None:
        create = self.create_local_publisher if local else self.create_publisher
        self.pubs[kind] = create(msg_type, topic, qos)
        self.topics[kind] = topic

    def _tally(self, key: str, kind: str) -> None:
        """One more sample of ``kind`` in the manifest's ``key`` counts (not published)."""
        counts = self.manifest.setdefault(key, {})
        counts[kind] = counts.get(kind, 0) + 1

    def _count(self, kind: str, stack_topic: str | None = None) -> None:
        """Count a publication; ``stack_topic``: where the sync node will republish it restamped."""
        topic = self.topics[kind]
        self.manifest["topics"][topic] = self.manifest["topics"].get(topic, 0) + 1
        if stack_topic:
            expected = self.manifest.setdefault("stack_topics", {})
            expected[stack_topic] = expected.get(stack_topic, 0) + 1
        self.diag.topic(topic).tick(self.late_ns)

    # -- playback thread -----------------------------------------------------------------------
    def _play(self) -> None:
        from rgbt.sim.live import CatchUp, DeviceBuffer, paced, preload

        name_native_thread()
        o = self.options
        sleep = self._stop.wait if o.realtime else (lambda _s: None)
        try:
            kinds = sorted(self.pubs)  # the kinds this stack publishes (simulated: only those)
            samples, n = preload(self.sim.samples(kinds), o.preload_s, self._stop.is_set)
            self.get_logger().info(f"preloaded {n} samples ({o.preload_s} s)")
            freeze_startup_objects()  # thousands of preloaded samples: out of the cyclic collector's walks
            self.wait_for_subscribers(o.wait_for, o.wait_timeout_s, self._stop, o.wait_for_nodes)
            # the paced times are on the (unstepped) wall clock: to the driver clock's monotonic through its
            # own offset, so stamps equal the paced times exactly until a step (held) or a slew (followed)
            wall_to_mono = -self.clock.offset_ns
            device = DeviceBuffer(o.drop_late_s, time.time_ns())  # after a stall: what a driver still finds
            # joining a timeline already running (schedule anchor): what is overdue at the start is skipped
            catch_up = CatchUp(o.drop_late_s or 0.1) if o.schedule_anchor_path and o.realtime else None
            # host-arrival order: an IMU sample is not held back behind a frame still "in transit"
            for sample, t_host in paced(samples, skip_dropped=False, clock=time.time_ns, sleep=sleep,
                                        start_ns=self._start_ns):
                if self._stop.is_set():
                    break
                offset = t_host - sample.t_host_ns  # simulated -> wall clock
                self.manifest.setdefault("t0_wall_ns", t_host)
                self.manifest.setdefault("t0_sim_ns", sample.t_host_ns)
                if sample.dropped:
                    self._tally("dropped", sample.kind)
                    continue
                # stamped with the simulated host arrival (the simulator's latency + jitter model), even
                # when the simulator runs late: the lateness then shows as hop latency, not as clock error
                now = time.time_ns()
                self.late_ns = max(0, now - t_host)
                if catch_up is not None and catch_up.skip(now, t_host):
                    self._tally("restart_skipped", sample.kind)
                    continue
                if not self.devices.readable(sample.kind, now):
                    self._tally("unplugged", sample.kind)
                    continue
                if device.overflowed(now, t_host) and sample.kind != "state":
                    self._tally("late_dropped", sample.kind)
                    continue
                self._publish(sample, self.clock.to_wall(t_host + wall_to_mono), sample.t_ns + offset)
        except Exception as exc:  # noqa: BLE001 - reported, the node keeps its diagnostics
            self.report_error("simulation failed", exc)
        self.manifest["done"] = True
        self._write_manifest()
        if o.exit_when_done:
            self.finished = True

    def _start_ns(self, first: SimSample) -> int:
        """When the first sample (host-arrival order) is due (wall ns): ``start_delay_s`` from now, or on
        the shared timeline of ``schedule_anchor_path`` (written now when this stack is the first)."""
        from rgbt.sim.live import ScheduleAnchor, schedule_anchor

        o = self.options
        start = time.time_ns() + int(o.start_delay_s * 1e9)
        if not o.schedule_anchor_path or not o.realtime:
            return start
        anchor, written = schedule_anchor(o.schedule_anchor_path, ScheduleAnchor(start, first.t_host_ns))
        self.manifest["anchor"] = {"path": o.schedule_anchor_path, "t0_wall_ns": anchor.t0_wall_ns,
                                   "t0_sim_ns": anchor.t0_sim_ns, "written": written}
        due = anchor.due_ns(first.t_host_ns)
        self.get_logger().info(f"schedule anchor {o.schedule_anchor_path} {'written' if written else 'read'}: "
                               f"the first sample is due in {(due - time.time_ns()) / 1e9:+.3f} s")
        return due

    def publish_diagnostics(self) -> None:
        self.diag.set_values("clock", self.clock.counters())
        for key in ("late_dropped", "unplugged", "restart_skipped"):
            self.diag.set_values(key, dict(self.manifest.get(key, {})))
        report_devices(self.diag, {f"device.{kind}": link for kind, link in dict(self.devices.links).items()})
        super().publish_diagnostics()

    def _write_manifest(self) -> None:
        """Write the manifest atomically (when the samples are all out, and again at close)."""
        if not self.options.manifest_path:
            return
        self.manifest["clock"] = self.clock.counters()  # host-clock steps seen (and held or followed)
        self.manifest["devices"] = self.devices.counters()  # simulated unplugs (state, reopens, time gone)
        write_json_atomic(self.options.manifest_path, self.manifest)

    def _publish(self, s: SimSample, t_host: int, t_true: int) -> None:
        kind = s.kind
        if kind in ("thermal", "color", "mono"):
            cam = self.stack_model.cameras[kind]
            self.info_pubs[kind].publish(frame_info(t_host, cam.frame_id, int(s.seq), bool(s.ffc)))
            raw = image_to_cdr(s.data, t_host, cam.frame_id, cam.encoding)  # serialized once, published as bytes
            self.pubs[kind].publish(raw)
            frames = self.manifest["frames"].setdefault(cam.topic, {"crc32": [], "t_true_ns": [], "seq": [],
                                                                    "t_pub_ns": [], "t_host_ns": []})
            if self.options.manifest_crc:  # instrumentation, not a driver's work: off in rgbt bench graph
                frames["crc32"].append(zlib.crc32(memoryview(raw)[len(raw) - s.data.nbytes:]))  # the pixels
            frames["t_true_ns"].append(t_true)
            frames["t_host_ns"].append(t_host)  # the driver's stamp: when the frame reached the host
            frames["t_pub_ns"].append(time.time_ns())  # when it went out (later than t_true when running late)
            frames["seq"].append(int(s.seq))
            self._count(kind, cam.topic)
        elif kind == "imu":
            d = s.data
            # the VN-100's own clock is the simulator's true clock
            self.info_pubs["imu"].publish(imu_sync_info(t_host, t_true, d.syncin_count, d.t_since_sync_ns))
            self.pubs["imu"].publish(imu(t_host, self.stack_model.imu.frame_id, d.gyro_rad_s, d.accel_m_s2))
            self.manifest.setdefault("imu_t_true_ns", []).append(t_true)
            self.manifest.setdefault("imu_t_host_ns", []).append(t_host)
            self.manifest.setdefault("imu_t_pub_ns", []).append(time.time_ns())
            self._count("imu", self.stack_model.imu.topic)
        elif kind in ("gnss", "global"):
            d = s.data
            frame_id = self.stack_model.gnss.frame_id if kind == "gnss" else "base_link"
            self.pubs[kind].publish(navsatfix(t_host, d.lat, d.lon, d.alt, frame_id))
            self._count(kind)
        elif kind == "pose":
            T = s.data.T_world_body if hasattr(s.data, "T_world_body") else s.data
            w, x, y, z = matrix_to_quat(T[:3, :3])
            self.pubs["pose"].publish(pose_stamped(t_host, T[:3, 3], (x, y, z, w)))
            self._count("pose")
        elif kind == "state":
            armed = bool(s.data.armed if hasattr(s.data, "armed") else s.data)
            self.pubs["state"].publish(Bool(data=armed))
            events = self.manifest.setdefault("armed_events", [])
            if not events or events[-1][1] != armed:
                events.append([t_true, armed])
            self._count("state")
        elif kind == "trigger":
            self.pubs["trigger"].publish(time_reference(t_host, t_true, str(int(s.seq))))
            self._count("trigger")

    def stop_producing(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if not self.manifest.get("closed"):
            self.manifest["closed"] = True
            self._write_manifest()


NODE = VirtualStackNode


def main(args: list[str] | None = None) -> int:
    return node_main(NODE, args)


if __name__ == "__main__":
    raise SystemExit(main())
