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
from typing import Any

import numpy as np

from rgbt.bag.reader import open_bag
from rgbt.errors import EvaluationError
from rgbt.eval.align import align as fit_alignment
from rgbt.eval.trajectory import Trajectory
from rgbt.geo import lla_to_enu
from rgbt.stamps import stamp_to_ns

POSE_TYPES = ("geometry_msgs/msg/PoseStamped", "geometry_msgs/msg/PoseWithCovarianceStamped",
              "nav_msgs/msg/Odometry", "geometry_msgs/msg/TransformStamped", "tf2_msgs/msg/TFMessage",
              "sensor_msgs/msg/NavSatFix")


def _pose_of(msg: Any, msgtype: str) -> tuple[tuple[float, float, float], tuple[float, float, float, float]]:
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
    t: list[int] = []
    pos: list = []
    quat: list = []
    lla: list = []
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
        a = np.asarray(lla)
        pos_a = lla_to_enu(a, tuple(a[0]))
        quat_a = np.tile([1.0, 0.0, 0.0, 0.0], (len(a), 1))  # NavSatFix has no orientation: positions only
    else:
        pos_a, quat_a = np.asarray(pos), np.asarray(quat)
    t_ns = np.asarray(t, dtype=np.int64) + int(round(offset_s * 1e9))
    order = np.argsort(t_ns, kind="stable")
    t_ns, pos_a, quat_a = t_ns[order], pos_a[order], quat_a[order]
    keep = np.r_[True, np.diff(t_ns) > 0]  # repeated stamps: keep the first
    return Trajectory(t_ns[keep], pos_a[keep], quat_a[keep], name=f"{bag_path}:{topic}")


# --- clock offset between the ground truth and the camera ----------------------------------------

#: how far ``--gt-offset auto`` searches either side of zero (s)
OFFSET_SEARCH_S = 1.0
#: the estimate is applied only if the ATE at ±SHARPNESS_S from it is MIN_RISE (relative) higher
SHARPNESS_S = 0.1
MIN_RISE = 0.05


def shift_ground_truth(gt: Trajectory, offset_s: float) -> Trajectory:
    """``gt`` with ``offset_s`` seconds added to its stamps (to put them on the camera clock)."""
    if not offset_s:
        return gt
    return Trajectory(gt.t_ns + int(round(offset_s * 1e9)), gt.positions, gt.quat_wxyz, name=gt.name)


def estimate_time_offset(t_ns: np.ndarray, est_xyz: np.ndarray, gt: Trajectory, align: str = "sim3",
                         search_s: float = OFFSET_SEARCH_S) -> dict:
    """The offset (s, added to the ground-truth stamps) that minimises the ATE RMSE of the estimated
    positions ``est_xyz`` at camera stamps ``t_ns`` after ``align`` alignment: a grid search over
    ``±search_s`` in 10 ms steps, refined in 1 ms steps around the best. Every candidate scores the
    same poses (those whose stamps stay inside the ground truth for every offset searched), so the
    RMSEs compare like with like. Works for positions-only ground truth and without an IMU.

    Returns ``{"offset_s"`` (0 when not determinable), ``"estimate_s", "determinable",
    "ate_rise_at_100ms", "method", "search_s", "poses", "ate_rmse_at_zero", "ate_rmse_at_offset"}``;
    raises :class:`EvaluationError` when fewer than 10 poses can be scored.
    """
    t_ns = np.asarray(t_ns, dtype=np.int64)
    est_xyz = np.asarray(est_xyz, dtype=np.float64).reshape(-1, 3)
    margin = int(round(search_s * 1e9)) + 1
    keep = (t_ns >= gt.t_ns[0] + margin) & (t_ns <= gt.t_ns[-1] - margin)
    if keep.sum() < 10:
        raise EvaluationError(f"ground truth {gt.name}: only {int(keep.sum())} tracked poses lie inside it with "
                              f"±{search_s:g} s to spare: expected >= 10 to estimate the clock offset (give "
                              "--gt-offset S instead)")
    t, est = t_ns[keep], est_xyz[keep]
    gt_t = (gt.t_ns - gt.t_ns[0]).astype(np.float64)

    def rmse(offset_s: float) -> float:
        q = (t - gt.t_ns[0]).astype(np.float64) - offset_s * 1e9
        ref = np.stack([np.interp(q, gt_t, gt.positions[:, k]) for k in range(3)], axis=1)
        rot, tr, s = fit_alignment(ref, est, align)
        return float(np.sqrt(np.mean(np.sum((s * est @ rot.T + tr - ref) ** 2, axis=1))))

    coarse = np.arange(-search_s, search_s + 1e-9, 0.01)
    best = float(coarse[int(np.argmin([rmse(o) for o in coarse]))])
    fine = np.arange(best - 0.01, best + 0.01 + 1e-9, 0.001)
    errs = [rmse(o) for o in fine]
    best = round(float(fine[int(np.argmin(errs))]), 6)
    at_best = float(min(errs))
    # Some motions hide a time shift: along a circle flown at constant speed a shift is a rotation,
    # which the alignment absorbs. Apply the estimate only where the ATE rises clearly around it.
    rise = (0.5 * (rmse(best - SHARPNESS_S) + rmse(best + SHARPNESS_S)) - at_best) / max(at_best, 1e-12)
    determinable = rise >= MIN_RISE
    return {"offset_s": best if determinable else 0.0, "estimate_s": best, "determinable": determinable,
            "ate_rise_at_100ms": float(rise), "search_s": search_s, "poses": int(keep.sum()),
            "at_search_edge": abs(best) >= search_s - 0.01,
            "method": f"grid search of the {align} ATE RMSE of run 0's longest tracked map segment over offsets "
                      f"±{search_s:g} s (10 ms steps, refined in 1 ms steps); applied only if the ATE rises by "
                      f">= {100 * MIN_RISE:g} % {1000 * SHARPNESS_S:g} ms either side"
                      + ("" if determinable else f" (it rose {100 * rise:.1f} %: the offset is not observable on "
                                                 "this motion, 0 s kept; give --gt-offset S)"),
            "ate_rmse_at_zero": rmse(0.0), "ate_rmse_at_offset": at_best}
