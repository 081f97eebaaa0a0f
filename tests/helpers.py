"""Helpers importable from any test module (``from helpers import run_rgbt``)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from rgbt.paths import REPO_ROOT


def run_rgbt(*args: str, check: bool = True, timeout: float = 600, env: dict | None = None,
             cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run the ``rgbt`` command of this checkout in a subprocess (``python -m rgbt``)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO_ROOT) + os.pathsep + full_env.get("PYTHONPATH", "")
    if env:
        full_env.update(env)
    proc = subprocess.run([sys.executable, "-m", "rgbt", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"rgbt {' '.join(map(str, args))} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def loopback_ros_env(home: Path) -> dict[str, str]:
    """Environment for real rclpy + Fast DDS processes: loopback only, a fresh random domain (10..99),
    ``ROS_HOME`` / ``ROS_LOG_DIR`` under ``home``."""
    return {
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "FASTRTPS_DEFAULT_PROFILES_FILE": str(REPO_ROOT / "launch" / "fastdds_loopback.xml"),
        "ROS_DOMAIN_ID": str(10 + uuid.uuid4().int % 90),
        "ROS_HOME": str(home / "ros_home"),
        "ROS_LOG_DIR": str(home / "ros_log"),
        "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
    }


def need(path: Path, what: str) -> Path:
    """``path`` when it exists; otherwise skip the test, naming what is missing and where."""
    if not path.exists():
        pytest.skip(f"{what} not found at {path}")
    return path


def read_lines(dev, buf: bytes) -> tuple[list[bytes], bytes]:  # type: ignore[no-untyped-def]
    """One short read from a pty device end: the complete lines now in ``buf`` and the unfinished rest."""
    buf += dev.read(0.005)
    *lines, rest = buf.split(b"\n")
    return lines, rest
