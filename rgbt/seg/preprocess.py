"""Frame -> model input and model output -> frame: normalization, pad / resize, and back.

The normalization is the model's (from its sidecar) and is the *same function* at training and
run time: thermal frames go through ``rgbt.image.normalize.normalize`` (1st-99th percentile +
CLAHE, float32 [0, 1]); RGB frames are divided by 255.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import cv2
import numpy as np

from rgbt.errors import ImageError
from rgbt.image.normalize import normalize
from rgbt.seg.sidecar import InputSpec, Normalization


def normalize_thermal(frame_u16: np.ndarray, norm: Normalization, out: np.ndarray | None = None) -> np.ndarray:
    """Raw 16-bit counts (HxW uint16) -> float32 HxW in [0, 1] with the model's normalization
    (into ``out`` when given: a float32 HxW array, e.g. a plane of the model input)."""
    if not isinstance(frame_u16, np.ndarray) or frame_u16.dtype != np.uint16 or frame_u16.ndim != 2:
        raise ImageError(f"thermal frame must be a uint16 HxW array, got "
                         f"{getattr(frame_u16, 'dtype', type(frame_u16).__name__)} {getattr(frame_u16, 'shape', '')}")

    return normalize(frame_u16, low=norm.low, high=norm.high, clahe=norm.clahe, out=out)


def normalize_rgb(frame_rgb: np.ndarray) -> np.ndarray:
    """uint8 HxWx3 RGB -> float32 HxWx3 in [0, 1]."""
    if not isinstance(frame_rgb, np.ndarray) or frame_rgb.dtype != np.uint8 or frame_rgb.ndim != 3 \
            or frame_rgb.shape[2] != 3:
        raise ImageError(f"RGB frame must be a uint8 HxWx3 array, got "
                         f"{getattr(frame_rgb, 'dtype', type(frame_rgb).__name__)} {getattr(frame_rgb, 'shape', '')}")
    return frame_rgb.astype(np.float32) * np.float32(1.0 / 255.0)


@dataclass(frozen=True)
class Fit:
    """How a frame of ``src`` (h, w) was fitted to the model's ``dst`` (h, w)."""

    mode: str  # "pad" | "resize"
    src: tuple[int, int]
    dst: tuple[int, int]


def fit_mode(mode: str, src: tuple[int, int], dst: tuple[int, int]) -> Fit:
    if mode == "pad" and (src[0] > dst[0] or src[1] > dst[1]):
        mode = "resize"  # larger frames are resized, never cropped
    return Fit(mode, src, dst)


def to_planes(img: np.ndarray, fit: Fit, out: np.ndarray) -> None:
    """Write an HxW or HxWxC float32 image into ``out`` (CxHxW) fitted per ``fit``."""
    h, w = fit.src
    if img.ndim == 2:
        img = img[:, :, None]
    if fit.mode == "pad":
        if (h, w) != fit.dst:
            out[...] = 0.0
        out[:, :h, :w] = np.moveaxis(img, 2, 0)
    else:
        r = cv2.resize(
            img, (fit.dst[1], fit.dst[0]), interpolation=cv2.INTER_AREA if h > fit.dst[0] else cv2.INTER_LINEAR
        )
        out[...] = np.moveaxis(r.reshape(fit.dst[0], fit.dst[1], -1), 2, 0)


def shrink_to_input(frame: np.ndarray, size_hw: tuple[int, int], fit_kind: str) -> np.ndarray | None:
    """``frame`` (HxW or HxWxC) resized to the model input ``size_hw`` with ``cv2.INTER_AREA``, so
    that it is normalized at that size (``resize_first``: the percentiles and CLAHE of a 240x192
    frame instead of a 640x512 one); None where that does not apply: a model that pads (``fit_kind``
    not "resize") or a frame not larger than the input in both dimensions."""
    h, w = size_hw
    if fit_kind != "resize" or not isinstance(frame, np.ndarray) or frame.ndim not in (2, 3) \
            or frame.shape[0] <= h or frame.shape[1] <= w:
        return None
    return cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)


def prepare(
    frames: Mapping[str, np.ndarray | None], spec: InputSpec, fit_kind: str, out: np.ndarray | None = None
) -> tuple[np.ndarray, Fit]:
    """Normalize + fit the frames one model input needs; returns (1xCxHxW float32, Fit).

    ``frames``: ``{"thermal": uint16 HxW}`` and/or ``{"rgb": uint8 HxWx3}`` (same size for "rgbt";
    channel order R, G, B, T).
    """
    if out is None:
        out = np.empty((1, spec.channels, spec.height, spec.width), np.float32)
    if spec.modality == "thermal":
        th = _need(frames, "thermal")
        fit = fit_mode(fit_kind, th.shape[:2], (spec.height, spec.width))
        if fit.src == fit.dst and spec.channels == 1:  # normalize straight into the model input
            normalize_thermal(th, spec.normalization, out=out[0, 0])
            return out, fit
        img = normalize_thermal(th, spec.normalization)
    elif spec.modality == "rgb":
        img = normalize_rgb(_need(frames, "rgb"))
    else:
        rgb, th = _need(frames, "rgb"), _need(frames, "thermal")
        t = normalize_thermal(th, spec.normalization)
        r = normalize_rgb(rgb)
        if r.shape[:2] != t.shape:
            raise ImageError(f"early fusion needs an aligned pair: RGB {r.shape[:2]} vs thermal {t.shape}")
        img = np.concatenate([r, t[:, :, None]], axis=2)
    fit = fit_mode(fit_kind, img.shape[:2], (spec.height, spec.width))
    to_planes(img, fit, out[0])
    return out, fit


def _need(frames: Mapping[str, np.ndarray | None], key: str) -> np.ndarray:
    frame = frames.get(key)
    if frame is None:
        raise ImageError(f"this model needs a {key} frame")
    return frame


def unfit_ids(ids: np.ndarray, fit: Fit) -> np.ndarray:
    """Model-size class ids (HxW uint8) -> input resolution (crop or nearest resize)."""
    if fit.src == fit.dst:
        return ids
    if fit.mode == "pad":
        return np.ascontiguousarray(ids[: fit.src[0], : fit.src[1]])
    return cv2.resize(ids, (fit.src[1], fit.src[0]), interpolation=cv2.INTER_NEAREST)
