"""Process orchestration of the onboard graph: profiles, node options, the ``rgbt up`` launcher,
the supervisor and its liveness rule, priorities, the recording policy and the systemd unit.

Nothing here imports rclpy at module level: these modules run in the launcher process, in
``rgbt doctor`` and in tests without a ROS 2 installation. The ROS 2 glue that does touch rclpy
lives in :mod:`rgbt.ros`.
"""
