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


def test_a_participant_lease_profile_keeps_the_transports_and_sets_the_default_participants_lease() -> None:
    import xml.etree.ElementTree as ET

    from rgbt.paths import FASTDDS_PROFILE
    from rgbt.ros_env import FASTDDS_XML_NS, participant_lease_profile

    shipped = FASTDDS_PROFILE.read_text()
    once = participant_lease_profile(shipped, 2.5)
    twice = participant_lease_profile(once, 2.0)  # an existing lease is replaced, not repeated
    root = ET.fromstring(twice)
    ns = {"f": FASTDDS_XML_NS}
    participant = root.find("f:participant", ns)
    assert participant is not None
    leases = participant.findall("f:rtps/f:builtin/f:discovery_config/f:leaseDuration", ns)
    assert [(e.findtext("f:sec", namespaces=ns), e.findtext("f:nanosec", namespaces=ns))
            for e in leases] == [("2", "0")]
    announce = participant.find("f:rtps/f:builtin/f:discovery_config/f:leaseAnnouncement", ns)
    assert announce is not None and announce.findtext("f:nanosec", namespaces=ns) == "500000000"
    assert [e.text for e in participant.findall("f:rtps/f:userTransports/f:transport_id", ns)] == \
        ["rgbt_shm", "rgbt_udp_loopback"]
    assert [e.text for e in root.iter(f"{{{FASTDDS_XML_NS}}}address")] == ["127.0.0.1"]  # still loopback only
    with pytest.raises(ValueError, match="is_default_profile"):
        participant_lease_profile(shipped.replace('is_default_profile="true"', ""), 2.0)
    with pytest.raises(ValueError, match="not XML"):
        participant_lease_profile("<profiles", 2.0)


def test_use_participant_lease_points_the_environment_at_a_derived_profile_or_says_why_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from rgbt.ros_env import use_participant_lease

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env: dict[str, str] = {}
    said = use_participant_lease(2.0, env)
    derived = Path(env["FASTRTPS_DEFAULT_PROFILES_FILE"])
    assert derived.parent == tmp_path and "<leaseDuration>" in derived.read_text() and "2 s" in said
    again: dict[str, str] = {}
    use_participant_lease(2.0, again)
    assert again == env  # the same content, the same file: shared by the processes that ask for it
    broken = tmp_path / "broken.xml"
    broken.write_text("<profiles")
    env = {"FASTRTPS_DEFAULT_PROFILES_FILE": str(broken)}
    assert "left as" in use_participant_lease(2.0, env) and env["FASTRTPS_DEFAULT_PROFILES_FILE"] == str(broken)
