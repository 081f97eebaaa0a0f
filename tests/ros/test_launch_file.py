"""``launch/rgbt.launch.py`` starts the process groups ``rgbt up`` starts: one ``python -m
rgbt.ros.spin`` process per profile group, same nodes, same arguments, same parameters.

The launch file runs twice: with small recording stand-ins for the ``launch`` package (always), and
with the real ``launch`` package where it is installed (an optional ROS 2 dependency). Its respawns
are counted in the supervisor's status file the recorder reads: its process start / exit handlers
are driven here with made-up events."""

from __future__ import annotations

import json
import runpy
import sys
import time
import types
from pathlib import Path

import pytest
import yaml

from rgbt.paths import LAUNCH_DIR
from rgbt.graph.launcher import group_commands, recorder_groups
from rgbt.graph.profile import node_specs, params_file_data
from rgbt.graph.recording import supervisor_section, supervisor_values
from rgbt.graph.supervisor import STATUS_ENV, SupervisorOptions, read_status

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


class _Launched(types.SimpleNamespace):
    """What the launch file created under the stand-ins: ``started`` (ExecuteProcess keyword
    arguments per group), ``env`` (SetEnvironmentVariable), ``actions`` (the OpaqueFunction's list),
    ``on_start`` / ``on_exit`` (group -> registered handler function)."""


def _run_with_stand_ins(profile: str, strict: str = "false") -> _Launched:
    """Execute the launch file with stand-ins recording the actions it creates."""
    started: list[dict] = []
    env: dict = {}
    on_start: dict = {}
    on_exit: dict = {}

    class ExecuteProcess:
        def __init__(self, respawn_max_retries: int = -1, **kw):  # a launch with respawn_max_retries (Iron+)
            self.kw = kw if respawn_max_retries == -1 else {**kw, "respawn_max_retries": respawn_max_retries}
            started.append(self.kw)

    class OnProcessStart:
        def __init__(self, target_action, on_start):
            self.target, self.fn = target_action, on_start

    class OnProcessExit:
        def __init__(self, target_action, on_exit):
            self.target, self.fn = target_action, on_exit

    class RegisterEventHandler:
        def __init__(self, event_handler):
            self.event_handler = event_handler
            handlers = on_start if isinstance(event_handler, OnProcessStart) else on_exit
            handlers[event_handler.target.kw["name"]] = event_handler.fn

    class LogInfo:
        def __init__(self, msg):
            self.msg = msg

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
                                                ExecuteProcess=ExecuteProcess, LogInfo=LogInfo,
                                                OpaqueFunction=OpaqueFunction,
                                                RegisterEventHandler=RegisterEventHandler,
                                                SetEnvironmentVariable=SetEnvironmentVariable, Shutdown=Shutdown),
        "launch.event_handlers": types.SimpleNamespace(OnProcessExit=OnProcessExit, OnProcessStart=OnProcessStart),
        "launch.substitutions": types.SimpleNamespace(LaunchConfiguration=LaunchConfiguration),
    }
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)  # type: ignore[arg-type]
    try:
        ns = runpy.run_path(str(LAUNCH_DIR / "rgbt.launch.py"))
        desc = ns["generate_launch_description"]()
        opaque = [a for a in desc if isinstance(a, OpaqueFunction)][0]
        actions = opaque.function({"profile": profile, "strict": strict})
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return _Launched(started=started, env=env, actions=actions, on_start=on_start, on_exit=on_exit)


@pytest.mark.slow
@pytest.mark.parametrize("profile", PROFILES)
def test_launch_file_starts_the_groups_of_rgbt_up(profile: str, rgbt_cli) -> None:  # type: ignore[no-untyped-def]
    started = _run_with_stand_ins(profile).started
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
    recorders = recorder_groups(node_specs("bench-sim"))
    started = _run_with_stand_ins("bench-sim").started
    assert recorders and {p["name"] for p in started} > recorders
    for proc in started:
        if proc["name"] in recorders:
            assert not proc.get("respawn") and "recorder" in proc["on_exit"][0].reason
        else:
            assert proc["respawn"] is True and proc["respawn_delay"] > 0
    strict = _run_with_stand_ins("bench-sim", strict="true").started
    assert not any(p.get("respawn") for p in strict)


def _msg(actions) -> str:  # type: ignore[no-untyped-def]
    """The text of the LogInfo a handler returned ('' for None)."""
    return "" if actions is None else " ".join(a.msg for a in actions)


def test_launch_file_counts_respawns_in_the_supervisor_status() -> None:
    """The children get ``RGBT_SUPERVISOR_STATUS`` (next to the params file); the start / exit handlers
    (registered before each process) write restarts, counts and groups left down there, read by the
    recorder's ``supervisor_section`` / ``supervisor_values``."""
    run = _run_with_stand_ins("bench-sim")
    recorder = next(iter(recorder_groups(node_specs("bench-sim"))))
    group = next(p["name"] for p in run.started if p["name"] != recorder)
    status_path = Path(run.env[STATUS_ENV])
    assert status_path.parent == _params_of(run.started[0]["cmd"]).parent
    for i, action in enumerate(run.actions):  # both handlers come before the process they count
        if hasattr(action, "kw"):
            registered = [a.event_handler.target for a in run.actions[:i] if hasattr(a, "event_handler")]
            assert registered.count(action) == 2
    status = read_status(status_path)
    assert set(status["counts"]) == set(run.on_start) == set(run.on_exit) == {p["name"] for p in run.started}
    assert not any(status["counts"].values()) and status["gave_up"] == [] and status["restarts"] == []
    assert status["options"]["by"] == "ros2 launch"

    live = types.SimpleNamespace(is_shutdown=False)
    for start in run.on_start.values():
        assert start(types.SimpleNamespace(pid=100), live) is None  # first starts are no restarts
    t0 = time.time_ns()
    assert "respawning" in _msg(run.on_exit[group](types.SimpleNamespace(returncode=-9), live))
    assert "restart 1" in _msg(run.on_start[group](types.SimpleNamespace(pid=101), live))
    status = read_status(status_path)
    (restart,) = status["restarts"]
    assert restart["group"] == group and restart["exit_code"] == -9 and restart["pid"] == 101
    assert restart["restart_wall_ns"] >= restart["exit_wall_ns"] >= t0
    assert restart["delay_s"] == SupervisorOptions().backoff_initial_s and restart["warm"] is False
    section = supervisor_section(status, t0, time.time_ns())
    assert [r["group"] for r in section["restarts"]] == [group] and section["supervisor"]["restarts"][group] == 1
    assert supervisor_values(status)[f"supervisor.restarts.{group}"] == "1"

    # the recorder's exit (which shuts the launch down) and exits during shutdown are not counted
    assert run.on_exit[recorder](types.SimpleNamespace(returncode=-9), live) is None
    other = next(g for g in run.on_exit if g not in (group, recorder))
    assert run.on_exit[other](types.SimpleNamespace(returncode=-2), types.SimpleNamespace(is_shutdown=True)) is None
    assert run.on_start[other](types.SimpleNamespace(pid=102), live) is None
    status = read_status(status_path)
    assert status["gave_up"] == [] and sum(status["counts"].values()) == 1

    # respawn_max_retries respawns in all (launch counts them over the whole launch), then left down
    max_retries = SupervisorOptions().max_restarts
    assert next(p for p in run.started if p["name"] == group)["respawn_max_retries"] == max_retries
    for pid in range(102, 102 + max_retries - 1):
        run.on_exit[group](types.SimpleNamespace(returncode=1), live)
        run.on_start[group](types.SimpleNamespace(pid=pid), live)
    assert "left down" in _msg(run.on_exit[group](types.SimpleNamespace(returncode=1), live))
    status = read_status(status_path)
    assert status["counts"][group] == max_retries and status["gave_up"] == [group]
    assert [r["attempt"] for r in status["restarts"]] == list(range(1, max_retries + 1))
    assert supervisor_values(status)["supervisor.gave_up"] == group


def test_launch_file_strict_counts_a_failure_as_left_down() -> None:
    run = _run_with_stand_ins("bench-sim", strict="true")
    recorder = next(iter(recorder_groups(node_specs("bench-sim"))))
    group = next(p["name"] for p in run.started if p["name"] != recorder)
    live = types.SimpleNamespace(is_shutdown=False)
    assert "left down" in _msg(run.on_exit[group](types.SimpleNamespace(returncode=3), live))
    status = read_status(run.env[STATUS_ENV])
    assert status["gave_up"] == [group] and status["restarts"] == [] and status["options"]["strict"] is True
    assert supervisor_values(status)["supervisor.gave_up"] == group


def test_rgbt_up_starts_the_shared_command_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """start_graph runs group_commands' lines (Popen recorded, nothing started)."""
    from rgbt.graph import launcher

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
    """With the real ``launch``: one ExecuteProcess per group, and its registered start / exit
    handlers, fed the real ``ProcessStarted`` / ``ProcessExited`` events of a ``kill -9`` and the
    respawn, write the restart into the status file named in the children's environment."""
    from launch.actions import ExecuteProcess, OpaqueFunction, RegisterEventHandler, SetEnvironmentVariable
    from launch.events.process import ProcessExited, ProcessStarted
    from launch.launch_context import LaunchContext
    from launch.utilities import perform_substitutions

    ns = runpy.run_path(str(LAUNCH_DIR / "rgbt.launch.py"))
    desc = ns["generate_launch_description"]()
    context = LaunchContext()
    context.launch_configurations.update({"profile": "flight", "strict": "false"})
    opaque = [e for e in desc.entities if isinstance(e, OpaqueFunction)][0]
    actions = opaque.execute(context)
    procs = [a for a in actions if isinstance(a, ExecuteProcess)]
    groups = list(dict.fromkeys(s.process for s in node_specs("flight")))
    names = {p: perform_substitutions(context, p.name) for p in procs}  # the names are substitutions
    assert list(names.values()) == groups

    env = {perform_substitutions(context, a.name): perform_substitutions(context, a.value)
           for a in actions if isinstance(a, SetEnvironmentVariable)}
    status_path = Path(env[STATUS_ENV])
    handlers = [a.event_handler for a in actions if isinstance(a, RegisterEventHandler)]
    recorders = recorder_groups(node_specs("flight"))
    proc = next(p for p in procs if names[p] not in recorders)

    def emit(event) -> None:  # type: ignore[no-untyped-def]
        matched = [h for h in handlers if h.matches(event)]
        assert len(matched) == 1  # exactly this group's handler for this kind of event
        matched[0].handle(event, context)

    args = {"action": proc, "name": names[proc], "cmd": ["python3"], "cwd": None, "env": None}
    emit(ProcessStarted(pid=100, **args))
    emit(ProcessExited(returncode=-9, pid=100, **args))
    emit(ProcessStarted(pid=101, **args))
    status = read_status(status_path)
    (restart,) = status["restarts"]
    assert restart["group"] == names[proc] and restart["exit_code"] == -9 and restart["pid"] == 101
    assert supervisor_values(status)[f"supervisor.restarts.{names[proc]}"] == "1"


@pytest.mark.slow
@pytest.mark.ros
def test_a_warm_spare_starts_at_its_groups_priority(tmp_path: Path) -> None:
    """``group_commands`` carries each group's raised priority (``--nice``: the lowest negative nice of its
    nodes) and its spares' (``--standby-nice``: ``spare_nice``), and ``rgbt.ros.spin`` applies it from
    its first instruction, so a ``--standby`` spare starts up at it too (here a lowered value, which
    needs no privilege: every thread of the waiting spare)."""
    import dataclasses
    import os
    import subprocess
    import sys
    import time

    from rgbt.paths import REPO_ROOT

    specs = node_specs("bench-sim")
    cmds = group_commands(specs, tmp_path / "params.yaml")
    for group in dict.fromkeys(s.process for s in specs):
        nice = min(int(s.parameters.get("nice", 0)) for s in specs if s.process == group)
        cmd = cmds[group]
        if nice < 0:
            assert cmd[cmd.index("--nice") + 1] == str(nice), (group, cmd)
        else:
            assert "--nice" not in cmd, (group, cmd)
        spare = max(int(s.parameters.get("spare_nice", 0)) for s in specs if s.process == group)
        assert (cmd[cmd.index("--standby-nice") + 1] if spare else None) == (str(spare) if spare else None), cmd
    specs = [dataclasses.replace(s, parameters={**s.parameters, "spare_nice": 19}) if s.process == "pipeline" else s
             for s in specs]
    cmd = group_commands(specs, tmp_path / "params.yaml")["pipeline"]
    assert cmd[cmd.index("--standby-nice") + 1] == "19", cmd  # e.g. --set thermal_preprocess.spare_nice=19
    ready = tmp_path / "spare.ready"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    spare = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "health:health", "--standby",
                              "--ready-file", str(ready), "--nice", "5"], env=env, cwd=REPO_ROOT,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().strip() == str(spare.pid)):
            assert spare.poll() is None and time.monotonic() < deadline, spare.communicate()[0]
            time.sleep(0.1)
        tasks = list(Path(f"/proc/{spare.pid}/task").iterdir())
        nices = {t.name: os.getpriority(os.PRIO_PROCESS, int(t.name)) for t in tasks}
    finally:
        out = spare.communicate(input="", timeout=60)[0]  # end of input: the spare exits without starting
    assert spare.returncode == 0, out
    assert len(nices) >= 3 and set(nices.values()) == {5}, nices  # the middleware's threads too
    assert "process priority: nice 5" in out, out


@pytest.mark.slow
@pytest.mark.ros
def test_a_warm_spare_waits_at_its_standby_nice_and_takes_the_groups_when_it_takes_over(tmp_path: Path) -> None:
    """``--standby-nice`` (a processing group's ``spare_nice``): the spare starts up and waits at it, every
    thread; once started it asks for the group's ``--nice`` (raising it back needs CAP_SYS_NICE: without
    it the refusal is logged and the process keeps the standby value)."""
    import os
    import subprocess
    import sys
    import time

    from rgbt.paths import REPO_ROOT

    ready = tmp_path / "spare.ready"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    spare = subprocess.Popen([sys.executable, "-m", "rgbt.ros.spin", "--node", "health:health", "--standby",
                              "--ready-file", str(ready), "--nice", "3", "--standby-nice", "9", "--duration", "1"],
                             env=env, cwd=REPO_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (ready.exists() and ready.read_text().strip() == str(spare.pid)):
            assert spare.poll() is None and time.monotonic() < deadline, spare.communicate()[0]
            time.sleep(0.1)
        nices = {t.name: os.getpriority(os.PRIO_PROCESS, int(t.name)) for t in Path(f"/proc/{spare.pid}/task").iterdir()}
    finally:
        out = spare.communicate(input="start\n", timeout=60)[0]  # taken over: runs its node for 1 s
    assert spare.returncode == 0, out
    assert len(nices) >= 3 and set(nices.values()) == {9}, nices
    assert "process priority: nice 9" in out, out
    assert ("process priority: nice 3" in out or "raising the priority to 3 needs CAP_SYS_NICE" in out), out
