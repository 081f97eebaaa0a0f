"""Trigger-grid restamping: give every camera frame the time of the trigger pulse that exposed it.

One pulse train triggers every camera and the VN-100's SyncIn. The VN-100 reports, in its
own clock, ``TimeStartup`` (sample time), ``SyncInCnt`` (pulses so far) and ``TimeSyncIn``
(time since the last pulse), so pulse ``k`` happened at ``t_sensor - t_since_sync`` on the
IMU clock, exactly. What is left to estimate is the IMU clock -> host clock map, and which
pulse each camera frame belongs to.

Clock map (host <- IMU), refitted over a sliding window of IMU samples::

    t_host_arrival - imu_latency_ns = t_sensor + offset + drift * (t_sensor - t_ref) + e,  e >= 0

``imu_latency_ns`` is the fixed part of the IMU transport delay (serial transmit time of a
packet, known from baud rate and packet size). With ``jitter_model="one_sided"`` (arrival
never precedes the event; the default, physically true for serial/USB) the fit is the lower
envelope: the slope from per-bin minima, the offset from the smallest residual in the window,
so millisecond jitter leaves microsecond error. ``"symmetric"`` uses least squares instead
(zero-mean jitter around ``imu_latency_ns``).

Frame association: each camera has a device frame counter (Boson telemetry, Blackfly chunk
FrameID) and fires every ``divider``-th pulse. The first ``anchor_frames`` frames fix the
pulse of one counter value (median over frames of the host arrival, less the camera's nominal
``latency_ns``, mapped onto the pulse grid); after that the pulse is pure counter arithmetic,
so jitter cannot mis-associate, and counter gaps are dropped frames. A counter that goes
backwards (camera reset) or a drift of the arrival residual beyond half a period re-anchors.
Frames of the same pulse get identical stamps on every camera (one stamp cached per pulse).

All times are integer nanoseconds; ``t_host_ns`` is whatever host clock the caller uses.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from rgbt.stack import Stack


@dataclass
class CameraSync:
    """Per-camera sync parameters: pulses per frame and nominal host-arrival latency (ns)."""

    divider: int = 1
    latency_ns: int = 0


@dataclass
class RestamperOptions:
    """Options of :class:`TriggerRestamper` (printable; times in ns unless named otherwise)."""

    trigger_rate_hz: float = 60.0
    cameras: dict[str, CameraSync] = field(default_factory=lambda: {
        "thermal": CameraSync(1, 0), "color": CameraSync(2, 0), "mono": CameraSync(2, 0)})
    imu_latency_ns: int = 0
    jitter_model: str = "one_sided"  # or "symmetric"
    window_s: float = 20.0
    min_fit_s: float = 4.0
    bin_s: float = 0.1
    refit_every: int = 20  # IMU samples between refits
    anchor_frames: int = 9
    reanchor_window: int = 15
    max_pulses: int = 4096  # pulses remembered (about a minute at 60 Hz)

    @classmethod
    def from_stack(cls, stack: Stack, **overrides: Any) -> RestamperOptions:
        cams = {name: CameraSync(int(c.trigger_divider), 0) for name, c in stack.cameras.items()}
        return cls(trigger_rate_hz=float(stack.trigger.rate_hz), cameras=cams, **overrides)


@dataclass(frozen=True)
class RestampResult:
    """``t_trigger_ns`` None until locked; ``slot`` is the pulse index (VN-100 SyncIn count);
    ``dropped_before`` frames lost since this camera's previous frame; ``residual_ns`` host
    arrival minus nominal latency minus the restamped time (the arrival jitter)."""

    t_trigger_ns: int | None
    slot: int | None
    dropped_before: int
    locked: bool
    residual_ns: int | None
    ffc: bool = False


def _support_line(x: np.ndarray, y: np.ndarray, bin_ns: float) -> tuple[float, float]:
    """Lower support line of the points (one-sided jitter), as in convex-hull clock sync.

    Among lines below every point, the one highest at the mean of ``x`` (the linear program
    "minimise the summed residuals subject to residual >= 0"): an edge of the lower convex
    hull. The hull is built over per-bin minima, which keeps every hull vertex.
    """
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    bins = np.floor((xs - xs[0]) / bin_ns).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, bins[1:] != bins[:-1]])
    idx = starts + np.array([int(np.argmin(ys[a:b])) for a, b in zip(starts, np.r_[starts[1:], len(ys)], strict=False)])
    px, py = xs[idx].tolist(), ys[idx].tolist()
    hull: list[tuple[float, float]] = []
    for p in zip(px, py, strict=False):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1) <= 0:  # not a left turn: drop
                hull.pop()
            else:
                break
        hull.append(p)
    if len(hull) == 1:
        return 0.0, hull[0][1]
    xm = float(np.mean(x))
    for (x1, y1), (x2, y2) in zip(hull, hull[1:], strict=False):
        if x2 >= xm or (x2, y2) == hull[-1]:
            slope = (y2 - y1) / (x2 - x1)
            return slope, y1 - slope * x1
    raise AssertionError("unreachable")


class _ClockFit:
    """host <- sensor clock map from (t_sensor, t_host - latency) pairs."""

    def __init__(self, opts: RestamperOptions) -> None:
        self.o = opts
        self.ts: deque[int] = deque()
        self.d: deque[int] = deque()
        self.t_ref: int | None = None
        self.offset_base = 0  # integer part of the offset (ns) at t_ref
        self.offset_rel = 0.0  # float remainder (ns)
        self.drift = 0.0  # ns/ns
        self.fitted = False
        self.residuals = np.zeros(0)
        self._since = 0

    def add(self, t_sensor: int, t_host_corr: int) -> None:
        self.ts.append(t_sensor)
        self.d.append(t_host_corr - t_sensor)
        horizon = t_sensor - int(self.o.window_s * 1e9)
        while self.ts and self.ts[0] < horizon:
            self.ts.popleft()
            self.d.popleft()
        self._since += 1
        if self._since >= self.o.refit_every or not self.fitted:
            self._since = 0
            self.refit()

    def refit(self) -> None:
        if len(self.ts) < 10 or self.ts[-1] - self.ts[0] < self.o.min_fit_s * 1e9:
            return
        t = np.fromiter(self.ts, dtype=np.int64)
        d = np.fromiter(self.d, dtype=np.int64)
        t_ref = int(t[-1])
        x = (t - t_ref).astype(np.float64)
        y = (d - d[-1]).astype(np.float64)  # centred for float precision
        if self.o.jitter_model == "symmetric":
            slope, icpt = np.polyfit(x, y, 1)
        else:
            slope, icpt = _support_line(x, y, self.o.bin_s * 1e9)
        self.t_ref = t_ref
        self.drift = float(slope)
        self.offset_base = int(d[-1])
        self.offset_rel = float(icpt)
        self.residuals = y - (slope * x + icpt)
        self.fitted = True

    @property
    def offset(self) -> float:
        return self.offset_base + self.offset_rel

    def to_host(self, t_sensor: int) -> int:
        """Host time (less the IMU latency) of a sensor-clock time, integer arithmetic for large clocks."""
        assert self.t_ref is not None
        return t_sensor + self.offset_base + int(round(self.offset_rel + self.drift * (t_sensor - self.t_ref)))

    def to_sensor(self, t_host_corr: int) -> int:
        assert self.t_ref is not None
        t_s = t_host_corr - self.offset_base - int(round(self.offset_rel))
        return t_s - int(round(self.drift * (t_s - self.t_ref)))


class _Camera:
    def __init__(self, spec: CameraSync) -> None:
        self.spec = spec
        self.anchor: tuple[int, int] | None = None  # (counter, pulse)
        self.pending: list[tuple[int, float]] = []  # (counter, pulse position) while anchoring
        self.last_counter: int | None = None
        self.recent: deque[float] = deque()
        self.frames = 0
        self.drops = 0
        self.ffc_frames = 0
        self.ffc_gaps = 0
        self.in_ffc = False
        self.reanchors = 0
        self.unlocked_frames = 0
        self.duplicates = 0


class TriggerRestamper:
    """Associates camera frames with trigger pulses and stamps them with the pulse time.

    Feed IMU samples with :meth:`add_imu` and frames with :meth:`add_frame` as they arrive;
    :meth:`status` reports lock, clock offset/drift, residuals, drops and FFC gaps.
    """

    def __init__(self, options: RestamperOptions | None = None) -> None:
        self.options = options or RestamperOptions()
        self.period_ns = 1e9 / self.options.trigger_rate_hz
        self.clock = _ClockFit(self.options)
        self.pulses: OrderedDict[int, int] = OrderedDict()  # pulse -> t_sensor of the edge
        self.cameras = {name: _Camera(spec) for name, spec in self.options.cameras.items()}
        self._stamps: OrderedDict[int, int] = OrderedDict()  # pulse -> stamp handed out
        self.imu_samples = 0
        self.imu_resets = 0
        self._last_t_sensor: int | None = None

    def _reset_imu(self) -> None:
        """The IMU restarted (TimeStartup went backwards): its clock and pulse count start over,
        so the clock fit, the pulse table, the stamps and every camera anchor are dropped."""
        self.imu_resets += 1
        self.clock = _ClockFit(self.options)
        self.pulses.clear()
        self._stamps.clear()
        for cam in self.cameras.values():
            cam.anchor, cam.pending = None, []
            cam.recent.clear()

    # ------------------------------------------------------------------ IMU
    def add_imu(self, syncin_count: int, t_host_ns: int, t_since_sync_ns: int, t_sensor_ns: int) -> None:
        """One VN-100 sample: SyncInCnt, host arrival, TimeSyncIn and TimeStartup (ns)."""
        self.imu_samples += 1
        if self._last_t_sensor is not None and t_sensor_ns < self._last_t_sensor - int(1e9):
            self._reset_imu()
        self._last_t_sensor = int(t_sensor_ns)
        self.clock.add(int(t_sensor_ns), int(t_host_ns) - self.options.imu_latency_ns)
        if syncin_count > 0 and t_since_sync_ns is not None:
            k = int(syncin_count)
            if k not in self.pulses:
                self.pulses[k] = int(t_sensor_ns) - int(t_since_sync_ns)
                while len(self.pulses) > self.options.max_pulses:
                    self.pulses.popitem(last=False)
                self._refit_grid()

    def _refit_grid(self) -> None:
        if len(self.pulses) >= 2:
            ks = list(self.pulses.keys())[-64:]
            ts = [self.pulses[k] for k in ks]
            if ks[-1] != ks[0]:
                self.period_ns = (ts[-1] - ts[0]) / (ks[-1] - ks[0])

    def pulse_sensor_time(self, k: int) -> float:
        """IMU-clock time of pulse ``k`` (observed, else extrapolated on the pulse grid)."""
        t = self.pulses.get(k)
        if t is not None:
            return float(t)
        k_last = next(reversed(self.pulses))
        return self.pulses[k_last] + (k - k_last) * self.period_ns

    @property
    def clock_locked(self) -> bool:
        return self.clock.fitted and len(self.pulses) >= 2

    # ------------------------------------------------------------------ frames
    def add_frame(self, camera: str, frame_counter: int, t_host_ns: int, ffc: bool = False) -> RestampResult:
        """One camera frame: device frame counter and host arrival (ns)."""
        cam = self.cameras.get(camera)
        if cam is None:
            raise KeyError(f"camera {camera!r}: expected one of {sorted(self.cameras)}")
        cam.frames += 1
        if ffc:
            cam.ffc_frames += 1
            if not cam.in_ffc:
                cam.ffc_gaps += 1
        cam.in_ffc = ffc
        dropped = 0
        if cam.last_counter is not None and frame_counter > cam.last_counter:
            dropped = frame_counter - cam.last_counter - 1
        if cam.last_counter is not None and frame_counter == cam.last_counter and cam.anchor is not None:
            cam.duplicates += 1  # the same frame delivered twice: same pulse, same stamp
            k = cam.anchor[1] + cam.spec.divider * (frame_counter - cam.anchor[0])
            stamp = self._stamps.get(k)
            return RestampResult(stamp, k, 0, stamp is not None, None, ffc)
        if cam.last_counter is not None and frame_counter < cam.last_counter:
            cam.anchor = None  # camera restarted its counter
            cam.pending = []
            cam.reanchors += 1
            dropped = 0
        cam.drops += dropped
        cam.last_counter = frame_counter
        if not self.clock_locked:
            cam.unlocked_frames += 1
            return RestampResult(None, None, dropped, False, None, ffc)
        pos = self._pulse_position(cam, t_host_ns)
        div = cam.spec.divider
        if cam.anchor is None:
            cam.pending.append((frame_counter, pos))
            if len(cam.pending) < self.options.anchor_frames:
                cam.unlocked_frames += 1
                return RestampResult(None, None, dropped, False, None, ffc)
            c0 = cam.pending[0][0]
            k0 = int(round(float(np.median([p - div * (c - c0) for c, p in cam.pending]))))
            cam.anchor = (c0, k0)
            cam.pending = []
            cam.recent.clear()
        c0, k0 = cam.anchor
        k = k0 + div * (frame_counter - c0)
        resid_periods = pos - k
        cam.recent.append(resid_periods)
        if len(cam.recent) > self.options.reanchor_window:
            cam.recent.popleft()
        if len(cam.recent) == self.options.reanchor_window:
            med = float(np.median(cam.recent))
            if abs(med) > 0.5:  # arrivals no longer fit the counter arithmetic: re-anchor
                shift = int(round(med))
                cam.anchor = (c0, k0 + shift)
                k += shift
                cam.reanchors += 1
                cam.recent.clear()
        stamp = self._stamps.get(k)
        if stamp is None:
            stamp = self.clock.to_host(int(round(self.pulse_sensor_time(k))))
            self._stamps[k] = stamp
            while len(self._stamps) > self.options.max_pulses:
                self._stamps.popitem(last=False)
        residual = int(t_host_ns) - cam.spec.latency_ns - stamp
        return RestampResult(stamp, k, dropped, True, residual, ffc)

    def _pulse_position(self, cam: _Camera, t_host_ns: int) -> float:
        """Fractional pulse index of the arrival, less the camera's nominal latency."""
        t_sensor = self.clock.to_sensor(int(t_host_ns) - cam.spec.latency_ns)
        k_last = next(reversed(self.pulses))
        return k_last + (t_sensor - self.pulses[k_last]) / self.period_ns

    # ------------------------------------------------------------------ status
    def status(self) -> dict:
        """Lock state, clock offset (ns) and drift (ppm), fit residuals (ms), per-camera counts."""
        r = self.clock.residuals
        cams = {
            name: {"locked": c.anchor is not None, "frames": c.frames, "drops": c.drops, "ffc_frames": c.ffc_frames,
                   "ffc_gaps": c.ffc_gaps, "reanchors": c.reanchors, "unlocked_frames": c.unlocked_frames,
                   "duplicates": c.duplicates}
            for name, c in self.cameras.items()
        }
        return {
            "locked": self.clock_locked and all(c.anchor is not None for c in self.cameras.values() if c.frames),
            "clock_locked": self.clock_locked,
            "offset_ns": self.clock.offset if self.clock.fitted else None,
            "drift_ppm": self.clock.drift * 1e6 if self.clock.fitted else None,
            "trigger_period_ns": self.period_ns,
            "imu_residual_ms": {
                "median": float(np.median(r)) / 1e6 if r.size else None,
                "p99": float(np.percentile(r, 99)) / 1e6 if r.size else None,
            },
            "imu_samples": self.imu_samples,
            "imu_resets": self.imu_resets,
            "pulses_seen": len(self.pulses),
            "cameras": cams,
        }
