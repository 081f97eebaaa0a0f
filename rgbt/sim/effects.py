"""Sensor effects applied to noise-free renders: thermal FPN / shading / drift / noise, optical
vignetting and a low-light camera model (auto-exposure, gain, shot + read noise, quantization), the VN-100 noise and
bias model, GNSS error.

Per-frame random noise comes from a bank of precomputed noise images (seeded) from which each
frame takes a randomly placed window: one saturating add per frame instead of drawing ~1e6
normal samples (the dominant cost otherwise). Everything is seeded: same seed, same bytes.
"""

from __future__ import annotations

import cv2
import numpy as np

_BANK = 4  # noise images per camera
_MARGIN = 48  # window offsets drawn from [0, _MARGIN)


class NoiseBank:
    """Zero-mean Gaussian noise windows, stored with a positive offset for saturating uint adds."""

    def __init__(self, rng: np.random.Generator, shape: tuple[int, ...], sigma: float, dtype: type) -> None:
        self.offset = int(np.ceil(4 * sigma)) + 1
        h, w = shape[:2]
        full = (h + _MARGIN, w + _MARGIN) + tuple(shape[2:])
        self.bank = [
            np.clip(np.round(rng.standard_normal(full, dtype=np.float32) * sigma) + self.offset, 0,
                    2 * self.offset).astype(dtype)
            for _ in range(_BANK)
        ]
        self.h, self.w = h, w

    def window(self, rng: np.random.Generator) -> np.ndarray:
        k, dy, dx = rng.integers(0, _BANK), rng.integers(0, _MARGIN), rng.integers(0, _MARGIN)
        return self.bank[int(k)][dy:dy + self.h, dx:dx + self.w]


def radial_falloff(height: int, width: int, fx: float, cx: float, cy: float) -> np.ndarray:
    """cos^4 of the off-axis angle per pixel (float32, 1 on axis)."""
    v, u = np.mgrid[0:height, 0:width].astype(np.float32)
    r2 = ((u - cx) ** 2 + (v - cy) ** 2) / np.float32(fx * fx)
    return (1.0 / (1.0 + r2) ** 2).astype(np.float32)


class ThermalEffects:
    """Boson-like non-uniformity: column/pixel fixed-pattern noise, radial shading (vignetting of the
    scene flux, ~1.5 K at the corners), an offset drift that grows between flat-field corrections
    and is reset by each FFC, and temporal noise (NETD 50 mK = 5 counts)."""

    NETD_COUNTS = 5.0
    FPN_COUNTS = 12.0
    COLUMN_COUNTS = 8.0
    SHADING_COUNTS = 150.0
    DRIFT_COUNTS = 40.0

    def __init__(self, rng: np.random.Generator, height: int, width: int, fx: float, cx: float, cy: float,
                 noise: bool) -> None:
        self.noise = noise
        shading = -self.SHADING_COUNTS * (1.0 - radial_falloff(height, width, fx, cx, cy))
        if noise:
            fpn = rng.standard_normal((height, width), dtype=np.float32) * self.FPN_COUNTS
            fpn += rng.standard_normal((1, width), dtype=np.float32) * self.COLUMN_COUNTS
            drift: np.ndarray = cv2.GaussianBlur(rng.standard_normal((height, width), dtype=np.float32), (0, 0), 40.0)
            drift *= self.DRIFT_COUNTS / max(float(drift.std()), 1e-6)
            self.bank: NoiseBank | None = NoiseBank(rng, (height, width), self.NETD_COUNTS, np.uint16)
        else:
            fpn = np.zeros((height, width), np.float32)
            drift = np.zeros((height, width), np.float32)
            self.bank = None
        self._fixed = shading + fpn
        self._drift = drift
        self._bias = 2000  # keeps the static pattern positive for saturating uint16 adds
        self._step = -1
        self._static: np.ndarray | None = None

    def apply(self, img: np.ndarray, rng: np.random.Generator, since_ffc_frac: float) -> np.ndarray:
        """``img`` uint16 counts -> counts with non-uniformity and noise (drift quantized to 1/8 period)."""
        step = int(min(max(since_ffc_frac, 0.0), 1.0) * 8)
        if step != self._step:
            static = self._fixed + self._drift * (step / 8.0) + self._bias
            self._static = np.clip(np.round(static), 0, 65535).astype(np.uint16)
            self._step = step
        assert self._static is not None  # set on the first call (step >= 0)
        out = cv2.add(img, self._static)
        if self.bank is not None:
            out = cv2.add(out, self.bank.window(rng))
            # OpenCV takes a scalar for an array operand; its stubs say arrays only
            return cv2.subtract(out, self._bias + self.bank.offset)  # type: ignore[call-overload]
        return cv2.subtract(out, self._bias)  # type: ignore[call-overload]


class OpticalEffects:
    """Colour / mono camera: lens vignetting (cos^4) and a low-light sensor model (see
    :class:`CameraModel`): auto-exposure and gain limited by the trigger period, photon shot noise,
    read noise scaled by the gain, 8-bit quantization."""

    def __init__(self, rng: np.random.Generator, height: int, width: int, channels: int, fx: float,
                 cx: float, cy: float, night: bool, noise: bool, frame_period_s: float = 1.0 / 30.0) -> None:
        vig = 0.35 + 0.65 * radial_falloff(height, width, fx, cx, cy)
        vig = np.clip(np.round(vig * 255), 0, 255).astype(np.uint8)
        self.vig = np.dstack([vig] * channels) if channels > 1 else vig
        shape = (height, width, channels) if channels > 1 else (height, width)
        self.camera = CameraModel(night, frame_period_s)
        self.bank = NormalBank(rng, shape) if noise else None
        self.last_exposure: tuple[float, float] | None = None  # (exposure s, gain) of the last frame

    def apply(self, img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = cv2.multiply(img, self.vig, scale=1.0 / 255.0)
        normal = self.bank.window(rng) if self.bank is not None else None
        out, self.last_exposure = self.camera.expose(out, normal)
        return out


class NormalBank:
    """Standard normal float32 windows (the same trick as :class:`NoiseBank`, unscaled: the camera
    model scales them per pixel by the signal-dependent sigma)."""

    def __init__(self, rng: np.random.Generator, shape: tuple[int, ...]) -> None:
        h, w = shape[:2]
        full = (h + _MARGIN, w + _MARGIN) + tuple(shape[2:])
        self.bank = [rng.standard_normal(full, dtype=np.float32) for _ in range(_BANK)]
        self.h, self.w = h, w

    def window(self, rng: np.random.Generator) -> np.ndarray:
        k, dy, dx = rng.integers(0, _BANK), rng.integers(0, _MARGIN), rng.integers(0, _MARGIN)
        return self.bank[int(k)][dy:dy + self.h, dx:dx + self.w]


class CameraModel:
    """Low-light model of a Blackfly-class CMOS camera (numbers typical of a 1/3" global-shutter
    sensor at 8 bit; not a datasheet of one part).

    The render (uint8, vignetted) is read as scene radiance: a render value ``v`` gives a photon
    flux of ``v / 255 * FULL_WELL_E / SAT_EXPOSURE_S * illum`` electrons per second, where a by-day
    value of 255 fills the well in ``SAT_EXPOSURE_S`` (bright sun) and ``illum`` = 1 by day,
    ``NIGHT_ILLUMINANCE`` at night (the night world's rasters already carry the darker reflected
    light: ``NIGHT_BRIGHTNESS`` 0.1; together ~1e-4 of sunlight, deep twilight / a lit area).
    Auto-exposure meters the frame mean and aims at ``AE_TARGET`` of full scale: exposure first, up
    to the trigger period minus the readout (``frame_period_s - READOUT_S``), then analogue gain up
    to ``MAX_GAIN_DB``. Electrons are clipped at the full well, get shot noise
    (sigma sqrt(signal)) and read noise (``READ_NOISE_E``), are multiplied by the gain and quantized to
    8 bit (``255 / FULL_WELL_E`` DN per electron at unity gain). By day this gives ~1.5 DN of noise;
    at night exposure and gain saturate: a dark image (mean ~5 DN) at SNR ~2 per pixel."""

    FULL_WELL_E = 10000.0
    READ_NOISE_E = 5.0
    SAT_EXPOSURE_S = 1.0e-3
    NIGHT_ILLUMINANCE = 1.0e-3
    AE_TARGET = 0.35
    MIN_EXPOSURE_S = 20e-6
    READOUT_S = 1.5e-3
    MAX_GAIN_DB = 24.0

    def __init__(self, night: bool, frame_period_s: float) -> None:
        self.illum = self.NIGHT_ILLUMINANCE if night else 1.0
        self.max_exposure_s = max(self.MIN_EXPOSURE_S, frame_period_s - self.READOUT_S)
        self.max_gain = 10.0 ** (self.MAX_GAIN_DB / 20.0)

    def auto_exposure(self, mean_dn: float) -> tuple[float, float]:
        """(exposure s, linear gain) that bring a frame of mean render value ``mean_dn`` to the target."""
        rate = max(mean_dn, 0.5) / 255.0 * self.FULL_WELL_E / self.SAT_EXPOSURE_S * self.illum  # e-/s
        want = self.AE_TARGET * self.FULL_WELL_E
        exposure = float(np.clip(want / rate, self.MIN_EXPOSURE_S, self.max_exposure_s))
        gain = float(np.clip(want / (rate * exposure), 1.0, self.max_gain))
        return exposure, gain

    def expose(self, img: np.ndarray, normal: np.ndarray | None) -> tuple[np.ndarray, tuple[float, float]]:
        """uint8 render -> uint8 camera frame; ``normal``: standard normal samples of the same shape
        (None: noise-free). Returns the frame and (exposure s, gain)."""
        exposure, gain = self.auto_exposure(float(np.mean(img)))
        e_per_dn = self.FULL_WELL_E / 255.0 * exposure / self.SAT_EXPOSURE_S * self.illum
        e = img.astype(np.float32)
        e *= np.float32(e_per_dn)
        np.minimum(e, np.float32(self.FULL_WELL_E), out=e)
        if normal is not None:
            sigma = cv2.sqrt(e + np.float32(self.READ_NOISE_E ** 2))
            e += sigma * normal
        e *= np.float32(gain * 255.0 / self.FULL_WELL_E)
        np.rint(e, out=e)
        return np.clip(e, 0, 255).astype(np.uint8), (exposure, gain)


class ImuNoise:
    """VN-100 noise model: white noise (density ``n``) + bias random walk (``w``), continuous-time
    densities from ``stack.imu.noise``; discrete sigma = n * sqrt(rate), bias step = w * sqrt(dt)."""

    def __init__(self, rng: np.random.Generator, n_samples: int, rate_hz: float, acc_n: float, gyr_n: float,
                 acc_w: float, gyr_w: float) -> None:
        dt = 1.0 / rate_hz
        self.gyro_bias = np.cumsum(rng.standard_normal((n_samples, 3)) * gyr_w * np.sqrt(dt), axis=0)
        self.accel_bias = np.cumsum(rng.standard_normal((n_samples, 3)) * acc_w * np.sqrt(dt), axis=0)
        # a turn-on bias as the part has after power-up (small: 0.02 deg/s, 2 mg)
        self.gyro_bias += rng.standard_normal(3) * np.deg2rad(0.02)
        self.accel_bias += rng.standard_normal(3) * 0.02
        self.gyro_white = rng.standard_normal((n_samples, 3)) * gyr_n / np.sqrt(dt)
        self.accel_white = rng.standard_normal((n_samples, 3)) * acc_n / np.sqrt(dt)


def gauss_markov(rng: np.random.Generator, n: int, dt: float, sigma: np.ndarray, tau_s: float) -> np.ndarray:
    """First-order Gauss-Markov sequence (n x len(sigma)) with stationary std ``sigma``."""
    phi = np.exp(-dt / tau_s)
    q = np.sqrt(1 - phi * phi)
    out = np.zeros((n, len(sigma)))
    x = rng.standard_normal(len(sigma)) * sigma
    for i in range(n):
        out[i] = x
        x = phi * x + q * sigma * rng.standard_normal(len(sigma))
    return out
