"""Trajectory + IMU consistency: dead reckoning the noise-free IMU reproduces the ground truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation

from rgbt.errors import ConfigError
from rgbt.sim import SimOptions, SimStack
from rgbt.sim.trajectory import load_trajectory, load_tum


def dead_reckon(t_ns: np.ndarray, gyro: np.ndarray, accel: np.ndarray, T0: np.ndarray, v0: np.ndarray,
                g: float) -> np.ndarray:
    """Strapdown integration (RK4 on cubic interpolants of the samples); returns positions (N x 3)."""
    t = (t_ns - t_ns[0]) * 1e-9
    w, f = CubicSpline(t, gyro), CubicSpline(t, accel)
    gvec = np.array([0.0, 0.0, -g])

    def deriv(tt: float, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        qn = q / np.linalg.norm(q)
        R = Rotation.from_quat(qn).as_matrix()
        wx, wy, wz = w(tt)
        x, y, z, s = qn
        dq = 0.5 * np.array([s * wx + y * wz - z * wy, s * wy + z * wx - x * wz, s * wz + x * wy - y * wx,
                             -x * wx - y * wy - z * wz])
        return dq, R @ f(tt) + gvec, v

    q, v, p = Rotation.from_matrix(T0[:3, :3]).as_quat(), v0.astype(float).copy(), T0[:3, 3].astype(float).copy()
    out = [p.copy()]
    for k in range(len(t) - 1):
        h, t0 = t[k + 1] - t[k], t[k]
        k1 = deriv(t0, q, v)
        k2 = deriv(t0 + h / 2, q + h / 2 * k1[0], v + h / 2 * k1[1])
        k3 = deriv(t0 + h / 2, q + h / 2 * k2[0], v + h / 2 * k2[1])
        k4 = deriv(t0 + h, q + h * k3[0], v + h * k3[1])
        q = q + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        q /= np.linalg.norm(q)
        p = p + h / 6 * (k1[2] + 2 * k2[2] + 2 * k3[2] + k4[2])
        v = v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        out.append(p.copy())
    return np.asarray(out)


def test_dead_reckoning_10s_within_1cm(duck_tum: Path) -> None:
    sim = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=10.0, start_s=8.0, noise=False,
                              cameras=[]))
    imu = [s for s in sim.samples(["imu"])]
    t = np.array([s.t_ns for s in imu])
    gyro = np.array([s.data.gyro_rad_s for s in imu])
    accel = np.array([s.data.accel_m_s2 for s in imu])
    gt_t, gt_T = sim.ground_truth()
    assert np.array_equal(gt_t, t)
    v0 = sim.trajectory.velocity(sim.trajectory.tau(t[:1]))[0]
    p = dead_reckon(t, gyro, accel, gt_T[0], v0, sim.stack.imu.noise.g_norm)
    err = np.linalg.norm(p - gt_T[:, :3, 3], axis=1)
    travelled = np.linalg.norm(np.diff(gt_T[:, :3, 3], axis=0), axis=1).sum()
    assert travelled > 20.0  # the drone really moves over these 10 s
    assert (t[-1] - t[0]) * 1e-9 > 9.99
    assert err.max() < 0.01, f"dead-reckoning error {err.max():.4f} m after {travelled:.1f} m"


def test_noisy_imu_drifts_but_stays_plausible(duck_tum: Path) -> None:
    """With the VN-100 noise model the same integration drifts (the noise is really there)."""
    clean = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=2.0, start_s=8.0, noise=False, cameras=[]))
    noisy = SimStack(SimOptions(trajectory=str(duck_tum), duration_s=2.0, start_s=8.0, noise=True, cameras=[]))
    a = np.array([s.data.accel_m_s2 for s in clean.samples(["imu"])])
    b = np.array([s.data.accel_m_s2 for s in noisy.samples(["imu"])])
    diff = b - a
    acc_n = clean.stack.imu.noise.acc_n
    white_sigma = acc_n * np.sqrt(clean.stack.imu.rate_hz)
    detrended = diff - diff.mean(axis=0)
    assert 0.5 * white_sigma < detrended.std() < 2.0 * white_sigma


def test_hover_level_reads_gravity() -> None:
    """A level (pitch 0), hovering IMU reads +g on z and ~0 rotation (the IMU measures specific force, so gravity reads +g)."""
    traj = load_trajectory("hover", duration_s=5.0, start_s=0.0, altitude_m=10.0, speed_m_s=5.0,
                           camera_pitch_deg=0.0, g_norm=9.81)
    ideal = traj.imu_ideal(np.linspace(1.0, 4.0, 50))
    assert np.allclose(ideal.accel[:, 2], 9.81, atol=0.05)
    assert np.abs(ideal.accel[:, :2]).max() < 0.05
    assert np.abs(ideal.gyro).max() < 0.05


def test_attitude_follows_velocity(duck_tum: Path) -> None:
    traj = load_trajectory(str(duck_tum), duration_s=20.0, start_s=0.0, altitude_m=None, speed_m_s=5.0,
                           camera_pitch_deg=30.0, g_norm=9.81)
    tau = np.linspace(8.0, 18.0, 40)
    v = traj.velocity(tau)
    fwd = traj.R_world_vehicle(tau)[:, :, 0]
    fast = np.hypot(v[:, 0], v[:, 1]) > 2.0
    cos = np.einsum("ni,ni->n", fwd[fast, :2], v[fast, :2]) / np.linalg.norm(v[fast, :2], axis=1)
    assert fast.sum() > 10 and np.all(cos > 0.7)
    # the optical axis of every camera looks down by about the mount pitch when level
    R_imu = traj.R_world_imu(tau)
    assert np.all(R_imu[:, 2, 0] < -0.2)  # IMU +x (camera axis) points below the horizon


def test_tum_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("# t x y z qx qy qz qw\n1.0 0 0 0 0 0 0 1\n2.0 0 0 zero 0 0 0 1\n")
    with pytest.raises(ConfigError, match="line 3"):
        load_tum(bad)
    with pytest.raises(ConfigError, match="readable"):
        load_tum(tmp_path / "missing.txt")


def test_duration_beyond_trajectory_is_rejected(duck_tum: Path) -> None:
    with pytest.raises(ConfigError, match="duration_s"):
        SimStack(SimOptions(trajectory=str(duck_tum), duration_s=24.0, start_s=5.0, cameras=[]))
    with pytest.raises(ConfigError, match="trajectory"):
        SimStack(SimOptions(trajectory="spiral", duration_s=1.0, cameras=[]))
