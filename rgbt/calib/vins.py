"""Reading VINS-Fusion configs (OpenCV FileStorage YAML, ``%YAML:1.0`` + ``!!opencv-matrix``).

``body_T_camN`` maps points from camera N into the IMU (body) frame, i.e. the stack's ``T_imu_cam``;
``td`` [s] satisfies ``t_imu = t_cam + td``. ``acc_n, gyr_n, acc_w, gyr_w`` are the IMU noise values
VINS was given. PINHOLE camera files hold ``projection_parameters`` (fx fy cx cy, px) and
``distortion_parameters`` (k1 k2 p1 p2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from pydantic import ValidationError

from rgbt.calib.kalibr import rigid_transform_problem
from rgbt.errors import ConfigError
from rgbt.stack import Distortion, ImuNoise, Intrinsics


@dataclass
class VinsConfig:
    """The calibration-relevant part of a VINS-Fusion config."""

    body_T_cam: dict[int, np.ndarray]  # camera index -> 4x4 T_imu_cam
    td_s: float
    imu_noise: ImuNoise | None  # None when the file has no IMU parameters
    topics: dict[str, str] = field(default_factory=dict)  # imu_topic, image0_topic, ...
    cam_calib: dict[int, str] = field(default_factory=dict)  # camera index -> PINHOLE file name


def _open(path: str | Path) -> cv2.FileStorage:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), "<file>", "a directory" if path.is_dir() else None,
                          "an existing VINS-Fusion YAML file")
    try:
        fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    except (cv2.error, SystemError) as exc:
        msg = str(getattr(exc, "__cause__", None) or exc).strip().splitlines()[-1]
        raise ConfigError(str(path), "<file>", None, f"an OpenCV FileStorage YAML file ({msg})") from None
    if not fs.isOpened():
        raise ConfigError(str(path), "<file>", None, "an OpenCV FileStorage YAML file")
    return fs


def _real(fs: cv2.FileStorage, path: Path, key: str) -> float:
    node = fs.getNode(key)
    if node.empty():
        raise ConfigError(str(path), key, None, "this required key")
    if not node.isReal() and not node.isInt():
        raise ConfigError(str(path), key, node.string() or None, "a number")
    value = float(node.real())
    if not math.isfinite(value):
        raise ConfigError(str(path), key, value, "a finite number")
    return value


def _size(fs: cv2.FileStorage, path: Path, key: str) -> int:
    value = _real(fs, path, key)
    if value != int(value) or not 0 < value < 1 << 20:
        raise ConfigError(str(path), key, value, "a whole number of pixels > 0")
    return int(value)


def _guarded(path: Path, read: Any) -> Any:
    """Run ``read()``; OpenCV and model-validation failures become a :class:`ConfigError` naming ``path``."""
    try:
        return read()
    except cv2.error as exc:
        msg = str(exc).strip().splitlines()[-1]
        raise ConfigError(str(path), "<file>", None,
                          f"an OpenCV FileStorage mapping of VINS-Fusion keys ({msg})") from None
    except UnicodeDecodeError as exc:  # OpenCV hands back a string value that is not UTF-8
        raise ConfigError(str(path), f"byte {exc.start} of a value", None, "UTF-8 text") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "<value>"
        raise ConfigError(str(path), key, err.get("input"), err.get("msg", "a valid value")) from None


def read_vins_config(path: str | Path) -> VinsConfig:
    """A VINS-Fusion config: ``body_T_camN`` (T_imu_cam), ``td`` [s], IMU noise, topics, camera files."""
    path = Path(path)
    return _guarded(path, lambda: _read_vins_config(path))


def _read_vins_config(path: Path) -> VinsConfig:
    fs = _open(path)
    try:
        body: dict[int, np.ndarray] = {}
        for i in range(8):
            node = fs.getNode(f"body_T_cam{i}")
            if node.empty():
                continue
            mat = node.mat()
            if mat is None or mat.shape != (4, 4):
                raise ConfigError(str(path), f"body_T_cam{i}", None if mat is None else mat.shape,
                                  "a 4x4 !!opencv-matrix")
            problem = rigid_transform_problem(mat)
            if problem:
                raise ConfigError(str(path), f"body_T_cam{i}", mat.tolist(), problem)
            body[i] = np.asarray(mat, dtype=np.float64)
        if not body:
            raise ConfigError(str(path), "body_T_cam0", None, "this required key (a 4x4 !!opencv-matrix)")
        td = _real(fs, path, "td") if not fs.getNode("td").empty() else 0.0
        noise = None
        if not fs.getNode("acc_n").empty():
            noise = ImuNoise(acc_n=_real(fs, path, "acc_n"), gyr_n=_real(fs, path, "gyr_n"),
                             acc_w=_real(fs, path, "acc_w"), gyr_w=_real(fs, path, "gyr_w"),
                             g_norm=_real(fs, path, "g_norm") if not fs.getNode("g_norm").empty() else 9.81)
        topics = {k: fs.getNode(k).string() for k in ("imu_topic", "image0_topic", "image1_topic")
                  if not fs.getNode(k).empty()}
        calib = {i: fs.getNode(f"cam{i}_calib").string() for i in range(8)
                 if not fs.getNode(f"cam{i}_calib").empty()}
        return VinsConfig(body, td, noise, topics, calib)
    finally:
        fs.release()


def read_vins_pinhole(path: str | Path) -> tuple[int, int, Intrinsics, Distortion]:
    """A VINS PINHOLE camera file -> (width, height, intrinsics, radtan k1 k2 p1 p2)."""
    path = Path(path)
    return _guarded(path, lambda: _read_vins_pinhole(path))


def _read_vins_pinhole(path: Path) -> tuple[int, int, Intrinsics, Distortion]:
    fs = _open(path)
    try:
        model = fs.getNode("model_type").string()
        if model != "PINHOLE":
            raise ConfigError(str(path), "model_type", model or None, "PINHOLE")
        w, h = _size(fs, path, "image_width"), _size(fs, path, "image_height")
        proj = {k: _sub(fs, path, "projection_parameters", k) for k in ("fx", "fy", "cx", "cy")}
        dist = [_sub(fs, path, "distortion_parameters", k) for k in ("k1", "k2", "p1", "p2")]
        return w, h, Intrinsics(**proj), Distortion(model="radtan", coeffs=dist)
    finally:
        fs.release()


def _sub(fs: cv2.FileStorage, path: Path, section: str, key: str) -> float:
    node = fs.getNode(section)
    if node.empty() or not node.isMap():
        raise ConfigError(str(path), section, None, "this required mapping")
    leaf = node.getNode(key)
    if leaf.empty() or not (leaf.isReal() or leaf.isInt()):
        raise ConfigError(str(path), f"{section}.{key}", leaf.string() or None, "a number")
    value = float(leaf.real())
    if not math.isfinite(value):
        raise ConfigError(str(path), f"{section}.{key}", value, "a finite number")
    return value
