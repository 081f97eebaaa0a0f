"""System health sampling for the health node (no rclpy import): psutil, tegrastats, jtop.

``tegrastats`` (Jetson) is read from a background process when the binary exists; ``jtop``
(jetson-stats) is used when importable. Neither exists on a desktop: the report then holds
psutil's figures only and says which sources were used. :func:`device_status` sums up the devices
the other nodes report on ``/diagnostics`` (``rgbt.sensors.reconnect``: open, lost, missing).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from pathlib import Path

import psutil


class HealthProbe:
    """Call :meth:`sample` periodically; :meth:`close` stops tegrastats."""

    def __init__(self, disk_path: str = ".") -> None:
        self.disk_path = disk_path
        self.sources = ["psutil"]
        self._tegra_line = ""
        self._tegra: subprocess.Popen | None = None
        self._jtop = None
        psutil.cpu_percent(percpu=True)  # prime the counters
        if shutil.which("tegrastats"):
            self._tegra = subprocess.Popen(["tegrastats", "--interval", "1000"], stdout=subprocess.PIPE, text=True)
            threading.Thread(target=self._read_tegra, daemon=True).start()
            self.sources.append("tegrastats")
        else:
            try:
                from jtop import jtop

                self._jtop = jtop()
                self._jtop.start()
                self.sources.append("jtop")
            except Exception:  # noqa: BLE001 - optional source
                self._jtop = None

    def _read_tegra(self) -> None:
        assert self._tegra and self._tegra.stdout
        for line in self._tegra.stdout:
            self._tegra_line = line.strip()

    def sample(self) -> dict:
        mem = psutil.virtual_memory()
        path = Path(self.disk_path)
        while not path.exists() and path != path.parent:
            path = path.parent
        disk = shutil.disk_usage(path)
        report: dict = {
            "cpu_percent": psutil.cpu_percent(),
            "cpu_percent_per_core": psutil.cpu_percent(percpu=True),
            "load_1m": psutil.getloadavg()[0],
            "mem_used_percent": mem.percent,
            "mem_available_mb": round(mem.available / 1e6, 1),
            "disk_free_mb": round(disk.free / 1e6, 1),
            "disk_used_percent": round(100 * disk.used / disk.total, 2),
            "temperatures_c": {},
            "sources": self.sources,
        }
        try:
            for chip, entries in (psutil.sensors_temperatures() or {}).items():
                for i, e in enumerate(entries):
                    report["temperatures_c"][f"{chip}.{e.label or i}"] = e.current
        except (AttributeError, OSError):
            pass
        if self._tegra_line:
            report["tegrastats"] = self._tegra_line
            report["temperatures_c"].update({k: float(v) for k, v in re.findall(r"(\w+)@([\d.]+)C", self._tegra_line)})
            gpu = re.search(r"GR3D_FREQ (\d+)%", self._tegra_line)
            if gpu:
                report["gpu_percent"] = int(gpu.group(1))
        if self._jtop is not None and self._jtop.ok():
            stats = self._jtop.stats
            report["jtop"] = {k: (v if isinstance(v, (int, float, str)) else str(v)) for k, v in stats.items()}
        return report

    def close(self) -> None:
        if self._tegra is not None and self._tegra.poll() is None:
            self._tegra.terminate()
            self._tegra.wait(timeout=5)
        if self._jtop is not None:
            self._jtop.close()


#: above these a health status is WARN (level 1); ERROR (2) when the disk is nearly full
MEM_WARN_PERCENT = 90.0
TEMP_WARN_C = 85.0
DISK_ERROR_PERCENT = 98.0


def health_statuses(report: dict) -> list[tuple[str, int, str, dict[str, str]]]:
    """A :meth:`HealthProbe.sample` report as ``diagnostic_msgs/DiagnosticStatus`` fields:
    ``(name, level, message, key -> value)`` for ``health/cpu``, ``health/memory``, ``health/disk``,
    ``health/temperatures`` and (on a Jetson) ``health/jetson``. Levels: 0 OK, 1 WARN, 2 ERROR."""
    cpu = {"cpu_percent": report["cpu_percent"], "load_1m": report["load_1m"],
           **{f"core{i}_percent": v for i, v in enumerate(report["cpu_percent_per_core"])}}
    if "gpu_percent" in report:
        cpu["gpu_percent"] = report["gpu_percent"]
    mem_warn = report["mem_used_percent"] >= MEM_WARN_PERCENT
    disk_level = 2 if report["disk_used_percent"] >= DISK_ERROR_PERCENT else 0
    temps = report["temperatures_c"]
    hot = {k: v for k, v in temps.items() if v >= TEMP_WARN_C}
    out = [
        ("health/cpu", 0, f"{report['cpu_percent']:.0f} %", cpu),
        ("health/memory", int(mem_warn), f"{report['mem_used_percent']:.0f} % used" + (" (high)" if mem_warn else ""),
         {"mem_used_percent": report["mem_used_percent"], "mem_available_mb": report["mem_available_mb"]}),
        ("health/disk", disk_level, f"{report['disk_free_mb']:.0f} MB free" + (" (nearly full)" if disk_level else ""),
         {"disk_free_mb": report["disk_free_mb"], "disk_used_percent": report["disk_used_percent"]}),
        ("health/temperatures", int(bool(hot)), (f"hot: {', '.join(sorted(hot))}" if hot else
                                                 f"{len(temps)} sensors" if temps else "no sensors"), temps),
    ]
    jetson = {k: v for k, v in (report.get("jtop") or {}).items()}
    if "tegrastats" in report:
        jetson["tegrastats"] = report["tegrastats"]
    if jetson:
        out.append(("health/jetson", 0, "+".join(report["sources"]), jetson))
    return [(name, level, message, {k: str(v) for k, v in values.items()}) for name, level, message, values in out]


#: a device's state (``device[.<kind>].state`` in a node's diagnostics) -> the health level
DEVICE_LEVELS = {"missing": 2, "lost": 1}


def device_status(peers: dict[str, dict[str, str]]) -> tuple[str, int, str, dict[str, str]]:
    """``health/devices`` from the other nodes' diagnostics values (node name -> key -> value): every
    device a node reports (``device.state``, or ``device.<kind>.state`` for a node with several) by
    ``<node>`` or ``<node>/<kind>`` -> its state; ERROR while one is missing since its start, WARN
    while one is lost, with how long it has been gone (``gone_s``)."""
    states: dict[str, str] = {}
    gone: list[str] = []
    for node, values in sorted(peers.items()):
        for key, state in sorted(values.items()):
            if not (key.startswith("device.") and key.endswith(".state")):
                continue
            prefix = key[:-len("state")]
            label = node + prefix[len("device"):-1].replace(".", "/")
            states[label] = state
            if state in DEVICE_LEVELS:
                gone.append(f"{label} {state} {values.get(prefix + 'gone_s', '?')} s")
    level = max((DEVICE_LEVELS.get(s, 0) for s in states.values()), default=0)
    message = ", ".join(gone) if gone else f"{len(states)} open" if states else "no devices reported"
    return "health/devices", level, message, states
