"""ROS 2 nodes of rgbt: one small module per executable, each a thin shell over the ``rgbt`` core.

Every module defines ``NODE`` (an :class:`rgbt.ros.node.RgbtNode` subclass) and ``main()``.
Run one with ``python -m nodes.<name> --ros-args ...``, several in one process with
``python -m rgbt.ros.spin --node NAME:EXECUTABLE ...``, or a whole profile with ``rgbt up``.
"""
