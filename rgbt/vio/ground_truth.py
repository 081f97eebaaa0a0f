"""Ground truth from where users have it: a bag topic, with an optional clock offset.

``ground_truth_from_bag(bag, topic)`` reads ``geometry_msgs/PoseStamped``,
``geometry_msgs/PoseWithCovarianceStamped``, ``nav_msgs/Odometry``,
``geometry_msgs/TransformStamped`` (and ``tf2_msgs/TFMessage`` filtered by child frame) or
``sensor_msgs/NavSatFix`` (converted to a local ENU frame at the first valid fix; positions only).
Stamps are the messages' ``header.stamp`` (int ns). The result is ``T_world_x`` of whatever frame
the topic describes: for the autopilot's pose that is the vehicle body, which rgbt scores as the
IMU (the offset between the two is the autopilot's mounting, not known here; said so in the
report).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import Trajectory
from rgbt.ros.stamps import stamp_to_ns

POSE_TYPES = ("geometry_msgs/msg/PoseStamped", "geometry_msgs/msg/PoseWithCovarianceStamped",
              "nav_msgs/msg/Odometry", "geometry_msgs/msg/TransformStamped", "tf2_msgs/msg/TFMessage",
              "sensor_msgs/msg/NavSatFix")


def _pose_of(msg, msgtype: str):  # type: ignore[no-untyped-def]
    """``(position xyz, quaternion wxyz)`` of a pose-like message."""
    if msgtype == "geometry_msgs/msg/PoseStamped":
        pose = msg.pose
    elif msgtype in ("geometry_msgs/msg/PoseWithCovarianceStamped", "nav_msgs/msg/Odometry"):
        pose = msg.pose.pose
    else:  # TransformStamped
        tr = msg.transform
        return ((tr.translation.x, tr.translation.y, tr.translation.z),
                (tr.rotation.w, tr.rotation.x, tr.rotation.y, tr.rotation.z))
    return ((pose.position.x, pose.position.y, pose.position.z),
            (pose.orientation.w, pose.orientation.x, pose.orientation.y, pose.orientation.z))


def ground_truth_from_bag(bag_path: str | Path, topic: str, *, child_frame: str | None = None,
                          offset_s: float = 0.0) -> Trajectory:
    """The trajectory on ``topic`` of ``bag_path``, stamps shifted by ``offset_s`` (gt clock + offset
    = camera clock). ``child_frame`` selects the transform of a ``/tf`` topic."""
    from rgbt.bag.reader import open_bag

    t, pos, quat, lla = [], [], [], []
    with open_bag(bag_path) as reader:
        if topic not in reader.topics:
            raise EvaluationError(f"{bag_path}: ground-truth topic {topic} not in the bag "
                                  f"(has {sorted(reader.topics)})")
        msgtype = reader.topics[topic].msgtype
        if msgtype not in POSE_TYPES:
            raise EvaluationError(f"{bag_path}: {topic} is {msgtype}: expected one of {', '.join(POSE_TYPES)}")
        if msgtype == "tf2_msgs/msg/TFMessage" and not child_frame:
            raise EvaluationError(f"{bag_path}: {topic} is a /tf topic: name the child frame to follow")
        for rec in reader.messages(topics=[topic]):
            m = rec.msg
            if msgtype == "sensor_msgs/msg/NavSatFix":
                if m.status.status < 0 or not np.isfinite([m.latitude, m.longitude, m.altitude]).all():
                    continue  # no fix
                t.append(stamp_to_ns(m.header.stamp))
                lla.append((m.latitude, m.longitude, m.altitude))
                continue
            items = [(tr, "geometry_msgs/msg/TransformStamped") for tr in m.transforms
                     if tr.child_frame_id == child_frame] if msgtype == "tf2_msgs/msg/TFMessage" else [(m, msgtype)]
            for item, kind in items:
                p, q = _pose_of(item, kind)
                t.append(stamp_to_ns(item.header.stamp))
                pos.append(p)
                quat.append(q)
    if not t:
        raise EvaluationError(f"{bag_path}: no usable ground-truth message on {topic}"
                              + (f" for child frame {child_frame}" if child_frame else ""))
    if lla:
        from rgbt.sim.geo import lla_to_enu

        a = np.asarray(lla)
        pos = lla_to_enu(a, tuple(a[0]))
        quat = np.tile([1.0, 0.0, 0.0, 0.0], (len(a), 1))  # NavSatFix has no orientation: positions only
    t_ns = np.asarray(t, dtype=np.int64) + int(round(offset_s * 1e9))
    order = np.argsort(t_ns, kind="stable")
    t_ns, pos, quat = t_ns[order], np.asarray(pos)[order], np.asarray(quat)[order]
    keep = np.r_[True, np.diff(t_ns) > 0]  # repeated stamps: keep the first
    return Trajectory(t_ns[keep], pos[keep], quat[keep], name=f"{bag_path}:{topic}")
