"""rclpy glue shared by the nodes in ``nodes/``: QoS, images, CDR stamps, options, diagnostics, spin loop.

Only this sub-package (and ``nodes/``) imports rclpy. Modules that must work without rclpy
(profiles, options, the ``rgbt up`` launcher) say so in their docstring and never import it.
"""
