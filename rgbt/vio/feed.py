"""Preparing the estimator feed: thermal normalization to mono8, rate selection, IMU windows.

Two feed rules are enforced here:

1. IMU rows for frame k are exactly (t_{k-1}, t_k] in integer nanoseconds; every sample goes out
   once; stamps strictly increase across calls (:class:`ImuWindow` raises otherwise).
2. Frames frozen by the thermal camera's flat-field correction (FFC) are dropped in the temporally
   stable modes (they would reach the estimator with fresh stamps and a stale image).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rgbt.errors import ConfigError, EvaluationError, ImageError

#: normalization modes of the thermal feed (the ablation compares them)
NORMALIZATIONS = ("percentile", "fixed", "temporal", "temporal_clahe")


@dataclass
class ImuData:
    """IMU samples: ``t_ns`` int64 (N), ``gyro`` rad/s and ``accel`` m/s^2 specific force (N x 3), body frame."""

    t_ns: np.ndarray
    gyro: np.ndarray
    accel: np.ndarray

    def __post_init__(self) -> None:
        self.t_ns = np.asarray(self.t_ns, dtype=np.int64)
        self.gyro = np.asarray(self.gyro, dtype=np.float64).reshape(-1, 3)
        self.accel = np.asarray(self.accel, dtype=np.float64).reshape(-1, 3)
        if not (len(self.t_ns) == len(self.gyro) == len(self.accel)):
            raise EvaluationError(f"IMU: {len(self.t_ns)} stamps, {len(self.gyro)} gyro, {len(self.accel)} accel rows")
        if len(self.t_ns) > 1 and np.any(np.diff(self.t_ns) <= 0):
            i = int(np.flatnonzero(np.diff(self.t_ns) <= 0)[0])
            raise EvaluationError(f"IMU stamps not strictly increasing at sample {i + 1}: "
                                  f"{self.t_ns[i]} then {self.t_ns[i + 1]} ns")

    def __len__(self) -> int:
        return len(self.t_ns)


class ImuWindow:
    """Hands out the IMU rows of each frame: exactly (t_prev, t_k] in integer ns, each sample once.

    ``take(t_k_ns, t0_ns)`` returns an (N, 7) float64 array ``[t_s, gx, gy, gz, ax, ay, az]`` with
    ``t_s = (t - t0_ns) / 1e9`` (seconds relative to the sequence start, so float64 keeps
    sub-microsecond precision). ``td_s`` (t_imu = t_cam + td) is applied to the frame stamp here:
    the rows of frame k are the IMU samples up to ``t_k + td`` on the IMU clock.
    """

    def __init__(self, imu: ImuData, td_s: float = 0.0) -> None:
        self.imu = imu
        self.td_ns = int(round(td_s * 1e9))
        self._next = 0
        self._last_frame_ns: int | None = None
        self._last_sent_ns: int | None = None

    def take(self, t_frame_ns: int, t0_ns: int) -> np.ndarray:
        t_frame_ns = int(t_frame_ns)
        if self._last_frame_ns is not None and t_frame_ns <= self._last_frame_ns:
            raise EvaluationError(f"frame stamps must increase: {t_frame_ns} ns after {self._last_frame_ns} ns")
        self._last_frame_ns = t_frame_ns
        end = int(np.searchsorted(self.imu.t_ns, t_frame_ns + self.td_ns, side="right"))
        sel = slice(self._next, max(end, self._next))
        self._next = max(end, self._next)
        t = self.imu.t_ns[sel]
        if len(t) and self._last_sent_ns is not None and t[0] <= self._last_sent_ns:
            raise EvaluationError(f"IMU sample {t[0]} ns would be sent twice (last sent {self._last_sent_ns} ns)")
        if len(t):
            self._last_sent_ns = int(t[-1])
        # image stamps go to the estimator on the IMU clock too: t_cam + td
        rows = np.empty((len(t), 7))
        rows[:, 0] = (t - t0_ns) / 1e9
        rows[:, 1:4] = self.imu.gyro[sel]
        rows[:, 4:7] = self.imu.accel[sel]
        return rows


class RateSelector:
    """Keeps frames on a ``rate_hz`` grid from a faster stream: a frame is kept when at least
    ``period - tolerance`` has passed since the last kept one (tolerance: 25 % of the period)."""

    def __init__(self, rate_hz: float | None) -> None:
        self.period_ns = None if not rate_hz else int(round(1e9 / rate_hz))
        self._last: int | None = None

    def keep(self, t_ns: int) -> bool:
        if self.period_ns is None:
            return True
        if self._last is None or t_ns - self._last >= self.period_ns * 3 // 4:
            self._last = t_ns
            return True
        return False


def _bounds(frame: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """Exact percentiles (C4's histogram method when available, else numpy's)."""
    try:
        from rgbt.image.normalize import percentile_bounds
    except ImportError:
        lo, hi = np.percentile(frame, [low, high])
        return float(lo), float(hi)
    return percentile_bounds(frame, low, high)


def _to_u8(img01: np.ndarray) -> np.ndarray:
    return (np.clip(img01, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


class ThermalToMono8:
    """Thermal uint16 counts -> mono8 for the estimator, in one of :data:`NORMALIZATIONS`:

    - ``percentile``: each frame's own 5th-95th percentiles (the paper); frozen frames pass.
    - ``fixed``: one range for the whole sequence (the first frame's 1st-99th percentiles widened
      by 10 %); frozen frames pass.
    - ``temporal`` / ``temporal_clahe``: ``rgbt.image.normalize.TemporalNormalizer`` (smoothed 5-95 %
      bounds, +CLAHE), frozen (FFC) frames reported so the feed drops them.

    ``__call__(frame_u16, t_ns) -> (mono8, frozen)``.
    """

    def __init__(self, mode: str = "temporal") -> None:
        if mode not in NORMALIZATIONS:
            raise ImageError(f"normalization: got {mode!r}, expected one of {NORMALIZATIONS}")
        self.mode = mode
        self._fixed: tuple[float, float] | None = None
        self._temporal = None
        if mode.startswith("temporal"):
            try:
                from rgbt.image.normalize import TemporalNormalizer, TemporalOptions
            except ImportError as exc:
                raise ImageError(f"normalization {mode!r} needs rgbt.image.normalize.TemporalNormalizer "
                                 f"(contract C4), missing in this checkout: {exc}") from exc

            self._temporal = TemporalNormalizer(TemporalOptions(clahe=mode == "temporal_clahe"))

    def __call__(self, frame: np.ndarray, t_ns: int) -> tuple[np.ndarray, bool]:
        if frame.dtype == np.uint8:
            return frame, False
        if self._temporal is not None:
            out = self._temporal(frame, int(t_ns))
            return _to_u8(out.image), bool(out.frozen)
        if self.mode == "fixed":
            if self._fixed is None:
                lo, hi = _bounds(frame, 1.0, 99.0)
                pad = 0.1 * (hi - lo)
                self._fixed = (float(lo - pad), float(hi + pad))
            lo, hi = self._fixed
        else:
            lo, hi = _bounds(frame, 5.0, 95.0)
        scale = 1.0 / max(float(hi - lo), 1.0)
        return _to_u8((frame.astype(np.float32) - np.float32(lo)) * np.float32(scale)), False


def to_mono(image: np.ndarray) -> np.ndarray:
    """HxWx3 RGB (``rgb8``, as a debayered colour camera gives) -> HxW mono of the same dtype; a mono
    image is returned as is."""
    if image.ndim == 3:
        import cv2

        return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    return image


@dataclass
class FeedFrame:
    """One frame for the estimator: ``t_ns`` (camera trigger time), ``image`` mono8 HxW, ``index``
    in the source stream, ``frozen`` (reported by the normalizer), ``ffc_truth`` (simulator's flag)."""

    t_ns: int
    image: np.ndarray
    index: int
    frozen: bool = False
    ffc_truth: bool = False


class FeedBridge:
    """The streaming core of the VIO bridge (a ROS 2 node wraps it): one call per camera frame.

    ``image(t_ns, frame, ffc_truth=False)`` returns the :class:`FeedFrame` to publish (mono8,
    stamped with the trigger time ``t_ns``), or ``None`` when the frame is thinned to ``rate_hz``
    or dropped as FFC-frozen (``drop_frozen``: default True for the temporal modes). ``counters``
    says how many frames went each way, for diagnostics.
    """

    def __init__(self, mode: str = "temporal", rate_hz: float | None = 20.0, drop_frozen: bool | None = None) -> None:
        self.conv = ThermalToMono8(mode)
        self.drop_frozen = mode.startswith("temporal") if drop_frozen is None else drop_frozen
        self.selector = RateSelector(rate_hz)
        self.counters = {"in": 0, "thinned": 0, "frozen_dropped": 0, "out": 0}
        self._index = -1

    def frame(self, t_ns: int, frame: np.ndarray, ffc_truth: bool = False) -> FeedFrame | None:
        """Like :meth:`image` but a dropped frozen frame comes back with ``frozen=True`` (for scoring)."""
        self._index += 1
        self.counters["in"] += 1
        if not self.selector.keep(int(t_ns)):
            self.counters["thinned"] += 1
            return None
        img, frozen = self.conv(to_mono(frame), int(t_ns))
        drop = bool(frozen and self.drop_frozen)
        self.counters["frozen_dropped" if drop else "out"] += 1
        return FeedFrame(int(t_ns), img, self._index, frozen=drop, ffc_truth=bool(ffc_truth))

    def image(self, t_ns: int, frame: np.ndarray, ffc_truth: bool = False) -> FeedFrame | None:
        out = self.frame(t_ns, frame, ffc_truth)
        return None if out is None or out.frozen else out


def prepare_feed(frames: Iterator[tuple[int, np.ndarray, bool]], mode: str = "temporal",
                 rate_hz: float | None = 20.0, drop_frozen: bool | None = None) -> Iterator[FeedFrame]:
    """Turn raw ``(t_ns, frame, ffc_truth)`` into the feed: rate-selected, normalized; frozen frames
    that are dropped come back with ``frozen=True`` so the runner skips them and reports mark them.

    ``drop_frozen`` defaults to True for the temporal modes (they detect FFC freezes) and False for
    ``percentile`` / ``fixed`` (the paper's pipeline fed every frame).
    """
    bridge = FeedBridge(mode, rate_hz, drop_frozen)
    for t_ns, frame, ffc in frames:
        out = bridge.frame(int(t_ns), frame, ffc)
        if out is not None:
            yield out


# --- the ROS 2 bridge's streaming core (``nodes/vio_bridge.py``) -----------------------------

#: the feed rate the bridge and ``rgbt vio export`` share (its topics: ``rgbt.topics``)
FEED_RATE_HZ = 20.0


def grid_step(trigger_rate_hz: float, divider: int, rate_hz: float) -> int:
    """Trigger pulses between two feed frames: ``trigger_rate_hz / rate_hz``, which must be a whole
    multiple of the camera's ``divider`` (pulses per frame). E.g. thermal 60 Hz -> 20 Hz: 3; a
    30 Hz camera (divider 2) can feed 30, 15 or 10 Hz, not 20. Raises :class:`ConfigError` otherwise."""
    step = trigger_rate_hz / rate_hz if rate_hz > 0 else 0.0
    n = int(round(step))
    if n < 1 or abs(step - n) > 1e-9 or n % max(int(divider), 1):
        allowed = ", ".join(f"{trigger_rate_hz / (divider * k):g}" for k in range(1, 7))
        raise ConfigError("<vio feed>", "rate_hz", rate_hz,
                          f"the {trigger_rate_hz:g} Hz trigger rate divided by a multiple of {divider} "
                          f"(pulses per frame), e.g. {allowed} Hz")
    return n


def feed_rate_hz(trigger_rate_hz: float, divider: int, wanted_hz: float | None = None) -> float:
    """The feed rate of a camera: ``wanted_hz`` when given (checked by :func:`grid_step`), else the
    fastest rate on the camera's trigger grid not above :data:`FEED_RATE_HZ` (thermal 60 Hz -> 20 Hz,
    colour / mono 30 Hz -> 15 Hz). The bridge node and ``rgbt vio export`` both call this."""
    if wanted_hz:
        grid_step(trigger_rate_hz, divider, wanted_hz)
        return float(wanted_hz)
    k = 1
    while trigger_rate_hz / (divider * k) > FEED_RATE_HZ + 1e-9:
        k += 1
    return trigger_rate_hz / (divider * k)


class GridDecimator:
    """Keeps every ``step``-th trigger pulse: frame stamps are restamped trigger times, so the pulse
    distance to the last kept frame is ``round(dt * trigger_rate)``; a frame is kept when that is a
    multiple of ``step``. Frames lost upstream do not shift the grid, and referencing the last kept
    frame (not the first) keeps the rounding exact under clock drift."""

    def __init__(self, trigger_rate_hz: float, step: int) -> None:
        self.rate = float(trigger_rate_hz)
        self.step = int(step)
        self._last: int | None = None

    def on_grid(self, t_ns: int) -> bool:
        if self._last is None:
            return True
        pulses = int(round((int(t_ns) - self._last) * self.rate / 1e9))
        return pulses % self.step == 0

    def kept(self, t_ns: int) -> None:
        self._last = int(t_ns)


class StreamFeed:
    """One camera stream -> the estimator feed, frame by frame (the VIO bridge node wraps it).

    Every input frame goes through the normalizer (so the temporal bounds and the FFC detection
    see the full-rate stream: a frozen frame repeats the frame just before it); then a frame is
    published when it is on the output grid (:class:`GridDecimator`), its stamp increases, and it is
    not FFC-frozen (``drop_frozen``). A frozen frame on the grid is dropped and the grid moves on.
    ``frame(t_ns, image) -> mono8 or None``; input uint16 (thermal counts), uint8 mono, or HxWx3 RGB
    (converted to mono8 as a debayered mono image). ``counters``: in, thinned, frozen_dropped,
    stale (non-increasing stamp), out.
    """

    def __init__(self, mode: str, trigger_rate_hz: float, step: int, drop_frozen: bool = True) -> None:
        self.conv = ThermalToMono8(mode)
        self.grid = GridDecimator(trigger_rate_hz, step)
        self.drop_frozen = drop_frozen
        self.counters = {"in": 0, "stale": 0, "thinned": 0, "frozen_dropped": 0, "out": 0}
        self._last_in: int | None = None

    def frame(self, t_ns: int, image: np.ndarray) -> np.ndarray | None:
        t_ns = int(t_ns)
        self.counters["in"] += 1
        if self._last_in is not None and t_ns <= self._last_in:
            self.counters["stale"] += 1
            return None
        self._last_in = t_ns
        mono8, frozen = self.conv(to_mono(image), t_ns)
        if not self.grid.on_grid(t_ns):
            self.counters["thinned"] += 1
            return None
        self.grid.kept(t_ns)
        if frozen and self.drop_frozen:
            self.counters["frozen_dropped"] += 1
            return None
        self.counters["out"] += 1
        return mono8


class ImuRelay:
    """Passes IMU samples on only when their stamp strictly increases (a duplicate or out-of-order
    sample would give the estimator a zero or negative time step: rule 1 of this module).
    ``accept(t_ns) -> bool``; ``counters``: in, duplicate, out_of_order, out."""

    def __init__(self) -> None:
        self.last: int | None = None
        self.counters = {"in": 0, "duplicate": 0, "out_of_order": 0, "out": 0}

    def accept(self, t_ns: int) -> bool:
        t_ns = int(t_ns)
        self.counters["in"] += 1
        if self.last is not None and t_ns <= self.last:
            self.counters["duplicate" if t_ns == self.last else "out_of_order"] += 1
            return False
        self.last = t_ns
        self.counters["out"] += 1
        return True
