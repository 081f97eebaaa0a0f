"""Camera calibration for VIO from Kalibr, ASL sensor.yaml, KITTI calib.txt and CART's VINS configs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers import need
from rgbt.errors import EvaluationError
from rgbt.vio.calibration import apply_calibration, camera_from_file
from rgbt.vio.datasets import write_asl, write_kitti
from rgbt.vio.sequence import synthetic_sequence


@pytest.fixture(scope="module")
def seq():  # type: ignore[no-untyped-def]
    return synthetic_sequence(duration_s=0.5, rate_hz=10.0, width=160, height=128, fx=128.0)


def test_cart_vins_config_gives_thermal_camera_and_td(cart_dir: Path) -> None:
    cam = camera_from_file(need(cart_dir / "vins_configs/thermal_imu_config_calib.yaml", "CART VINS config"))
    assert (cam.width, cam.height) == (640, 512)
    assert cam.td_s == pytest.approx(-0.01905)
    assert cam.K[0, 0] == pytest.approx(513.1146, abs=1e-3)
    assert np.allclose(cam.T_imu_cam[3], [0, 0, 0, 1]) and abs(np.linalg.det(cam.T_imu_cam[:3, :3]) - 1) < 1e-6


def test_kalibr_equidistant_is_rejected_with_the_model(fixtures_dir: Path) -> None:
    chain = need(fixtures_dir / "kalibr/openvins_uzhfpv_kalibr_imucam_chain.yaml", "Kalibr chain")
    with pytest.raises(EvaluationError, match="equidistant"):
        camera_from_file(chain)


def test_kalibr_radtan_chain_inverts_T_cam_imu(tmp_path: Path) -> None:
    T_cam_imu = np.eye(4)
    T_cam_imu[:3, 3] = [0.1, -0.2, 0.05]
    rows = "\n".join(f"  - [{', '.join(repr(float(x)) for x in r)}]" for r in T_cam_imu)
    path = tmp_path / "camchain-imucam.yaml"
    path.write_text("cam0:\n  camera_model: pinhole\n  intrinsics: [400.0, 401.0, 320.0, 256.0]\n"
                    "  distortion_model: radtan\n  distortion_coeffs: [-0.1, 0.01, 0.0, 0.0]\n"
                    f"  resolution: [640, 512]\n  timeshift_cam_imu: 0.004\n  T_cam_imu:\n{rows}\n")
    cam = camera_from_file(path)
    np.testing.assert_allclose(cam.T_imu_cam[:3, 3], [-0.1, 0.2, -0.05])
    assert cam.td_s == pytest.approx(0.004) and cam.K[1, 1] == 401.0


@pytest.mark.slow
def test_asl_and_kitti_files_and_size_check(seq, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    asl = write_asl(seq, tmp_path / "asl") / "mav0/cam0/sensor.yaml"
    kitti = write_kitti(seq, tmp_path / "kitti") / "calib.txt"
    np.testing.assert_allclose(camera_from_file(asl).K, seq.camera.K)
    applied = apply_calibration(synthetic_sequence(duration_s=0.5, rate_hz=10.0, width=160, height=128, fx=128.0),
                                kitti)
    assert (applied.camera.width, applied.camera.height) == (160, 128)
    other = synthetic_sequence(duration_s=0.5, rate_hz=10.0, width=96, height=64, fx=80.0)
    with pytest.raises(EvaluationError, match="160x128 but"):
        apply_calibration(other, asl)


def test_binary_or_unknown_file_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "x.yaml"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(EvaluationError, match="not a text calibration file"):
        camera_from_file(bad)
    bad.write_text("foo: 1\n")
    with pytest.raises(EvaluationError, match="unknown calibration format"):
        camera_from_file(bad)
