"""Thermal normalization: exact percentiles, CART-parity CLAHE, and a temporally stable VIO mode.

The CART reference (their training / evaluation code) does, per 16-bit frame::

    p1, p99 = np.percentile(x, [1, 99])
    y = np.clip((x - p1) / (p99 - p1), 0, 1)
    y = skimage.exposure.equalize_adapthist(y, clip_limit=0.01)

:func:`normalize` gives the same result (mean |diff| ~2e-5 on the [0,1] scale; the parity table is in
``BENCHMARKS.md``, ``rgbt bench preprocess``) in about
2 ms for 640x512 instead of tens of ms:

* **Percentiles** come from one ``np.bincount`` histogram of the uint16 counts and are *exact*:
  they equal ``np.percentile(frame, q, method=...)`` for the methods listed in
  :data:`PERCENTILE_METHODS` (default ``"linear"``, numpy's default and CART's).
* **CLAHE** reproduces scikit-image's algorithm step by step: the [0,1] image is quantized like
  skimage (``img_as_uint`` -> 14-bit -> ``nbins`` bins of ``1 + 16384 // nbins`` levels), tiles
  are ``shape // 8`` (skimage's default kernel) starting at pixel 0 with reflect padding at the
  end, the histograms are clipped with skimage's normalized ``clip_limit`` and its
  redistribution rule (vectorized over tiles), and the tile maps are interpolated bilinearly
  between tile centres with one ``cv2.remap`` over a small "tile x bin" lookup image. The final
  min/max rescale of skimage is kept. OpenCV's own ``createCLAHE`` was measured and rejected:
  its clip-excess redistribution differs (clipped bins also receive the excess), which alone
  moves the output by 0.0104 mean / 0.057 max on the FLIR fixture frame.

Defined behaviour for degenerate input (never a division by zero):

* a frame whose percentile span ``hi - lo`` is below ``min_range`` (default 1 count for integer
  frames, ``1e-6`` for float frames) is *flat*: the span is widened symmetrically to
  ``min_range`` around its centre and CLAHE is skipped, so a constant frame gives all 0.5;
* float frames may hold NaN / inf: those pixels are excluded from the bounds and treated as the
  low bound (they come out dark); an all-non-finite frame raises :class:`ImageError`;
* wrong dtype (only uint8, uint16, float32, float64), wrong shape (not HxW; HxWx1 is accepted),
  an empty frame, or a frame smaller than 8x8 with CLAHE on raise :class:`ImageError`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import cv2
import numpy as np

from rgbt.errors import ImageError

#: percentile conventions supported by :func:`percentiles_from_histogram` (numpy's names).
PERCENTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")
_SUPPORTED_DTYPES = (np.uint8, np.uint16, np.float32, np.float64)
_GRAY_LEVELS = 2**14  # skimage's NR_OF_GRAY (internal quantization of equalize_adapthist)


# --------------------------------------------------------------------------- validation
def check_frame(frame: object, name: str = "frame") -> np.ndarray:
    """Return ``frame`` as a 2-D array (HxWx1 squeezed) or raise :class:`ImageError`.

    Accepted dtypes: uint8, uint16 (thermal counts), float32, float64.
    """
    if not isinstance(frame, np.ndarray):
        raise ImageError(f"{name}: expected a numpy array, got {type(frame).__name__}")
    if frame.ndim == 3 and frame.shape[2] == 1:
        frame = frame[:, :, 0]
    if frame.ndim != 2:
        raise ImageError(f"{name}: expected a single-channel HxW image, got shape {frame.shape}")
    if frame.size == 0:
        raise ImageError(f"{name}: empty image, shape {frame.shape}")
    if frame.dtype.type not in _SUPPORTED_DTYPES:
        raise ImageError(f"{name}: unsupported dtype {frame.dtype}; expected uint16 counts "
                         "(or uint8, float32, float64)")
    return frame


def _check_percentiles(low: float, high: float) -> None:
    if not (0.0 <= low < high <= 100.0) or not (math.isfinite(low) and math.isfinite(high)):
        raise ImageError(f"percentiles: got low={low!r}, high={high!r}, expected 0 <= low < high <= 100")


# --------------------------------------------------------------------------- percentiles
def histogram(frame: np.ndarray) -> np.ndarray:
    """Counts per value of an integer frame (length 65536 for uint16, 256 for uint8), int64."""
    offset, counts = compact_histogram(frame)
    full = np.zeros(65536 if frame.dtype == np.uint16 else 256, dtype=np.int64)
    full[offset:offset + counts.size] = counts
    return full


def compact_histogram(frame: np.ndarray) -> tuple[int, np.ndarray]:
    """``(vmin, counts)``: ``counts[i]`` pixels have the value ``vmin + i`` (int64), ``vmin..vmax``.

    One ``cv2.calcHist`` with one-count-wide bins over the frame's own range (exact: the bin
    index is ``value - vmin`` with a scale of exactly 1; float32 counts are exact below 2**24
    pixels, larger frames use ``np.bincount``). About 3x faster than ``np.bincount`` over all
    65536 values.
    """
    frame = check_frame(frame)
    if frame.dtype.kind != "u":
        raise ImageError(f"histogram: integer frame expected, got dtype {frame.dtype}")
    if frame.size >= 2**24:
        counts = np.bincount(frame.ravel())
        nz = np.flatnonzero(counts)
        return int(nz[0]), counts[nz[0]:nz[-1] + 1]
    vmin, vmax, _, _ = cv2.minMaxLoc(frame)
    vmin, vmax = int(vmin), int(vmax)
    hist = cv2.calcHist([np.ascontiguousarray(frame)], [0], None, [vmax - vmin + 1], [vmin, vmax + 1])
    return vmin, hist.ravel().astype(np.int64)


def percentiles_from_histogram(hist: np.ndarray, qs: Sequence[float], method: str = "linear",
                               offset: int = 0) -> list[float]:
    """Exact percentiles of the values whose counts are ``hist`` (value ``offset + v`` has ``hist[v]`` pixels).

    Convention (numpy's, for ``n`` sorted values ``x[0..n-1]``): the percentile ``q`` sits at
    the fractional rank ``h = (n - 1) * q / 100``; ``"linear"`` returns
    ``x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])``, ``"lower"`` /
    ``"higher"`` / ``"nearest"`` (round half to even, like numpy) / ``"midpoint"`` the
    corresponding order statistics. The result equals ``np.percentile(values, q, method=method)``
    exactly. The order statistic ``x[k]`` is the smallest value ``v`` with ``cumsum(hist)[v] > k``.
    """
    if method not in PERCENTILE_METHODS:
        raise ImageError(f"percentile method: got {method!r}, expected one of {PERCENTILE_METHODS}")
    cdf = np.cumsum(hist)
    n = int(cdf[-1])
    if n == 0:
        raise ImageError("percentiles: empty histogram")
    out = []
    for q in qs:
        h = (n - 1) * (float(q) / 100.0)
        k = math.floor(h)
        frac = h - k
        k1 = min(k + 1, n - 1)
        x0, x1 = np.searchsorted(cdf, [k, k1], side="right")
        x0, x1 = float(x0 + offset), float(x1 + offset)
        if method == "linear":
            out.append(x0 + frac * (x1 - x0) if frac > 0 else x0)
        elif method == "lower":
            out.append(x0)
        elif method == "higher":
            out.append(x1 if frac > 0 else x0)
        elif method == "midpoint":
            out.append((x0 + x1) / 2 if frac > 0 else x0)
        else:  # nearest: numpy rounds h half to even
            out.append(x1 if round(h) > k else x0)
    return out


def percentile_bounds(frame: np.ndarray, low: float = 1.0, high: float = 99.0,
                      method: str = "linear") -> tuple[float, float]:
    """Exact ``low`` / ``high`` percentiles (in counts / input units) of a frame.

    Integer frames use a histogram (no sort); float frames use ``np.percentile`` over their
    finite pixels (NaN / inf ignored; all non-finite raises :class:`ImageError`).
    """
    frame = check_frame(frame)
    _check_percentiles(low, high)
    if frame.dtype.kind == "u":
        offset, counts = compact_histogram(frame)
        lo, hi = percentiles_from_histogram(counts, (low, high), method, offset=offset)
        return lo, hi
    ok = np.isfinite(frame)
    finite = frame if ok.all() else frame[ok]
    if finite.size == 0:
        raise ImageError(f"frame: all {frame.size} pixels are NaN or infinite")
    if method not in PERCENTILE_METHODS:
        raise ImageError(f"percentile method: got {method!r}, expected one of {PERCENTILE_METHODS}")
    lo, hi = np.percentile(finite, [low, high], method=method)  # type: ignore[call-overload]  # method checked above
    return float(lo), float(hi)


# --------------------------------------------------------------------------- options
@dataclass(frozen=True)
class NormalizeOptions:
    """Options of :class:`Normalizer` (CART defaults).

    low, high: percentiles (0-100) mapped to 0 and 1.
    clahe: apply CLAHE after the percentile rescale (CART: yes).
    clip_limit: skimage's normalized clip limit (fraction of a tile's pixels per bin).
    tiles_per_dim: tile size = image dimension // tiles_per_dim (skimage default 8).
    nbins: CLAHE histogram bins (skimage default 256).
    min_range: narrowest percentile span in input units before a frame counts as flat
        (``None``: 1 count for integer frames, 1e-6 for float frames).
    method: percentile convention (numpy's names, see :func:`percentiles_from_histogram`).
    """

    low: float = 1.0
    high: float = 99.0
    clahe: bool = True
    clip_limit: float = 0.01
    tiles_per_dim: int = 8
    nbins: int = 256
    min_range: float | None = None
    method: str = "linear"

    def __post_init__(self) -> None:
        _check_percentiles(self.low, self.high)
        if not 0.0 <= self.clip_limit <= 1.0:
            raise ImageError(f"clip_limit: got {self.clip_limit!r}, expected 0 <= clip_limit <= 1")
        if not 1 <= self.tiles_per_dim <= 64:
            raise ImageError(f"tiles_per_dim: got {self.tiles_per_dim!r}, expected 1..64")
        if not 2 <= self.nbins <= 256:
            raise ImageError(f"nbins: got {self.nbins!r}, expected 2..256")
        if self.min_range is not None and not self.min_range > 0:
            raise ImageError(f"min_range: got {self.min_range!r}, expected > 0")
        if self.method not in PERCENTILE_METHODS:
            raise ImageError(f"method: got {self.method!r}, expected one of {PERCENTILE_METHODS}")

    def describe(self) -> dict:
        return asdict(self)


def _min_range(frame: np.ndarray, min_range: float | None) -> float:
    if min_range is not None:
        return float(min_range)
    return 1.0 if frame.dtype.kind == "u" else 1e-6


def effective_bounds(lo: float, hi: float, min_range: float) -> tuple[float, float, bool]:
    """Widen ``[lo, hi]`` to ``min_range`` around its centre when narrower; returns (lo, hi, flat)."""
    if hi - lo >= min_range:
        return lo, hi, False
    centre = 0.5 * (lo + hi)
    return centre - 0.5 * min_range, centre + 0.5 * min_range, True


# --------------------------------------------------------------------------- rescale
def rescale(frame: np.ndarray, lo: float, hi: float, out: np.ndarray | None = None) -> np.ndarray:
    """``clip((frame - lo) / (hi - lo), 0, 1)`` as float32; requires ``hi > lo``.

    Non-finite pixels of float frames become 0 (the low bound). ``out``: optional float32 HxW
    destination (written and returned).
    """
    frame = check_frame(frame)
    if not hi > lo:
        raise ImageError(f"rescale: bounds must satisfy hi > lo, got lo={lo!r}, hi={hi!r}")
    scale = 1.0 / (hi - lo)
    if frame.dtype.kind == "u":
        return np.take(_unit_lut(frame.dtype, lo, scale), frame, out=out)
    res = frame.astype(np.float64)
    res = np.nan_to_num((res - lo) * scale, nan=0.0, posinf=0.0, neginf=0.0)
    res = np.clip(res, 0.0, 1.0).astype(np.float32)
    if out is None:
        return res
    out[...] = res
    return out


def _unit_lut(dtype: np.dtype, lo: float, scale: float) -> np.ndarray:
    """float32 LUT value -> clip((value - lo) * scale, 0, 1), for every integer value of ``dtype``.

    Only the values between the bounds are computed; below is 0, above is 1.
    """
    size = 65536 if dtype == np.uint16 else 256
    a = int(min(max(math.floor(lo), 0), size))
    b = int(min(max(math.ceil(lo + 1.0 / scale) + 1, a), size))
    lut = np.empty(size, dtype=np.float32)
    lut[:a] = 0.0
    lut[b:] = 1.0
    values = (np.arange(a, b, dtype=np.float64) - lo) * scale
    lut[a:b] = np.clip(values, 0.0, 1.0)
    return lut


def _skimage_bins(unit: np.ndarray, nbins: int) -> np.ndarray:
    """skimage's CLAHE bin of [0,1] values (float64): img_as_uint, 14-bit rescale, ``// bin_size``.

    Assumes the frame spans 0..1 (true after a percentile rescale of a non-flat frame, where
    the minimum pixel maps to 0 and the maximum to 1).
    """
    u16 = np.rint(unit * 65535.0)
    q = np.round(u16 / 65535.0 * (_GRAY_LEVELS - 1)).astype(np.int64)
    return (q // (1 + _GRAY_LEVELS // nbins)).astype(np.uint8)


def _bins_u16(frame: np.ndarray, lo: float, hi: float, nbins: int) -> np.ndarray:
    """CLAHE bins of an integer frame through a per-value LUT (exactly the float chain)."""
    size = 65536 if frame.dtype == np.uint16 else 256
    a = int(min(max(math.floor(lo), 0), size))
    b = int(min(max(math.ceil(hi) + 1, a), size))
    lut = np.empty(size, dtype=np.uint8)
    lut[:a] = 0
    lut[b:] = (_GRAY_LEVELS - 1) // (1 + _GRAY_LEVELS // nbins)
    values = np.arange(a, b, dtype=np.float64)
    lut[a:b] = _skimage_bins(np.clip((values - lo) / (hi - lo), 0.0, 1.0), nbins)
    return np.take(lut, frame)


# --------------------------------------------------------------------------- CLAHE
class Clahe:
    """scikit-image-compatible CLAHE on pre-binned uint8 frames, fast (histograms + one remap).

    The geometry (tile grid, padding, interpolation coordinates) is computed once per image
    shape and cached. Input: bins ``0..nbins-1`` (uint8, HxW). Output: float32 in [0,1] with
    skimage's final min/max rescale.
    """

    def __init__(self, clip_limit: float = 0.01, tiles_per_dim: int = 8, nbins: int = 256) -> None:
        self.clip_limit = clip_limit
        self.tiles_per_dim = tiles_per_dim
        self.nbins = nbins
        self._shape: tuple[int, int] | None = None

    def _setup(self, shape: tuple[int, int]) -> None:
        h, w = shape
        kh, kw = max(h // self.tiles_per_dim, 1), max(w // self.tiles_per_dim, 1)
        ny, nx = -(-h // kh), -(-w // kw)  # skimage's histogram tiles cover ceil(s / k) kernels
        self._shape = shape
        self._k = (kh, kw)
        self._grid = (ny, nx)
        self._pad = (ny * kh - h, nx * kw - w)
        area = kh * kw
        self._area = area
        self._clim = int(max(self.clip_limit * area, 1)) if self.clip_limit > 0 else area
        # tile coordinate of each row / column, as skimage interpolates: pixel y sits at
        # (y + kh // 2) / kh - 1 tiles from the first tile centre, clamped to the grid.
        ty = np.clip((np.arange(h) + kh // 2) / kh - 1.0, 0.0, ny - 1.0).astype(np.float32)
        tx = np.clip((np.arange(w) + kw // 2) / kw - 1.0, 0.0, nx - 1.0).astype(np.float32)
        self._map_y = np.ascontiguousarray(np.broadcast_to(ty[:, None], (h, w)))
        self._tx = tx
        self._map_x = np.empty((h, w), dtype=np.float32)
        # tile number of every pixel of the end-padded image, for one 2-D (bin, tile) histogram
        rows = np.arange(ny * kh) // kh
        cols = np.arange(nx * kw) // kw
        index_dtype = np.uint8 if ny * nx <= 256 else np.uint16
        self._tile_index = (rows[:, None] * nx + cols[None, :]).astype(index_dtype)

    def tile_histograms(self, bins: np.ndarray) -> np.ndarray:
        """(ny * nx, nbins) int64 histograms of the skimage tiles (reflect padding at the end)."""
        (ny, nx), (ph, pw) = self._grid, self._pad
        padded = cv2.copyMakeBorder(bins, 0, ph, 0, pw, cv2.BORDER_REFLECT_101) if (ph or pw) else bins
        n_tiles = ny * nx
        hist = cv2.calcHist([padded, self._tile_index], [0, 1], None, [self.nbins, n_tiles],
                            [0, self.nbins, 0, n_tiles])
        return hist.reshape(self.nbins, n_tiles).T.astype(np.int64)

    def maps(self, hist: np.ndarray) -> np.ndarray:
        """Clipped, equalized tile maps in skimage's 14-bit units (int64, tiles x nbins)."""
        clipped = clip_histograms(hist, self._clim)
        cdf = np.cumsum(clipped, axis=1).astype(np.float64)
        cdf *= (_GRAY_LEVELS - 1) / self._area
        np.clip(cdf, None, _GRAY_LEVELS - 1, out=cdf)
        return cdf.astype(np.int64)

    def __call__(self, bins: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """CLAHE of ``bins``; ``out``: optional float32 HxW destination (written and returned)."""
        bins = check_frame(bins, "bins")
        if bins.dtype != np.uint8:
            raise ImageError(f"bins: expected uint8 CLAHE bins, got {bins.dtype}")
        if min(bins.shape) < self.tiles_per_dim:
            raise ImageError(f"CLAHE needs at least {self.tiles_per_dim}x{self.tiles_per_dim} pixels, "
                             f"got {bins.shape[0]}x{bins.shape[1]}")
        if bins.shape != self._shape:
            self._setup(bins.shape)
        ny, nx = self._grid
        maps = self.maps(self.tile_histograms(bins)).astype(np.float32) / (_GRAY_LEVELS - 1)
        # lookup image: row = tile row, column = bin * nx + tile column, so bilinear remap
        # between columns c and c + 1 mixes neighbouring tiles at the same bin.
        lut_image = np.ascontiguousarray(maps.reshape(ny, nx, self.nbins).transpose(0, 2, 1).reshape(ny, -1))
        np.multiply(bins, np.float32(nx), out=self._map_x)
        self._map_x += self._tx
        out = cv2.remap(lut_image, self._map_x, self._map_y, cv2.INTER_LINEAR, dst=out,
                        borderMode=cv2.BORDER_REPLICATE)
        return _minmax_rescale(out)


def _minmax_rescale(img: np.ndarray) -> np.ndarray:
    """skimage's final ``rescale_intensity``: (img - min) / (max - min); constant -> 0.5."""
    mn, mx, _, _ = cv2.minMaxLoc(img)
    if mx <= mn:
        img.fill(0.5)
        return img
    img -= np.float32(mn)
    img *= np.float32(1.0 / (mx - mn))
    return img


def clip_histograms(hist: np.ndarray, clim: int) -> np.ndarray:
    """skimage's ``clip_histogram`` applied to every row of ``hist`` (tiles x bins), vectorized.

    Bins above ``clim`` are cut to it; the excess is spread: every bin below
    ``clim - excess // nbins`` gains ``excess // nbins``, bins landing in between are set to
    ``clim``, and what is left is handed out one count at a time to bins still under ``clim``
    with skimage's stride rule, until none is left (or a full pass changes nothing).
    """
    h = hist.astype(np.int32)
    nb = h.shape[1]
    excess = h - clim
    np.maximum(excess, 0, out=excess)
    n_excess = excess.sum(axis=1)
    np.minimum(h, clim, out=h)
    bin_incr = n_excess // nb
    upper = (clim - bin_incr)[:, None]
    low = h < upper
    n_excess -= np.count_nonzero(low, axis=1) * bin_incr
    h += low * bin_incr[:, None].astype(np.int32)
    mid = (h >= upper) & (h < clim)
    n_excess += (h * mid).sum(axis=1) - np.count_nonzero(mid, axis=1) * clim
    h[mid] = clim
    positions = np.arange(nb)
    alive = n_excess > 0
    while alive.any():
        before = n_excess.copy()
        for index in range(nb):
            active = alive & (n_excess > 0)
            if not active.any():
                break
            rows = np.flatnonzero(active)
            hr = h[rows]
            under = hr < clim
            n_under = np.count_nonzero(under, axis=1)
            step = np.maximum(1, n_under // n_excess[rows])
            if (step == 1).all():
                under[:, :index] = False
            else:
                under &= (positions[None, :] >= index) & ((positions[None, :] - index) % step[:, None] == 0)
            hr += under
            h[rows] = hr
            n_excess[rows] -= np.count_nonzero(under, axis=1)
        alive &= (n_excess > 0) & (n_excess != before)
    return h.astype(np.int64)


# --------------------------------------------------------------------------- normalizer
class Normalizer:
    """Per-frame normalization (CART): percentile rescale to [0,1], then optional CLAHE; float32.

    ``Normalizer(NormalizeOptions())(frame)`` equals the CART reference within the parity
    reported in ``BENCHMARKS.md`` (``rgbt bench preprocess``). The CLAHE geometry and buffers are cached per frame
    shape, so one instance must not be shared between threads (make one per thread).
    """

    def __init__(self, options: NormalizeOptions | None = None) -> None:
        self.options = options or NormalizeOptions()
        o = self.options
        self._clahe = Clahe(o.clip_limit, o.tiles_per_dim, o.nbins)

    def __repr__(self) -> str:
        return f"Normalizer({self.options})"

    def bounds(self, frame: np.ndarray) -> tuple[float, float]:
        o = self.options
        return percentile_bounds(frame, o.low, o.high, o.method)

    def apply(self, frame: np.ndarray, lo: float, hi: float, clahe: bool | None = None,
              out: np.ndarray | None = None) -> np.ndarray:
        """Normalize ``frame`` with given bounds (input units); flat spans are widened (no CLAHE).
        ``out``: optional float32 HxW destination (e.g. a plane of a model input buffer)."""
        frame = check_frame(frame)
        if out is not None and (out.shape != frame.shape or out.dtype != np.float32):
            raise ImageError(f"out: expected a float32 array of shape {frame.shape}, got {out.dtype} {out.shape}")
        o = self.options
        clahe = o.clahe if clahe is None else clahe
        lo, hi, flat = effective_bounds(lo, hi, _min_range(frame, o.min_range))
        if not clahe or flat:
            return rescale(frame, lo, hi, out)
        if frame.dtype.kind == "u":
            bins = _bins_u16(frame, lo, hi, o.nbins)
        else:
            unit = np.clip(np.nan_to_num((frame.astype(np.float64) - lo) / (hi - lo), nan=0.0,
                                         posinf=0.0, neginf=0.0), 0.0, 1.0)
            bins = _skimage_bins(unit, o.nbins)
        return self._clahe(bins, out)

    def __call__(self, frame: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        frame = check_frame(frame)
        lo, hi = self.bounds(frame)
        return self.apply(frame, lo, hi, out=out)


# one cache per thread: a Normalizer keeps per-shape CLAHE buffers and must not be shared
_DEFAULT_NORMALIZERS = threading.local()


def normalize(frame: np.ndarray, low: float = 1.0, high: float = 99.0, clahe: bool = True,
              out: np.ndarray | None = None) -> np.ndarray:
    """CART normalization of one frame: float32 HxW in [0,1] (see :class:`Normalizer`); thread-safe.
    ``out``: optional float32 HxW destination, written and returned."""
    key = (float(low), float(high), bool(clahe))
    cache = getattr(_DEFAULT_NORMALIZERS, "by_options", None)
    if cache is None:
        cache = _DEFAULT_NORMALIZERS.by_options = {}
    norm = cache.get(key)
    if norm is None:
        norm = cache[key] = Normalizer(NormalizeOptions(low=low, high=high, clahe=clahe))
    return norm(frame, out)


def to_uint8(img01: np.ndarray) -> np.ndarray:
    """[0,1] float image -> uint8 (``round(255 * x)``, clipped); for display, PNG and VIO feeds."""
    img01 = check_frame(img01, "img01") if np.ndim(img01) != 3 else img01
    if not isinstance(img01, np.ndarray) or img01.dtype.kind != "f":
        raise ImageError(f"to_uint8: expected a float image in [0,1], got "
                         f"{getattr(img01, 'dtype', type(img01).__name__)}")
    return cv2.convertScaleAbs(np.nan_to_num(np.clip(img01, 0.0, 1.0), nan=0.0), alpha=255.0)


# --------------------------------------------------------------------------- temporal (VIO) mode
@dataclass(frozen=True)
class TemporalOptions:
    """Options of :class:`TemporalNormalizer` (VIO feeds; CART used 5th-95th percentiles).

    low, high: percentiles of each frame's raw bounds.
    tau_s: time constant of the exponential smoothing of the bounds (in counts), seconds;
        each frame moves the bounds by ``1 - exp(-dt / tau_s)`` of the way to its own.
    clahe: CLAHE after the rescale (off for VIO by default).
    frozen_mad: a frame whose mean absolute difference to the previous frame is at or below
        this many counts is reported frozen (FFC / repeated frame); frozen frames do not move
        the bounds.
    min_range: narrowest span (input units) before the frame counts as flat (see
        :func:`effective_bounds`); larger than the per-frame default to avoid amplifying noise
        on uniform scenes (sky, water).
    """

    low: float = 5.0
    high: float = 95.0
    tau_s: float = 1.0
    clahe: bool = False
    frozen_mad: float = 0.5
    min_range: float = 16.0
    method: str = "linear"

    def __post_init__(self) -> None:
        _check_percentiles(self.low, self.high)
        if not self.tau_s >= 0:
            raise ImageError(f"tau_s: got {self.tau_s!r}, expected >= 0 seconds")
        if not self.frozen_mad >= 0:
            raise ImageError(f"frozen_mad: got {self.frozen_mad!r}, expected >= 0 counts")
        if not self.min_range > 0:
            raise ImageError(f"min_range: got {self.min_range!r}, expected > 0")


@dataclass
class NormalizedFrame:
    """One output of :class:`TemporalNormalizer`.

    image: float32 HxW in [0,1]; frozen: the frame repeats the previous one (FFC);
    bounds: smoothed (lo, hi) used, input units; raw_bounds: this frame's own percentiles;
    mad: mean absolute difference to the previous frame (counts; None for the first);
    frozen_run: consecutive frozen frames up to and including this one; t_ns: the stamp given.
    """

    image: np.ndarray
    frozen: bool
    bounds: tuple[float, float]
    raw_bounds: tuple[float, float] = (0.0, 0.0)
    mad: float | None = None
    frozen_run: int = 0
    t_ns: int = 0
    flat: bool = field(default=False)


class TemporalNormalizer:
    """Temporally stable normalization for VIO feeds: smoothed bounds, frozen-frame detection.

    ``__call__(frame, t_ns)`` with strictly increasing integer ``t_ns``. The bounds follow each
    frame's percentiles through an exponential moving average in counts (time constant
    ``tau_s``), so a hot object entering the view changes brightness smoothly rather than in
    one frame. A frame (nearly) identical to the previous one is reported ``frozen`` and does
    not move the bounds. A change of frame shape raises :class:`ImageError` (call
    :meth:`reset` first).
    """

    def __init__(self, options: TemporalOptions | None = None) -> None:
        self.options = options or TemporalOptions()
        o = self.options
        self._normalizer = Normalizer(NormalizeOptions(low=o.low, high=o.high, clahe=o.clahe,
                                                       min_range=o.min_range, method=o.method))
        self.reset()

    def __repr__(self) -> str:
        return f"TemporalNormalizer({self.options})"

    def reset(self) -> None:
        self._prev: np.ndarray | None = None
        self._t_ns: int | None = None
        self._bounds: tuple[float, float] | None = None
        self._frozen_run = 0

    def __call__(self, frame: np.ndarray, t_ns: int, ffc: bool = False) -> NormalizedFrame:
        """Normalize one frame stamped ``t_ns`` (int ns, increasing); ``ffc=True`` when the driver
        already knows the frame is frozen by a flat-field correction (reported frozen either way)."""
        frame = check_frame(frame)
        if not isinstance(t_ns, (int, np.integer)):
            raise ImageError(f"t_ns: expected integer nanoseconds, got {type(t_ns).__name__}")
        t_ns = int(t_ns)
        if self._t_ns is not None and t_ns <= self._t_ns:
            raise ImageError(f"t_ns: frames must have increasing stamps, got {t_ns} after {self._t_ns}")
        if self._prev is not None and frame.shape != self._prev.shape:
            raise ImageError(f"frame: shape changed from {self._prev.shape} to {frame.shape}; call reset()")
        if self._prev is not None and frame.dtype != self._prev.dtype:
            raise ImageError(f"frame: dtype changed from {self._prev.dtype} to {frame.dtype}; call reset()")
        o = self.options
        mad = None
        frozen = False
        if self._prev is not None:
            mad = _mean_abs_diff(frame, self._prev)
            frozen = mad <= o.frozen_mad
        frozen = frozen or bool(ffc)
        raw = self._normalizer.bounds(frame)
        if self._bounds is None:
            bounds = raw
        elif frozen:
            bounds = self._bounds
        else:
            assert self._t_ns is not None  # set with self._bounds
            dt_s = (t_ns - self._t_ns) / 1e9
            a = 1.0 if o.tau_s == 0 else 1.0 - math.exp(-dt_s / o.tau_s)
            lo, hi = self._bounds
            bounds = (lo + a * (raw[0] - lo), hi + a * (raw[1] - hi))
        self._frozen_run = self._frozen_run + 1 if frozen else 0
        self._bounds, self._t_ns, self._prev = bounds, t_ns, frame.copy()
        flat = effective_bounds(*bounds, o.min_range)[2]
        image = self._normalizer.apply(frame, *bounds)
        return NormalizedFrame(image=image, frozen=frozen, bounds=bounds, raw_bounds=raw, mad=mad,
                               frozen_run=self._frozen_run, t_ns=t_ns, flat=flat)


def _mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    if a.dtype.kind == "f":
        d = np.abs(a.astype(np.float64) - b)
        return float(np.nanmean(d)) if np.isfinite(d).any() else 0.0
    return float(cv2.norm(a, b, cv2.NORM_L1)) / a.size
