"""Scoring runs without hand-clipping: per-map alignment, full-sequence score, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.errors import EvaluationError
from rgbt.eval.trajectory import Trajectory
from rgbt.eval.tracking import RunFrame, interpolate, score_run


def _gt(n: int = 500) -> Trajectory:
    t = 10**18 + np.arange(n, dtype=np.int64) * 10_000_000
    s = np.arange(n) / 100.0
    xyz = np.c_[5 * s, 10 * np.sin(0.3 * s), 30 + np.sin(s)]
    return Trajectory(t, xyz, np.tile([1.0, 0, 0, 0], (n, 1)), name="gt")


def _frames(gt: Trajectory, every: int = 5, scale: float = 0.1, lost: slice | None = None, reset_at: int | None = None):
    frames = []
    for k, i in enumerate(range(0, len(gt), every)):
        pose = np.eye(4)
        pose[:3, 3] = scale * (gt.positions[i] - gt.positions[0])
        m = 0
        if reset_at is not None and k >= reset_at:
            m = 1
            pose[:3, 3] = 0.5 * pose[:3, 3] + 3.0  # another map: other scale and origin
        tracked = not (lost and lost.start <= k < lost.stop)
        frames.append(RunFrame(int(gt.t_ns[i]), tracked, pose if tracked else None, m))
    return frames


def test_perfect_monocular_estimate_scores_zero_with_sim3():
    gt = _gt()
    r = score_run(_frames(gt), gt)
    assert r["tracked_fraction"] == 1.0 and r["segments"] == 1
    assert r["ate_tracked"]["sim3"]["rmse"] < 1e-9
    assert r["scale"]["sim3"][0] == pytest.approx(10.0)
    assert r["ate_tracked"]["se3"]["rmse"] > 1.0  # wrong scale is visible without sim3
    assert r["final_drift_percent"] < 1e-6 and r["time_to_init_s"] == 0.0


def test_track_loss_costs_in_the_full_score_only():
    gt = _gt()
    r = score_run(_frames(gt, lost=slice(40, 70)), gt)
    assert r["tracked_fraction"] == pytest.approx(70 / 100)
    assert r["ate_tracked"]["sim3"]["rmse"] < 1e-9
    full = r["ate_full"]["sim3"]
    assert full["n"] == 100 and full["rmse"] > 1.0  # held position while the vehicle moved on


def test_late_init_held_at_first_estimate():
    gt = _gt()
    r = score_run(_frames(gt, lost=slice(0, 20)), gt)
    assert r["time_to_init_s"] == pytest.approx(20 * 0.05)
    assert r["ate_full"]["sim3"]["max"] > 1.0


def test_each_map_aligned_on_its_own():
    gt = _gt()
    r = score_run(_frames(gt, reset_at=50), gt)
    assert r["segments"] == 2
    assert r["ate_tracked"]["sim3"]["rmse"] < 1e-9
    assert sorted(r["scale"]["sim3"]) == pytest.approx([10.0, 20.0])


def test_interpolation_between_poses():
    gt = _gt()
    mid = (gt.t_ns[:-1] + gt.t_ns[1:]) // 2
    it = interpolate(gt, mid[:10])
    assert np.allclose(it.positions, (gt.positions[:10] + gt.positions[1:11]) / 2)


def test_bad_runs():
    gt = _gt()
    with pytest.raises(EvaluationError, match="empty"):
        score_run([], gt)
    late = [RunFrame(int(gt.t_ns[-1]) + 10**9 * k, True, np.eye(4), 0) for k in range(1, 5)]
    with pytest.raises(EvaluationError, match="no overlap"):
        score_run(late, gt)
    back = [RunFrame(int(gt.t_ns[5]), True, np.eye(4), 0), RunFrame(int(gt.t_ns[2]), True, np.eye(4), 0)]
    with pytest.raises(EvaluationError, match="increasing"):
        score_run(back, gt)
    nothing = [RunFrame(int(t), False, None, 0) for t in gt.t_ns[::10]]
    r = score_run(nothing, gt)  # partial results: no ATE, but the run is reported
    assert r["tracked_fraction"] == 0.0 and r["ate_tracked"]["sim3"] is None
