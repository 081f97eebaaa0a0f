"""Pace time-stamped items at (a multiple of) real time: one loop for every player.

Used by the virtual sensor stack (``rgbt.sim.live.paced``: simulated samples at their host
arrival times) and the bag replay node (messages at their log times, ``rate``).
"""

from __future__ import annotations

import time
from typing import Callable, Iterable, Iterator, TypeVar, Union

T = TypeVar("T")


def pace(items: Iterable[T], t_ns: Callable[[T], int], *, speed: float = 1.0,
         clock: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], object] = time.sleep,
         start_ns: Union[int, Callable[[T], int], None] = None) -> Iterator[tuple[T, int]]:
    """Yield ``(item, due_ns)`` for items in time order, each when ``t_ns(item)`` comes at ``speed``
    times real time. ``due_ns`` is on ``clock`` (ns); the first item is due at ``start_ns`` (default:
    when it is ready; a function: ``start_ns(first item)``, asked once it is known). An item that is already late is
    yielded at once (never skipped). ``sleep`` (seconds) may return early, e.g. a stop event's ``wait``: the caller
    checks its stop flag.
    ``speed`` must be > 0 (a caller that wants "as fast as possible" does not pace)."""
    if speed <= 0:
        raise ValueError(f"speed must be > 0, got {speed}")
    origin: tuple[int, int] | None = None  # (item time, clock time) of the first item
    for item in items:
        t = t_ns(item)
        if origin is None:
            origin = (t, clock() if start_ns is None else start_ns(item) if callable(start_ns) else start_ns)
        due = origin[1] + int((t - origin[0]) / speed)
        wait = due - clock()
        if wait > 0:
            sleep(wait * 1e-9)
        yield item, due
