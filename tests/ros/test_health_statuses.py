"""The health report as diagnostic statuses (no rclpy): one per area, WARN / ERROR levels."""

from __future__ import annotations

from rgbt.graph.health import health_statuses


def _report(**kw) -> dict:  # type: ignore[no-untyped-def]
    base = {"cpu_percent": 12.0, "cpu_percent_per_core": [10.0, 14.0], "load_1m": 0.5, "mem_used_percent": 40.0,
            "mem_available_mb": 900.0, "disk_free_mb": 5000.0, "disk_used_percent": 50.0,
            "temperatures_c": {"cpu.0": 50.0}, "sources": ["psutil"]}
    return {**base, **kw}


def test_healthy_report_is_all_ok() -> None:
    out = {name: (level, values) for name, level, _, values in health_statuses(_report())}
    assert set(out) == {"health/cpu", "health/memory", "health/disk", "health/temperatures"}
    assert all(level == 0 for level, _ in out.values())
    assert out["health/cpu"][1]["core1_percent"] == "14.0" and out["health/disk"][1]["disk_free_mb"] == "5000.0"


def test_levels_warn_and_error() -> None:
    out = {name: (level, msg) for name, level, msg, _ in health_statuses(
        _report(mem_used_percent=95.0, disk_used_percent=99.0, temperatures_c={"gpu": 91.0, "cpu": 40.0},
                tegrastats="RAM 1/2MB GR3D_FREQ 5%", gpu_percent=5))}
    assert out["health/memory"][0] == 1 and out["health/disk"][0] == 2
    assert out["health/temperatures"] == (1, "hot: gpu")
    assert "health/jetson" in out


def test_devices_the_nodes_report_are_summed_up() -> None:
    from rgbt.graph.health import device_status

    peers = {"thermal_camera": {"device.state": "lost", "device.gone_s": "2.500", "errors": "0"},
             "vn100": {"device.state": "open", "device.gone_s": "0.000"},
             "virtual_stack": {"device.thermal.state": "missing", "device.thermal.gone_s": "4.000"},
             "recorder": {"supervisor.restarts": "0"}}
    name, level, message, values = device_status(peers)
    assert name == "health/devices" and level == 2
    assert values == {"thermal_camera": "lost", "vn100": "open", "virtual_stack/thermal": "missing"}
    assert message == "thermal_camera lost 2.500 s, virtual_stack/thermal missing 4.000 s"
    assert device_status({"vn100": peers["vn100"]})[1:3] == (0, "1 open")
    assert device_status({"thermal_camera": peers["thermal_camera"]})[1] == 1
    assert device_status({})[2] == "no devices reported"
