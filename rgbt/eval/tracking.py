"""Scoring an estimator run against ground truth without hand-clipping.

Inputs: per-frame records (stamp, tracked?, pose ``T_world_cam`` in the estimator's map, map index)
and the ground-truth camera trajectory. Outputs:

- ``tracked_fraction``: frames with a tracked pose / all frames of the feed (FFC-skipped included).
- ``ate_tracked[align]``: ATE over tracked frames only; each map segment (poses between resets) is
  aligned on its own (its world frame is its own), errors pooled.
- ``ate_full[align]``: the full-sequence score: every frame of the feed gets a position — its
  aligned estimate when tracked, else the last aligned estimate held (before the first tracked
  frame: the first one), so untracked time costs what standing still would cost.
- ``rpe``: RPE per ``rpe_delta_m`` of travel on the longest segment (Sim3 alignment: scale).
- ``final_drift_percent``: last-pose error of the longest segment after ``drift_align`` over its
  path length.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass

import numpy as np

from rgbt.errors import EvaluationError
from rgbt.eval.align import align as fit_alignment
from rgbt.eval.ate import final_drift_percent, rpe_per_distance
from rgbt.eval.trajectory import Trajectory


@dataclass
class RunFrame:
    """The minimum per frame: ``t_ns``, ``tracked``, ``pose`` T_world_cam or None, ``map`` segment,
    ``ffc`` (frame frozen by FFC: marked in plots)."""

    t_ns: int
    tracked: bool
    pose: np.ndarray | None
    map: int
    ffc: bool = False


def interpolate(traj: Trajectory, t_ns: np.ndarray) -> Trajectory:
    """Positions linearly, orientations by slerp, at ``t_ns`` (inside the trajectory's span)."""
    t_ns = np.asarray(t_ns, dtype=np.int64)
    if len(t_ns) == 0:
        raise EvaluationError("nothing to interpolate")
    if t_ns[0] < traj.t_ns[0] or t_ns[-1] > traj.t_ns[-1]:
        raise EvaluationError(f"stamps [{t_ns[0]}, {t_ns[-1]}] ns outside the ground truth "
                              f"[{traj.t_ns[0]}, {traj.t_ns[-1]}] ns of {traj.name}")
    i = np.clip(np.searchsorted(traj.t_ns, t_ns, side="right") - 1, 0, len(traj) - 2)
    t0, t1 = traj.t_ns[i], traj.t_ns[i + 1]
    w = ((t_ns - t0) / (t1 - t0).astype(np.float64))[:, None]
    pos = (1 - w) * traj.positions[i] + w * traj.positions[i + 1]
    q0, q1 = traj.quat_wxyz[i], traj.quat_wxyz[i + 1].copy()
    dot = np.sum(q0 * q1, axis=1)
    q1[dot < 0] *= -1
    dot = np.abs(dot).clip(-1, 1)
    theta = np.arccos(dot)[:, None]
    small = theta[:, 0] < 1e-6
    s = np.sin(theta)
    s[small] = 1.0
    a = np.where(small[:, None], 1 - w, np.sin((1 - w) * theta) / s)
    b = np.where(small[:, None], w, np.sin(w * theta) / s)
    q = a * q0 + b * q1
    return Trajectory(t_ns, pos, q / np.linalg.norm(q, axis=1, keepdims=True), name=f"{traj.name} (interpolated)")


def _segments(frames: Seq[RunFrame], min_poses: int) -> list[np.ndarray]:
    idx = np.array([i for i, f in enumerate(frames) if f.tracked], dtype=int)
    if not len(idx):
        return []
    maps = np.array([frames[i].map for i in idx])
    return [idx[maps == m] for m in np.unique(maps) if np.sum(maps == m) >= min_poses]


def _stats(err: np.ndarray) -> dict:
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mean": float(np.mean(err)),
            "median": float(np.median(err)), "max": float(np.max(err)), "n": int(err.size)}


def score_run(frames: Seq[RunFrame], gt_camera: Trajectory, aligns: tuple[str, ...] = ("se3", "sim3", "posyaw"),
              min_poses: int = 10, rpe_delta_m: float = 10.0, drift_align: str = "sim3") -> dict:
    """Metrics of one run (see module doc). Raises :class:`EvaluationError` when no frame overlaps
    the ground truth; a run with too few tracked poses gets ``None`` ATEs, never an exception."""
    if not frames:
        raise EvaluationError("estimator output is empty: no frames were fed")
    t_all = np.array([f.t_ns for f in frames], dtype=np.int64)
    if np.any(np.diff(t_all) <= 0):
        raise EvaluationError("estimator frame stamps are not strictly increasing")
    inside = (t_all >= gt_camera.t_ns[0]) & (t_all <= gt_camera.t_ns[-1])
    if not inside.any():
        raise EvaluationError(f"no overlap between the estimator's frames [{t_all[0]}, {t_all[-1]}] ns and the "
                              f"ground truth [{gt_camera.t_ns[0]}, {gt_camera.t_ns[-1]}] ns")
    frames = [f for f, ok in zip(frames, inside, strict=False) if ok]
    t_all = t_all[inside]
    gt_all = interpolate(gt_camera, t_all)
    n = len(frames)
    tracked = np.array([f.tracked for f in frames])
    out: dict = {"n_frames": n, "n_tracked": int(tracked.sum()), "tracked_fraction": float(tracked.mean()),
                 "time_to_init_s": None, "segments": 0, "ate_tracked": {}, "ate_full": {}, "scale": {},
                 "rpe": None, "final_drift_percent": None}
    if tracked.any():
        out["time_to_init_s"] = float((t_all[np.argmax(tracked)] - t_all[0]) / 1e9)
    segs = _segments(frames, min_poses)
    out["segments"] = len(segs)
    out["n_scored"] = int(sum(len(s) for s in segs))
    for method in aligns:
        if not segs:
            out["ate_tracked"][method] = None
            out["ate_full"][method] = None
            continue
        aligned = np.full((n, 3), np.nan)
        scales = []
        for seg in segs:
            est_xyz = np.stack([frames[i].pose[:3, 3] for i in seg])
            rot, t, s = fit_alignment(gt_all.positions[seg], est_xyz, method)
            aligned[seg] = s * est_xyz @ rot.T + t
            scales.append(s)
        scored = ~np.isnan(aligned[:, 0])
        out["ate_tracked"][method] = _stats(np.linalg.norm(aligned[scored] - gt_all.positions[scored], axis=1))
        held = aligned.copy()
        first = int(np.argmax(scored))
        held[:first] = aligned[first]
        for i in range(first + 1, n):
            if not scored[i]:
                held[i] = held[i - 1]
        out["ate_full"][method] = _stats(np.linalg.norm(held - gt_all.positions, axis=1))
        out["scale"][method] = [float(s) for s in scales]
    if segs:
        longest = max(segs, key=len)
        est = Trajectory.from_matrices(t_all[longest], np.stack([frames[i].pose for i in longest]), name="estimate")
        ref = gt_all.slice(longest)
        try:
            out["rpe"] = rpe_per_distance(ref, est, rpe_delta_m, align="sim3")
        except EvaluationError as exc:
            out["rpe"] = {"error": str(exc), "delta_m": rpe_delta_m}
        if ref.path_length() > 0:
            out["final_drift_percent"] = final_drift_percent(ref, est, align=drift_align)
        out["longest_segment_s"] = float((t_all[longest[-1]] - t_all[longest[0]]) / 1e9)
    return out
