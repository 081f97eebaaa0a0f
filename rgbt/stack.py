"""The sensor-stack model: one source of truth for sensors, calibration, topics and timing.

``calib/stack.yaml`` is validated into a :class:`Stack`. Conventions (used throughout rgbt):

* ``T_a_b`` is a 4x4 homogeneous transform mapping points from frame b into frame a
  (``p_a = T_a_b @ p_b``). Camera frames are x right, y down, z forward.
* ``td_s`` is the camera-to-IMU time offset in seconds: ``t_imu = t_cam + td_s``
  (Kalibr ``timeshift_cam_imu``, VINS-Fusion ``td``).
* Intrinsics are pixels at the camera's native resolution; distortion ``radtan`` coefficients are
  ``k1, k2, p1, p2[, k3]`` (OpenCV order), ``equidistant`` are ``k1..k4``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from rgbt.errors import ConfigError
from rgbt.paths import DEFAULT_STACK
from rgbt.yamlio import load_yaml_text, read_text


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Intrinsics(_Model):
    """Pinhole intrinsics in pixels."""

    fx: float = Field(gt=0)
    fy: float = Field(gt=0)
    cx: float
    cy: float

    def K(self) -> np.ndarray:
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])


class Distortion(_Model):
    model: Literal["radtan", "equidistant", "none"]
    coeffs: list[float] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_count(self) -> Distortion:
        allowed = {"radtan": (4, 5, 8), "equidistant": (4,), "none": (0,)}[self.model]
        if len(self.coeffs) not in allowed:
            raise ValueError(f"{self.model} distortion needs {' or '.join(map(str, allowed))} coefficients, "
                             f"got {len(self.coeffs)}")
        return self

    def as_array(self) -> np.ndarray:
        """Coefficients in OpenCV order (radtan: k1 k2 p1 p2 [k3]; equidistant: k1..k4)."""
        return np.asarray(self.coeffs, dtype=np.float64)


Matrix4 = list[list[float]]


def _check_transform(value: Matrix4) -> Matrix4:
    a = np.asarray(value, dtype=np.float64)
    if a.shape != (4, 4):
        raise ValueError(f"a 4x4 matrix (list of 4 rows), got shape {a.shape}")
    if not np.allclose(a[3], [0, 0, 0, 1], atol=1e-9):
        raise ValueError(f"last row [0, 0, 0, 1], got {a[3].tolist()}")
    r = a[:3, :3]
    if not np.allclose(r @ r.T, np.eye(3), atol=2e-3) or np.linalg.det(r) <= 0:
        raise ValueError("a proper rotation in the top-left 3x3 (orthonormal, det +1)")
    return value


class VioCalibration(_Model):
    """The calibration a VIO estimator is given for this camera (CART kept separate VIO calibrations)."""

    intrinsics: Intrinsics
    distortion: Distortion


class CameraSpec(_Model):
    name: str = ""
    model: str
    modality: Literal["thermal", "color", "mono"]
    topic: str
    frame_id: str
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    rate_hz: float = Field(gt=0)
    encoding: Literal["mono16", "mono8", "rgb8", "bgr8"]
    trigger_divider: int = Field(default=1, ge=1, description="trigger pulses per frame")
    intrinsics: Intrinsics
    distortion: Distortion
    T_imu_cam: Matrix4
    td_s: float = 0.0
    vio: VioCalibration | None = None

    _check_T = field_validator("T_imu_cam")(_check_transform)

    def K(self) -> np.ndarray:
        return self.intrinsics.K()

    def dist_coeffs(self) -> np.ndarray:
        return self.distortion.as_array()

    def T_imu_cam_matrix(self) -> np.ndarray:
        return np.asarray(self.T_imu_cam, dtype=np.float64)

    def T_cam_imu_matrix(self) -> np.ndarray:
        return invert_transform(self.T_imu_cam_matrix())

    def vio_calibration(self) -> VioCalibration:
        """The VIO calibration if given, else the camera's own."""
        return self.vio or VioCalibration(intrinsics=self.intrinsics, distortion=self.distortion)


class ImuNoise(_Model):
    """Continuous-time noise densities: acc_n [m/s^2/sqrt(Hz)], gyr_n [rad/s/sqrt(Hz)],
    bias random walks acc_w [m/s^3/sqrt(Hz)], gyr_w [rad/s^2/sqrt(Hz)]; g_norm [m/s^2]."""

    acc_n: float = Field(ge=0)
    gyr_n: float = Field(ge=0)
    acc_w: float = Field(ge=0)
    gyr_w: float = Field(ge=0)
    g_norm: float = Field(default=9.81, gt=0)


class ImuSpec(_Model):
    name: str = "imu"
    model: str
    topic: str
    frame_id: str
    rate_hz: float = Field(gt=0)
    noise: ImuNoise = Field(description="the sensor's datasheet densities (simulation, Kalibr)")
    vio_noise: ImuNoise | None = Field(default=None, description="tuned values given to VIO estimators")

    def vio_noise_or_noise(self) -> ImuNoise:
        return self.vio_noise or self.noise


class GnssSpec(_Model):
    model: str = "u-blox"
    topic: str
    frame_id: str = "gps"
    rate_hz: float = Field(gt=0)


class AutopilotSpec(_Model):
    model: str = "ArduPilot"
    pose_topic: str
    global_topic: str
    state_topic: str
    pose_rate_hz: float = Field(gt=0)


class TriggerSpec(_Model):
    rate_hz: float = Field(gt=0, description="pulse rate of the hardware trigger")
    imu_syncin: bool = Field(default=True, description="pulses wired to the VN-100 SyncIn (mode COUNT)")
    cameras: list[str] = Field(default_factory=list, description="cameras wired to the trigger")


class StereoPair(_Model):
    """A Kalibr camchain pair resampled to one canvas (CART: 960x600).

    ``camN_offset`` is where the camera's native image origin lies in the pair canvas (pixels):
    CART padded the 640x512 thermal image into 960x600.
    """

    cam0: str
    cam1: str
    width: int = Field(gt=0)
    height: int = Field(gt=0)
    cam0_intrinsics: Intrinsics
    cam0_distortion: Distortion
    cam0_offset: tuple[float, float] = (0.0, 0.0)
    cam1_intrinsics: Intrinsics
    cam1_distortion: Distortion
    cam1_offset: tuple[float, float] = (0.0, 0.0)
    T_cam1_cam0: Matrix4

    _check_T = field_validator("T_cam1_cam0")(_check_transform)

    def T_cam1_cam0_matrix(self) -> np.ndarray:
        return np.asarray(self.T_cam1_cam0, dtype=np.float64)


class Stack(_Model):
    name: str
    description: str = ""
    synthetic: bool = False
    cameras: dict[str, CameraSpec]
    imu: ImuSpec
    gnss: GnssSpec
    autopilot: AutopilotSpec
    trigger: TriggerSpec
    pairs: dict[str, StereoPair] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _cross_check(self) -> Stack:
        for key, cam in self.cameras.items():
            if not cam.name:
                cam.name = key
        for key, pair in self.pairs.items():
            for side in (pair.cam0, pair.cam1):
                if side not in self.cameras:
                    raise ValueError(f"pair {key!r} names camera {side!r}; cameras are {sorted(self.cameras)}")
        for name in self.trigger.cameras:
            if name not in self.cameras:
                raise ValueError(f"trigger.cameras names {name!r}; cameras are {sorted(self.cameras)}")
        return self

    def camera(self, name: str) -> CameraSpec:
        try:
            return self.cameras[name]
        except KeyError:
            raise ConfigError("stack", f"cameras.{name}", name, f"one of {sorted(self.cameras)}") from None

    def T_cam_a_cam_b(self, a: str, b: str) -> np.ndarray:
        """Camera-to-camera transform through the IMU: ``T_a_b = T_a_imu @ T_imu_b``."""
        return self.camera(a).T_cam_imu_matrix() @ self.camera(b).T_imu_cam_matrix()


def invert_transform(T: np.ndarray) -> np.ndarray:
    """Exact inverse of a rigid 4x4 transform."""
    T = np.asarray(T, dtype=np.float64)
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def stack_from_dict(data: object, source: str = "<dict>") -> Stack:
    """Validate a mapping into a :class:`Stack`; errors name ``source``, the key path, value and expectation."""
    if not isinstance(data, dict):
        raise ConfigError(source, "<root>", type(data).__name__, "a mapping of stack sections")
    try:
        return Stack.model_validate(data)
    except ValidationError as exc:
        raise config_error(source, exc) from None


def config_error(source: str, exc: ValidationError, prefix: str = "") -> ConfigError:
    """The :class:`ConfigError` for the first error of a pydantic validation of ``source`` (a file):
    key path (under ``prefix``), the value found and what was expected."""
    err = exc.errors()[0]
    key = ".".join([prefix] * bool(prefix) + [str(p) for p in err["loc"]]) or "<root>"
    value = None if err.get("type") == "missing" else err.get("input")
    return ConfigError(source, key, value, _expectation(err))


def _expectation(err: Mapping[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "missing":
        return "this required field"
    if kind == "extra_forbidden":
        return "no such field (unknown key)"
    msg = err.get("msg", "")
    return msg.removeprefix("Value error, ").removeprefix("Input should be ")


def load_stack(path: str | Path | None = None) -> Stack:
    """Load and validate a stack YAML (default: the repository's ``calib/stack.yaml``, the CART stack)."""
    path = Path(path) if path is not None else DEFAULT_STACK
    data = load_yaml_text(read_text(path, "stack YAML file"), str(path))
    return stack_from_dict(data, str(path))


def dump_stack(stack: Stack, path: str | Path) -> None:
    """Write a stack YAML that :func:`load_stack` reads back to an equal model."""
    Path(path).write_text(yaml.safe_dump(stack.model_dump(mode="json"), sort_keys=False))
