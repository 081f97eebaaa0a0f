"""Pace time-stamped items at (a multiple of) real time: one loop for every player.

Used by the virtual sensor stack (``rgbt.sim.live.paced``: simulated samples at their host
arrival times), the bag replay node (messages at their log times, ``rate``) and the ORB-SLAM3
runner's feed (frames no faster than their stamps, ``pace``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


class Pacer:
    """Sleeps until each item's time comes at ``speed`` times real time: the first item sets the
    origin (item time ``t_ns``, clock time ``start_ns`` or now); :meth:`wait` then sleeps until
    ``origin clock + (t_ns - origin t_ns) / speed`` on ``clock`` (ns). An item that is already late
    does not wait. ``sleep`` (seconds) may return early, e.g. a stop event's ``wait``."""

    def __init__(self, speed: float = 1.0, *, clock: Callable[[], int] = time.monotonic_ns,
                 sleep: Callable[[float], object] = time.sleep) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        self.speed, self.clock, self.sleep = speed, clock, sleep
        self.origin: tuple[int, int] | None = None  # (item time, clock time) of the first item

    def wait(self, t_ns: int, start_ns: int | None = None) -> int:
        """Sleep until the item at ``t_ns`` is due; return when it is due (on ``clock``, ns).
        ``start_ns``: when the first item is due (default: now); ignored after the first item."""
        if self.origin is None:
            self.origin = (t_ns, self.clock() if start_ns is None else start_ns)
        due = self.origin[1] + int((t_ns - self.origin[0]) / self.speed)
        wait = due - self.clock()
        if wait > 0:
            self.sleep(wait * 1e-9)
        return due


def pace(items: Iterable[T], t_ns: Callable[[T], int], *, speed: float = 1.0,
         clock: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], object] = time.sleep,
         start_ns: int | Callable[[T], int] | None = None) -> Iterator[tuple[T, int]]:
    """Yield ``(item, due_ns)`` for items in time order, each when ``t_ns(item)`` comes at ``speed``
    times real time (:class:`Pacer`). ``due_ns`` is on ``clock`` (ns); the first item is due at
    ``start_ns`` (default: when it is ready; a function: ``start_ns(first item)``, asked once it is
    known). An item that is already late is yielded at once (never skipped). ``sleep`` (seconds)
    may return early, e.g. a stop event's ``wait``: the caller checks its stop flag. ``speed`` must
    be > 0 (a caller that wants "as fast as possible" does not pace)."""
    pacer = Pacer(speed, clock=clock, sleep=sleep)
    for item in items:
        t = t_ns(item)
        first = None
        if pacer.origin is None and start_ns is not None:
            first = start_ns(item) if callable(start_ns) else start_ns
        yield item, pacer.wait(t, first)
