"""ATE / alignment / RPE: evo's published number, constructed alignment cases, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import run_rgbt
from rgbt.errors import EvaluationError
from rgbt.eval import Trajectory, ate, load_trajectory
from rgbt.eval.align import align_posyaw, align_umeyama
from rgbt.eval.ate import associate, final_drift_percent, rpe_per_distance


def _rz(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def _curve(n: int = 400, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 20, n)
    return np.c_[10 * np.cos(0.3 * t), 6 * np.sin(0.5 * t), 2 + 0.5 * np.sin(t)] + rng.normal(0, 0.01, (n, 3))


def _traj(xyz: np.ndarray, t0_ns: int = 1_000_000_000, name: str = "t") -> Trajectory:
    n = len(xyz)
    return Trajectory(t0_ns + np.arange(n, dtype=np.int64) * 50_000_000, xyz, np.tile([1.0, 0, 0, 0], (n, 1)), name=name)


def test_fr2_desk_se3_matches_evo_published(fixtures_dir):
    ref = load_trajectory(fixtures_dir / "trajectories" / "fr2_desk_groundtruth.tum")
    est = load_trajectory(fixtures_dir / "trajectories" / "fr2_desk_ORB.tum")
    result = ate(ref, est, align="se3", max_diff_s=0.01)
    assert result.rmse == pytest.approx(0.008119, abs=1e-6)
    assert result.mean == pytest.approx(0.007492, abs=1e-6)
    assert result.scale == 1.0
    # Sim3 can only fit better than SE3.
    assert ate(ref, est, align="sim3").rmse < result.rmse


def test_cli_ate_json(fixtures_dir):
    d = fixtures_dir / "trajectories"
    out = run_rgbt("vio", "ate", "--ref", d / "fr2_desk_groundtruth.tum", "--est", d / "fr2_desk_ORB.tum",
                   "--align", "se3", "--json").stdout
    data = json.loads(out)
    assert set(data) >= {"rmse", "mean", "median", "max", "n_pairs", "scale"}
    assert data["rmse"] == pytest.approx(0.008119, abs=1e-6)
    assert data["n_pairs"] > 2000


def test_posyaw_recovers_known_yaw_and_translation_exactly():
    ref = _curve()
    yaw, t = 0.7312, np.array([12.5, -3.25, 0.8])
    est = (ref - t) @ _rz(yaw)  # est = Rz(yaw)^T (ref - t)  =>  ref = Rz(yaw) est + t
    rot, trans, s = align_posyaw(ref, est)
    assert np.allclose(rot, _rz(yaw), atol=1e-12)
    assert np.allclose(trans, t, atol=1e-10)
    assert s == 1.0
    result = ate(_traj(ref), _traj(est), align="posyaw")
    assert result.rmse < 1e-10
    # Without alignment the error is large: the test can fail.
    assert ate(_traj(ref), _traj(est), align="none").rmse > 1.0


def test_posyaw_equals_se3_on_yaw_only_case_with_noise():
    rng = np.random.default_rng(3)
    ref = _curve(seed=1)
    est = (ref - np.array([1.0, 2.0, -0.5])) @ _rz(-1.1) + rng.normal(0, 0.05, ref.shape)
    r4, t4, _ = align_posyaw(ref, est)
    r6, t6, _ = align_umeyama(ref, est, with_scale=False)
    assert np.allclose(r4, r6, atol=2e-3)
    assert np.allclose(t4, t6, atol=2e-2)
    a4 = ate(_traj(ref), _traj(est), align="posyaw").rmse
    a6 = ate(_traj(ref), _traj(est), align="se3").rmse
    assert a6 <= a4 + 1e-12  # SE3 has more freedom
    assert a4 == pytest.approx(a6, rel=2e-2)


def test_posyaw_cannot_absorb_roll():
    ref = _curve()
    roll = np.array([[1, 0, 0], [0, np.cos(0.3), -np.sin(0.3)], [0, np.sin(0.3), np.cos(0.3)]])
    est = ref @ roll.T
    assert ate(_traj(ref), _traj(est), align="se3").rmse < 1e-9
    assert ate(_traj(ref), _traj(est), align="posyaw").rmse > 0.1


def test_sim3_recovers_scale():
    ref = _curve()
    est = 0.37 * ref @ _rz(0.4).T + 5.0
    result = ate(_traj(ref), _traj(est), align="sim3")
    assert result.rmse < 1e-9
    assert result.scale == pytest.approx(1 / 0.37, rel=1e-9)


def test_rpe_and_final_drift_on_constructed_drift():
    ref = _curve(n=800)
    drift = np.linspace(0, 1, len(ref))[:, None] * np.array([2.0, 0, 0])  # 2 m drift at the end
    pairs = associate(_traj(ref), _traj(ref + drift))
    pct = final_drift_percent(pairs.ref, pairs.est, align="none")
    assert pct == pytest.approx(100 * 2.0 / _traj(ref).path_length(), rel=1e-9)
    rpe = rpe_per_distance(pairs.ref, pairs.est, delta_m=10.0, align="se3")
    assert rpe["n_pairs"] > 3 and 0 < rpe["rmse"] < 2.0


def test_tum_duplicate_stamp_dropped_and_decreasing_rejected(tmp_path):
    good = tmp_path / "dup.tum"
    good.write_text("1.0 0 0 0 0 0 0 1\n1.0 5 5 5 0 0 0 1\n2.0 1 0 0 0 0 0 1\n")
    traj = load_trajectory(good)
    assert len(traj) == 2 and traj.duplicates_dropped == 1 and traj.positions[0, 0] == 0.0
    bad = tmp_path / "back.tum"
    bad.write_text("1.0 0 0 0 0 0 0 1\n3.0 0 0 0 0 0 0 1\n2.0 0 0 0 0 0 0 1\n")
    with pytest.raises(EvaluationError, match="not strictly increasing"):
        load_trajectory(bad)


def test_bad_input_errors(tmp_path):
    with pytest.raises(EvaluationError, match="not found"):
        load_trajectory(tmp_path / "missing.tum")
    empty = tmp_path / "empty.tum"
    empty.write_text("# only a comment\n")
    with pytest.raises(EvaluationError, match="empty"):
        load_trajectory(empty)
    short = tmp_path / "short.tum"
    short.write_text("1.0 0 0 0\n")
    with pytest.raises(EvaluationError, match="columns"):
        load_trajectory(short)
    a = _traj(_curve(50), t0_ns=0)
    b = _traj(_curve(50), t0_ns=1000 * 10**9)
    with pytest.raises(EvaluationError, match="no time overlap"):
        ate(a, b)


def test_cli_bad_input_exit_2(tmp_path):
    empty = tmp_path / "e.tum"
    empty.write_text("")
    proc = run_rgbt("vio", "ate", "--ref", empty, "--est", empty, "--json", check=False)
    assert proc.returncode == 2 and "empty" in proc.stderr


def test_euroc_and_kitti_loaders_agree(tmp_path):
    xyz = _curve(30)
    t = 1_600_000_000_000_000_000 + np.arange(30) * 50_000_000
    csv = tmp_path / "gt.csv"
    csv.write_text("#timestamp [ns],p_x,p_y,p_z,q_w,q_x,q_y,q_z\n" +
                   "".join(f"{ti},{p[0]},{p[1]},{p[2]},1,0,0,0\n" for ti, p in zip(t, xyz)))
    orb = tmp_path / "orb.txt"
    orb.write_text("".join(f"{ti} {p[0]} {p[1]} {p[2]} 0 0 0 1\n" for ti, p in zip(t, xyz)))
    kitti = tmp_path / "kitti.txt"
    kitti.write_text("".join(f"1 0 0 {p[0]} 0 1 0 {p[1]} 0 0 1 {p[2]}\n" for p in xyz))
    a, b = load_trajectory(csv, "euroc"), load_trajectory(orb, "euroc")
    k = load_trajectory(kitti, "kitti", kitti_rate_hz=20.0)
    assert np.array_equal(a.t_ns, t) and np.array_equal(b.t_ns, t)
    assert np.allclose(a.positions, xyz) and np.allclose(k.positions, xyz)
    assert np.allclose(b.quat_wxyz, [[1, 0, 0, 0]] * 30)


def test_rpe_longer_than_the_path_is_a_clear_error():
    ref = _curve(n=50)
    pairs = associate(_traj(ref), _traj(ref))
    with pytest.raises(EvaluationError, match="RPE over 1000"):
        rpe_per_distance(pairs.ref, pairs.est, delta_m=1000.0)
