"""Pace simulated samples at real rate (the live mode a virtual-stack publisher uses)."""

from __future__ import annotations

import heapq
import time
from typing import Callable, Iterable, Iterator

from rgbt.sim.simstack import SimSample


def host_order(samples: Iterable[SimSample]) -> Iterator[SimSample]:
    """Re-order true-time-ordered samples by host arrival time (``t_host_ns``).

    Every sample arrives after it happened (``t_host_ns > t_ns``), so once the input reaches true
    time ``t`` every buffered sample with ``t_host_ns <= t`` can be released: the buffer holds at
    most the largest transport latency (~0.1 s) of samples.
    """
    heap: list[tuple[int, int, SimSample]] = []
    n = 0
    for s in samples:
        while heap and heap[0][0] <= s.t_ns:
            yield heapq.heappop(heap)[2]
        heapq.heappush(heap, (s.t_host_ns, n, s))
        n += 1
    while heap:
        yield heapq.heappop(heap)[2]


def paced(samples: Iterable[SimSample], *, speed: float = 1.0, skip_dropped: bool = True,
          clock: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], None] = time.sleep
          ) -> Iterator[SimSample]:
    """Yield samples in host-arrival order, each when its ``t_host_ns`` comes (relative to the first
    sample), at ``speed`` times real time: what a driver would hand over. Dropped frames are skipped
    (a publisher must not publish them). If generation falls behind, samples are yielded as soon as
    they are ready (never dropped)."""
    if speed <= 0:
        raise ValueError(f"speed must be > 0, got {speed}")
    origin_sim = None
    origin_wall = 0
    for s in host_order(samples):
        if skip_dropped and s.dropped:
            continue
        if origin_sim is None:
            origin_sim, origin_wall = s.t_host_ns, clock()
        due = origin_wall + int((s.t_host_ns - origin_sim) / speed)
        wait = due - clock()
        if wait > 0:
            sleep(wait * 1e-9)
        yield s
