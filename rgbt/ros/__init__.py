"""rclpy glue shared by the nodes in ``nodes/``: QoS, images, the node base class, local topics,
mailboxes and the spin loop.

Only this sub-package (and ``nodes/``) imports rclpy. Orchestration that must work without rclpy
(profiles, options, the ``rgbt up`` launcher, the supervisor) is in :mod:`rgbt.graph`.
"""
