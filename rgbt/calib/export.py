"""Exporters from the stack model: ROS camera_info files, Kalibr imucam / camchain / imu YAML."""

from __future__ import annotations

from pathlib import Path

from rgbt.calib.camera_info import camera_info_from_spec, write_camera_info
from rgbt.calib.kalibr import KalibrCamera, KalibrChain, KalibrImu, write_camchain, write_imu
from rgbt.errors import ConfigError
from rgbt.stack import CameraSpec, Stack


def _kalibr_camera(cam: CameraSpec, vio: bool) -> KalibrCamera:
    calib = cam.vio_calibration() if vio else cam
    i, d = calib.intrinsics, calib.distortion
    coeffs = list(d.coeffs)
    if d.model == "radtan":
        if len(coeffs) == 8 or (len(coeffs) == 5 and coeffs[4] != 0.0):
            raise ConfigError("stack", f"cameras.{cam.name}.distortion.coeffs", coeffs,
                              "k3 = 0 (Kalibr's radtan has 4 coefficients k1 k2 p1 p2)")
        coeffs = coeffs[:4]
    return KalibrCamera(intrinsics=[i.fx, i.fy, i.cx, i.cy], distortion_model=d.model, distortion_coeffs=coeffs,
                        resolution=[cam.width, cam.height], rostopic=cam.topic)


def kalibr_imucam_from_stack(stack: Stack, cameras: list[str] | None = None, *, vio: bool = False) -> KalibrChain:
    """A Kalibr imu-camera chain: ``T_cam_imu`` = inverse of the stack's ``T_imu_cam``,
    ``T_cn_cnm1`` chained through the IMU, ``timeshift_cam_imu`` = ``td_s``.
    ``vio`` uses each camera's VIO calibration (what CART gave VINS) instead of its own."""
    names = cameras or list(stack.cameras)
    out = []
    for n, name in enumerate(names):
        cam = stack.camera(name)
        entry = _kalibr_camera(cam, vio)
        entry.T_cam_imu = cam.T_cam_imu_matrix().tolist()
        if n > 0:
            entry.T_cn_cnm1 = stack.T_cam_a_cam_b(name, names[n - 1]).tolist()
        entry.timeshift_cam_imu = float(cam.td_s)
        entry.cam_overlaps = [m for m in range(len(names)) if m != n]
        out.append(entry)
    return KalibrChain(out)


def kalibr_camchain_from_pair(stack: Stack, pair: str) -> KalibrChain:
    """The stack's camchain pair (at its canvas resolution) as Kalibr wrote it."""
    if pair not in stack.pairs:
        raise ConfigError("stack", f"pairs.{pair}", pair, f"one of {sorted(stack.pairs)}")
    p = stack.pairs[pair]
    cams = []
    for side in ("cam0", "cam1"):
        i, d = getattr(p, f"{side}_intrinsics"), getattr(p, f"{side}_distortion")
        cams.append(KalibrCamera(intrinsics=[i.fx, i.fy, i.cx, i.cy], distortion_model=d.model,
                                 distortion_coeffs=list(d.coeffs), resolution=[p.width, p.height],
                                 rostopic=stack.camera(getattr(p, side)).topic,
                                 cam_overlaps=[1 if side == "cam0" else 0]))
    cams[1].T_cn_cnm1 = p.T_cam1_cam0_matrix().tolist()
    return KalibrChain(cams)


def kalibr_imu_from_stack(stack: Stack, *, vio: bool = False) -> KalibrImu:
    """Kalibr's IMU model from ``stack.imu.noise`` (or ``vio_noise`` with ``vio``); continuous-time densities."""
    noise = stack.imu.vio_noise_or_noise() if vio else stack.imu.noise
    return KalibrImu(accelerometer_noise_density=noise.acc_n, accelerometer_random_walk=noise.acc_w,
                     gyroscope_noise_density=noise.gyr_n, gyroscope_random_walk=noise.gyr_w,
                     update_rate=stack.imu.rate_hz, rostopic=stack.imu.topic)


def export_camera_info(stack: Stack, out_dir: str | Path) -> list[Path]:
    """``<camera>.yaml`` camera_info per camera (native resolution, R = I, P = [K | 0])."""
    out = []
    for name, cam in stack.cameras.items():
        info = camera_info_from_spec(cam, camera_name=name)
        comment = f"{cam.model} ({name}) camera_info, exported by rgbt from stack {stack.name!r}"
        if stack.synthetic:
            comment += " (SYNTHETIC stack)"
        out.append(write_camera_info(info, Path(out_dir) / f"{name}.yaml", comment=comment))
    return out


def export_kalibr(stack: Stack, out_dir: str | Path, *, opencv_header: bool = False, vio: bool = False) -> list[Path]:
    """``camchain-imucam.yaml`` (all cameras), ``imu.yaml`` and ``camchain-<pair>.yaml`` per pair.
    ``vio``: the imucam chain and IMU file carry the VIO calibrations / noise instead."""
    out_dir = Path(out_dir)
    paths = [write_camchain(kalibr_imucam_from_stack(stack, vio=vio), out_dir / "camchain-imucam.yaml",
                            opencv_header=opencv_header),
             write_imu(kalibr_imu_from_stack(stack, vio=vio), out_dir / "imu.yaml", opencv_header=opencv_header)]
    for pair in stack.pairs:
        paths.append(write_camchain(kalibr_camchain_from_pair(stack, pair), out_dir / f"camchain-{pair}.yaml",
                                    opencv_header=opencv_header))
    return paths

