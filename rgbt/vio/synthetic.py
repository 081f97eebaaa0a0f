"""A small SYNTHETIC scene for bringing up estimators without the full simulator.

A procedural ground texture (fields, roads, trees, warm spots) on the plane z = 0 of a world frame
(z up), viewed by a pinhole camera with ``cv2.warpPerspective``; an analytic flight trajectory gives
exact poses and IMU samples (specific force and angular rate in the IMU body frame). Everything here
is synthetic and labelled so; the real pipeline reads the simulator's bags (``rgbt simulate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

GRAVITY = 9.81


def ground_texture(size_px: int = 4096, seed: int = 0, thermal: bool = True) -> np.ndarray:
    """A square procedural aerial texture: uint16 thermal counts (~7000-9500) or uint8 grey.

    Multi-octave smoothed noise plus polygons (fields), lines (roads) and blobs (trees / warm objects):
    corners at many scales so ORB features exist at every pyramid level.
    """
    rng = np.random.default_rng(seed)
    img = np.zeros((size_px, size_px), np.float32)
    for octave, amp in ((8, 0.35), (32, 0.25), (128, 0.15), (512, 0.08)):
        small = rng.normal(0, 1, (octave, octave)).astype(np.float32)
        img += amp * cv2.resize(small, (size_px, size_px), interpolation=cv2.INTER_CUBIC)
    n_fields = size_px * size_px // 60000
    for _ in range(n_fields):
        c = rng.integers(0, size_px, 2)
        pts = (c + rng.normal(0, size_px / 40, (rng.integers(3, 7), 2))).astype(np.int32)
        cv2.fillPoly(img, [cv2.convexHull(pts)], float(rng.uniform(-0.8, 0.8)))
    for _ in range(size_px // 200):
        p0, p1 = rng.integers(0, size_px, 2), rng.integers(0, size_px, 2)
        cv2.line(img, tuple(map(int, p0)), tuple(map(int, p1)), float(rng.uniform(0.5, 1.2)),
                 int(rng.integers(3, 12)))
    for _ in range(size_px * size_px // 8000):
        c = tuple(map(int, rng.integers(0, size_px, 2)))
        cv2.circle(img, c, int(rng.integers(2, 14)), float(rng.uniform(-1.2, 1.5)), -1)
    img = cv2.GaussianBlur(img, (0, 0), 1.2)
    img = (img - img.min()) / max(float(img.max() - img.min()), 1e-6)
    if thermal:
        return (7000 + 2500 * img).astype(np.uint16)
    return (20 + 215 * img).astype(np.uint8)


@dataclass
class PlaneScene:
    """The textured plane z = 0 (world, z up), centred at the origin, ``metres_per_px`` per texel."""

    texture: np.ndarray
    metres_per_px: float = 0.1

    def render(self, K: np.ndarray, T_world_cam: np.ndarray, width: int, height: int) -> np.ndarray:
        """The image a pinhole camera ``K`` at ``T_world_cam`` sees (same dtype as the texture)."""
        T_cam_world = np.linalg.inv(T_world_cam)
        h, w = self.texture.shape[:2]
        s = self.metres_per_px
        A = np.array([[s, 0, -s * w / 2], [0, s, -s * h / 2], [0, 0, 1.0]])  # texel -> (X, Y, 1)
        P = np.c_[T_cam_world[:3, 0], T_cam_world[:3, 1], T_cam_world[:3, 3]]
        H = K @ P @ A
        return cv2.warpPerspective(self.texture, H, (width, height), flags=cv2.INTER_LINEAR,
                                   borderMode=cv2.BORDER_REFLECT)


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def _rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


@dataclass
class Flight:
    """An analytic, smooth flight over the plane: a lissajous loop at ``altitude_m`` with changing
    speed (so monocular-inertial scale is observable, DESIGN §5b rule 4). The body (IMU) frame is
    x forward, y left, z up, heading along the velocity; the camera looks ``pitch_deg`` below the
    horizon, forward, through ``T_imu_cam``.
    """

    altitude_m: float = 40.0
    radius_m: float = 25.0
    period_s: float = 60.0
    pitch_deg: float = 60.0
    T_imu_cam: np.ndarray = field(default_factory=lambda: np.eye(4))

    def position(self, t: np.ndarray) -> np.ndarray:
        w = 2 * np.pi / self.period_s
        t = np.asarray(t, dtype=np.float64)
        return np.stack([self.radius_m * np.sin(w * t) + 0.15 * self.radius_m * np.sin(3.1 * w * t),
                         0.6 * self.radius_m * np.sin(2 * w * t),
                         self.altitude_m + 2.0 * np.sin(1.7 * w * t)], axis=-1)

    def R_world_imu(self, t: float) -> np.ndarray:
        dt = 1e-3
        v = (self.position(t + dt) - self.position(t - dt)) / (2 * dt)
        yaw = float(np.arctan2(v[1], v[0]))
        return _rot_z(yaw)

    def T_world_imu(self, t: float) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = self.R_world_imu(t)
        T[:3, 3] = self.position(t)
        return T

    def T_world_cam(self, t: float) -> np.ndarray:
        return self.T_world_imu(t) @ self.T_imu_cam

    def imu(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gyro (rad/s) and accelerometer specific force (m/s^2), both in the IMU body frame, at ``t`` (s).

        A level static IMU reads +g on z. Central differences of the analytic trajectory (h = 1 ms).
        """
        h = 1e-3
        gyro, acc = np.zeros((len(t), 3)), np.zeros((len(t), 3))
        for i, ti in enumerate(t):
            a_world = (self.position(ti + h) - 2 * self.position(ti) + self.position(ti - h)) / h ** 2
            R = self.R_world_imu(ti)
            acc[i] = R.T @ (a_world + np.array([0, 0, GRAVITY]))
            dR = R.T @ (self.R_world_imu(ti + h) - self.R_world_imu(ti - h)) / (2 * h)  # = [omega]x
            omega = (dR - dR.T) / 2
            gyro[i] = [omega[2, 1], omega[0, 2], omega[1, 0]]
        return gyro, acc


def forward_down_camera(pitch_deg: float) -> np.ndarray:
    """``T_imu_cam`` for a camera looking forward (body x) and ``pitch_deg`` down, x right, y down."""
    # camera z (optical axis) = body x; camera x = -body y; camera y = -body z, then pitch down.
    R_imu_cam_level = np.array([[0, 0, 1.0], [-1.0, 0, 0], [0, -1.0, 0]])
    R = _rot_y(np.deg2rad(pitch_deg)) @ R_imu_cam_level
    T = np.eye(4)
    T[:3, :3] = R
    return T
