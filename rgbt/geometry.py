"""Small rotation helpers for the onboard path (numpy only: no scipy on the aircraft).

Quaternions are unit Hamilton quaternions. Functions say their component order explicitly
(``wxyz`` or ``xyzw``); returned quaternions are normalised with ``w >= 0``.
"""

from __future__ import annotations

import math

import numpy as np

# ENU world <- NED world and FRD body <- FLU body (both are their own inverse).
_R_ENU_NED = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
_R_FRD_FLU = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]])


def quat_from_euler_zyx(yaw: float, pitch: float, roll: float) -> tuple[float, float, float, float]:
    """The quaternion ``(w, x, y, z)`` of intrinsic Z-Y'-X'' angles in radians (MAVLink ATTITUDE).

    ``R = Rz(yaw) @ Ry(pitch) @ Rx(roll)``: body (FRD) to world (NED) for MAVLink.
    """
    cy, sy = math.cos(yaw / 2.0), math.sin(yaw / 2.0)
    cp, sp = math.cos(pitch / 2.0), math.sin(pitch / 2.0)
    cr, sr = math.cos(roll / 2.0), math.sin(roll / 2.0)
    q = (cy * cp * cr + sy * sp * sr,
         cy * cp * sr - sy * sp * cr,
         cy * sp * cr + sy * cp * sr,
         sy * cp * cr - cy * sp * sr)
    return _canonical(q)


def quat_to_matrix(w: float, x: float, y: float, z: float) -> np.ndarray:
    """The 3x3 rotation matrix of quaternion ``(w, x, y, z)`` (normalised first; zero norm is an error)."""
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not n > 0.0 or not math.isfinite(n):
        raise ValueError(f"quaternion (w={w}, x={x}, y={y}, z={z}): expected a finite non-zero norm")
    w, x, y, z = w / n, x / n, y / n, z / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def matrix_to_quat(r: np.ndarray) -> tuple[float, float, float, float]:
    """The quaternion ``(w, x, y, z)`` (``w >= 0``) of a 3x3 rotation matrix (Shepperd's method)."""
    m = np.asarray(r, dtype=float)
    if m.shape != (3, 3):
        raise ValueError(f"rotation matrix: expected shape (3, 3), got {m.shape}")
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(1.0 + tr)
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = ((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
    return _canonical(q)


def ned_frd_to_enu_flu(w: float, x: float, y: float, z: float) -> tuple[float, float, float, float]:
    """MAVLink attitude (FRD body in NED world, ``w, x, y, z``) as ROS ``x, y, z, w`` (FLU body in ENU).

    The mavros frame change: ``R_enu_flu = R_enu_ned @ R_ned_frd @ R_frd_flu``.
    """
    qw, qx, qy, qz = matrix_to_quat(_R_ENU_NED @ quat_to_matrix(w, x, y, z) @ _R_FRD_FLU)
    return qx, qy, qz, qw


def _canonical(q: tuple[float, float, float, float]) -> tuple[float, float, float, float]:
    n = math.sqrt(sum(c * c for c in q))
    sign = -1.0 if q[0] < 0.0 else 1.0
    a, b, c, d = (float(sign * v / n) for v in q)
    return a, b, c, d
