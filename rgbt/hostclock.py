"""One monotonic -> wall-clock offset per driver, with explicit handling of wall-clock steps.

Drivers time-stamp arrivals with ``time.monotonic_ns`` (never steps) and publish on the ROS clock
(system time, which NTP / chrony / GNSS time may step). Recomputing ``wall - monotonic`` for every
frame moves every later stamp by the size of a step; :class:`WallClockOffset` measures the offset
once and re-checks it at most every ``check_period_s``:

- a change below ``step_threshold_ms`` is the clock being slewed (NTP frequency correction):
  followed, so long runs stay on the system clock;
- a larger change, seen again by a second measurement right after (a measurement whose reads were
  split by a long preemption is not a step), is a *step*: logged and counted (``steps``,
  ``last_step_ns``); with
  ``on_step="hold"`` (default) the offset is kept, so the driver's stamps stay continuous and
  monotonic through the step (the recording keeps one timeline; the step is visible in the
  counters); with ``"follow"`` the new offset is adopted (stamps jump with the wall clock).

Clocks are injected (``wall``, ``monotonic``: callables returning ns) so tests step them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

StepPolicy = Literal["hold", "follow"]


class WallClockOffset:
    """``to_wall(t_monotonic_ns)``: a monotonic reading on the wall clock (ns)."""

    def __init__(self, *, wall: Callable[[], int] = time.time_ns, monotonic: Callable[[], int] = time.monotonic_ns,
                 step_threshold_ms: float = 20.0, check_period_s: float = 1.0, on_step: StepPolicy = "hold",
                 log: Callable[[str], None] | None = None) -> None:
        if on_step not in ("hold", "follow"):
            raise ValueError(f"on_step: got {on_step!r}, expected 'hold' or 'follow'")
        self.wall, self.monotonic = wall, monotonic
        self.step_threshold_ns = int(step_threshold_ms * 1e6)
        self.check_period_ns = int(check_period_s * 1e9)
        self.on_step = on_step
        self.log = log or (lambda _msg: None)
        self.steps = 0  # wall-clock steps detected
        self.last_step_ns = 0  # size of the last one (new - old offset), ns
        self.offset_ns = self.measure()  # applied to stamps
        self._measured_ns = self.offset_ns  # the last measurement (steps are changes between two)
        self._checked_ns = self.monotonic()

    def measure(self) -> int:
        """``wall - monotonic`` now (the read between two monotonic reads, narrowest of three)."""
        best: tuple[int, int] | None = None
        for _ in range(3):
            m0 = self.monotonic()
            w = self.wall()
            m1 = self.monotonic()
            if best is None or m1 - m0 < best[0]:
                best = (m1 - m0, w - (m0 + m1) // 2)
        assert best is not None
        return best[1]

    def check(self) -> None:
        """Re-measure the offset: follow a slew, count (and by policy hold or follow) a step."""
        now = self.measure()
        if abs(now - self._measured_ns) >= self.step_threshold_ns:
            again = self.measure()  # a step persists; a glitch in one measurement does not
            if abs(again - now) >= self.step_threshold_ns:
                now = again
        delta, self._measured_ns = now - self._measured_ns, now
        self._checked_ns = self.monotonic()
        if abs(delta) < self.step_threshold_ns:
            self.offset_ns += delta
            return
        self.steps += 1
        self.last_step_ns = delta
        action = "stamps stay on the previous offset" if self.on_step == "hold" else "stamps follow it"
        self.log(f"wall clock stepped by {delta / 1e9:+.3f} s (step {self.steps}); {action}")
        if self.on_step == "follow":
            self.offset_ns += delta

    def to_wall(self, t_monotonic_ns: int) -> int:
        """``t_monotonic_ns`` (a ``time.monotonic_ns`` reading) on the wall clock, ns."""
        if self.monotonic() - self._checked_ns >= self.check_period_ns:
            self.check()
        return int(t_monotonic_ns) + self.offset_ns

    def counters(self) -> dict[str, int]:
        return {"steps": self.steps, "last_step_ns": self.last_step_ns, "offset_ns": self.offset_ns}
