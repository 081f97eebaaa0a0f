"""rgbt.geometry (numpy-only attitude math of the onboard MAVLink path) against scipy's Rotation."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.geometry import matrix_to_quat, ned_frd_to_enu_flu, quat_from_euler_zyx, quat_to_matrix

Rotation = pytest.importorskip("scipy.spatial.transform", reason="scipy (eval/sim extra) is the oracle").Rotation


def _same_rotation(q_xyzw_a, q_xyzw_b) -> bool:
    a, b = np.asarray(q_xyzw_a), np.asarray(q_xyzw_b)
    return bool(np.allclose(a, b, atol=1e-9) or np.allclose(a, -b, atol=1e-9))


def test_euler_zyx_matches_scipy() -> None:
    rng = np.random.default_rng(3)
    for yaw, pitch, roll in rng.uniform([-np.pi, -1.5, -np.pi], [np.pi, 1.5, np.pi], size=(200, 3)):
        w, x, y, z = quat_from_euler_zyx(yaw, pitch, roll)
        ref = Rotation.from_euler("ZYX", [yaw, pitch, roll]).as_quat()
        assert _same_rotation((x, y, z, w), ref), (yaw, pitch, roll)
        assert w >= 0.0


def test_matrix_roundtrip_all_branches() -> None:
    rots = Rotation.random(300, random_state=5)
    # rotations by ~pi about each axis exercise the non-trace branches of Shepperd's method
    rots = list(rots) + [Rotation.from_rotvec(np.pi * np.eye(3)[i] * 0.9999) for i in range(3)]
    for r in rots:
        w, x, y, z = matrix_to_quat(r.as_matrix())
        assert _same_rotation((x, y, z, w), r.as_quat())
        assert np.allclose(quat_to_matrix(w, x, y, z), r.as_matrix(), atol=1e-9)


def test_ned_frd_to_enu_flu_matches_scipy_frame_change() -> None:
    r_enu_ned = Rotation.from_matrix([[0, 1, 0], [1, 0, 0], [0, 0, -1]])
    r_frd_flu = Rotation.from_matrix([[1, 0, 0], [0, -1, 0], [0, 0, -1]])
    for r in Rotation.random(200, random_state=7):
        x, y, z, w = r.as_quat()
        ref = (r_enu_ned * r * r_frd_flu).as_quat()
        assert _same_rotation(ned_frd_to_enu_flu(w, x, y, z), ref)


def test_level_north_is_enu_yaw_90() -> None:
    # nose north, level, in NED -> in ENU the FLU body x points north (+y): yaw +90 deg about +z
    x, y, z, w = ned_frd_to_enu_flu(1.0, 0.0, 0.0, 0.0)
    assert np.allclose([x, y, z, w], [0.0, 0.0, np.sqrt(0.5), np.sqrt(0.5)])


def test_zero_quaternion_is_an_error() -> None:
    with pytest.raises(ValueError, match="non-zero norm"):
        quat_to_matrix(0.0, 0.0, 0.0, 0.0)
