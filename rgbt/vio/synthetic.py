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
    img: np.ndarray = np.zeros((size_px, size_px), np.float32)
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
        cx, cy = rng.integers(0, size_px, 2)
        cv2.circle(img, (int(cx), int(cy)), int(rng.integers(2, 14)), float(rng.uniform(-1.2, 1.5)), -1)
    img = cv2.GaussianBlur(img, (0, 0), 1.2)
    img = (img - img.min()) / max(float(img.max() - img.min()), 1e-6)
    if thermal:
        return (7000 + 2500 * img).astype(np.uint16)
    return (20 + 215 * img).astype(np.uint8)


def canopy_layer(texture: np.ndarray, seed: int, cover: float = 0.25) -> tuple[np.ndarray, np.ndarray]:
    """Raised patches (roofs, tree crowns) for a layer above the ground: (texture, 0/1 uint8 mask).

    A single plane is a degenerate scene for monocular initialisation (the two homography
    decompositions explain it equally well, and ORB-SLAM3 may pick the mirrored one); raised layers
    give the parallax real terrain has.
    """
    rng = np.random.default_rng(seed + 1000)
    size = texture.shape[0]
    mask = np.zeros(texture.shape[:2], np.uint8)
    n = int(cover * size * size / (np.pi * (size / 60) ** 2))
    for _ in range(n):
        c = tuple(map(int, rng.integers(0, size, 2)))
        r = int(rng.uniform(size / 200, size / 50))
        if rng.random() < 0.5:
            cv2.circle(mask, c, r, 1, -1)
        else:
            cv2.rectangle(mask, (c[0] - r, c[1] - r // 2), (c[0] + r, c[1] + r // 2), 1, -1)
    shift = np.roll(np.roll(texture, size // 3, axis=0), size // 5, axis=1)
    offset = (texture.max() - texture.min()) * 0.15
    layer = np.clip(shift.astype(np.float32) + offset, 0, np.iinfo(texture.dtype).max).astype(texture.dtype)
    return layer, mask


@dataclass
class PlaneScene:
    """The textured plane z = 0 (world, z up), centred at the origin, ``metres_per_px`` per texel,
    plus optional raised ``layers`` ``(texture, mask, height_m)`` drawn where their mask is set."""

    texture: np.ndarray
    metres_per_px: float = 0.1
    layers: list = field(default_factory=list)

    def _homography(self, K: np.ndarray, T_cam_world: np.ndarray, z: float) -> np.ndarray:
        h, w = self.texture.shape[:2]
        s = self.metres_per_px
        A = np.array([[s, 0, -s * w / 2], [0, s, -s * h / 2], [0, 0, 1.0]])  # texel -> (X, Y, 1)
        P = np.c_[T_cam_world[:3, 0], T_cam_world[:3, 1], T_cam_world[:3, 2] * z + T_cam_world[:3, 3]]
        return K @ P @ A

    def render(self, K: np.ndarray, T_world_cam: np.ndarray, width: int, height: int) -> np.ndarray:
        """The image a pinhole camera ``K`` at ``T_world_cam`` sees (same dtype as the texture)."""
        T_cam_world = np.linalg.inv(T_world_cam)
        img = cv2.warpPerspective(self.texture, self._homography(K, T_cam_world, 0.0), (width, height),
                                  flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
        for tex, mask, z in sorted(self.layers, key=lambda layer: layer[2]):
            H = self._homography(K, T_cam_world, z)
            top = cv2.warpPerspective(tex, H, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
            m = cv2.warpPerspective(mask, H, (width, height), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REFLECT)
            np.copyto(img, top, where=m.astype(bool))
        return img


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def _rot_y(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


class _FlightPoses:
    """Poses of a flight from its ``position(t)`` (world, m), ``R_world_imu(t)`` and ``T_imu_cam``."""

    T_imu_cam: np.ndarray

    def position(self, t: float | np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def R_world_imu(self, t: float) -> np.ndarray:
        raise NotImplementedError

    def T_world_imu(self, t: float) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = self.R_world_imu(t)
        T[:3, 3] = self.position(t)
        return T

    def T_world_cam(self, t: float) -> np.ndarray:
        return self.T_world_imu(t) @ self.T_imu_cam


@dataclass
class Flight(_FlightPoses):
    """An analytic, smooth flight over the plane: a lissajous loop at ``altitude_m`` with changing
    speed (with constant speed the IMU sees no acceleration and monocular-inertial scale is not
    observable). The body (IMU) frame is
    x forward, y left, z up, heading along the velocity; the camera looks ``pitch_deg`` below the
    horizon, forward, through ``T_imu_cam``.
    """

    altitude_m: float = 40.0
    radius_m: float = 25.0
    period_s: float = 60.0
    pitch_deg: float = 60.0
    T_imu_cam: np.ndarray = field(default_factory=lambda: np.eye(4))
    #: start inside a turn with vertical motion: accelerations of ~0.5-1 m/s^2 from the first second
    phase_s: float = 12.0

    def position(self, t: float | np.ndarray) -> np.ndarray:
        w = 2 * np.pi / self.period_s
        t = np.asarray(t, dtype=np.float64) + self.phase_s
        return np.stack([self.radius_m * np.sin(w * t) + 0.15 * self.radius_m * np.sin(3.1 * w * t),
                         0.6 * self.radius_m * np.sin(2 * w * t),
                         self.altitude_m + 4.0 * np.sin(4.0 * w * t)], axis=-1)

    def R_world_imu(self, t: float) -> np.ndarray:
        dt = 1e-3
        v = (self.position(t + dt) - self.position(t - dt)) / (2 * dt)
        yaw = float(np.arctan2(v[1], v[0]))
        return _rot_z(yaw)

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


class TrajectoryFlight(_FlightPoses):
    """A flight along a real trajectory (e.g. CART's RTK ground truth, positions only), same interface
    as :class:`Flight`: positions smoothed (Gaussian, ``smooth_s``) and resampled at 200 Hz, lifted by
    ``altitude_m``; heading along the horizontal velocity (held while hovering below 0.5 m/s).
    Time 0 is ``start_s`` into the trajectory.
    """

    def __init__(self, t_s: np.ndarray, xyz: np.ndarray, start_s: float, duration_s: float, altitude_m: float = 35.0,
                 smooth_s: float = 0.6, pitch_deg: float = 60.0, T_imu_cam: np.ndarray | None = None) -> None:
        t_s = np.asarray(t_s, float) - float(t_s[0])
        if start_s < 0 or start_s + duration_s > t_s[-1]:
            raise ValueError(
                f"window [{start_s}, {start_s + duration_s}] s outside the trajectory (0..{t_s[-1]:.1f} s)"
            )
        self.pitch_deg = pitch_deg
        self.T_imu_cam = np.eye(4) if T_imu_cam is None else T_imu_cam
        margin = 5.0
        dt = 0.005
        grid = np.arange(max(0.0, start_s - margin), min(t_s[-1], start_s + duration_s + margin), dt)
        raw = np.stack([np.interp(grid, t_s, xyz[:, i]) for i in range(3)], axis=1)
        sigma = smooth_s / dt
        k = np.arange(-int(4 * sigma), int(4 * sigma) + 1)
        kernel = np.exp(-0.5 * (k / sigma) ** 2)
        kernel /= kernel.sum()
        pad = len(k) // 2
        padded = np.pad(raw, ((pad, pad), (0, 0)), mode="edge")
        smooth = np.stack([np.convolve(padded[:, i], kernel, mode="valid") for i in range(3)], axis=1)
        smooth[:, 2] += altitude_m
        self._t = grid - start_s
        self._p = smooth
        vel = np.gradient(smooth, dt, axis=0)
        speed = np.linalg.norm(vel[:, :2], axis=1)
        yaw = np.arctan2(vel[:, 1], vel[:, 0])
        for i in range(1, len(yaw)):  # hold the heading while hovering
            if speed[i] < 0.5:
                yaw[i] = yaw[i - 1]
        yaw = np.unwrap(yaw)
        kernel_yaw = np.exp(-0.5 * (np.arange(-200, 201) / 60.0) ** 2)
        kernel_yaw /= kernel_yaw.sum()
        self._yaw = np.convolve(np.pad(yaw, (200, 200), mode="edge"), kernel_yaw, mode="valid")
        self._yaw_rate = np.gradient(self._yaw, dt)
        self._acc = np.gradient(np.gradient(smooth, dt, axis=0), dt, axis=0)  # smooth: differentiate on the grid
        self.duration_s = duration_s

    def position(self, t: float | np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        return np.stack([np.interp(t, self._t, self._p[:, i]) for i in range(3)], axis=-1)

    def R_world_imu(self, t: float) -> np.ndarray:
        return _rot_z(float(np.interp(t, self._t, self._yaw)))

    def imu(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gyro (rad/s) and specific force (m/s^2) in the IMU body frame at ``t`` (s): derivatives taken
        on the smoothed 200 Hz grid (differentiating the piecewise-linear interpolant would give
        spikes), then interpolated."""
        t = np.asarray(t, dtype=np.float64)
        acc_w = np.stack([np.interp(t, self._t, self._acc[:, i]) for i in range(3)], axis=1)
        acc_w[:, 2] += GRAVITY
        yaw = np.interp(t, self._t, self._yaw)
        c, s = np.cos(yaw), np.sin(yaw)
        acc_b = np.stack([c * acc_w[:, 0] + s * acc_w[:, 1], -s * acc_w[:, 0] + c * acc_w[:, 1], acc_w[:, 2]], axis=1)
        gyro = np.zeros_like(acc_b)
        gyro[:, 2] = np.interp(t, self._t, self._yaw_rate)
        return gyro, acc_b
