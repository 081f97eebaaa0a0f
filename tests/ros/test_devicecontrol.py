"""The virtual stack's simulated unplug (rgbt.graph.devicecontrol, no rclpy): the control file read when it
changes, and a named device going through the drivers' reopen policy on a fake clock."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rgbt.graph.devicecontrol import DeviceControl, SimulatedDevices
from rgbt.sensors.reconnect import ReconnectPolicy


def _write(path: Path, data: object) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data) if not isinstance(data, str) else data)
    os.replace(tmp, path)


def test_a_named_device_is_gone_until_the_time_then_reopened_with_back_off(tmp_path: Path) -> None:
    path = tmp_path / "devices.json"
    mono = [0]
    devices = SimulatedDevices(DeviceControl(str(path), period_s=0.0), ReconnectPolicy(), clock=lambda: mono[0])
    wall0 = 1_000_000_000_000
    period = 16_666_667  # 60 Hz samples

    def play(kind: str, seconds: float) -> list[bool]:
        out = []
        for _ in range(int(round(seconds * 1e9 / period))):
            mono[0] += period
            out.append(devices.readable(kind, wall0 + mono[0]))
        return out

    assert all(play("thermal", 0.5)) and devices.links == {}  # no file: nothing unplugged, no device state
    _write(path, {"thermal": {"gone_until_wall_ns": wall0 + mono[0] + 1_000_000_000}})
    thermal = play("thermal", 3.0)
    assert all(play("imu", 0.1))  # other kinds untouched
    lost = thermal.index(False)
    back = thermal.index(True, lost)
    assert lost == 0 and all(not ok for ok in thermal[lost:back]) and all(thermal[back:])
    # gone 1 s; reopen attempts 0.1, 0.3, 0.7, 1.5 s after the loss: back at the 1.5 s one
    assert abs(back * period / 1e9 - 1.5) <= 2 * period / 1e9
    c = devices.counters()["thermal"]
    assert c["state"] == "open" and c["unplugs"] == 1 and c["reopens"] == 1 and c["open_failures"] == 3
    assert set(devices.counters()) == {"thermal"}


def test_a_malformed_control_file_is_logged_once_and_ignored(tmp_path: Path) -> None:
    path = tmp_path / "devices.json"
    lines: list[str] = []
    control = DeviceControl(str(path), period_s=0.0, log=lines.append)
    _write(path, '{"thermal": {"gone_until": 5}}')
    assert control.gone_until() == {} and control.gone_until() == {}
    assert len(lines) == 1 and "gone_until_wall_ns" in lines[0] and str(path) in lines[0]
    _write(path, {"thermal": {"gone_until_wall_ns": 5}, "color": {"gone_until_wall_ns": 7}})
    assert control.gone_until() == {"thermal": 5, "color": 7}
    path.unlink()
    assert control.gone_until() == {}
