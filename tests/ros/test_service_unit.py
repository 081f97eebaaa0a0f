"""``rgbt service`` and its systemd unit: the unit passes ``systemd-analyze verify`` (the real tool),
says what the flight needs (notify + watchdog, restart, limits, a stop long enough for the recorder),
the template shipped under ``launch/`` is the generated one, and install / status / uninstall work on
a real folder (systemctl is not run for a ``--unit-dir``)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_rgbt, write_small_profile
from rgbt.paths import REPO_ROOT
from rgbt.graph.instance_lock import InstanceLock, instance_name
from rgbt.graph.launcher import stop_time_s
from rgbt.graph.service_unit import TEMPLATE, rgbt_executable, unit_name, unit_text

ANALYZE = shutil.which("systemd-analyze")


def _settings(text: str) -> dict[str, list[str]]:
    """key -> values of a unit file (comments and sections left out)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out.setdefault(key, []).append(value)
    return out


def _verify(path: Path) -> None:
    if ANALYZE is None:
        pytest.skip("systemd-analyze is not installed (systemd's tools): the unit cannot be verified here")
    proc = subprocess.run([ANALYZE, "verify", str(path)], capture_output=True, text=True, timeout=120)
    # verify exits 0 on a key it ignores: any word about the file is a failure too
    assert proc.returncode == 0 and path.name not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("user", [False, True])
def test_the_flight_unit_verifies_and_says_what_a_flight_needs(tmp_path: Path, user: bool) -> None:
    text = unit_text("flight", user=user)
    path = tmp_path / unit_name("flight")
    path.write_text(text)
    _verify(path)
    s = _settings(text)
    assert path.name == "rgbt-flight.service"
    assert s["ExecStart"] == [f"{rgbt_executable()} up flight"] and s["WorkingDirectory"] == [str(REPO_ROOT)]
    for key, value in {"Type": "notify", "NotifyAccess": "main", "WatchdogSec": "10", "Restart": "always",
                       "RestartSec": "2", "KillMode": "mixed", "KillSignal": "SIGINT",
                       "StartLimitIntervalSec": "0"}.items():
        assert s[key] == [value], key
    assert "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST" in s["Environment"]
    assert int(s["TimeoutStopSec"][0]) > stop_time_s(4)  # the flight's 4 groups stopped one after another
    if user:
        assert "LimitNICE" not in s and "LimitRTPRIO" not in s and s["WantedBy"] == ["default.target"]
    else:
        assert s["LimitNICE"] == ["-20"] and s["LimitRTPRIO"] == ["99"] and s["WantedBy"] == ["multi-user.target"]


def test_odd_paths_are_quoted_for_systemd(tmp_path: Path) -> None:
    """A profile outside launch/ by its absolute path, an executable path with a space, a folder with
    a ``%``: still one valid unit (verified by systemd's own parser)."""
    folder = tmp_path / "my rgbt"
    folder.mkdir()
    exe = folder / "rgbt"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    profile = write_small_profile(tmp_path)
    text = unit_text(profile, executable=str(exe), workdir=tmp_path / "50%")
    path = tmp_path / unit_name(profile)
    assert path.name == f"rgbt-{instance_name(profile)}.service"
    path.write_text(text)
    _verify(path)
    s = _settings(text)
    assert s["ExecStart"] == [f'"{exe}" up {profile}'] and s["WorkingDirectory"] == [f"{tmp_path}/50%%"]


def test_the_template_under_launch_is_the_generated_one() -> None:
    assert TEMPLATE.read_text() == unit_text("flight", template=True), \
        "launch/rgbt-flight.service is stale: rgbt service template > launch/rgbt-flight.service"
    assert "ExecStart=@RGBT@ up flight" in TEMPLATE.read_text()


@pytest.mark.slow
def test_install_status_uninstall_in_a_unit_dir(tmp_path: Path) -> None:
    units, env = tmp_path / "units", {"RGBT_LOCK_DIR": str(tmp_path / "locks")}
    unit = units / "rgbt-flight.service"
    dry = run_rgbt("service", "install", "--unit-dir", units, "--dry-run", env=env)
    assert dry.stdout == unit_text("flight") and not units.exists()
    done = run_rgbt("service", "install", "--unit-dir", units, env=env)
    assert unit.read_text() == unit_text("flight") and "systemctl daemon-reload && systemctl enable --now" in done.stderr

    status = run_rgbt("service", "status", "--unit-dir", units, env=env).stdout
    assert f"unit: {unit} (installed)" in status and "graph of profile 'flight': not running" in status
    with InstanceLock.acquire("flight", tmp_path / "locks"):  # as a running `rgbt up flight` holds it
        status = run_rgbt("service", "status", "--unit-dir", units, env=env).stdout
    assert f"running (lock {tmp_path / 'locks' / 'flight.lock'} held by PID {os.getpid()})" in status, status

    run_rgbt("service", "uninstall", "--unit-dir", units, "--dry-run", env=env)
    assert unit.exists()
    run_rgbt("service", "uninstall", "--unit-dir", units, env=env)
    assert not unit.exists()
    assert "(not installed)" in run_rgbt("service", "status", "--unit-dir", units, env=env).stdout

    bad = run_rgbt("service", "install", "--profile", "no-such-profile", "--unit-dir", units, check=False, env=env)
    assert bad.returncode == 2 and "no-such-profile" in bad.stderr
