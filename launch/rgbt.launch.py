"""``ros2 launch`` entry for real ROS 2 installs: ``ros2 launch launch/rgbt.launch.py profile:=flight``.

Starts the same process layout as ``rgbt up``: one ``python -m rgbt.ros.spin --node NAME:EXE ...``
process per profile process group (nodes of a group share one executor), with the command lines
from :func:`rgbt.ros.launcher.group_commands` and the parameters written from the validated profile
(tested in tests/ros/test_launch_file.py). One process per group, not one per node: on the 2-core
onboard computers a process per node costs a DDS participant and an interpreter each.

Supervision as in ``rgbt up`` (:class:`rgbt.ros.supervisor.SupervisorOptions` defaults): a group
that exits is respawned after ``backoff_initial_s`` (``launch`` has a fixed delay, no growing
back-off), at most ``max_restarts`` times where this ``launch`` supports ``respawn_max_retries``;
the recorder's group is not respawned and its exit shuts the launch down. ``strict:=true`` turns
respawning off. ``launch`` logs each respawn; the restart counts in ``/diagnostics`` and the bag
manifest come from ``rgbt up``'s supervisor only.
"""

import inspect

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, SetEnvironmentVariable, Shutdown
from launch.substitutions import LaunchConfiguration

from rgbt.ros.launcher import group_commands, recorder_groups, write_params_file
from rgbt.ros.profile import launch_environment, node_specs
from rgbt.ros.supervisor import SupervisorOptions


def _respawn(group, recorders, strict):
    """ExecuteProcess keyword arguments of one group's supervision."""
    if group in recorders:
        return {"on_exit": [Shutdown(reason=f"the recorder's process group {group!r} exited")]}
    if strict:
        return {}
    o = SupervisorOptions()
    kw = {"respawn": True, "respawn_delay": o.backoff_initial_s}
    if "respawn_max_retries" in inspect.signature(ExecuteProcess.__init__).parameters:
        kw["respawn_max_retries"] = o.max_restarts
    return kw


def _groups(context, *args, **kwargs):
    profile = LaunchConfiguration("profile").perform(context)
    strict = LaunchConfiguration("strict").perform(context).lower() in ("true", "1")
    specs = node_specs(profile)
    params = write_params_file(specs)
    recorders = recorder_groups(specs)
    actions = [SetEnvironmentVariable(name, value) for name, value in launch_environment(profile).items()]
    for group, cmd in group_commands(specs, params).items():
        actions.append(ExecuteProcess(cmd=cmd, name=group, output="screen", sigterm_timeout="15",
                                      **_respawn(group, recorders, strict)))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("profile", default_value="flight", description="launch/<profile>.yaml or a path"),
        DeclareLaunchArgument("strict", default_value="false", description="true: no respawn (fail fast)"),
        OpaqueFunction(function=_groups),
    ])
