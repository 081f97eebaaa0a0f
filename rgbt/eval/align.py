"""Trajectory alignment: SE3 / Sim3 (Umeyama, through evo) and 4-DoF position + yaw (closed form).

All functions return ``(R, t, s)`` such that an estimate position ``p`` maps to ``s * R @ p + t`` in
the reference world frame. The 4-DoF alignment assumes both worlds share gravity along z (VIO
worlds are gravity-aligned, so only yaw and translation are unobservable).
"""

from __future__ import annotations

import numpy as np

from rgbt.errors import EvaluationError

ALIGNMENTS = ("se3", "sim3", "posyaw", "none")


def align_posyaw(ref_xyz: np.ndarray, est_xyz: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Least-squares yaw about z + translation mapping ``est_xyz`` onto ``ref_xyz`` (both N x 3).

    Closed form: with centred points a (estimate) and b (reference), the yaw minimising
    sum |b - Rz(yaw) a|^2 is ``atan2(sum(ax*by - ay*bx), sum(ax*bx + ay*by))``; then
    ``t = mean(ref) - Rz @ mean(est)``.
    """
    ref_xyz = np.asarray(ref_xyz, dtype=np.float64)
    est_xyz = np.asarray(est_xyz, dtype=np.float64)
    if ref_xyz.shape != est_xyz.shape or ref_xyz.ndim != 2 or ref_xyz.shape[1] != 3 or len(ref_xyz) < 2:
        raise EvaluationError(f"posyaw alignment needs two N x 3 arrays with N >= 2, got {ref_xyz.shape} "
                              f"and {est_xyz.shape}")
    mu_r, mu_e = ref_xyz.mean(axis=0), est_xyz.mean(axis=0)
    a, b = est_xyz - mu_e, ref_xyz - mu_r
    yaw = np.arctan2(np.sum(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]), np.sum(a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1]))
    c, s = np.cos(yaw), np.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return rot, mu_r - rot @ mu_e, 1.0


def align_umeyama(ref_xyz: np.ndarray, est_xyz: np.ndarray, with_scale: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """SE3 (``with_scale=False``) or Sim3 Umeyama alignment of ``est_xyz`` onto ``ref_xyz`` (evo)."""
    from evo.core.geometry import GeometryException, umeyama_alignment

    if len(ref_xyz) < 3:
        raise EvaluationError(f"{'sim3' if with_scale else 'se3'} alignment needs >= 3 pose pairs, got {len(ref_xyz)}")
    try:
        rot, t, s = umeyama_alignment(np.asarray(est_xyz, float).T, np.asarray(ref_xyz, float).T, with_scale)
    except GeometryException as exc:
        raise EvaluationError(f"alignment failed: {exc}") from exc
    return rot, t, float(s)


def align(ref_xyz: np.ndarray, est_xyz: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Dispatch on ``method`` in :data:`ALIGNMENTS`."""
    if method == "se3":
        return align_umeyama(ref_xyz, est_xyz, with_scale=False)
    if method == "sim3":
        return align_umeyama(ref_xyz, est_xyz, with_scale=True)
    if method == "posyaw":
        return align_posyaw(ref_xyz, est_xyz)
    if method == "none":
        return np.eye(3), np.zeros(3), 1.0
    raise EvaluationError(f"unknown alignment {method!r}: expected one of {ALIGNMENTS}")


def apply_alignment(poses: np.ndarray, rot: np.ndarray, t: np.ndarray, s: float) -> np.ndarray:
    """Apply ``p -> s R p + t`` to N x 4 x 4 poses ``T_world_x`` (rotations become ``R @ R_i``)."""
    out = np.array(poses, dtype=np.float64, copy=True)
    out[:, :3, :3] = rot @ out[:, :3, :3]
    out[:, :3, 3] = s * (out[:, :3, 3] @ rot.T) + t
    return out
