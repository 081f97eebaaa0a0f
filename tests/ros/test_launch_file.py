"""``launch/rgbt.launch.py`` starts the process groups ``rgbt up`` starts: one ``python -m
rgbt.ros.spin`` process per profile group, same nodes, same arguments, same parameters.

The launch file runs twice: with small recording stand-ins for the ``launch`` package (always), and
with the real ``launch`` package where it is installed (an optional ROS 2 dependency)."""

from __future__ import annotations

import json
import runpy
import sys
import types
from pathlib import Path

import pytest
import yaml

from rgbt.paths import LAUNCH_DIR
from rgbt.ros.launcher import group_commands
from rgbt.ros.profile import node_specs, params_file_data

PROFILES = ["bench-sim", "flight", "replay"]


def _groups_from_print(up_json: list[dict]) -> dict[str, list[str]]:
    """Process group -> ["NAME:EXECUTABLE", ...] from ``rgbt up PROFILE --print`` (written here)."""
    out: dict[str, list[str]] = {}
    for node in up_json:
        out.setdefault(node["process"], []).append(f"{node['name']}:{node['executable']}")
    return out


def _nodes_of(cmd: list[str]) -> list[str]:
    return [cmd[i + 1] for i, a in enumerate(cmd) if a == "--node"]


def _params_of(cmd: list[str]) -> Path:
    return Path(cmd[cmd.index("--params-file") + 1])


def _run_with_stand_ins(profile: str, strict: str = "false") -> tuple[list[dict], dict]:
    """Execute the launch file with stand-ins recording the ExecuteProcess actions it creates."""
    started: list[dict] = []
    env: dict = {}

    class ExecuteProcess:
        def __init__(self, **kw):
            started.append(kw)

    class SetEnvironmentVariable:
        def __init__(self, name, value):
            env[name] = value

    class LaunchConfiguration:
        def __init__(self, name):
            self.name = name

        def perform(self, context):
            return context[self.name]

    class DeclareLaunchArgument:
        def __init__(self, name, default_value=None, description=""):
            self.name, self.default = name, default_value

    class OpaqueFunction:
        def __init__(self, function):
            self.function = function

    class LaunchDescription(list):
        pass

    class Shutdown:
        def __init__(self, reason=""):
            self.reason = reason

    mods = {
        "launch": types.SimpleNamespace(LaunchDescription=LaunchDescription),
        "launch.actions": types.SimpleNamespace(DeclareLaunchArgument=DeclareLaunchArgument,
                                                ExecuteProcess=ExecuteProcess, OpaqueFunction=OpaqueFunction,
                                                SetEnvironmentVariable=SetEnvironmentVariable, Shutdown=Shutdown),
        "launch.substitutions": types.SimpleNamespace(LaunchConfiguration=LaunchConfiguration),
    }
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)  # type: ignore[arg-type]
    try:
        ns = runpy.run_path(str(LAUNCH_DIR / "rgbt.launch.py"))
        desc = ns["generate_launch_description"]()
        opaque = [a for a in desc if isinstance(a, OpaqueFunction)][0]
        opaque.function({"profile": profile, "strict": strict})
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return started, env


@pytest.mark.parametrize("profile", PROFILES)
def test_launch_file_starts_the_groups_of_rgbt_up(profile: str, rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    started, _env = _run_with_stand_ins(profile)
    expected = _groups_from_print(json.loads(rgbt_cli("up", profile, "--print").stdout))
    assert [p["name"] for p in started] == list(expected)
    assert {p["name"]: _nodes_of(p["cmd"]) for p in started} == expected
    specs = node_specs(profile)
    for proc in started:
        cmd = proc["cmd"]
        assert cmd[1:3] == ["-m", "rgbt.ros.spin"] and "--duration" not in cmd
        params = _params_of(cmd)
        assert yaml.safe_load(params.read_text()) == params_file_data(specs)
        # exactly the command line rgbt up builds for that group (same params file)
        assert cmd == group_commands(specs, params)[proc["name"]]


def test_launch_file_respawns_groups_but_not_the_recorder() -> None:
    """Supervision in the launch file: every group respawns except the recorder's, whose exit shuts
    the launch down; ``strict:=true`` respawns nothing."""
    from rgbt.ros.launcher import recorder_groups

    recorders = recorder_groups(node_specs("bench-sim"))
    started, _env = _run_with_stand_ins("bench-sim")
    assert recorders and {p["name"] for p in started} > recorders
    for proc in started:
        if proc["name"] in recorders:
            assert not proc.get("respawn") and "recorder" in proc["on_exit"][0].reason
        else:
            assert proc["respawn"] is True and proc["respawn_delay"] > 0
    strict, _env = _run_with_stand_ins("bench-sim", strict="true")
    assert not any(p.get("respawn") for p in strict)


def test_rgbt_up_starts_the_shared_command_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """start_graph runs group_commands' lines (Popen recorded, nothing started)."""
    from rgbt.ros import launcher

    calls: list[list[str]] = []

    class FakePopen:
        pid = 0

        def __init__(self, cmd, **kw):  # type: ignore[no-untyped-def]
            calls.append(cmd)

    monkeypatch.setattr(launcher.subprocess, "Popen", FakePopen)
    specs = node_specs("flight")
    graph = launcher.start_graph(specs, duration_s=10.0)
    params = graph.workdir / "params.yaml"
    assert calls == list(group_commands(specs, params, 15.0).values())
    assert [_nodes_of(c) for c in calls] == [[f"{s.name}:{s.executable}" for s in specs if s.process == g]
                                            for g in dict.fromkeys(s.process for s in specs)]


def _launch_missing() -> str | None:
    """Why the ROS 2 ``launch`` package cannot be used (the repo's ``launch/`` folder is no package)."""
    try:
        import launch.actions
        import launch.launch_context  # noqa: F401
    except ImportError as exc:
        return f"the ROS 2 'launch' package is not installed (system ROS 2 or ros-<distro>-launch): {exc}"
    return None


@pytest.mark.skipif(_launch_missing() is not None, reason=str(_launch_missing()))
def test_real_launch_description_has_one_process_per_group() -> None:
    from launch.actions import ExecuteProcess, OpaqueFunction
    from launch.launch_context import LaunchContext

    ns = runpy.run_path(str(LAUNCH_DIR / "rgbt.launch.py"))
    desc = ns["generate_launch_description"]()
    context = LaunchContext()
    context.launch_configurations["profile"] = "flight"
    opaque = [e for e in desc.entities if isinstance(e, OpaqueFunction)][0]
    procs = [a for a in opaque.execute(context) if isinstance(a, ExecuteProcess)]
    groups = list(dict.fromkeys(s.process for s in node_specs("flight")))
    assert [p.name for p in procs] == groups
