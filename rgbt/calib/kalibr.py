"""Kalibr YAML: camera chains (``camchain.yaml``), IMU-camera chains (``camchain-imucam.yaml``) and IMU
noise files (``imu.yaml`` / ``imu0:`` chains).

Frames and units (Kalibr's): ``T_cn_cnm1`` maps points from camera n-1 into camera n;
``T_cam_imu`` maps points from the IMU frame into the camera (the inverse of the stack's
``T_imu_cam``); ``timeshift_cam_imu`` [s] satisfies ``t_imu = t_cam + timeshift``; ``intrinsics`` are
``[fx, fy, cx, cy]`` px for ``camera_model: pinhole``; ``resolution`` is ``[width, height]``.
IMU noise densities are continuous-time: accelerometer [m/s^2/sqrt(Hz)], its random walk
[m/s^3/sqrt(Hz)], gyroscope [rad/s/sqrt(Hz)], its random walk [rad/s^2/sqrt(Hz)].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.errors import ConfigError
from rgbt.stack import Distortion, Intrinsics
from rgbt.yamlio import OPENCV_HEADER, Fields, read_yaml, write_yaml

Matrix4 = list[list[float]]
DISTORTION_COUNTS = {"radtan": (4,), "equidistant": (4,), "none": (0,)}
_CAMERA_KEYS = ("T_cam_imu", "T_cn_cnm1", "cam_overlaps", "camera_model", "distortion_coeffs",
                "distortion_model", "intrinsics", "resolution", "rostopic", "timeshift_cam_imu")


@dataclass
class KalibrCamera:
    """One ``camN`` entry."""

    intrinsics: list[float]  # fx, fy, cx, cy [px]
    distortion_model: str  # radtan | equidistant | none
    distortion_coeffs: list[float]
    resolution: list[int]  # width, height [px]
    camera_model: str = "pinhole"
    rostopic: str = ""
    T_cn_cnm1: Matrix4 | None = None  # previous camera -> this camera
    T_cam_imu: Matrix4 | None = None  # IMU -> this camera
    timeshift_cam_imu: float | None = None  # [s], t_imu = t_cam + timeshift
    cam_overlaps: list[int] | None = None
    extra: dict = field(default_factory=dict)  # other keys, written back unchanged

    def intrinsics_model(self) -> Intrinsics:
        fx, fy, cx, cy = self.intrinsics
        return Intrinsics(fx=fx, fy=fy, cx=cx, cy=cy)

    def distortion(self) -> Distortion:
        return Distortion.model_validate({"model": self.distortion_model, "coeffs": list(self.distortion_coeffs)})

    def T_cam_imu_matrix(self) -> np.ndarray | None:
        return None if self.T_cam_imu is None else np.asarray(self.T_cam_imu, dtype=np.float64)

    def T_cn_cnm1_matrix(self) -> np.ndarray | None:
        return None if self.T_cn_cnm1 is None else np.asarray(self.T_cn_cnm1, dtype=np.float64)


@dataclass
class KalibrChain:
    """A camchain or imucam chain: cameras in ``cam0, cam1, ...`` order."""

    cameras: list[KalibrCamera]

    def has_imu(self) -> bool:
        return all(cam.T_cam_imu is not None for cam in self.cameras)


@dataclass
class KalibrImu:
    """Kalibr IMU noise model (``imu.yaml``; ``imu0:`` entries of an imu chain add ``T_i_b`` etc.)."""

    accelerometer_noise_density: float
    accelerometer_random_walk: float
    gyroscope_noise_density: float
    gyroscope_random_walk: float
    update_rate: float  # [Hz]
    rostopic: str = ""
    extra: dict = field(default_factory=dict)  # e.g. T_i_b, model, time_offset of an imu chain


# ---------------------------------------------------------------- camera chains


def parse_camchain(data: dict, source: str = "<kalibr>") -> KalibrChain:
    names = sorted((k for k in data if isinstance(k, str) and k.startswith("cam") and k[3:].isdigit()),
                   key=lambda k: int(k[3:]))
    if not names:
        raise ConfigError(source, "<root>", sorted(map(str, data)), "camera entries cam0, cam1, ...")
    if names != [f"cam{i}" for i in range(len(names))]:
        raise ConfigError(source, "<root>", names, "consecutive camera entries cam0, cam1, ...")
    cameras = [_parse_camera(Fields(data[n], source, n), index=i) for i, n in enumerate(names)]
    return KalibrChain(cameras)


def _parse_camera(f: Fields, index: int) -> KalibrCamera:
    model = f.string("camera_model", default="pinhole")
    if model != "pinhole":
        raise f.error("camera_model", model, "pinhole (the only projection model rgbt supports)")
    dmodel = f.string("distortion_model")
    if dmodel not in DISTORTION_COUNTS:
        raise f.error("distortion_model", dmodel, f"one of {sorted(DISTORTION_COUNTS)}")
    if dmodel == "none" and not f.has("distortion_coeffs"):
        coeffs: list[float] = []
    else:
        coeffs = f.numbers("distortion_coeffs", DISTORTION_COUNTS[dmodel])
    intr = f.numbers("intrinsics", (4,))
    if intr[0] <= 0 or intr[1] <= 0:
        raise f.error("intrinsics", intr, "[fx, fy, cx, cy] with fx, fy > 0")
    res = f.integers("resolution", 2)
    if res[0] <= 0 or res[1] <= 0:
        raise f.error("resolution", res, "[width, height] > 0")
    cam = KalibrCamera(intrinsics=intr, distortion_model=dmodel, distortion_coeffs=coeffs, resolution=res,
                       camera_model=model, rostopic=f.string("rostopic", default=""))
    for key in ("T_cn_cnm1", "T_cam_imu"):
        if f.has(key):
            value = f.matrix(key, 4, 4)
            problem = rigid_transform_problem(value)
            if problem:
                raise f.error(key, value, problem)
            setattr(cam, key, value)
    if index > 0 and cam.T_cn_cnm1 is None and not f.has("T_cam_imu"):
        raise f.error("T_cn_cnm1", None, "this required key (or T_cam_imu) for a camera after cam0")
    if f.has("timeshift_cam_imu"):
        cam.timeshift_cam_imu = f.number("timeshift_cam_imu")
    if f.has("cam_overlaps"):
        overlaps = f.raw("cam_overlaps")
        if not isinstance(overlaps, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in overlaps):
            raise f.error("cam_overlaps", overlaps, "a list of camera indices")
        cam.cam_overlaps = list(overlaps)
    cam.extra = {k: v for k, v in f.data.items() if k not in _CAMERA_KEYS}
    return cam


def read_camchain(path: str | Path) -> KalibrChain:
    """Read a Kalibr camchain or imucam chain (an OpenCV ``%YAML:1.0`` first line is accepted)."""
    return parse_camchain(read_yaml(path), str(path))


def camchain_to_dict(chain: KalibrChain) -> dict:
    out: dict[str, Any] = {}
    for i, cam in enumerate(chain.cameras):
        entry: dict[str, Any] = {}
        if cam.T_cam_imu is not None:
            entry["T_cam_imu"] = _rows(cam.T_cam_imu)
        if cam.T_cn_cnm1 is not None:
            entry["T_cn_cnm1"] = _rows(cam.T_cn_cnm1)
        if cam.cam_overlaps is not None:
            entry["cam_overlaps"] = list(cam.cam_overlaps)
        entry["camera_model"] = cam.camera_model
        entry["distortion_coeffs"] = [float(v) for v in cam.distortion_coeffs]
        entry["distortion_model"] = cam.distortion_model
        entry["intrinsics"] = [float(v) for v in cam.intrinsics]
        entry["resolution"] = [int(v) for v in cam.resolution]
        entry["rostopic"] = cam.rostopic
        if cam.timeshift_cam_imu is not None:
            entry["timeshift_cam_imu"] = float(cam.timeshift_cam_imu)
        entry.update(cam.extra)
        out[f"cam{i}"] = entry
    return out


def write_camchain(chain: KalibrChain, path: str | Path, *, opencv_header: bool = False) -> Path:
    """Write a camchain / imucam chain in Kalibr's layout (keys sorted as Kalibr writes them).

    ``opencv_header`` prefixes ``%YAML:1.0``, which OpenVINS (cv::FileStorage) needs and Kalibr's
    own PyYAML reader does not accept (rgbt's reader accepts both).
    """
    return write_yaml(path, camchain_to_dict(chain), header=OPENCV_HEADER if opencv_header else None)


def rigid_transform_problem(T: Matrix4 | np.ndarray, tol: float = 2e-3) -> str:
    """'' if ``T`` is a rigid 4x4 transform, else what was expected."""
    a = np.asarray(T, dtype=np.float64)
    if a.shape != (4, 4):
        return f"a 4x4 matrix, got shape {a.shape}"
    if not np.allclose(a[3], [0, 0, 0, 1], atol=1e-9):
        return "last row [0, 0, 0, 1]"
    r = a[:3, :3]
    if not np.allclose(r @ r.T, np.eye(3), atol=tol) or np.linalg.det(r) <= 0:
        return "a proper rotation in the top-left 3x3 (orthonormal, det +1)"
    return ""


def _rows(T: Matrix4 | np.ndarray) -> list[list[float]]:
    return [[float(v) for v in row] for row in np.asarray(T, dtype=np.float64).tolist()]


# ---------------------------------------------------------------- IMU


_IMU_KEYS = ("accelerometer_noise_density", "accelerometer_random_walk", "gyroscope_noise_density",
             "gyroscope_random_walk", "update_rate", "rostopic")


def parse_imu(data: dict, source: str = "<kalibr imu>") -> KalibrImu:
    """A Kalibr ``imu.yaml`` (flat keys) or the ``imu0`` entry of an imu chain."""
    f = Fields(data["imu0"], source, "imu0") if "imu0" in data else Fields(data, source)
    values = {}
    for key in _IMU_KEYS[:5]:
        values[key] = f.number(key)
        if values[key] < 0 or (key == "update_rate" and values[key] == 0):
            raise f.error(key, values[key], "a positive number" if key == "update_rate" else "a number >= 0")
    extra = {k: v for k, v in f.data.items() if k not in _IMU_KEYS}
    return KalibrImu(**values, rostopic=f.string("rostopic", default=""), extra=extra)


def read_imu(path: str | Path) -> KalibrImu:
    return parse_imu(read_yaml(path), str(path))


def imu_to_dict(imu: KalibrImu, *, chain: bool = False) -> dict:
    entry: dict[str, Any] = {
        "accelerometer_noise_density": float(imu.accelerometer_noise_density),
        "accelerometer_random_walk": float(imu.accelerometer_random_walk),
        "gyroscope_noise_density": float(imu.gyroscope_noise_density),
        "gyroscope_random_walk": float(imu.gyroscope_random_walk),
        "rostopic": imu.rostopic,
        "update_rate": float(imu.update_rate),
    }
    entry.update(imu.extra)
    return {"imu0": entry} if chain else entry


def write_imu(imu: KalibrImu, path: str | Path, *, chain: bool = False, opencv_header: bool = False) -> Path:
    """Write ``imu.yaml`` (flat, Kalibr's input) or, with ``chain``, an ``imu0:`` chain (OpenVINS)."""
    return write_yaml(path, imu_to_dict(imu, chain=chain), header=OPENCV_HEADER if opencv_header else None)
