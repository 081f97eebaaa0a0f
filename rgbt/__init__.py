"""rgbt: the onboard runtime for aerial RGB-thermal sensor stacks.

The core (everything in this package except :mod:`rgbt.ros`) never imports rclpy.
Conventions: time is integer nanoseconds, ``T_a_b`` maps points from frame b into frame a.
"""

__version__ = "0.1.0"
