"""QoS profiles by name (DESIGN.md section 3).

Sensor streams use the sensor-data profile (best effort, keep last 5); recorder and VIO-bridge
outputs are reliable. Every node takes ``input_qos`` / ``output_qos`` options naming one of
:data:`QOS_NAMES`.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

QOS_NAMES = ("sensor_data", "reliable", "latched")


def qos_profile(name: str, depth: int | None = None) -> QoSProfile:
    """The QoS profile called ``name``: ``sensor_data`` (best effort, depth 5), ``reliable``
    (reliable, volatile, depth 10) or ``latched`` (reliable, transient local, depth 1)."""
    if name == "sensor_data":
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth or 5,
                          reliability=ReliabilityPolicy.BEST_EFFORT, durability=DurabilityPolicy.VOLATILE)
    if name == "reliable":
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth or 10,
                          reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
    if name == "latched":
        return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth or 1,
                          reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    raise ValueError(f"unknown QoS profile {name!r}, expected one of {QOS_NAMES}")


def qos_to_yaml(profile: QoSProfile) -> str:
    """rosbag2 ``offered_qos_profiles`` YAML for a subscription's profile (stored in bag metadata)."""
    rel = 1 if profile.reliability == ReliabilityPolicy.RELIABLE else 2
    dur = 1 if profile.durability == DurabilityPolicy.TRANSIENT_LOCAL else 2
    return (f"- history: 3\n  depth: 0\n  reliability: {rel}\n  durability: {dur}\n"
            "  deadline:\n    sec: 2147483647\n    nsec: 4294967295\n"
            "  lifespan:\n    sec: 2147483647\n    nsec: 4294967295\n"
            "  liveliness: 1\n  liveliness_lease_duration:\n    sec: 2147483647\n    nsec: 4294967295\n"
            "  avoid_ros_namespace_conventions: false\n")
