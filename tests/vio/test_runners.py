"""External estimators: detection, exact command lines, the 'not installed' path, the watchdog."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from helpers import run_rgbt
from rgbt.errors import EvaluationError
from rgbt.vio.runners import ExternalRun, command_line, detect, require_installed


def _fake_install(root: Path, package: str, exe: str, body: str = "") -> Path:
    path = root / "lib" / package / exe
    path.parent.mkdir(parents=True)
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.slow
def test_not_installed_is_reported_honestly(monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    info = detect("vins")
    assert not info.installed and "AMENT_PREFIX_PATH" in info.reason
    with pytest.raises(EvaluationError, match="not installed"):
        require_installed("openvins")
    # an estimator that cannot run here is a result of the evaluation (issue 14), not a failure of it
    proc = run_rgbt("vio", "eval", "--synthetic", "2", "--estimator", "vins", "--runs", "1", "--json",
                    "--no-progress", check=False, env={"AMENT_PREFIX_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"].startswith("not installed") and "AMENT_PREFIX_PATH" in data["status"], data["status"]
    assert data["runs"] == [] and data["ate_rmse"]["mean"] is None


def test_detect_in_a_workspace_prefix(tmp_path):
    exe = _fake_install(tmp_path / "install", "ov_msckf", "run_subscribe_msckf")
    info = detect("openvins", env={"AMENT_PREFIX_PATH": f"/nonexistent{os.pathsep}{tmp_path / 'install'}"})
    assert info.installed and info.executable == str(exe)


def test_exact_command_lines(tmp_path):
    assert command_line("vins", tmp_path, "thermal") == [
        "ros2", "run", "vins", "vins_node", str(tmp_path / "thermal_imu_config.yaml")]
    assert command_line("openvins", tmp_path, executable="/ws/lib/ov_msckf/run_subscribe_msckf") == [
        "/ws/lib/ov_msckf/run_subscribe_msckf", "--ros-args", "-p", f"config_path:={tmp_path / 'estimator_config.yaml'}",
        "-p", "verbosity:=INFO", "-p", "use_stereo:=false", "-p", "max_cameras:=1"]
    # the config the VINS command line points at is the one `rgbt vio export vins` writes
    from rgbt.stack import load_stack
    from rgbt.vio.config import ExportOptions, export

    names = [p.name for p in export(load_stack(), "vins", tmp_path, ExportOptions(camera="thermal"))]
    assert Path(command_line("vins", tmp_path, "thermal")[-1]).name in names
    names = [p.name for p in export(load_stack(), "openvins", tmp_path, ExportOptions(camera="thermal"))]
    assert "estimator_config.yaml" in names


def test_watchdog_on_a_real_process(tmp_path):
    exe = _fake_install(tmp_path, "vins", "vins_node", "import os, sys, time\n"
                        "print(os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'], flush=True)\ntime.sleep(float(sys.argv[1]))\n"
                        "sys.exit(3)")
    run = ExternalRun("vins", [str(exe), "0.5"], tmp_path / "log.txt", stall_s=1.0, startup_s=2.0).start()
    t0 = time.monotonic()
    assert run.check(t0).ok
    run.image_sent()
    assert not run.check(t0 + 5).ok and "no odometry" in run.check(t0 + 5).reason
    run.odometry_received()
    assert run.check().ok
    run.proc.wait(10)
    health = run.check()
    assert not health.ok and health.returncode == 3
    assert (tmp_path / "log.txt").read_text().strip() == "LOCALHOST"
    long = ExternalRun("vins", [str(exe), "30"], tmp_path / "log2.txt").start()
    assert long.check().ok
    assert long.stop(timeout_s=5) is not None and long.proc.poll() is not None


def test_estimators_command_json():
    rows = json.loads(run_rgbt("vio", "estimators", "--json", env={"AMENT_PREFIX_PATH": ""}).stdout)
    by = {r["estimator"]: r for r in rows}
    assert by["orbslam3"]["installed"] and not by["vins"]["installed"]
    assert by["openvins"]["odometry_topics"] == ["/ov_msckf/odomimu"]
