"""QoS profiles by name, and the topics whose QoS is fixed (:data:`TOPIC_QOS`).

Sensor streams use the sensor-data profile (best effort, keep last 5); recorder and VIO-bridge
outputs are reliable. Every node takes ``input_qos`` / ``output_qos`` options naming one of
:data:`QOS_NAMES`. A topic in :data:`TOPIC_QOS` is published *and* subscribed with its profile
(:func:`topic_qos`) by every node, and the recorder stores it as the topic's offered QoS in the
bag (rosbag2 ``offered_qos_profiles``), so ``ros2 bag play`` republishes ``/rgbt/armed`` latched.
"""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from rgbt.topics import ARMED_TOPIC

QOS_NAMES = ("sensor_data", "reliable", "latched")

#: topic -> the QoS profile name both ends use (a transient-local subscriber needs a transient-local
#: publisher; a reliable subscriber a reliable publisher); other topics follow the nodes' options
TOPIC_QOS: dict[str, str] = {
    ARMED_TOPIC: "latched",  # the armed state: a late subscriber (a restarted recorder) gets it at once
    "/diagnostics": "reliable",
}


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


def topic_qos(topic: str, default: str = "sensor_data", depth: int | None = None) -> QoSProfile:
    """The profile of ``topic`` from :data:`TOPIC_QOS`, else the profile named ``default``."""
    return qos_profile(TOPIC_QOS.get(topic, default), depth)


def qos_to_yaml(profile: QoSProfile) -> str:
    """rosbag2 ``offered_qos_profiles`` YAML of a publisher's profile (stored in bag metadata)."""
    rel = 1 if profile.reliability == ReliabilityPolicy.RELIABLE else 2
    dur = 1 if profile.durability == DurabilityPolicy.TRANSIENT_LOCAL else 2
    return (f"- history: 3\n  depth: 0\n  reliability: {rel}\n  durability: {dur}\n"
            "  deadline:\n    sec: 2147483647\n    nsec: 4294967295\n"
            "  lifespan:\n    sec: 2147483647\n    nsec: 4294967295\n"
            "  liveliness: 1\n  liveliness_lease_duration:\n    sec: 2147483647\n    nsec: 4294967295\n"
            "  avoid_ros_namespace_conventions: false\n")
