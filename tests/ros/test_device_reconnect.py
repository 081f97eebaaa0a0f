"""Devices that come and go (rgbt.sensors.reconnect in the driver nodes): a camera missing at boot is a
degraded start in a real driver process that idles while it retries; a device that goes away mid-stream
and comes back gives frames again (a scripted source in a driver node); a serial device (the u-blox on a
pseudo-terminal, the VN-100) unplugged and plugged back is reopened."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from helpers import EmulatedVn100, PtyDevice, SpunNodes, need

pytestmark = pytest.mark.ros


def _cpu_s(pid: int) -> float:
    """CPU time (user + system, s) of process ``pid`` so far (/proc/<pid>/stat utime + stime)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _level(raw) -> int:  # type: ignore[no-untyped-def]
    return raw[0] if isinstance(raw, (bytes, bytearray)) else int(raw)


@pytest.mark.slow
def test_a_camera_missing_at_boot_is_a_degraded_start_and_the_driver_idles(ros_env: dict) -> None:
    """``python -m rgbt.ros.spin --node thermal_camera:thermal_camera`` with a V4L2 device that does not
    exist: the process starts, reports the camera missing on /diagnostics (ERROR), retries with back-off
    (about once a second once the back-off is at its maximum) and uses almost no CPU meanwhile."""
    from diagnostic_msgs.msg import DiagnosticArray

    from helpers import spawn_nodes, stop_nodes
    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import BackgroundNode

    proc = spawn_nodes("thermal_camera:thermal_camera",
                       params=["driver.device:=/dev/video-missing", "diagnostics_period_s:=0.25"])
    side = BackgroundNode("device_test", handle_signals=False)
    status: dict = {}

    def on_diag(msg: DiagnosticArray) -> None:
        for st in msg.status:
            if st.name == "thermal_camera":
                status.update({kv.key: kv.value for kv in st.values}, level=_level(st.level), message=st.message)

    side.node.create_subscription(DiagnosticArray, "/diagnostics", on_diag, qos_profile("reliable", 50))
    side.start()
    try:
        deadline = time.monotonic() + 90
        # past the first retries: the back-off is at its maximum (1 s) from 1.5 s on
        while not (status.get("device.state") == "missing" and float(status.get("device.gone_s", 0)) >= 2.0):
            assert proc.poll() is None and time.monotonic() < deadline, status
            time.sleep(0.1)
        failures0, cpu0, t0 = int(status["device.open_failures"]), _cpu_s(proc.pid), time.monotonic()
        time.sleep(3.0)
        cpu1, t1 = _cpu_s(proc.pid), time.monotonic()
        time.sleep(0.5)  # the diagnostics of the window's end
        failures1 = int(status["device.open_failures"])
        assert status["level"] == 2 and "missing" in status["message"], status
    finally:
        side.close()
        out = stop_nodes(proc)
    share = (cpu1 - cpu0) / (t1 - t0)
    print(f"thermal_camera process CPU while its camera is missing: {100 * share:.1f} % of a core "
          f"over {t1 - t0:.1f} s; {failures1 - failures0} open attempts")
    assert share < 0.10, f"{100 * share:.1f} % of a core while the camera is missing: a busy loop?"
    assert 2 <= failures1 - failures0 <= 8, (failures0, failures1)  # retried, with back-off
    assert proc.returncode == 0, out
    assert out.count("device missing at start") == 1, out  # one line per state change, none per retry
    assert "V4L2 /dev/video-missing: no such device" in out, out


class Script:
    """A camera for the scripted driver node: 100 frames a second, one that cannot be decoded, then
    unplugged (``unplug()``: reads fail with ENODEV, opens fail) until ``replug()``."""

    def __init__(self) -> None:
        self.gone = threading.Event()
        self.opens: list[float] = []
        self.open_handles = 0
        self.reads = 0

    def open(self) -> "Script":
        from rgbt.sensors.reconnect import DeviceError

        self.opens.append(time.monotonic())
        assert self.open_handles == 0, "reopened before the previous handle was closed"
        if self.gone.is_set():
            raise DeviceError("scripted camera: no such device")
        self.open_handles += 1
        return self

    def close(self) -> None:
        self.open_handles -= 1

    def read(self) -> np.ndarray:
        from rgbt.errors import DecodeError

        time.sleep(0.01)
        self.reads += 1
        if self.gone.is_set():
            raise OSError(errno.ENODEV, "No such device")
        if self.reads == 5:
            raise DecodeError("scripted camera: frame of 999 bytes, expected 655360")
        return np.full((512, 640), self.reads, np.uint16)  # SYNTHETIC


@pytest.mark.slow
def test_a_driver_node_reads_again_after_its_device_comes_back(ros_env: dict) -> None:
    """A camera driver node (``CameraDriverNode``, the thermal camera's base) over a scripted device: a
    bad frame costs one frame; an unplug closes the device, the node retries with back-off (a handful
    of attempts, not a busy loop) and frames flow again once it is back; the counters say so."""
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import Image

    from rgbt.ros.driver_node import CameraDriverNode
    from rgbt.ros.qos import qos_profile

    script = Script()

    class ScriptedCamera(CameraDriverNode):
        default_name = "scripted_camera"

        def open_device(self):  # type: ignore[no-untyped-def]
            return script.open()

        def read_once(self) -> None:
            image = self.device.read()
            self.publish_frame(self.pubs, "thermal", image, script.reads, time.time_ns())

    graph = SpunNodes()
    spin_until = graph.spin_until
    node = graph.add(ScriptedCamera(context=graph.context,
                                    parameter_overrides=[Parameter("output_qos", value="reliable")]))
    frames: list[int] = []  # the scripted frame numbers (the pixels' value) received
    graph.listener("rgbt_test_frames").create_subscription(
        Image, "/rgbt/raw/thermal/image", lambda m: frames.append(int.from_bytes(bytes(m.data[:2]), "little")),
        qos_profile("reliable", 500))
    try:
        spin_until(lambda: len(frames) >= 20)
        script.gone.set()
        gone_at = time.monotonic()
        spin_until(lambda: time.monotonic() - gone_at >= 1.5)
        node.publish_diagnostics()
        lost = dict(node.diag.values)
        lost_level = node.diag.level
        attempts = [t for t in script.opens if t > gone_at]
        back_at, received = time.monotonic(), len(frames)
        script.gone.clear()
        spin_until(lambda: len(frames) >= received + 20)
        recovered_s = time.monotonic() - back_at
        node.publish_diagnostics()
        values = dict(node.diag.values)
    finally:
        graph.close()
    assert lost["device.state"] == "lost" and lost_level == 1 and float(lost["device.gone_s"]) >= 1.0
    assert 2 <= len(attempts) <= 6, attempts  # reopened after 0.1, 0.3, 0.7, 1.5 s: back-off, no busy loop
    assert values["device.state"] == "open" and values["device.unplugs"] == "1" and values["device.reopens"] == "1"
    assert values["device.bad_frames"] == "1" and 5 not in frames  # the bad frame cost that frame only
    assert {4, 6} <= set(frames)
    assert float(values["device.gone_total_s"]) >= 1.5 and float(values["device.gone_s"]) == 0.0
    assert node.diag.level == 0 and script.open_handles == 0  # closed at the end
    print(f"frames again {recovered_s:.2f} s after the replug")


@pytest.mark.slow
def test_the_gnss_driver_reopens_its_serial_port_after_an_unplug(ros_env: dict, tmp_path: Path,
                                                                 fixtures_dir: Path) -> None:
    """The u-blox driver on a pseudo-terminal: fixes; the port vanishes (an unplugged USB adapter) and
    comes back at the same path; the driver reopens it and fixes come again."""
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import NavSatFix

    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import node_class
    from rgbt.sensors.ubx import decode_file

    capture = need(fixtures_dir / "gnss" / "pygpsdata-NAV.ubx", "u-blox NAV capture")
    n_fixes = len(decode_file(capture))
    device = PtyDevice(tmp_path / "ttyGNSS")
    graph = SpunNodes()
    spin_until = graph.spin_until
    node = graph.add(node_class("gnss")("gnss", context=graph.context, parameter_overrides=[
        Parameter("port", value=str(device.path)), Parameter("baud", value=115200)]))
    fixes: list = []
    graph.listener("rgbt_test_gnss").create_subscription(NavSatFix, node.topic, fixes.append,
                                                         qos_profile("sensor_data", 100))
    try:
        spin_until(lambda: node.link.state == "open")
        device.write(capture.read_bytes())
        spin_until(lambda: len(fixes) == n_fixes)
        device.unplug()
        spin_until(lambda: node.link.state == "lost")
        t_lost = time.monotonic()
        spin_until(lambda: time.monotonic() - t_lost > 1.0)
        assert node.link.state == "lost" and node.device is None and node.link.open_failures >= 2
        device.plug()
        spin_until(lambda: node.link.state == "open")
        device.write(capture.read_bytes())
        spin_until(lambda: len(fixes) == 2 * n_fixes)
        node.publish_diagnostics()
        values = dict(node.diag.values)
    finally:
        graph.close()
        device.close()
    assert values["device.unplugs"] == "1" and values["device.reopens"] == "1" and values["device.state"] == "open"
    assert "SerialException" in values["device.last_error"] or "OSError" in values["device.last_error"]


@pytest.mark.slow
def test_the_vn100_driver_reopens_and_reconfigures_the_sensor_after_an_unplug(ros_env: dict, tmp_path: Path) -> None:
    """The VN-100 driver on a pseudo-terminal: samples; the port vanishes and comes back; the driver
    reopens it, configures the sensor again, and samples flow on with device times still increasing."""
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import TimeReference

    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import node_class
    from rgbt.stamps import stamp_to_ns

    device = EmulatedVn100(PtyDevice(tmp_path / "ttyVN100"))
    device.start()
    graph = SpunNodes()
    spin_until = graph.spin_until
    node = graph.add(node_class("vn100")("vn100", context=graph.context, parameter_overrides=[
        Parameter("port", value=str(device.dev.path)), Parameter("output_qos", value="reliable")]))
    t_sensor: list[int] = []
    graph.listener("rgbt_test_imu").create_subscription(
        TimeReference, "/rgbt/raw/imu/sync_info", lambda m: t_sensor.append(stamp_to_ns(m.time_ref)),
        qos_profile("reliable", 2000))
    try:
        spin_until(lambda: len(t_sensor) >= 100)
        device.dev.unplug()
        spin_until(lambda: node.link.state == "lost")
        t_lost, n_before = time.monotonic(), len(t_sensor)
        spin_until(lambda: time.monotonic() - t_lost > 0.5)
        device.dev.plug()
        spin_until(lambda: len(t_sensor) >= n_before + 100)
        node.publish_diagnostics()
        values = dict(node.diag.values)
    finally:
        graph.close()
        device.close()
    assert device.configured == 2  # configured again on the reopened port
    assert values["device.state"] == "open" and values["device.unplugs"] == "1" and values["device.reopens"] == "1"
    assert t_sensor == sorted(set(t_sensor))  # no duplicated or reordered samples across the reopen
    assert t_sensor[n_before] - t_sensor[n_before - 1] >= 500_000_000  # the samples of the outage never came
