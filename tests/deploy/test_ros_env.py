"""rgbt.ros_env: two rclpy stacks in one interpreter are refused (fake sys.path / AMENT_PREFIX_PATH
folders, no rclpy import), one stack is reported with its kind and distro."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rgbt.errors import RgbtError
from rgbt.paths import REPO_ROOT
from rgbt.ros_env import RosStackConflict, check_single_rclpy, rclpy_stacks


def _rclpy_dir(root: Path, wheel: str | None = None) -> Path:
    """A folder holding a fake ``rclpy`` package; ``wheel`` adds a pip ``*.dist-info`` that owns it."""
    (root / "rclpy").mkdir(parents=True)
    (root / "rclpy" / "__init__.py").write_text("raise ImportError('fake rclpy must never be imported')\n")
    if wheel:
        info = root / f"{wheel.replace('-', '_')}-7.1.6.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {wheel}\nVersion: 7.1.6\n")
        (info / "RECORD").write_text("rclpy/__init__.py,,\n")
        meta = root / "ros_jazzy_rclpy-7.1.6.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: ros-jazzy-rclpy\nVersion: 7.1.6\n")
        (meta / "RECORD").write_text("")
    return root


def test_no_rclpy_anywhere(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert rclpy_stacks([str(tmp_path / "empty")], {}) == []
    assert check_single_rclpy([str(tmp_path / "empty")], {}) is None


def test_one_wheel_stack_is_accepted(tmp_path: Path) -> None:
    venv = _rclpy_dir(tmp_path / "venv" / "site-packages", wheel="ros-rclpy")
    stack = check_single_rclpy([str(venv), str(venv)], {})  # the same folder twice is one stack
    assert stack is not None and stack.kind == "wheels" and stack.path == venv
    assert stack.distro == "jazzy" and "ros-rclpy" in stack.distributions


def test_wheels_plus_system_ros_on_sys_path_refuses(tmp_path: Path) -> None:
    venv = _rclpy_dir(tmp_path / "venv" / "site-packages", wheel="ros-rclpy")
    system = _rclpy_dir(tmp_path / "opt" / "ros" / "humble" / "lib" / "python3.10" / "site-packages")
    with pytest.raises(RosStackConflict) as info:
        check_single_rclpy([str(venv), str(system)], {})
    msg = str(info.value)
    assert isinstance(info.value, RgbtError)
    assert str(venv) in msg and str(system) in msg
    assert "humble" in msg and "pip uninstall" in msg and "ros-rclpy" in msg and "ros-jazzy-rclpy" in msg
    assert msg.index("Keep system ROS 2 humble") < msg.index("remove PyPI ROS wheels")


def test_system_ros_found_through_ament_prefix_path(tmp_path: Path) -> None:
    """A sourced /opt/ros/<distro> (AMENT_PREFIX_PATH) conflicts with the venv's wheels even when its
    site-packages is not (yet) on sys.path."""
    venv = _rclpy_dir(tmp_path / "venv" / "site-packages", wheel="ros-rclpy")
    prefix = tmp_path / "opt" / "ros" / "jazzy"
    _rclpy_dir(prefix / "lib" / "python3.12" / "site-packages")
    stacks = rclpy_stacks([str(venv)], {"AMENT_PREFIX_PATH": str(prefix)})
    assert [(s.kind, s.source) for s in stacks] == [("wheels", "sys.path"), ("system", "AMENT_PREFIX_PATH")]
    with pytest.raises(RosStackConflict, match="Keep system ROS 2 jazzy.*pip uninstall ros-jazzy-rclpy ros-rclpy"):
        check_single_rclpy([str(venv)], {"AMENT_PREFIX_PATH": str(prefix)})


def test_two_system_installs_refuse(tmp_path: Path) -> None:
    a = _rclpy_dir(tmp_path / "opt" / "ros" / "humble" / "lib" / "python3.10" / "site-packages")
    b = _rclpy_dir(tmp_path / "ws" / "install" / "rclpy" / "lib" / "python3.10" / "site-packages")
    with pytest.raises(RosStackConflict, match="2 rclpy stacks.*setup.bash"):
        check_single_rclpy([str(a), str(b)], {})


def test_spin_refuses_before_importing_rclpy(tmp_path: Path) -> None:
    """``python -m rgbt.ros.spin`` with a second (fake) rclpy on PYTHONPATH: one line naming both, no
    traceback from inside rclpy (the fake package raises if it is ever imported)."""
    fake = _rclpy_dir(tmp_path / "opt" / "ros" / "humble" / "lib" / "python3.10" / "site-packages")
    real = rclpy_stacks()
    env = {"PYTHONPATH": f"{REPO_ROOT}:{fake}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", "import rgbt.ros.spin"], env=env, capture_output=True,
                          text=True, timeout=60)
    if not real:  # no rclpy installed: the fake one is the only stack and gets imported
        assert "fake rclpy must never be imported" in proc.stderr
        return
    assert proc.returncode != 0
    assert "RosStackConflict" in proc.stderr and str(fake) in proc.stderr
    assert "fake rclpy must never be imported" not in proc.stderr


def test_setup_system_ros_refuses_without_a_sourced_ros(tmp_path: Path) -> None:
    """``scripts/setup.sh system-ros`` on a shell without ``/opt/ros/<distro>/setup.bash`` sourced:
    exit 2 naming the command to run, nothing installed."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ROS_DISTRO": ""}
    proc = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "setup.sh"), "system-ros"], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "source /opt/ros/<distro>/setup.bash" in proc.stderr
