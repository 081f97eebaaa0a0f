"""Smooth vehicle trajectories with a plausible attitude, and the ideal IMU readings along them.

Frames (ENU world, z up):

* ``V`` vehicle body, FLU (x forward, y left, z up), what the autopilot reports as its pose.
* ``imu`` the VN-100 frame. The sensor head (IMU + cameras, rigid per the stack's ``T_imu_cam``) is
  mounted on the vehicle pitched down by ``camera_pitch_deg``: ``T_V_imu = Ry(pitch)``. The CART
  ``T_imu_cam`` has the optical axes along IMU +x, so the cameras look forward and down by ``pitch``.

Position: a quintic smoothing spline through the samples (TUM ground truth, position only, or a
parametric path), so acceleration and its derivative are continuous. Attitude (differential
flatness of a multirotor, "coordinated flight"): body z along the specific force ``a - g``; yaw
along the horizontal velocity (held while slower than 1 m/s), low-pass filtered and splined. The
ideal IMU is analytic from the spline: specific force ``f = R_w_imu^T (a - g)``, angular rate from
the attitude's central difference (step 1e-4 s, error ~1e-9 rad/s).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.interpolate import UnivariateSpline
from scipy.ndimage import gaussian_filter1d
from scipy.spatial.transform import Rotation

from rgbt.errors import ConfigError
from rgbt.sim.options import PARAMETRIC_PATHS

PARAMETRIC_EPOCH_S = 1_700_000_000  # start time of parametric paths (Unix seconds)
_H = 1e-4  # central-difference step for angular rate (s)


def load_tum(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read a TUM trajectory: ``(t_s float64 N, xyz N x 3)``; quaternions are ignored (position only)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise ConfigError(str(path), "<file>", None, f"a readable TUM trajectory ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), f"byte {exc.start}", "binary data", "a text TUM trajectory") from None
    rows = []
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        parts = s.replace(",", " ").split()
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 8 or not np.all(np.isfinite(values)):
            raise ConfigError(str(path), f"line {n}", s[:80], "8 finite numbers: t tx ty tz qx qy qz qw")
        rows.append(values)
    if len(rows) < 10:
        raise ConfigError(str(path), "<rows>", len(rows), "at least 10 poses")
    a = np.asarray(rows, dtype=np.float64)
    order = np.argsort(a[:, 0], kind="stable")
    a = a[order]
    keep = np.concatenate([[True], np.diff(a[:, 0]) > 1e-6])
    return a[keep, 0], a[keep, 1:4]


def _rot_y(angle_rad: float) -> np.ndarray:
    c, s = np.cos(angle_rad), np.sin(angle_rad)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


@dataclass
class ImuIdeal:
    gyro: np.ndarray  # N x 3 rad/s, IMU frame
    accel: np.ndarray  # N x 3 m/s^2 specific force, IMU frame


class Trajectory:
    """A smooth trajectory. Times are int ns on the trajectory's own clock (TUM: Unix time)."""

    def __init__(self, t_s: np.ndarray, xyz: np.ndarray, *, name: str, camera_pitch_deg: float,
                 g_norm: float = 9.81, smoothing_m: float = 0.02) -> None:
        self.name = name
        self.g_norm = float(g_norm)
        self.t_ref_ns = int(round(float(t_s[0]) * 1e9))
        tau = (t_s - t_s[0]).astype(np.float64)
        self.begin_s, self.end_s = 0.0, float(tau[-1])
        n = len(tau)
        self._pos = [UnivariateSpline(tau, xyz[:, i], k=5, s=n * smoothing_m ** 2) for i in range(3)]
        self._vel = [s.derivative(1) for s in self._pos]
        self._acc = [s.derivative(2) for s in self._pos]
        # yaw along the horizontal velocity, held while slow, low-pass filtered (sigma 0.5 s)
        dense = np.arange(0.0, tau[-1] + 1e-9, 0.02)
        v = np.stack([f(dense) for f in self._vel], -1)
        speed = np.hypot(v[:, 0], v[:, 1])
        heading = np.arctan2(v[:, 1], v[:, 0])
        fast = speed > 1.0
        if fast.any():
            idx = np.where(fast, np.arange(len(dense)), 0)
            np.maximum.accumulate(idx, out=idx)
            first = int(np.argmax(fast))
            idx[:first] = first
            heading = np.unwrap(heading[idx])
        else:
            heading = np.zeros_like(dense)
        heading = gaussian_filter1d(heading, 0.5 / 0.02, mode="nearest")
        self._yaw = UnivariateSpline(dense, heading, k=5, s=len(dense) * 1e-6)
        self.R_V_imu = _rot_y(np.deg2rad(camera_pitch_deg))

    # -- kinematics (tau: seconds since t_ref, float array) --------------------------------------------
    def tau(self, t_ns: np.ndarray | int) -> np.ndarray:
        return (np.asarray(t_ns, dtype=np.int64) - self.t_ref_ns).astype(np.float64) * 1e-9

    def position(self, tau: np.ndarray) -> np.ndarray:
        return np.stack([f(tau) for f in self._pos], -1)

    def velocity(self, tau: np.ndarray) -> np.ndarray:
        return np.stack([f(tau) for f in self._vel], -1)

    def acceleration(self, tau: np.ndarray) -> np.ndarray:
        return np.stack([f(tau) for f in self._acc], -1)

    def R_world_vehicle(self, tau: np.ndarray) -> np.ndarray:
        """N x 3 x 3 vehicle attitude: z along the specific force, x toward the yaw heading."""
        tau = np.atleast_1d(np.asarray(tau, dtype=np.float64))
        f = self.acceleration(tau)
        f[:, 2] += self.g_norm
        z = f / np.linalg.norm(f, axis=-1, keepdims=True)
        yaw = self._yaw(tau)
        xc = np.stack([np.cos(yaw), np.sin(yaw), np.zeros_like(yaw)], -1)
        y = np.cross(z, xc)
        y /= np.linalg.norm(y, axis=-1, keepdims=True)
        x = np.cross(y, z)
        return np.stack([x, y, z], -1)

    def R_world_imu(self, tau: np.ndarray) -> np.ndarray:
        return self.R_world_vehicle(tau) @ self.R_V_imu

    def T_world_imu(self, tau: np.ndarray) -> np.ndarray:
        tau = np.atleast_1d(np.asarray(tau, dtype=np.float64))
        T = np.tile(np.eye(4), (len(tau), 1, 1))
        T[:, :3, :3] = self.R_world_imu(tau)
        T[:, :3, 3] = self.position(tau)
        return T

    def T_world_vehicle(self, tau: np.ndarray) -> np.ndarray:
        tau = np.atleast_1d(np.asarray(tau, dtype=np.float64))
        T = np.tile(np.eye(4), (len(tau), 1, 1))
        T[:, :3, :3] = self.R_world_vehicle(tau)
        T[:, :3, 3] = self.position(tau)
        return T

    def imu_ideal(self, tau: np.ndarray) -> ImuIdeal:
        """Noise-free IMU readings (IMU frame): angular rate and specific force ``R^T (a - g)``."""
        tau = np.atleast_1d(np.asarray(tau, dtype=np.float64))
        R = self.R_world_imu(tau)
        f = self.acceleration(tau)
        f[:, 2] += self.g_norm
        accel = np.einsum("nji,nj->ni", R, f)
        Rm, Rp = self.R_world_imu(tau - _H), self.R_world_imu(tau + _H)
        gyro = Rotation.from_matrix(np.transpose(Rm, (0, 2, 1)) @ Rp).as_rotvec() / (2 * _H)
        return ImuIdeal(gyro=gyro, accel=accel)


def parametric_samples(name: str, duration_s: float, altitude_m: float, speed_m_s: float
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Positions at 20 Hz of a parametric path: ``circle`` (r = 40 m, +-2 m height wave),
    ``lawnmower`` (80 m legs 20 m apart, semicircle turns) or ``hover`` (slow 0.5 m wander)."""
    t = np.arange(0.0, duration_s + 10.0, 0.05)
    if name == "circle":
        r = 40.0
        w = speed_m_s / r
        xyz = np.stack([r * np.cos(w * t), r * np.sin(w * t), altitude_m + 2.0 * np.sin(2 * np.pi * t / 20.0)], -1)
    elif name == "lawnmower":
        leg, r = 80.0, 10.0
        period = 2 * leg + 2 * np.pi * r  # one out-and-back: two legs and two half turns
        s = (speed_m_s * t) % period
        k = np.floor(speed_m_s * t / period)
        xyz = np.zeros((len(t), 3))
        for i, (si, ki) in enumerate(zip(s, k, strict=False)):
            base_y = 4 * r * ki
            if si < leg:
                p = (si, base_y)
            elif si < leg + np.pi * r:
                a = (si - leg) / r
                p = (leg + r * np.sin(a), base_y + r - r * np.cos(a))
            elif si < 2 * leg + np.pi * r:
                p = (leg - (si - leg - np.pi * r), base_y + 2 * r)
            else:
                a = (si - 2 * leg - np.pi * r) / r
                p = (-r * np.sin(a), base_y + 3 * r - r * np.cos(a))
            xyz[i, :2] = p
        xyz[:, 2] = altitude_m
    elif name == "hover":
        xyz = np.stack([0.5 * np.sin(0.3 * t), 0.5 * np.sin(0.21 * t + 1.0), altitude_m + 0.3 * np.sin(0.17 * t)], -1)
    else:
        raise ConfigError("<options>", "trajectory", name, "a TUM file or one of circle, lawnmower, hover")
    return t + PARAMETRIC_EPOCH_S, xyz


def load_trajectory(spec: str, *, duration_s: float, start_s: float, altitude_m: float | None,
                    speed_m_s: float, camera_pitch_deg: float, g_norm: float) -> Trajectory:
    """A TUM file (ground plane ``altitude_m`` below its lowest point; default 1 m) or a parametric path
    (flying ``altitude_m`` above ground; default 20 m). The world frame has the ground at z = 0."""
    if spec in PARAMETRIC_PATHS:
        t, xyz = parametric_samples(spec, start_s + duration_s, altitude_m or 20.0, speed_m_s)
        traj = Trajectory(t, xyz, name=spec, camera_pitch_deg=camera_pitch_deg, g_norm=g_norm,
                          smoothing_m=0.002)
    else:
        t, xyz = load_tum(spec)
        xyz = xyz.copy()
        xyz[:, 2] -= xyz[:, 2].min() - (altitude_m if altitude_m is not None else 1.0)
        traj = Trajectory(t, xyz, name=Path(spec).stem, camera_pitch_deg=camera_pitch_deg, g_norm=g_norm)
    if start_s + duration_s > traj.end_s + 1e-9:
        raise ConfigError(spec, "duration_s", duration_s,
                          f"start_s + duration_s <= {traj.end_s:.3f} s (the trajectory's length)")
    return traj
