"""Read thermal frames from files: 16-bit PNG / TIFF, ``.npy`` and FLIR ``.fff``; write [0,1] floats."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from rgbt.errors import ImageError
from rgbt.image.normalize import check_frame
from rgbt.image.radiometry import FffFrame, read_fff

IMAGE_SUFFIXES = (".png", ".tif", ".tiff")
MAX_PIXELS = 1 << 26  # 67 Mpx: any real frame is far smaller; a larger header is damaged


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
    if path.is_dir():
        raise ImageError(f"{path}: is a directory, expected an image file (.png, .tif/.tiff, .npy or .fff)")
    if not path.is_file():
        raise ImageError(f"{path}: no such file (expected an image file: .png, .tif/.tiff, .npy or .fff)")
    suffix = path.suffix.lower()
    if suffix == ".fff":
        fff = read_fff(path)
        return ThermalInput(frame=fff.counts, path=str(path), fff=fff)
    if suffix == ".npy":
        frame = _read_npy(path)
    elif suffix in IMAGE_SUFFIXES:
        frame = _read_image(path)
    else:
        raise ImageError(f"{path}: unsupported input type {suffix!r}; expected .png, .tif/.tiff, .npy or .fff")
    try:
        frame = check_frame(frame, str(path))
    except ImageError as exc:
        raise ImageError(f"{exc} (thermal input must be one channel, e.g. a 16-bit PNG)") from None
    return ThermalInput(frame=frame, path=str(path))


def _read_npy(path: Path) -> np.ndarray:
    """A ``.npy`` array, memory-mapped first so that a header promising more data than the file
    holds is an error rather than a huge allocation."""
    try:
        mapped = np.load(path, mmap_mode="r", allow_pickle=False)
        frame = np.array(mapped)
        del mapped
    except Exception as exc:  # noqa: BLE001 - numpy raises EOFError, ValueError, OSError, SyntaxError ...
        what = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError) or path.stat().st_size == 0:
            what = f"the file is empty or truncated ({path.stat().st_size} bytes)"
        raise ImageError(f"{path}: not a readable .npy array: {what}; expected a 2-D numeric array "
                         "written by numpy.save") from None
    if not isinstance(frame, np.ndarray):
        raise ImageError(f"{path}: holds a {type(frame).__name__}, expected a single .npy array")
    return frame


def _read_image(path: Path) -> np.ndarray:
    """A PNG / TIFF through OpenCV; its header is checked first so a forged size cannot allocate gigabytes."""
    pixels = _header_pixels(path)
    if pixels is not None and pixels > MAX_PIXELS:
        raise ImageError(f"{path}: header says {pixels} pixels, expected at most {MAX_PIXELS} (a damaged header?)")
    try:
        frame = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:
        raise ImageError(f"{path}: OpenCV cannot decode this image ({str(exc).strip().splitlines()[-1]})") from None
    if frame is None:
        raise ImageError(f"{path}: OpenCV cannot decode this image; expected a valid PNG or TIFF")
    return frame


def _header_pixels(path: Path) -> int | None:
    """Width x height from a PNG IHDR or the first TIFF IFD, or None when not found there."""
    with path.open("rb") as fh:
        head = fh.read(16 + 4096)
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24 and head[12:16] == b"IHDR":
        width, height = struct.unpack_from(">II", head, 16)
        return width * height
    if head[:4] in (b"II*\0", b"MM\0*") and len(head) >= 8:
        order = "<" if head[:2] == b"II" else ">"
        (ifd,) = struct.unpack_from(order + "I", head, 4)
        with path.open("rb") as fh:
            fh.seek(ifd)
            raw = fh.read(2)
            if len(raw) < 2:
                return None
            (count,) = struct.unpack(order + "H", raw)
            entries = fh.read(12 * min(count, 512))
        dims = {}
        for i in range(len(entries) // 12):
            tag, kind, _n = struct.unpack_from(order + "HHI", entries, 12 * i)
            if tag in (256, 257):  # ImageWidth, ImageLength (SHORT or LONG)
                fmt = "H" if kind == 3 else "I"
                dims[tag] = struct.unpack_from(order + fmt, entries, 12 * i + 8)[0]
        if len(dims) == 2:
            return dims[256] * dims[257]
    return None


def write_image(path: str | Path, img: np.ndarray) -> None:
    """Write an 8/16-bit image with OpenCV (suffix picks the format); :class:`ImageError` for an unknown
    suffix, a missing folder or a failed write."""
    path = Path(path)
    if not path.parent.is_dir():
        raise ImageError(f"{path}: output folder {path.parent} does not exist")
    try:
        ok = cv2.imwrite(str(path), img)
    except cv2.error as exc:
        raise ImageError(f"{path}: OpenCV cannot write {path.suffix!r} files ({str(exc).strip().splitlines()[-1]}); "
                         "expected .png, .tif/.tiff or .jpg") from None
    if not ok:
        raise ImageError(f"{path}: OpenCV could not write the image")


def write_float_image(path: str | Path, img01: np.ndarray) -> None:
    """Write a float32 image as ``.npy`` or 32-bit float ``.tif``/``.tiff``."""
    path = Path(path)
    img = np.asarray(img01, dtype=np.float32)
    suffix = path.suffix.lower()
    if not path.parent.is_dir():
        raise ImageError(f"{path}: output folder {path.parent} does not exist")
    if suffix == ".npy":
        try:
            np.save(path, img)
        except OSError as exc:
            raise ImageError(f"{path}: cannot write: {exc.strerror or exc}") from None
    elif suffix in (".tif", ".tiff"):
        write_image(path, img)
    else:
        raise ImageError(f"{path}: unsupported output type {suffix!r}; expected .npy, .tif or .tiff")
