"""Read thermal frames from files: 16-bit PNG / TIFF, ``.npy`` and FLIR ``.fff``; write [0,1] floats."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from rgbt.errors import ImageError
from rgbt.image.normalize import check_frame
from rgbt.image.radiometry import FffFrame, read_fff

IMAGE_SUFFIXES = (".png", ".tif", ".tiff")


@dataclass
class ThermalInput:
    """A frame read from disk: ``frame`` (HxW), and ``fff`` when the file was radiometric."""

    frame: np.ndarray
    path: str
    fff: FffFrame | None = None

    @property
    def radiometric(self) -> bool:
        return self.fff is not None


def read_thermal(path: str | Path) -> ThermalInput:
    """Read one single-channel frame; :class:`ImageError` for missing files or unsupported content."""
    path = Path(path)
    if not path.is_file():
        raise ImageError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".fff":
        fff = read_fff(path)
        return ThermalInput(frame=fff.counts, path=str(path), fff=fff)
    if suffix == ".npy":
        try:
            frame = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ImageError(f"{path}: not a readable .npy array ({exc})") from exc
    elif suffix in IMAGE_SUFFIXES:
        frame = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if frame is None:
            raise ImageError(f"{path}: OpenCV cannot decode this image")
    else:
        raise ImageError(f"{path}: unsupported input type {suffix!r}; expected .png, .tif/.tiff, .npy or .fff")
    try:
        frame = check_frame(frame, str(path))
    except ImageError as exc:
        raise ImageError(f"{exc} (thermal input must be one channel, e.g. a 16-bit PNG)") from None
    return ThermalInput(frame=frame, path=str(path))


def write_float_image(path: str | Path, img01: np.ndarray) -> None:
    """Write a float32 image as ``.npy`` or 32-bit float ``.tif``/``.tiff``."""
    path = Path(path)
    img = np.asarray(img01, dtype=np.float32)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        np.save(path, img)
    elif suffix in (".tif", ".tiff"):
        if not cv2.imwrite(str(path), img):
            raise ImageError(f"{path}: OpenCV could not write the TIFF")
    else:
        raise ImageError(f"{path}: unsupported output type {suffix!r}; expected .npy, .tif or .tiff")
