"""Base of the hardware driver nodes: a reader thread and the driver-level publishers.

Drivers publish what the trigger sync node consumes (see ``nodes/trigger_sync.py``; in-process when
both run in one process, ``rgbt.ros.local_topics``): frames on
``{raw_prefix}/<camera>/image`` with their device counters on ``.../frame_info``, IMU samples on
``{raw_prefix}/imu`` with SyncIn data on ``.../imu/sync_info`` (``source`` text: ``rgbt.timeref``).
Host times from the drivers (``time.monotonic_ns``) are moved onto the ROS clock (system time) by
one offset per driver (``self.clock``, :class:`rgbt.hostclock.WallClockOffset`): a wall-clock step
is logged, counted in diagnostics (``clock.steps``) and held or followed (``on_clock_step``).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from sensor_msgs.msg import Image, Imu, TimeReference

from rgbt.ros.image import image_to_cdr
from rgbt.ros.messages import frame_info, imu, imu_sync_info
from rgbt.ros.node import RgbtNode
from rgbt.ros.options import DriverOptions
from rgbt.threadname import name_native_thread


class DriverNode(RgbtNode):
    """Subclasses implement :meth:`open_device` and :meth:`read_once` (called in a loop in a thread)."""

    handles_frames = True

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.stack_model = self.stack()
        o = self.options
        self.clock = o.host_clock(log=self.get_logger().warn)
        self._stop = threading.Event()
        self.device: Any = None
        self._thread = threading.Thread(target=self._loop, name=self.get_name(), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def to_wall(self, t_monotonic_ns: int) -> int:
        """A ``time.monotonic_ns`` reading of this driver on the ROS clock (system time)."""
        return self.clock.to_wall(t_monotonic_ns)

    def publish_diagnostics(self) -> None:
        self.diag.set_values("clock", self.clock.counters())
        super().publish_diagnostics()

    def open_device(self) -> Any:
        raise NotImplementedError

    def read_once(self) -> None:
        raise NotImplementedError

    def _loop(self) -> None:
        name_native_thread()
        while not self._stop.is_set():
            try:
                if self.device is None:
                    self.device = self.open_device()
                self.read_once()
            except Exception as exc:  # noqa: BLE001 - a driver retries; the error is counted
                self.report_error("device error", exc)
                self._stop.wait(1.0)

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

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        close = getattr(self.device, "close", None)
        if close is not None:
            close()
        self.device = None


class CameraDriverNode(DriverNode):
    """A camera driver: ``DriverOptions`` (``camera`` names the stack camera), the frame publishers
    of that camera in ``self.pubs``, and the reader thread started. Subclasses implement
    :meth:`open_device` and :meth:`read_once` (which calls :meth:`publish_frame` with ``self.pubs``)."""

    options_model = DriverOptions

    def __init__(self, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self.pubs = self.frame_publishers(self.options.camera)
        self.start()


def imu_messages(sample: Any, t_host_ns: int, frame_id: str) -> tuple[Imu, TimeReference]:
    """(Imu, sync info) for one VN-100 sample (``rgbt.sensors.vn100.ImuSample``) stamped ``t_host_ns``."""
    return (imu(t_host_ns, frame_id, sample.gyro_rad_s, sample.accel_m_s2, sample.quat_xyzw),
            imu_sync_info(t_host_ns, int(sample.t_sensor_ns), sample.syncin_count, sample.t_since_sync_ns))
