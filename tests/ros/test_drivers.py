"""Driver nodes against emulated devices: the VN-100 node on a pseudo-terminal speaking the VN-100
protocol (ASCII register writes answered with their echo, binary packets once register 75 is set)."""

from __future__ import annotations

import os
import time
import tty
from pathlib import Path

import pytest

from helpers import EmulatedVn100, PtyDevice

pytestmark = pytest.mark.ros


@pytest.mark.slow
def test_vn100_node_publishes_imu_and_syncin_from_the_sensor_protocol(ros_env: dict, tmp_path: Path) -> None:
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from rclpy.task import Future
    from sensor_msgs.msg import Imu, TimeReference

    from rgbt.ros.qos import qos_profile
    from rgbt.ros.spin import node_class
    from rgbt.stamps import stamp_to_ns

    port = tmp_path / "ttyVN100"
    device = EmulatedVn100(PtyDevice(port))
    device.start()
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = EventsExecutor(context=context)
    node = node_class("vn100")("vn100", context=context, parameter_overrides=[Parameter("port", value=str(port))])
    listener = rclpy.create_node("rgbt_test_imu", context=context)
    imu, info = [], []
    listener.create_subscription(Imu, "/rgbt/raw/imu", imu.append, qos_profile("sensor_data", 500))
    listener.create_subscription(TimeReference, "/rgbt/raw/imu/sync_info", info.append, qos_profile("sensor_data", 500))
    for n in (node, listener):
        executor.add_node(n)
    try:
        deadline = time.monotonic() + 30
        while len(imu) < 150 and time.monotonic() < deadline:
            executor.spin_until_future_complete(Future(), timeout_sec=0.05)
        node.publish_diagnostics()  # the driver's one clock offset reports its step counters
        assert node.diag.values["clock.steps"] == "0" and int(node.diag.values["clock.offset_ns"]) > 0
    finally:
        node.close()
        device.close()
        executor.shutdown()
        for n in (node, listener):
            n.destroy_node()
        context.try_shutdown()
    assert len(imu) >= 150
    assert imu[-1].linear_acceleration.z == pytest.approx(-9.81) and imu[-1].header.frame_id
    # Samples read in one serial read share their host arrival stamp: pair them in order per stamp.
    by_stamp: dict[int, list] = {}
    for i in info:
        by_stamp.setdefault(stamp_to_ns(i.header.stamp), []).append(i)
    pairs = [(m, (by_stamp.get(stamp_to_ns(m.header.stamp)) or [None]).pop(0)) for m in imu]
    assert sum(p is not None for _, p in pairs) >= len(imu) - 5  # every sample has its SyncIn info
    t_sensor = [stamp_to_ns(p.time_ref) for _, p in pairs if p is not None]
    assert t_sensor == sorted(set(t_sensor))  # no duplicated or reordered samples
    assert all(b - a == 5_000_000 for a, b in zip(t_sensor, t_sensor[1:]) if b - a < 50_000_000)  # 200 Hz device clock
    for _, p in pairs:
        if p is None:
            continue
        count, since = (int(v) for v in p.source.split(";"))
        t = stamp_to_ns(p.time_ref)
        assert count == t * 60 // 1_000_000_000 and since == t - count * 1_000_000_000 // 60


@pytest.mark.slow
def test_gnss_node_publishes_navsatfix_from_ubx_bytes(ros_env: dict, tmp_path: Path, fixtures_dir: Path) -> None:
    """The real u-blox capture (fixtures/gnss/pygpsdata-NAV.ubx) written 3 times into a pty."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from rclpy.task import Future
    from sensor_msgs.msg import NavSatFix, TimeReference

    from rgbt.ros.qos import qos_profile
    from rgbt.stamps import stamp_to_ns
    from rgbt.ros.spin import node_class
    from rgbt.sensors.ubx import decode_file

    capture = fixtures_dir / "gnss" / "pygpsdata-NAV.ubx"
    expected = decode_file(capture)
    assert expected
    master, slave = os.openpty()
    tty.setraw(slave)
    port = tmp_path / "ttyGNSS"
    os.symlink(os.ttyname(slave), port)
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = EventsExecutor(context=context)
    node = node_class("gnss")("gnss", context=context, parameter_overrides=[
        Parameter("port", value=str(port)), Parameter("baud", value=115200)])
    listener = rclpy.create_node("rgbt_test_gnss", context=context)
    fixes: list = []
    times: list = []
    listener.create_subscription(NavSatFix, node.topic, fixes.append, qos_profile("sensor_data", 50))
    listener.create_subscription(TimeReference, "/gps/time_reference", times.append, qos_profile("sensor_data", 50))
    for n in (node, listener):
        executor.add_node(n)
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.0:  # the node opens the port
            executor.spin_until_future_complete(Future(), timeout_sec=0.05)
        for _ in range(3):
            os.write(master, capture.read_bytes())
        deadline = time.monotonic() + 20
        with_utc = sum(e.t_utc_ns is not None for e in expected)
        while (len(fixes) < 3 * len(expected) or len(times) < 3 * with_utc) and time.monotonic() < deadline:
            executor.spin_until_future_complete(Future(), timeout_sec=0.05)
    finally:
        node.close()
        executor.shutdown()
        for n in (node, listener):
            n.destroy_node()
        context.try_shutdown()
        os.close(master)
        os.close(slave)
    assert len(fixes) == 3 * len(expected)
    for got, exp in zip(fixes, expected * 3):
        assert (got.latitude, got.longitude, got.altitude) == pytest.approx((exp.lat, exp.lon, exp.height_m))
        assert got.status.status == exp.status
        assert list(got.position_covariance) == pytest.approx(list(exp.position_covariance))
    # the fix's UTC time from the receiver, beside the host stamp of the fix it belongs to
    exp_utc = [e.t_utc_ns for e in expected * 3 if e.t_utc_ns is not None]
    assert exp_utc and [stamp_to_ns(t.time_ref) for t in times] == exp_utc
    fix_stamps = {stamp_to_ns(f.header.stamp) for f in fixes}
    assert all(stamp_to_ns(t.header.stamp) in fix_stamps and t.source == "ubx:NAV-PVT" for t in times)
