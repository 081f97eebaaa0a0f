"""``ros2 launch`` entry for real ROS 2 installs: ``ros2 launch launch/rgbt.launch.py profile:=flight``.

Starts the same process layout as ``rgbt up``: one ``python -m rgbt.ros.spin --node NAME:EXE ...``
process per profile process group (nodes of a group share one executor), with the command lines
from :func:`rgbt.graph.launcher.group_commands` and the parameters written from the validated profile
(tested in tests/ros/test_launch_file.py). One process per group, not one per node: on the 2-core
onboard computers a process per node costs a DDS participant and an interpreter each.

Supervision as in ``rgbt up`` (:class:`rgbt.graph.supervisor.SupervisorOptions` defaults): a group
that exits is respawned after ``backoff_initial_s`` (``launch`` has a fixed delay, no growing
back-off), at most ``max_restarts`` times where this ``launch`` supports ``respawn_max_retries``;
the recorder's group is not respawned and its exit shuts the launch down. ``strict:=true`` turns
respawning off. ``launch`` respawns a clean exit (code 0) too, while ``rgbt up`` leaves it down.

Restarts are counted as ``rgbt up`` counts them: ``OnProcessStart`` / ``OnProcessExit`` handlers of
every group feed :class:`rgbt.graph.launch_restarts.LaunchRestarts`, which writes the supervisor's
status file (``RGBT_SUPERVISOR_STATUS``, set for the children, next to the parameters file); the
recorder reads it into ``/diagnostics`` (``supervisor.restarts``) and each bag manifest's
``restarts``. A group that fails with no respawn left is listed as left down (``gave_up``).
"""

import inspect

from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, ExecuteProcess, LogInfo, OpaqueFunction, RegisterEventHandler,
                            SetEnvironmentVariable, Shutdown)
from launch.event_handlers import OnProcessExit, OnProcessStart
from launch.substitutions import LaunchConfiguration

from rgbt.graph.launch_restarts import LaunchRestarts
from rgbt.graph.launcher import group_commands, recorder_groups, write_params_file
from rgbt.graph.profile import launch_environment, node_specs
from rgbt.graph.supervisor import STATUS_ENV, STATUS_FILE, SupervisorOptions


def _max_retries():
    """``respawn_max_retries`` where this ``launch`` has it, else None (it respawns without limit)."""
    if "respawn_max_retries" in inspect.signature(ExecuteProcess.__init__).parameters:
        return SupervisorOptions().max_restarts
    return None


def _respawn(group, recorders, strict):
    """ExecuteProcess keyword arguments of one group's supervision."""
    if group in recorders:
        return {"on_exit": [Shutdown(reason=f"the recorder's process group {group!r} exited")]}
    if strict:
        return {}
    kw = {"respawn": True, "respawn_delay": SupervisorOptions().backoff_initial_s}
    if _max_retries() is not None:
        kw["respawn_max_retries"] = _max_retries()
    return kw


def _log(message):
    return [LogInfo(msg=message)] if message else None


def _counted(proc, group, restarts):
    """Handlers counting ``proc``'s starts and exits in ``restarts`` (registered before it starts)."""
    def on_start(event, context):
        return _log(restarts.started(group, event.pid))

    def on_exit(event, context):
        return _log(restarts.exited(group, event.returncode, shutting_down=getattr(context, "is_shutdown", False)))

    return [RegisterEventHandler(OnProcessStart(target_action=proc, on_start=on_start)),
            RegisterEventHandler(OnProcessExit(target_action=proc, on_exit=on_exit))]


def _groups(context, *args, **kwargs):
    profile = LaunchConfiguration("profile").perform(context)
    strict = LaunchConfiguration("strict").perform(context).lower() in ("true", "1")
    specs = node_specs(profile)
    params = write_params_file(specs)
    recorders = recorder_groups(specs)
    commands = group_commands(specs, params)
    status = params.parent / STATUS_FILE
    restarts = LaunchRestarts(commands, status, SupervisorOptions().backoff_initial_s,
                              _max_retries(), recorders, strict)
    env = {**launch_environment(profile), STATUS_ENV: str(status)}
    actions = [SetEnvironmentVariable(name, value) for name, value in env.items()]
    for group, cmd in commands.items():
        proc = ExecuteProcess(cmd=cmd, name=group, output="screen", sigterm_timeout="15",
                              **_respawn(group, recorders, strict))
        actions += [*_counted(proc, group, restarts), proc]
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("profile", default_value="flight", description="launch/<profile>.yaml or a path"),
        DeclareLaunchArgument("strict", default_value="false", description="true: no respawn (fail fast)"),
        OpaqueFunction(function=_groups),
    ])
