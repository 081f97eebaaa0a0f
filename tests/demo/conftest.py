"""One shortened demo run shared by the demo tests (module-scoped: the flight is the expensive part)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from helpers import run_rgbt
from rgbt.paths import REPO_ROOT

#: armed flight of the CI demo (s): long enough for ORB-SLAM3 to initialise and track over the
#: moving part of the CART trajectory, short enough for the whole run to stay near a minute on 2 cores
CI_DURATION_S = 10


def _shm_files() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith(("fastrtps_", "sem.fastrtps_", "fastdds_"))}
    except OSError:
        return set()


@pytest.fixture(scope="session")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Loopback-only ROS 2 environment with a fresh domain and ROS_HOME (as the ``ros_env`` fixture)."""
    pytest.importorskip("rclpy", reason="ROS 2 wheels (ros-jazzy-rclpy) not installed")
    home = tmp_path_factory.mktemp("demo_ros")
    before = _shm_files()
    env = {
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "FASTRTPS_DEFAULT_PROFILES_FILE": str(REPO_ROOT / "launch" / "fastdds_loopback.xml"),
        "ROS_DOMAIN_ID": str(10 + uuid.uuid4().int % 90),
        "ROS_HOME": str(home / "ros_home"),
        "ROS_LOG_DIR": str(home / "ros_log"),
        "RMW_IMPLEMENTATION": "rmw_fastrtps_cpp",
    }
    yield env
    for name in _shm_files() - before:
        try:
            os.unlink(os.path.join("/dev/shm", name))
        except OSError:
            pass


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory, demo_env: dict) -> dict:
    """``rgbt demo --duration 10 --json`` into a temporary folder: {"summary": JSON, "out": Path, "stderr"}."""
    out = tmp_path_factory.mktemp("demo") / "run"
    proc = run_rgbt("demo", "--duration", CI_DURATION_S, "--out", out, "--json", env=demo_env, timeout=600)
    return {"summary": json.loads(proc.stdout), "out": out, "stderr": proc.stderr}
