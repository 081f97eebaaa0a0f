"""An injected step of the simulated drivers' wall clock, for ``rgbt bench faults`` (no rclpy here).

The real clock of a test machine cannot be stepped by a benchmark, so the fault is simulated where
a step would show: the host stamps a driver puts on its messages. The virtual stack adds
:meth:`WallStep.offset_ns` (read from the file named by :data:`WALL_STEP_ENV`: one integer, ns;
0 when the variable is unset or the file is absent) to every host stamp it publishes, as a driver
reading ``time.time_ns()`` would after a step of the system clock. Sensor clocks (the IMU's own
time, the trigger counter) do not step; other processes' clocks (the recorder's log times) do not
either.
"""

from __future__ import annotations

import os
import time

WALL_STEP_ENV = "RGBT_WALL_STEP_FILE"


class WallStep:
    """The current injected offset (ns), re-read at most every ``period_s`` seconds."""

    def __init__(self, path: str | None = None, period_s: float = 0.05) -> None:
        self.path = path if path is not None else os.environ.get(WALL_STEP_ENV, "")
        self.period_s = period_s
        self._offset_ns = 0
        self._next = 0.0

    def offset_ns(self) -> int:
        if not self.path:
            return 0
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.period_s
            try:
                with open(self.path) as fh:
                    self._offset_ns = int(fh.read().strip() or 0)
            except (OSError, ValueError):
                self._offset_ns = 0
        return self._offset_ns
