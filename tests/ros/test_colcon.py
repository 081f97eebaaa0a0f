"""``colcon build`` of ros2_ws (the ament_python package) and colcon.meta being honoured."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rgbt.paths import REPO_ROOT

COLCON = shutil.which("colcon") or str(Path(sys.executable).with_name("colcon"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not Path(COLCON).exists():
        pytest.skip("colcon not installed (pip install colcon-common-extensions)")
    root = tmp_path_factory.mktemp("colcon")
    for name in ("nodes", "launch"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO_ROOT / "ros2_ws" / "src", root / "ros2_ws" / "src", symlinks=True,
                    ignore=shutil.ignore_patterns("build", "install", "log", "__pycache__"))
    shutil.copy(REPO_ROOT / "colcon.meta", root / "colcon.meta")
    return root


def _colcon(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([COLCON, "--log-base", "ros2_ws/log", *args], cwd=root, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.slow
def test_colcon_build_installs_every_node(workspace: Path) -> None:
    """rgbt_ros only: its sibling rgbt_interfaces (ament_cmake) needs ROS 2's build tools, and is built
    and served by scripts/build_interfaces.sh in test_thermal_query_service.py."""
    listed = _colcon(workspace, "list", "--base-paths", "ros2_ws/src")
    assert listed.returncode == 0, listed.stderr
    types = {line.split()[0]: line.split()[-1] for line in listed.stdout.splitlines() if line.strip()}
    assert types == {"rgbt_ros": "(ros.ament_python)", "rgbt_interfaces": "(ros.ament_cmake)"}, listed.stdout
    proc = _colcon(workspace, "build", "--base-paths", "ros2_ws/src", "--packages-ignore", "rgbt_interfaces",
                   "--build-base", "ros2_ws/build", "--install-base", "ros2_ws/install")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lib = workspace / "ros2_ws" / "install" / "rgbt_ros" / "lib" / "rgbt_ros"
    nodes = {p.stem for p in (REPO_ROOT / "nodes").glob("*.py") if p.stem != "__init__"}
    assert nodes and {p.name for p in lib.iterdir()} == nodes
    share = workspace / "ros2_ws" / "install" / "rgbt_ros" / "share" / "rgbt_ros"
    assert (share / "package.xml").is_file() and (share / "launch" / "rgbt.launch.py").is_file()
    assert (share / "launch" / "fastdds_loopback.xml").is_file()
    assert (share.parent / "ament_index" / "resource_index" / "packages" / "rgbt_ros").exists()


def test_colcon_meta_keeps_build_options_only(workspace: Path) -> None:
    """rgbt_ros is pure Python: the estimators, camera driver and MAVROS are optional siblings built
    with their options from colcon.meta, never run-time dependencies of the nodes."""
    import json

    meta = json.loads((REPO_ROOT / "colcon.meta").read_text())["names"]
    assert "rgbt_ros" not in meta
    assert all(set(opts) <= {"cmake-args"} for opts in meta.values()), meta
    proc = _colcon(workspace, "info", "--base-paths", "ros2_ws/src", "--packages-select", "rgbt_ros")
    assert proc.returncode == 0, proc.stderr
    run_line = [line for line in proc.stdout.splitlines() if line.strip().startswith("run:")][0].split()
    for dep in ("vins", "ov_msckf", "spinnaker_camera_driver", "mavros"):
        assert dep not in run_line
    for dep in ("rclpy", "nav_msgs", "python3-numpy", "python3-yaml"):
        assert dep in run_line, (dep, run_line)


def test_package_xml_declares_every_imported_ros_package() -> None:
    """Every top-level ROS module the nodes import (``*_msgs``, ``std_srvs``, ``rclpy``) is an exec_depend."""
    import ast
    import xml.etree.ElementTree as ET

    root = ET.parse(REPO_ROOT / "ros2_ws" / "src" / "rgbt_ros" / "package.xml").getroot()
    declared = {e.text for e in root.iter("exec_depend")}
    imported: set[str] = set()
    for path in [*(REPO_ROOT / "nodes").glob("*.py"), *(REPO_ROOT / "rgbt" / "ros").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            imported |= {n.split(".")[0] for n in names}
    ros = {m for m in imported if m.endswith(("_msgs", "_interfaces")) or m in ("rclpy", "std_srvs")}
    assert "nav_msgs" in ros and ros <= declared, sorted(ros - declared)


def test_repos_file_names_the_external_packages() -> None:
    import yaml

    repos = yaml.safe_load((REPO_ROOT / "ros2_ws" / "rgbt.repos").read_text())["repositories"]
    urls = {r["url"] for r in repos.values()}
    assert all(u.startswith("https://github.com/") and u.endswith(".git") for u in urls)
    for needle in ("VINS-Fusion-ROS2", "open_vins", "flir_camera_driver", "mavros"):
        assert any(needle in u for u in urls), needle
