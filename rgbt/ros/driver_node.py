"""Base of the hardware driver nodes: a reader thread and the driver-level publishers.

Drivers publish what the trigger sync node consumes (see ``nodes/trigger_sync.py``; in-process when
both run in one process, ``rgbt.ros.local_topics``): frames on
``{raw_prefix}/<camera>/image`` with their device counters on ``.../frame_info``, IMU samples on
``{raw_prefix}/imu`` with SyncIn data on ``.../imu/sync_info`` (``source`` text: ``rgbt.timeref``).
Host times from the drivers (``time.monotonic_ns``) are moved onto the ROS clock (system time) by
one offset per driver (``self.clock``, :class:`rgbt.hostclock.WallClockOffset`): a wall-clock step
is logged, counted in diagnostics (``clock.steps``) and held or followed (``on_clock_step``).

Devices come and go (``rgbt.sensors.reconnect``, one ``DeviceLink`` per driver): a device missing
at start is a degraded start (the node runs, reports the device missing and retries); a device
error (open failure, ``ENODEV`` / ``EIO``, a Spinnaker error, reads that keep failing) closes the
device and reopens it with back-off (0.1 s, doubling, at most 1 s apart: ``DriverOptions``), the
reader thread waiting on its stop event meanwhile (no busy loop); a bad frame (a ``DecodeError``)
costs that frame only. One log line per state change; diagnostics ``device.*`` (``state``,
``reopens``, ``unplugs``, ``gone_s``, ``gone_total_s``, ``bad_frames``, ...) and the node's level:
ERROR while the device is missing since the start, WARN while it is lost.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from sensor_msgs.msg import Image, Imu, TimeReference

from rgbt.graph.diagnostics import NodeDiagnostics
from rgbt.graph.options import DriverOptions
from rgbt.image.codec import image_to_cdr
from rgbt.ros.messages import frame_info, imu, imu_sync_info
from rgbt.ros.node import RgbtNode
from rgbt.sensors.reconnect import DeviceLink, DeviceRunner
from rgbt.threadname import name_native_thread


class DriverNode(RgbtNode):
    """Subclasses implement :meth:`open_device` (returns the device: anything with ``close()``,
    raises when it cannot be opened) and :meth:`read_once` (one read, called in a loop in a
    thread; raises the failure's class, see ``rgbt.sensors.reconnect``); :meth:`device_label` names
    the device in log lines."""

    handles_frames = True
    options: DriverOptions  # validated by RgbtNode from options_model (a DriverOptions)

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.stack_model = self.stack()
        o = self.options
        self.clock = o.host_clock(log=self.get_logger().warn)
        self._stop = threading.Event()
        log = self.get_logger()
        self.link = DeviceLink("", o.reconnect_policy(), log=log.warning, info=log.info)
        self.runner = DeviceRunner(self.link, self.open_device, self.read_once, report=self.report_error,
                                   label=self.device_label())
        self._thread = threading.Thread(target=self._loop, name=self.get_name(), daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def device(self) -> Any:
        """The open device (what :meth:`open_device` returned), None while it is not open."""
        return self.runner.device

    def to_wall(self, t_monotonic_ns: int) -> int:
        """A ``time.monotonic_ns`` reading of this driver on the ROS clock (system time)."""
        return self.clock.to_wall(t_monotonic_ns)

    def publish_diagnostics(self) -> None:
        self.diag.set_values("clock", self.clock.counters())
        report_devices(self.diag, {"device": self.link})
        super().publish_diagnostics()

    def open_device(self) -> Any:
        raise NotImplementedError

    def read_once(self) -> None:
        raise NotImplementedError

    def device_label(self) -> str:
        """The device for log lines (default: the serial port option)."""
        return self.options.port

    def _loop(self) -> None:
        """Open (when due) and read until stopped, waiting on the stop event while the device is gone."""
        name_native_thread()
        while not self._stop.is_set():
            wait_s = self.runner.step()
            if wait_s > 0:
                self._stop.wait(wait_s)

    # -- publishers ----------------------------------------------------------------------------
    def frame_publishers(self, camera: str) -> tuple[Any, Any]:
        prefix = f"{self.options.raw_prefix}/{camera}"
        return (self.create_local_publisher(Image, f"{prefix}/image", self.out_qos),
                self.create_local_publisher(TimeReference, f"{prefix}/frame_info", self.out_qos))

    def publish_frame(self, pubs: tuple[Any, Any], camera: str, image: Any, counter: int, t_host_ns: int,
                      ffc: bool = False) -> None:
        cam = self.stack_model.cameras[camera]
        pubs[1].publish(frame_info(t_host_ns, cam.frame_id, counter, ffc))
        pubs[0].publish(image_to_cdr(image, t_host_ns, cam.frame_id, cam.encoding))  # serialized once
        self.diag.topic(cam.topic).tick(time.time_ns() - t_host_ns)

    def stop_producing(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.runner.close()


class CameraDriverNode(DriverNode):
    """A camera driver: ``DriverOptions`` (``camera`` names the stack camera), the frame publishers
    of that camera in ``self.pubs``, and the reader thread started. Subclasses implement
    :meth:`open_device` and :meth:`read_once` (which calls :meth:`publish_frame` with ``self.pubs``)."""

    options_model = DriverOptions

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.pubs = self.frame_publishers(self.options.camera)
        self.start()


def report_devices(diag: NodeDiagnostics, links: dict[str, DeviceLink]) -> None:
    """Each link's counters as ``<prefix>.<counter>`` diagnostics values (``prefix`` -> link), and
    the node's level and message: those of the worst link (ERROR missing, WARN lost, OK)."""
    level, message = 0, "ok"
    for prefix, link in links.items():
        diag.set_values(prefix, link.counters())
        status = link.status()
        if status[0] > level:
            level, message = status
    diag.level, diag.message = level, message


def imu_messages(sample: Any, t_host_ns: int, frame_id: str) -> tuple[Imu, TimeReference]:
    """(Imu, sync info) for one VN-100 sample (``rgbt.sensors.vn100.ImuSample``) stamped ``t_host_ns``."""
    return (imu(t_host_ns, frame_id, sample.gyro_rad_s, sample.accel_m_s2, sample.quat_xyzw),
            imu_sync_info(t_host_ns, int(sample.t_sensor_ns), sample.syncin_count, sample.t_since_sync_ns))
