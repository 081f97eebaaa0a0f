"""External estimators as ROS 2 processes: VINS-Fusion and OpenVINS (used where installed).

Neither ships on PyPI; on a ROS 2 machine they are colcon packages (``ros2_ws/``). This module
finds them through ``AMENT_PREFIX_PATH`` (what ``ros2 run`` does), builds the exact command line
from the configs :mod:`rgbt.vio.config` exports, runs the process with the loopback-only ROS
environment (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and ``launch/fastdds_loopback.xml``), and
watches its health: the process must stay alive and, once images
flow, publish odometry at least every ``stall_s``. The odometry (``nav_msgs/Odometry`` on
``/vins_estimator/odometry`` or ``/odometry`` for VINS-Fusion, ``/ov_msckf/odomimu`` for OpenVINS)
is recorded by the ROS 2 side (``rgbt.ros``); :func:`odometry_to_trajectory` turns the captured
messages into a :class:`~rgbt.eval.trajectory.Trajectory`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import Trajectory


@dataclass(frozen=True)
class EstimatorSpec:
    """How to start one estimator: ROS 2 ``package`` / ``executable``, its arguments (``{config}``
    is the main config file), the config file name written by ``rgbt vio export``, and the odometry
    topics it publishes (first match wins)."""

    name: str
    package: str
    executable: str
    args: tuple[str, ...]
    export_name: str
    config_file: str
    odometry_topics: tuple[str, ...]


SPECS: dict[str, EstimatorSpec] = {
    "vins": EstimatorSpec("vins", "vins", "vins_node", ("{config}",), "vins", "{camera}_imu_config.yaml",
                          ("/vins_estimator/odometry", "/odometry")),
    "openvins": EstimatorSpec("openvins", "ov_msckf", "run_subscribe_msckf",
                              ("--ros-args", "-p", "config_path:={config}", "-p", "verbosity:=INFO",
                               "-p", "use_stereo:=false", "-p", "max_cameras:=1"),
                              "openvins", "estimator_config.yaml", ("/ov_msckf/odomimu",)),
}


@dataclass
class InstallInfo:
    name: str
    installed: bool
    executable: str | None
    reason: str


def detect(name: str, env: Mapping[str, str] | None = None) -> InstallInfo:
    """Find ``lib/<package>/<executable>`` under an ``AMENT_PREFIX_PATH`` entry (as ``ros2 run``)."""
    if name not in SPECS:
        raise EvaluationError(f"unknown external estimator {name!r}: expected one of {sorted(SPECS)}")
    spec = SPECS[name]
    env = os.environ if env is None else env
    prefixes = [p for p in env.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    if not prefixes:
        return InstallInfo(name, False, None, "AMENT_PREFIX_PATH is not set: no ROS 2 workspace is sourced "
                                              f"(build {spec.package} in ros2_ws/ and source install/setup.bash)")
    for prefix in prefixes:
        exe = Path(prefix) / "lib" / spec.package / spec.executable
        if exe.is_file() and os.access(exe, os.X_OK):
            return InstallInfo(name, True, str(exe), f"found in {prefix}")
    return InstallInfo(name, False, None, f"{spec.package}/{spec.executable} not found under AMENT_PREFIX_PATH "
                                          f"({len(prefixes)} prefixes searched)")


def require_installed(name: str) -> InstallInfo:
    info = detect(name)
    if not info.installed:
        raise EvaluationError(f"{name} is not installed here: {info.reason}. ORB-SLAM3 runs everywhere "
                              f"(--estimator orbslam3)")
    return info


def ros_env(base: dict | None = None, profiles_file: str | None = None) -> dict:
    """The environment an estimator process gets: loopback discovery and our Fast DDS profile, always."""
    from rgbt.ros_env import loopback_environment

    env = dict(os.environ if base is None else base)
    env.update(loopback_environment(profiles_file))
    return env


def command_line(
    name: str, config_dir: str | Path, camera: str = "thermal", executable: str | None = None
) -> list[str]:
    """The exact argv that starts ``name`` on the configs in ``config_dir``
    (``executable`` defaults to the one :func:`detect` finds, else ``ros2 run PACKAGE EXECUTABLE``)."""
    spec = SPECS[name]
    config = Path(config_dir) / spec.config_file.format(camera=camera)
    head = [executable] if executable else ["ros2", "run", spec.package, spec.executable]
    return head + [a.format(config=config) for a in spec.args]


@dataclass
class Health:
    """Watchdog verdict: ``ok``; ``reason`` when not; ``returncode`` if the process ended."""

    ok: bool
    reason: str = ""
    returncode: int | None = None


@dataclass
class ExternalRun:
    """A started estimator process with its watchdog (see :meth:`check`)."""

    name: str
    argv: list[str]
    log_path: Path
    stall_s: float = 5.0
    startup_s: float = 20.0
    proc: subprocess.Popen | None = None
    started: float = 0.0
    last_odometry: float | None = None
    first_image: float | None = None
    odometry_count: int = 0
    events: list[str] = field(default_factory=list)

    def start(self, env: dict | None = None) -> ExternalRun:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, env=ros_env(env),
                                     start_new_session=True)
        log.close()
        self.started = time.monotonic()
        self.events.append(f"started pid {self.proc.pid}: {' '.join(self.argv)}")
        return self

    def image_sent(self) -> None:
        if self.first_image is None:
            self.first_image = time.monotonic()

    def odometry_received(self) -> None:
        self.last_odometry = time.monotonic()
        self.odometry_count += 1

    def check(self, now: float | None = None) -> Health:
        """Dead process, no odometry ``startup_s`` after the first image, or a gap over ``stall_s``."""
        now = time.monotonic() if now is None else now
        if self.proc is not None and self.proc.poll() is not None:
            return Health(False, f"{self.name} exited with code {self.proc.returncode} (log {self.log_path})",
                          self.proc.returncode)
        if self.first_image is not None:
            if self.last_odometry is None and now - self.first_image > self.startup_s:
                return Health(False, f"{self.name}: no odometry {self.startup_s:g} s after the first image")
            if self.last_odometry is not None and now - self.last_odometry > self.stall_s:
                return Health(False, f"{self.name}: odometry stalled for {now - self.last_odometry:.1f} s")
        return Health(True)

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """SIGINT (ROS 2 nodes shut down cleanly on it), then SIGKILL; only our own process group."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(timeout_s)


def odometry_to_trajectory(messages: Iterable, name: str = "odometry") -> Trajectory:
    """``nav_msgs/Odometry`` messages (rosbags or rclpy objects) -> Trajectory of ``T_world_child``
    stamped with ``header.stamp``. Raises on no messages or non-increasing stamps."""
    t, p, q = [], [], []
    for m in messages:
        t.append(int(m.header.stamp.sec) * 1_000_000_000 + int(m.header.stamp.nanosec))
        pose = m.pose.pose
        p.append((pose.position.x, pose.position.y, pose.position.z))
        q.append((pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z))
    if not t:
        raise EvaluationError(f"{name}: the estimator published no odometry")
    return Trajectory(np.array(t), np.array(p), np.array(q), name=name)


def capture_command(name: str, out_tum: str | Path, python: str | None = None) -> list[str]:
    """The argv of the odometry capture (``nodes/odometry_capture.py``) for estimator ``name``: its
    odometry topics -> ``out_tum`` (TUM; read back with ``rgbt.eval.trajectory`` / ``rgbt vio ate``).
    Start it with :func:`ros_env` beside :func:`command_line`'s process."""
    topics = "[" + ",".join(f"'{t}'" for t in SPECS[name].odometry_topics) + "]"
    return [python or sys.executable, "-m", "rgbt.ros.spin", "--node", "odometry_capture:odometry_capture",
            "--ros-args", "-p", f"out_path:={out_tum}", "-p", f"topics:={topics}"]
