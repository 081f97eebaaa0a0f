"""``rgbt up`` supervision end to end (real processes, small graph: health monitor + recorder):
``kill -9`` of a group -> restarted, listed in the bag manifest, the recording goes on; ``--strict``
-> the graph stops with exit 1."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rgbt.paths import REPO_ROOT

pytestmark = pytest.mark.ros


def _up(profile: Path, log: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "rgbt", "up", str(profile), "--duration", "120", *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=open(log, "w"))


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, timeout: float = 90) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text())
        if m:
            return m
        assert proc.poll() is None or pattern.startswith("rgbt up: process group"), log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"{pattern!r} not in the log:\n{log.read_text()}")


@pytest.fixture
def small_profile(tmp_path: Path) -> Path:
    profile = tmp_path / "small.yaml"
    profile.write_text(yaml.safe_dump({"description": "health monitor + recorder", "nodes": [
        {"name": "health", "parameters": {"period_s": 0.2, "disk_path": str(tmp_path)}},
        {"name": "recorder", "parameters": {"topics": ["/rgbt/health"], "min_free_mb": 10.0, "write_state": False,
                                            "start": "always", "out_dir": str(tmp_path / "bags")}},
    ]}))
    return profile


def test_kill_9_is_restarted_and_listed_in_the_manifest(ros_env: dict, tmp_path: Path, small_profile: Path,
                                                         read_bag) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "up.log"
    up = _up(small_profile, log)
    try:
        assert "restart failed groups" in _wait_for(log, r"supervision: .*", up).group(0)
        pid = int(_wait_for(log, r"health\[(\d+)\]", up).group(1))
        deadline = time.monotonic() + 60
        while not list((tmp_path / "bags").glob("*/*.mcap")):
            assert time.monotonic() < deadline and up.poll() is None, log.read_text()
            time.sleep(0.1)
        time.sleep(1.0)
        os.kill(pid, signal.SIGKILL)
        _wait_for(log, r"restarted process group 'health'", up)
        _wait_for(log, r"(?s)\[health\]: HealthOptions.*\[health\]: HealthOptions", up)  # the new one is up
        time.sleep(2.0)  # and publishes (every 0.2 s)
        up.send_signal(signal.SIGINT)
        up.wait(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    assert up.returncode == 0, log.read_text()
    (bag,) = sorted((tmp_path / "bags").iterdir())
    manifest = json.loads((bag / "rgbt_manifest.json").read_text())
    (restart,) = manifest["restarts"]
    assert restart["group"] == "health" and restart["exit_code"] == -signal.SIGKILL
    assert manifest["supervisor"]["restarts"] == {"health": 1, "recorder": 0}
    stamps = [t for t, _, _ in read_bag(bag)["/rgbt/health"]]
    assert any(t > restart["restart_wall_ns"] for t in stamps)  # recorded on across the restart


def test_strict_stops_the_graph(ros_env: dict, tmp_path: Path, small_profile: Path) -> None:
    log = tmp_path / "up.log"
    up = _up(small_profile, log, "--strict")
    try:
        _wait_for(log, r"supervision: strict", up)
        pid = int(_wait_for(log, r"health\[(\d+)\]", up).group(1))
        os.kill(pid, signal.SIGKILL)
        up.wait(timeout=60)
    finally:
        if up.poll() is None:
            up.kill()
    text = log.read_text()
    assert up.returncode == 1 and "--strict" in text and "restarted" not in text, text
