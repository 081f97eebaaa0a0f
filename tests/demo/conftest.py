"""One shortened demo run shared by the demo tests (module-scoped: the flight is the expensive part)."""

from __future__ import annotations

import json

import pytest

from helpers import loopback_ros_env, run_rgbt

#: armed flight of the CI demo (s): long enough for ORB-SLAM3 to initialise and track over the
#: moving part of the CART trajectory, short enough for the whole run to stay near a minute on 2 cores
CI_DURATION_S = 10


@pytest.fixture(scope="session")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Loopback-only ROS 2 environment with a fresh domain and ROS_HOME (as the ``ros_env`` fixture).

    Afterwards removes the Fast DDS shared-memory files created meanwhile that no process still
    uses (``rgbt.graph.launcher.clean_shm``): on a shared machine other processes' live segments stay."""
    # (tests using it are marked ros: tests/conftest.py skips them, with the reason, without rclpy)
    from rgbt.graph.launcher import clean_shm, shm_files

    home = tmp_path_factory.mktemp("demo_ros")
    before = shm_files()
    env = loopback_ros_env(home)
    yield env
    clean_shm(before)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory, demo_env: dict) -> dict:
    """``rgbt demo --duration 10 --eval-frames 40 --json`` into a temporary folder: {"summary": JSON, "out": Path, "stderr"}."""
    out = tmp_path_factory.mktemp("demo") / "run"
    proc = run_rgbt("demo", "--duration", CI_DURATION_S, "--eval-frames", 40, "--out", out, "--json", env=demo_env,
                    timeout=600)
    return {"summary": json.loads(proc.stdout), "out": out, "stderr": proc.stderr}
