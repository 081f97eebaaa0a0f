"""ROS camera_info YAML (``camera_calibration_parsers`` format) <-> :class:`CameraInfo`.

The file holds ``image_width``, ``image_height``, ``camera_name``, ``camera_matrix`` (3x3 K),
``distortion_model`` and ``distortion_coefficients``, ``rectification_matrix`` (3x3 R) and
``projection_matrix`` (3x4 P), each matrix as ``{rows, cols, data}`` with ``data`` row-major.
Pixels at the camera's native resolution.

Distortion models map onto the stack's as follows: ``plumb_bob`` (k1 k2 p1 p2 k3) and
``rational_polynomial`` (k1 k2 p1 p2 k3 k4 k5 k6) are the stack's ``radtan`` with 5 / 8
coefficients (OpenCV order); ``equidistant`` (k1..k4) is ``equidistant``; an empty coefficient list
is ``none``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from rgbt.stack import CameraSpec, Distortion, Intrinsics
from rgbt.yamlio import Fields, read_yaml, write_yaml

MODELS = {"plumb_bob": (5,), "rational_polynomial": (8,), "equidistant": (4,)}
_IDENTITY3 = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]


@dataclass
class CameraInfo:
    """One camera_info file. Matrices are flat row-major lists as in the file."""

    image_width: int
    image_height: int
    camera_name: str
    camera_matrix: list[float]  # 9 values, K row-major
    distortion_model: str
    distortion_coefficients: list[float]
    rectification_matrix: list[float] = field(default_factory=lambda: list(_IDENTITY3))  # 9 values
    projection_matrix: list[float] = field(default_factory=list)  # 12 values, P row-major

    def K(self) -> np.ndarray:
        return np.asarray(self.camera_matrix, dtype=np.float64).reshape(3, 3)

    def R(self) -> np.ndarray:
        return np.asarray(self.rectification_matrix, dtype=np.float64).reshape(3, 3)

    def P(self) -> np.ndarray:
        return np.asarray(self.projection_matrix, dtype=np.float64).reshape(3, 4)

    def intrinsics(self) -> Intrinsics:
        K = self.K()
        return Intrinsics(fx=K[0, 0], fy=K[1, 1], cx=K[0, 2], cy=K[1, 2])

    def distortion(self) -> Distortion:
        """The stack's distortion (``radtan`` / ``equidistant`` / ``none``)."""
        coeffs = list(self.distortion_coefficients)
        if not coeffs:
            return Distortion(model="none", coeffs=[])
        model: Literal["equidistant", "radtan"] = "equidistant" if self.distortion_model == "equidistant" else "radtan"
        return Distortion(model=model, coeffs=coeffs)


def parse_camera_info(data: dict, source: str = "<camera_info>") -> CameraInfo:
    """Validate a loaded camera_info mapping; errors name ``source``, key, value and expectation."""
    f = Fields(data, source)
    width = f.integer("image_width", minimum=1)
    height = f.integer("image_height", minimum=1)
    name = f.string("camera_name", default="camera")
    K = _matrix(f, "camera_matrix", 3, 3)
    model = f.string("distortion_model")
    if model not in MODELS:
        raise f.error("distortion_model", model, f"one of {sorted(MODELS)}")
    D = _matrix(f, "distortion_coefficients", 1, None)
    if D and len(D) not in MODELS[model]:
        raise f.error("distortion_coefficients", D, f"{MODELS[model][0]} coefficients for {model}, got {len(D)}")
    if K[1] != 0.0 or K[3] != 0.0 or K[6:] != [0.0, 0.0, 1.0] or K[0] <= 0 or K[4] <= 0:
        raise f.error("camera_matrix", K, "a pinhole K [fx 0 cx; 0 fy cy; 0 0 1] with fx, fy > 0")
    R = _matrix(f, "rectification_matrix", 3, 3) if f.has("rectification_matrix") else list(_IDENTITY3)
    P = _matrix(f, "projection_matrix", 3, 4) if f.has("projection_matrix") else _default_P(K)
    return CameraInfo(width, height, name, K, model, D, R, P)


def _default_P(K: list[float]) -> list[float]:
    return [K[0], K[1], K[2], 0.0, K[3], K[4], K[5], 0.0, K[6], K[7], K[8], 0.0]


def _matrix(f: Fields, name: str, rows: int, cols: int | None) -> list[float]:
    """A ``{rows, cols, data}`` matrix; ``cols=None`` accepts any column count (distortion)."""
    m = f.sub(name)
    r, c = m.integer("rows", minimum=0), m.integer("cols", minimum=0)
    shape = f"{rows}x{cols if cols is not None else 'N'}"
    if r != rows and not (cols is None and r == 0):
        raise m.error("rows", r, f"{rows} (a {shape} matrix)")
    if cols is not None and c != cols:
        raise m.error("cols", c, f"{cols} (a {shape} matrix)")
    data = m.numbers("data")
    if len(data) != r * c:
        raise m.error("data", m.raw("data"), f"rows x cols = {r * c} numbers, got {len(data)}")
    return data


def read_camera_info(path: str | Path) -> CameraInfo:
    return parse_camera_info(read_yaml(path), str(path))


def camera_info_to_dict(info: CameraInfo) -> dict:
    def mat(rows: int, cols: int, data: list[float]) -> dict:
        return {"rows": rows, "cols": cols, "data": [float(v) for v in data]}

    return {
        "image_width": int(info.image_width),
        "image_height": int(info.image_height),
        "camera_name": info.camera_name,
        "camera_matrix": mat(3, 3, info.camera_matrix),
        "distortion_model": info.distortion_model,
        "distortion_coefficients": mat(1, len(info.distortion_coefficients), info.distortion_coefficients),
        "rectification_matrix": mat(3, 3, info.rectification_matrix),
        "projection_matrix": mat(3, 4, info.projection_matrix),
    }


def write_camera_info(info: CameraInfo, path: str | Path, comment: str | None = None) -> Path:
    header = "".join(f"# {line}\n" for line in comment.splitlines()) if comment else None
    return write_yaml(path, camera_info_to_dict(info), header=header)


def camera_info_from_calibration(width: int, height: int, intrinsics: Intrinsics, distortion: Distortion,
                                 camera_name: str = "camera") -> CameraInfo:
    """A monocular camera_info (R = I, P = [K | 0]) from the stack's intrinsics and distortion."""
    K = intrinsics.K().reshape(-1).tolist()
    if distortion.model == "equidistant":
        model, D = "equidistant", list(distortion.coeffs)
    elif distortion.model == "none":
        model, D = "plumb_bob", [0.0] * 5
    elif len(distortion.coeffs) == 8:
        model, D = "rational_polynomial", list(distortion.coeffs)
    else:
        model, D = "plumb_bob", (list(distortion.coeffs) + [0.0])[:5]
    return CameraInfo(width, height, camera_name, K, model, D, list(_IDENTITY3), _default_P(K))


def camera_info_from_spec(camera: CameraSpec, camera_name: str | None = None) -> CameraInfo:
    return camera_info_from_calibration(camera.width, camera.height, camera.intrinsics, camera.distortion,
                                        camera_name or camera.name or "camera")
