"""``ros2 launch`` entry for real ROS 2 installs: ``ros2 launch launch/rgbt.launch.py profile:=flight``.

Reads the same profile YAML as ``rgbt up`` through :func:`rgbt.ros.profile.launch_entries`, so both
start the same nodes with the same parameters (tested in tests/ros/test_profiles.py).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from rgbt.ros.profile import launch_entries, launch_environment


def _nodes(context, *args, **kwargs):
    profile = LaunchConfiguration("profile").perform(context)
    actions = [SetEnvironmentVariable(name, value) for name, value in launch_environment(profile).items()]
    for entry in launch_entries(profile):
        actions.append(Node(package=entry["package"], executable=entry["executable"], name=entry["name"],
                            parameters=[entry["parameters"]], output="screen"))
    return actions


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("profile", default_value="flight", description="launch/<profile>.yaml or a path"),
        OpaqueFunction(function=_nodes),
    ])
