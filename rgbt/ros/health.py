"""System health sampling for the health node (no rclpy import): psutil, tegrastats, jtop.

``tegrastats`` (Jetson) is read from a background process when the binary exists; ``jtop``
(jetson-stats) is used when importable. Neither exists on a desktop: the report then holds
psutil's figures only and says which sources were used.
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
                from jtop import jtop  # type: ignore[import-not-found]

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
