"""Radiometry: FLIR ``.fff`` frames, Planck counts -> degrees C, Boson T-linear, region statistics.

FLIR FFF layout (as documented by ExifTool's FLIR module and FLIR's "FFF" header notes):

* a 64-byte file header: ``b"FFF\\0"``, 16-byte creator, uint32 format version (100) at 0x14,
  uint32 offset of the record directory at 0x18, uint32 number of directory entries at 0x1c;
  the header's byte order is whichever makes the version read 100 (big-endian in practice);
* the record directory: 32-byte entries ``(uint16 type, uint16 subtype, uint32 version,
  uint32 id, uint32 offset, uint32 length, parent, object number, checksum)``; type 0 is a free
  slot, 1 RawData (subtype 1 big-endian, 2 little-endian, 3 PNG), 0x20 CameraInfo, 0x2b GPS;
* RawData: a 32-byte header (uint16 byte-order marker = 2, uint16 width, uint16 height, ...)
  followed by ``width * height`` uint16 counts;
* CameraInfo (byte order from its leading uint16 marker = 2): float32 emissivity (0x20), object
  distance m (0x24), reflected apparent, atmospheric and IR-window temperatures in kelvin
  (0x28, 0x2c, 0x30), IR-window transmission (0x34), relative humidity 0..1 (0x3c), Planck R1,
  B, F (0x58, 0x5c, 0x60), atmospheric transmission alpha1, alpha2, beta1, beta2, X
  (0x70..0x80), camera range max/min in kelvin (0x90, 0x94), model / part / serial / software
  strings (0xd4, 0xf4, 0x104, 0x114), int32 Planck O (0x308), float32 Planck R2 (0x30c), and
  uint16 raw value median / range (0x338, 0x33c).

Planck conversion (FLIR's calibration model; the form used by ExifTool's documentation,
Thermimage's ``raw2temp`` and flirpy): a raw object signal ``S`` maps to
``T = B / ln(R1 / (R2 * (S + O)) + F)`` kelvin, and a temperature ``T`` gives the signal
``R1 / (R2 * (exp(B / T) - F)) - O``. With ``atmospheric=True`` the measured counts are first
corrected for emissivity, reflected radiation, the atmosphere between camera and object
(transmission from distance, humidity and the alpha/beta/X constants, with FLIR's water-vapour
formula) and the IR window: ``S_obj = S / (E tau) - (1 - E) / E * S_refl - (1 - tau) / (E tau) * S_atm``
(written out with the window terms in :func:`counts_to_celsius`).
"""

from __future__ import annotations

import dataclasses
import math
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, create_model

from rgbt.errors import ImageError

FFF_MAGIC = b"FFF\0"
RECORD_RAW = 0x01
RECORD_CAMERA_INFO = 0x20
KELVIN = 273.15


@dataclass(frozen=True)
class RadiometricParams:
    """Planck constants and measurement conditions of a radiometric frame (FLIR CameraInfo).

    Temperatures in degrees C, distance in metres, relative humidity as a fraction 0..1.
    """

    planck_r1: float
    planck_r2: float
    planck_b: float
    planck_f: float
    planck_o: float
    emissivity: float = 1.0
    object_distance_m: float = 0.0
    reflected_temp_c: float = 20.0
    atmospheric_temp_c: float = 20.0
    ir_window_temp_c: float = 20.0
    ir_window_transmission: float = 1.0
    relative_humidity: float = 0.5
    atm_alpha1: float = 0.006569
    atm_alpha2: float = 0.012620
    atm_beta1: float = -0.002276
    atm_beta2: float = -0.006670
    atm_x: float = 1.9

    def describe(self) -> dict:
        return asdict(self)


@dataclass
class FffFrame:
    """A radiometric FLIR frame: raw ``counts`` (uint16 HxW), its ``params`` and camera info."""

    counts: np.ndarray
    params: RadiometricParams
    camera: dict
    path: str = ""

    def celsius(self, atmospheric: bool = True) -> np.ndarray:
        """Temperature of every pixel, degrees C (float64)."""
        return counts_to_celsius(self.counts, self.params, atmospheric=atmospheric)


# --------------------------------------------------------------------------- FFF reader
def read_fff(path: str | Path) -> FffFrame:
    """Read a FLIR ``.fff`` file (raw counts + CameraInfo); :class:`ImageError` names what is wrong."""
    path = Path(path)
    if path.is_dir():
        raise ImageError(f"{path}: is a directory, expected a FLIR .fff file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageError(f"{path}: cannot read: {exc.strerror or exc} (expected a FLIR .fff file)") from exc
    return parse_fff(data, str(path))


def parse_fff(data: bytes, name: str = "<bytes>") -> FffFrame:
    """Parse the bytes of a FLIR FFF file (see the module docstring for the layout)."""
    if len(data) < 0x40 or data[:4] != FFF_MAGIC:
        raise ImageError(f"{name}: not a FLIR FFF file (expected magic b'FFF\\0' and a 64-byte header, "
                         f"got {data[:4]!r}, {len(data)} bytes)")
    order = None
    for cand in (">", "<"):
        if struct.unpack_from(cand + "I", data, 0x14)[0] == 100:
            order = cand
    if order is None:
        raise ImageError(f"{name}: FFF header version is not 100 in either byte order")
    dir_offset, n_entries = struct.unpack_from(order + "II", data, 0x18)
    if n_entries > 4096 or dir_offset + 32 * n_entries > len(data):
        raise ImageError(f"{name}: FFF record directory at {dir_offset} with {n_entries} entries "
                         f"does not fit in {len(data)} bytes")
    records: dict[int, tuple[int, int, int]] = {}
    for i in range(n_entries):
        rtype, subtype, _ver, _id, offset, length = struct.unpack_from(order + "HHIIII", data, dir_offset + 32 * i)
        if rtype == 0 or rtype in records:
            continue
        if offset + length > len(data):
            raise ImageError(f"{name}: FFF record type 0x{rtype:02x} at {offset}+{length} runs past the end "
                             f"({len(data)} bytes)")
        records[rtype] = (subtype, offset, length)
    if RECORD_RAW not in records:
        raise ImageError(f"{name}: FFF file has no RawData record (types found: "
                         f"{sorted(hex(t) for t in records)})")
    if RECORD_CAMERA_INFO not in records:
        raise ImageError(f"{name}: FFF file has no CameraInfo record, so it carries no Planck constants")
    counts = _parse_raw(data, *records[RECORD_RAW], name=name)
    params, camera = _parse_camera_info(data, *records[RECORD_CAMERA_INFO][1:], name=name)
    camera["width"], camera["height"] = counts.shape[1], counts.shape[0]
    return FffFrame(counts=counts, params=params, camera=camera, path=name)


def _record_order(data: bytes, offset: int, name: str, what: str) -> Literal["<", ">"]:
    if offset + 2 > len(data):
        raise ImageError(f"{name}: {what} record at {offset} is empty or runs past the end ({len(data)} bytes)")
    if struct.unpack_from("<H", data, offset)[0] == 2:
        return "<"
    if struct.unpack_from(">H", data, offset)[0] == 2:
        return ">"
    raise ImageError(f"{name}: {what} record at {offset}: byte-order marker is not 2 in either order")


def _parse_raw(data: bytes, subtype: int, offset: int, length: int, name: str) -> np.ndarray:
    if subtype == 3:
        raise ImageError(f"{name}: RawData stored as PNG (subtype 3) is not supported")
    if length < 32:
        raise ImageError(f"{name}: RawData record at {offset} is {length} bytes, expected a 32-byte header and pixels")
    order = _record_order(data, offset, name, "RawData")
    width, height = struct.unpack_from(order + "HH", data, offset + 2)
    need = 32 + 2 * width * height
    if width == 0 or height == 0 or need > length:
        raise ImageError(f"{name}: RawData {width}x{height} needs {need} bytes, record has {length}")
    counts = np.frombuffer(data, dtype=np.dtype(np.uint16).newbyteorder(order), count=width * height,
                           offset=offset + 32).reshape(height, width)
    return counts.astype(np.uint16)


def _parse_camera_info(data: bytes, offset: int, length: int, name: str) -> tuple[RadiometricParams, dict]:
    if length < 0x340:
        raise ImageError(f"{name}: CameraInfo record is {length} bytes, expected at least {0x340}")
    order = _record_order(data, offset, name, "CameraInfo")

    def f32(off: int) -> float:
        return float(struct.unpack_from(order + "f", data, offset + off)[0])

    def text(off: int, size: int) -> str:
        return data[offset + off:offset + off + size].split(b"\0", 1)[0].decode("latin-1").strip()

    params = RadiometricParams(
        planck_r1=f32(0x58), planck_b=f32(0x5c), planck_f=f32(0x60),
        planck_o=float(struct.unpack_from(order + "i", data, offset + 0x308)[0]), planck_r2=f32(0x30c),
        emissivity=f32(0x20), object_distance_m=f32(0x24),
        reflected_temp_c=f32(0x28) - KELVIN, atmospheric_temp_c=f32(0x2c) - KELVIN,
        ir_window_temp_c=f32(0x30) - KELVIN, ir_window_transmission=f32(0x34),
        relative_humidity=f32(0x3c),
        atm_alpha1=f32(0x70), atm_alpha2=f32(0x74), atm_beta1=f32(0x78), atm_beta2=f32(0x7c), atm_x=f32(0x80),
    )
    for field_name in ("planck_r1", "planck_b", "planck_r2"):
        value = getattr(params, field_name)
        if not (math.isfinite(value) and value > 0):
            raise ImageError(f"{name}: CameraInfo {field_name} = {value!r}, expected a positive number")
    if not 0 < params.emissivity <= 1:
        raise ImageError(f"{name}: CameraInfo emissivity = {params.emissivity!r}, expected 0 < E <= 1")
    raw_median, raw_range = struct.unpack_from(order + "HxxH", data, offset + 0x338)
    camera = {
        "model": text(0xd4, 32), "part_number": text(0xf4, 16), "serial_number": text(0x104, 16),
        "software": text(0x114, 16),
        "range_max_c": f32(0x90) - KELVIN, "range_min_c": f32(0x94) - KELVIN,
        "raw_value_median": int(raw_median), "raw_value_range": int(raw_range),
    }
    return params, camera


# --------------------------------------------------------------------------- Planck
def _planck_signal(temp_c: float | np.ndarray, p: RadiometricParams) -> float | np.ndarray:
    """Raw signal (counts) of a black body at ``temp_c`` (degrees C)."""
    return p.planck_r1 / (p.planck_r2 * (np.exp(p.planck_b / (np.asarray(temp_c) + KELVIN)) - p.planck_f)) - p.planck_o


def atmospheric_transmission(p: RadiometricParams, distance_m: float | None = None) -> float:
    """FLIR's two-band atmospheric transmission over ``distance_m`` (default: the object distance).

    Water vapour ``h2o = RH * exp(1.5587 + 0.06939 t - 0.00027816 t^2 + 0.00000068455 t^3)``
    (t: atmospheric temperature in degrees C); ``tau = X exp(-sqrt(d) (a1 + b1 sqrt(h2o))) +
    (1 - X) exp(-sqrt(d) (a2 + b2 sqrt(h2o)))``.
    """
    d = p.object_distance_m if distance_m is None else distance_m
    t = p.atmospheric_temp_c
    h2o = p.relative_humidity * math.exp(1.5587 + 0.06939 * t - 0.00027816 * t**2 + 0.00000068455 * t**3)
    sd, sh = math.sqrt(max(d, 0.0)), math.sqrt(h2o)
    return (p.atm_x * math.exp(-sd * (p.atm_alpha1 + p.atm_beta1 * sh))
            + (1 - p.atm_x) * math.exp(-sd * (p.atm_alpha2 + p.atm_beta2 * sh)))


def object_signal(counts: np.ndarray | float, p: RadiometricParams, atmospheric: bool = True) -> np.ndarray:
    """Counts corrected to the object's own black-body signal.

    ``atmospheric=False``: the counts are taken as the object signal (emissivity 1, no
    atmosphere). ``True``: the path is split in two halves around an IR window (transmission
    ``tau`` each over ``d / 2``); reflected radiation at the reflected temperature, atmosphere
    at the atmospheric temperature and the window's own emission are removed.
    """
    s = np.asarray(counts, dtype=np.float64)
    if not atmospheric:
        return s
    e, irt = p.emissivity, p.ir_window_transmission
    tau1 = tau2 = atmospheric_transmission(p, p.object_distance_m / 2.0)
    s_refl = _planck_signal(p.reflected_temp_c, p)
    s_atm = _planck_signal(p.atmospheric_temp_c, p)
    s_wind = _planck_signal(p.ir_window_temp_c, p)
    emiss_wind, refl_wind = 1.0 - irt, 0.0
    return (s / e / tau1 / irt / tau2
            - (1 - tau1) / e / tau1 * s_atm
            - (1 - tau2) / e / tau1 / irt / tau2 * s_atm
            - emiss_wind / e / tau1 / irt * s_wind
            - (1 - e) / e * s_refl
            - refl_wind / e / tau1 / irt * s_refl)


def counts_to_celsius(counts: np.ndarray | float, params: RadiometricParams, atmospheric: bool = True) -> np.ndarray:
    """Raw counts -> degrees C with FLIR's Planck model (see :func:`object_signal`); float64.

    Counts whose corrected signal falls outside the calibration (log of a non-positive number)
    give NaN.
    """
    s = object_signal(counts, params, atmospheric)
    p = params
    with np.errstate(divide="ignore", invalid="ignore"):
        arg = p.planck_r1 / (p.planck_r2 * (s + p.planck_o)) + p.planck_f
        t = p.planck_b / np.log(arg) - KELVIN
    return np.where((s + p.planck_o > 0) & (arg > 1), t, np.nan)


def celsius_to_counts(temp_c: np.ndarray | float, params: RadiometricParams) -> np.ndarray:
    """Inverse of ``counts_to_celsius(..., atmospheric=False)``: black-body signal in counts."""
    return np.asarray(_planck_signal(temp_c, params), dtype=np.float64)


# --------------------------------------------------------------------------- Boson T-linear
#: T-linear scale (counts per kelvin) of a radiometric Boson: 0.01 K per count in high gain;
#: low gain uses 0.02 K per count (K x 50) so its range (to ~500 C = 773 K) fits in 16 bits.
TLINEAR_SCALE = {"high": 100.0, "low": 50.0}


class _TlinearOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["tlinear", "planck"] = "tlinear"
    gain: Literal["high", "low"] = "high"  # a key of TLINEAR_SCALE
    scale: float | None = Field(None, gt=0)  # counts per kelvin (overrides gain)


#: What a thermal query node's ``radiometry`` options may hold (``rgbt.graph.thermal_query.converter``):
#: ``mode`` ``tlinear`` (Boson T-linear counts: ``gain`` or ``scale`` of :func:`tlinear_to_celsius`) or
#: ``planck`` (the fields of :class:`RadiometricParams`).
RadiometryOptions = create_model(
    "RadiometryOptions", __base__=_TlinearOptions,
    **{f.name: (float | None, None) for f in dataclasses.fields(RadiometricParams)},  # type: ignore[call-overload]
)


def tlinear_to_celsius(counts: np.ndarray | float, gain: str = "high", scale: float | None = None) -> np.ndarray:
    """Boson radiometric T-linear counts -> degrees C: ``counts / scale - 273.15``.

    ``gain`` picks the scale from :data:`TLINEAR_SCALE` (high: K x 100, low: K x 50);
    ``scale`` overrides it (counts per kelvin). Zero counts (no data) give NaN.
    """
    if scale is None:
        if gain not in TLINEAR_SCALE:
            raise ImageError(f"T-linear gain: got {gain!r}, expected one of {sorted(TLINEAR_SCALE)}")
        scale = TLINEAR_SCALE[gain]
    if not scale > 0:
        raise ImageError(f"T-linear scale: got {scale!r}, expected counts per kelvin > 0")
    c = np.asarray(counts, dtype=np.float64)
    return np.where(c > 0, c / scale - KELVIN, np.nan)


def celsius_to_tlinear(temp_c: np.ndarray | float, gain: str = "high") -> np.ndarray:
    """Degrees C -> T-linear counts (uint16, rounded) for the given gain."""
    if gain not in TLINEAR_SCALE:
        raise ImageError(f"T-linear gain: got {gain!r}, expected one of {sorted(TLINEAR_SCALE)}")
    c = np.rint((np.asarray(temp_c, dtype=np.float64) + KELVIN) * TLINEAR_SCALE[gain])
    if (c < 0).any() or (c > 65535).any():
        raise ImageError(f"temperature out of the {gain}-gain T-linear range")
    return c.astype(np.uint16)


# --------------------------------------------------------------------------- statistics
@dataclass
class RegionStats:
    """Temperature statistics of a pixel set, degrees C; ``hottest`` / ``coldest`` are (x, y)."""

    mean: float
    min: float
    max: float
    n: int
    hottest: tuple[int, int]
    coldest: tuple[int, int]

    def to_dict(self) -> dict:
        return asdict(self)


def _check_temps(temps: np.ndarray) -> np.ndarray:
    if not isinstance(temps, np.ndarray) or temps.ndim != 2 or temps.size == 0:
        raise ImageError(f"temperature image: expected a non-empty HxW array, got "
                         f"{getattr(temps, 'shape', type(temps).__name__)}")
    return temps


def temperature_at(temps: np.ndarray, x: int, y: int) -> float:
    """Temperature at pixel column ``x``, row ``y`` (degrees C)."""
    temps = _check_temps(temps)
    h, w = temps.shape
    if not (0 <= x < w and 0 <= y < h):
        raise ImageError(f"pixel (x={x}, y={y}) outside the {w}x{h} image")
    return float(temps[y, x])


def region_stats(temps: np.ndarray, region: tuple[int, int, int, int] | None = None,
                 mask: np.ndarray | None = None) -> RegionStats:
    """Mean / min / max over a rectangle ``(x0, y0, x1, y1)`` (x1, y1 exclusive), a boolean mask,
    both (intersection) or the whole image; NaN pixels are ignored."""
    temps = _check_temps(temps)
    h, w = temps.shape
    sel = np.isfinite(temps)
    if region is not None:
        x0, y0, x1, y1 = (int(v) for v in region)
        if not (0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h):
            raise ImageError(f"region (x0={x0}, y0={y0}, x1={x1}, y1={y1}) must satisfy "
                             f"0 <= x0 < x1 <= {w} and 0 <= y0 < y1 <= {h}")
        box = np.zeros_like(sel)
        box[y0:y1, x0:x1] = True
        sel &= box
    if mask is not None:
        mask = np.asarray(mask)
        if mask.shape != temps.shape:
            raise ImageError(f"mask shape {mask.shape} differs from the image shape {temps.shape}")
        sel &= mask.astype(bool)
    n = int(sel.sum())
    if n == 0:
        raise ImageError("region / mask selects no valid pixel")
    vals = np.where(sel, temps, np.nan)
    iy_max, ix_max = np.unravel_index(np.nanargmax(vals), vals.shape)
    iy_min, ix_min = np.unravel_index(np.nanargmin(vals), vals.shape)
    return RegionStats(mean=float(np.nanmean(vals)), min=float(vals[iy_min, ix_min]),
                       max=float(vals[iy_max, ix_max]), n=n,
                       hottest=(int(ix_max), int(iy_max)), coldest=(int(ix_min), int(iy_min)))
