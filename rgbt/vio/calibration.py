"""Camera calibration for VIO from where users have it, as a :class:`~rgbt.vio.sequence.CameraModel`.

``camera_from_file(path, index)`` reads, detected from the content:

- a Kalibr camchain / imu-camchain YAML (``camN`` with ``intrinsics``, ``distortion_coeffs``,
  ``resolution``, ``T_cam_imu``, ``timeshift_cam_imu``);
- an ASL ``sensor.yaml`` (EuRoC / TUM-VI: ``T_BS``, ``intrinsics``);
- a KITTI ``calib.txt`` (``P<index>:`` row; no IMU, ``T_imu_cam = I``);
- a VINS-Fusion config (``body_T_cam<index>``, ``td`` and the PINHOLE file it names, as CART ran).

Only pinhole + radial-tangential (or no) distortion reaches the estimator; other models are
rejected naming the file and the model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rgbt.calib.kalibr import read_camchain
from rgbt.calib.vins import read_vins_config, read_vins_pinhole
from rgbt.errors import EvaluationError
from rgbt.vio.datasets import radtan_coeffs, read_asl_camera, read_kitti_camera
from rgbt.vio.sequence import CameraModel, Sequence


def _kind(path: Path) -> str:
    try:
        head = path.read_text(errors="strict")[:20000]
    except UnicodeDecodeError:
        raise EvaluationError(f"{path}: not a text calibration file: expected Kalibr / ASL / KITTI / VINS") from None
    if any(line.startswith(("P0:", "P1:", "P2:", "P3:")) for line in head.splitlines()):
        return "kitti"
    if "body_T_cam" in head or "cam0_calib" in head:
        return "vins"
    if "T_BS" in head:
        return "asl"
    if "cam0" in head and "intrinsics" in head:
        return "kalibr"
    raise EvaluationError(f"{path}: unknown calibration format: expected a Kalibr camchain, an ASL sensor.yaml, "
                          "a KITTI calib.txt or a VINS-Fusion config")


def camera_from_file(path: str | Path, index: int = 0) -> CameraModel:
    """Camera ``index`` of the calibration file ``path`` (format detected from its content)."""
    path = Path(path)
    if not path.is_file():
        raise EvaluationError(f"{path}: calibration file not found")
    kind = _kind(path)
    if kind == "asl":
        return read_asl_camera(path, name=f"cam{index}")
    if kind == "kitti":
        return read_kitti_camera(path, index)
    if kind == "vins":
        return _vins(path, index)
    return _kalibr(path, index)


def _kalibr(path: Path, index: int) -> CameraModel:
    chain = read_camchain(path)
    if not 0 <= index < len(chain.cameras):
        raise EvaluationError(f"{path}: no cam{index}: the chain has {len(chain.cameras)} cameras")
    cam = chain.cameras[index]
    if cam.camera_model != "pinhole":
        raise EvaluationError(f"{path}: cam{index} camera_model {cam.camera_model!r}: expected pinhole")
    if cam.T_cam_imu is None:
        raise EvaluationError(f"{path}: cam{index} has no T_cam_imu: expected a Kalibr imu-camchain")
    fx, fy, cx, cy = cam.intrinsics
    K = np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1.0]])
    T_imu_cam = np.linalg.inv(np.asarray(cam.T_cam_imu, dtype=np.float64))  # Kalibr stores IMU -> camera
    w, h = cam.resolution
    return CameraModel(
        f"cam{index}",
        int(w),
        int(h),
        K,
        radtan_coeffs(path, cam.distortion_model, cam.distortion_coeffs),
        T_imu_cam,
        float(cam.timeshift_cam_imu or 0.0),
    )


def _vins(path: Path, index: int) -> CameraModel:
    cfg = read_vins_config(path)
    if index not in cfg.body_T_cam:
        raise EvaluationError(f"{path}: no body_T_cam{index}: expected it in the VINS config")
    if index not in cfg.cam_calib:
        raise EvaluationError(f"{path}: no cam{index}_calib: expected the PINHOLE file the config names")
    width, height, intr, dist = read_vins_pinhole(path.parent / cfg.cam_calib[index])
    return CameraModel(f"cam{index}", int(width), int(height), np.asarray(intr.K(), dtype=np.float64),
                       radtan_coeffs(path, dist.model, dist.coeffs), np.asarray(cfg.body_T_cam[index]), float(cfg.td_s))


def apply_calibration(seq: Sequence, path: str | Path, index: int = 0) -> Sequence:
    """``seq`` with its camera replaced by camera ``index`` of ``path``; the image size must match
    the sequence's frames (a file without a size, KITTI's, takes the frames')."""
    cam = camera_from_file(path, index)
    first = next(iter(seq.frames()), None)
    if first is not None:
        h, w = first[1].shape[:2]
        if cam.width == 0:
            cam.width, cam.height = w, h
        elif (cam.width, cam.height) != (w, h):
            raise EvaluationError(f"{path}: cam{index} is {cam.width}x{cam.height} but {seq.name}'s frames are "
                                  f"{w}x{h}: expected the calibration of the camera that took them")
    seq.camera = cam
    seq.meta["calibration"] = str(path)
    return seq
