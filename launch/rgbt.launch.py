"""``ros2 launch`` entry for real ROS 2 installs: ``ros2 launch launch/rgbt.launch.py profile:=flight``.

Starts the same process layout as ``rgbt up``: one ``python -m rgbt.ros.spin --node NAME:EXE ...``
process per profile process group (nodes of a group share one executor), with the command lines
from :func:`rgbt.ros.launcher.group_commands` and the parameters written from the validated profile
(tested in tests/ros/test_launch_file.py). One process per group, not one per node: on the 2-core
onboard computers a process per node costs a DDS participant and an interpreter each.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration

from rgbt.ros.launcher import group_commands, write_params_file
from rgbt.ros.profile import launch_environment, node_specs


def _groups(context, *args, **kwargs):
    profile = LaunchConfiguration("profile").perform(context)
    specs = node_specs(profile)
    params = write_params_file(specs)
    actions = [SetEnvironmentVariable(name, value) for name, value in launch_environment(profile).items()]
    for group, cmd in group_commands(specs, params).items():
        actions.append(ExecuteProcess(cmd=cmd, name=group, output="screen", sigterm_timeout="15"))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("profile", default_value="flight", description="launch/<profile>.yaml or a path"),
        OpaqueFunction(function=_groups),
    ])
