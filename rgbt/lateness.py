"""When is a frame too late to be worth processing? The deadline of live processing (no rclpy).

A live worker that falls behind already drops every frame a newer one overtook
(``rgbt.ros.mailbox``, ``rgbt.seg.pipeline``): that bounds the queue, not the latency. On a CPU that
is short the newest frame itself can reach the worker late, because the middleware, the executor
and the nodes upstream were waiting for the CPU too; work started on it only adds to a result
nobody can use in time. :class:`LatenessGate` names such a frame, by comparing two ages:

* **arrival age** of every frame offered to the node (:meth:`LatenessGate.arrived`, in the
  subscription callback): wall-clock now - header stamp. The smallest over the last
  ``baseline_frames`` frames is the stream's *baseline*: its quickest recent delivery (exposure to
  host transport, the sync node, the middleware), whatever the camera, the host or the clock
  offset. It is short on purpose: when the whole graph upstream slows down for longer than that
  (a loaded host: arrivals 60-180 ms late for seconds), the baseline follows, and the node keeps
  publishing the newest frames it gets instead of going dark until a longer window forgets its
  quicker past (with 120 frames the masks stopped for ~1 s at a time in 6 of 14 clock-step fault flights);
* **start age**, when the worker would start on a frame (:meth:`LatenessGate.late`): a frame
  whose start age exceeds the baseline by more than ``late_after_periods`` frame periods is late.
  The caller drops it and counts it; a newer frame is at most a period away.

The frame period is the median of the last ``window`` stamp steps (the stream's own rate, so
sub-sampled or slower streams need no configuration). Header stamps and ``now`` are both wall-clock
ns (``time.time_ns``). Only a live stream is judged: one whose stamps advance as fast as the wall
clock (the quickest arrival age of the window's older half and of its newer half differ by at most
``rate_tolerance`` of the stamp time between them; late frames do not move those minima). A bag replayed at another rate
or as fast as the subscribers keep up, or stamps that are not times at all, are never late (``realtime`` 0 in
:meth:`LatenessGate.stats`). A driver holds its clock offset across a step of the host's wall clock
(``rgbt.hostclock``), so after a step every age is off by the step: an arrival age more than
``step_s`` above the baseline restarts the baseline from that frame (counted ``clock_resets``),
and one below it simply becomes the new baseline. Until ``min_frames`` frames have arrived nothing
is late (no baseline yet). ``late_after_periods = 0`` turns the gate off.
"""

from __future__ import annotations

from collections import deque
from statistics import median


class LatenessGate:
    """Baseline (min arrival age over the last ``baseline_frames``) and period (median stamp step
    over the last ``window`` frames);
    :meth:`late` says whether starting on a frame now would be later than the baseline plus
    ``late_after_periods`` periods. Not thread-safe: callers serialize ``arrived`` and ``late``."""

    def __init__(self, late_after_periods: float, window: int = 120, step_s: float = 1.0,
                 min_frames: int = 8, rate_tolerance: float = 0.05, baseline_frames: int = 12) -> None:
        if late_after_periods < 0:
            raise ValueError(f"late_after_periods: got {late_after_periods}, expected >= 0 (0: off)")
        if window < 2 or min_frames < 2 or not 2 <= baseline_frames <= window:
            raise ValueError(f"window {window} / min_frames {min_frames} / baseline_frames {baseline_frames}: "
                             f"expected >= 2, baseline_frames <= window")
        self.late_after_periods = late_after_periods
        self.window, self.min_frames, self.baseline_frames = window, min_frames, baseline_frames
        self.step_ns = int(step_s * 1e9)
        self.rate_tolerance = rate_tolerance
        self._frames: deque[tuple[int, int]] = deque(maxlen=window)  # (stamp, arrival age) ns
        self.counts = {"late": 0, "clock_resets": 0}

    @property
    def enabled(self) -> bool:
        return self.late_after_periods > 0

    def arrived(self, stamp_ns: int, now_ns: int) -> None:
        """A frame reached the node (call for every frame, dropped or not)."""
        if not self.enabled:
            return
        age = now_ns - stamp_ns
        if self._frames and age - self._quickest() > self.step_ns:  # a clock step
            self._frames.clear()
            self.counts["clock_resets"] += 1
        self._frames.append((stamp_ns, age))

    def _quickest(self) -> int:
        n = len(self._frames)
        return min(self._frames[i][1] for i in range(max(0, n - self.baseline_frames), n))

    def baseline_ns(self) -> int | None:
        """The stream's quickest arrival age (ns) over the last ``baseline_frames`` frames, or None
        before ``min_frames`` frames."""
        if len(self._frames) < self.min_frames:
            return None
        return self._quickest()

    def period_ns(self) -> int | None:
        """The median stamp step of the window (ns), or None before ``min_frames`` frames."""
        stamps = [s for s, _ in self._frames]
        steps = [b - a for a, b in zip(stamps, stamps[1:], strict=False) if b > a]
        if len(steps) < self.min_frames - 1:
            return None
        return int(median(steps))

    def realtime(self) -> bool:
        """The window's stamps advance as fast as the wall clock (a live stream)."""
        if len(self._frames) < self.min_frames:
            return False
        frames = list(self._frames)
        half = len(frames) // 2
        s0, a0 = min(frames[:half], key=lambda f: f[1])
        s1, a1 = min(frames[half:], key=lambda f: f[1])
        return s1 > s0 and abs(a1 - a0) <= self.rate_tolerance * (s1 - s0)

    def late(self, stamp_ns: int, now_ns: int) -> bool:
        """True when starting on the frame stamped ``stamp_ns`` at ``now_ns`` is late (counted)."""
        if not self.enabled:
            return False
        base, period = self.baseline_ns(), self.period_ns()
        if base is None or period is None or not self.realtime():
            return False
        if now_ns - stamp_ns - base > self.late_after_periods * period:
            self.counts["late"] += 1
            return True
        return False

    def stats(self) -> dict[str, float | int]:
        """``late``, ``clock_resets``, ``realtime`` (0/1), ``late_after_periods``, and the current
        ``baseline_ms`` / ``period_ms`` when known."""
        out: dict[str, float | int] = dict(self.counts)
        out["realtime"] = int(self.realtime())
        out["late_after_periods"] = self.late_after_periods
        base, period = self.baseline_ns(), self.period_ns()
        if base is not None:
            out["baseline_ms"] = round(base / 1e6, 3)
        if period is not None:
            out["period_ms"] = round(period / 1e6, 3)
        return out
