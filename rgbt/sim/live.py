"""Pace simulated samples at real rate (the live mode a virtual-stack publisher uses).

Besides pacing: :class:`DeviceBuffer` (what a stalled driver still finds), and the timeline shared by
several players of one run (:class:`ScheduleAnchor`, :func:`schedule_anchor`, :class:`CatchUp`): a
restarted virtual stack, or one of several that each publish some sensor kinds, plays on the wall-clock
timeline the first one started, skipping what is already overdue, as real sensors that kept producing
while no driver read them.
"""

from __future__ import annotations

import heapq
import itertools
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from rgbt.errors import ConfigError
from rgbt.pacing import pace
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


def preload(samples: Iterable[SimSample], seconds: float,
            stop: Callable[[], bool] = lambda: False, keep_labels: bool = False) -> tuple[Iterator[SimSample], int]:
    """Generate the first ``seconds`` of ``samples`` now (the simulator may be slower than real
    time on a small machine), so they can go out at the real rate; returns an iterator over all
    samples and how many were generated ahead. ``stop`` ends the preload early. Unless
    ``keep_labels``, the samples held ahead lose their lazy ``label`` (its closure keeps the
    renderer's intermediates: 2.8 GB instead of 1.0 GB for 4 s of the full stack, measured)."""
    it = iter(samples)
    buffer: list[SimSample] = []
    if seconds > 0:
        for s in it:
            if not keep_labels:
                s.label_fn = None
            buffer.append(s)
            if s.t_ns - buffer[0].t_ns >= seconds * 1e9 or stop():
                break
    return itertools.chain(buffer, it), len(buffer)


def paced(samples: Iterable[SimSample], *, speed: float = 1.0, skip_dropped: bool = True,
          clock: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], object] = time.sleep,
          start_ns: int | Callable[[SimSample], int] | None = None) -> Iterator[tuple[SimSample, int]]:
    """Yield ``(sample, due_ns)`` in host-arrival order, each when its ``t_host_ns`` comes, at
    ``speed`` times real time: what a driver would hand over. ``due_ns`` is the hand-over time on
    ``clock`` (the first sample is due at ``start_ns``, default: when it is ready; a function of the
    first sample, e.g. :meth:`ScheduleAnchor.due_ns` of a shared timeline). Dropped frames
    are skipped unless ``skip_dropped`` is False (a publisher must not publish them). If generation
    falls behind, samples are yielded as soon as they are ready (never dropped); ``sleep`` may return
    early (e.g. a stop event's ``wait``)."""
    arriving = (s for s in host_order(samples) if not (skip_dropped and s.dropped))
    return pace(arriving, lambda s: s.t_host_ns, speed=speed, clock=clock, sleep=sleep, start_ns=start_ns)


class DeviceBuffer:
    """What a driver still finds after its process stalled: the last ``hold_s`` seconds of samples.

    :meth:`overflowed` is asked for each sample in hand-over order, with the wall time now and the
    sample's due time (ns). After a stall (more than ``hold_s`` since the previous sample was handed
    over: the process was stopped or starved) the samples overdue by more than ``hold_s`` were
    overwritten in the device's buffers before anyone could read them: True, until one is within
    ``hold_s`` again. A loop that is merely slow (never ``hold_s`` between two samples) loses nothing:
    a driver that reads late still reads every sample. ``hold_s`` 0: nothing is ever lost."""

    def __init__(self, hold_s: float, now_ns: int) -> None:
        self.hold_ns = int(hold_s * 1e9)
        self._last_ns = now_ns
        self._stalled = False

    def overflowed(self, now_ns: int, due_ns: int) -> bool:
        stall = now_ns - self._last_ns > self.hold_ns
        self._last_ns = now_ns
        self._stalled = bool(self.hold_ns) and (self._stalled or stall) and now_ns - due_ns > self.hold_ns
        return self._stalled


@dataclass(frozen=True)
class ScheduleAnchor:
    """One wall-clock timeline for every player of a simulated run: simulated host time ``t0_sim_ns``
    is due at wall time ``t0_wall_ns`` (``time.time_ns``), and every other one as far from it."""

    t0_wall_ns: int
    t0_sim_ns: int

    def due_ns(self, t_sim_ns: int) -> int:
        """The wall time (ns) at which simulated host time ``t_sim_ns`` is due."""
        return self.t0_wall_ns + t_sim_ns - self.t0_sim_ns


def schedule_anchor(path: str, proposed: ScheduleAnchor) -> tuple[ScheduleAnchor, bool]:
    """The anchor in ``path`` (JSON ``{"t0_wall_ns", "t0_sim_ns"}``), or ``proposed`` written there
    when there is none yet; True when this call wrote it. Written whole and only once (a complete
    temporary file hard-linked to ``path``): of several players starting together the first wins and
    the others read its anchor. A malformed file raises :class:`ConfigError` naming it."""
    try:
        return _read_anchor(path), False
    except FileNotFoundError:
        pass
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as fh:
            json.dump({"t0_wall_ns": proposed.t0_wall_ns, "t0_sim_ns": proposed.t0_sim_ns}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:  # another player wrote it first: its timeline
            return _read_anchor(path), False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return proposed, True


def _read_anchor(path: str) -> ScheduleAnchor:
    with open(path) as fh:
        text = fh.read()
    try:
        data = json.loads(text)
        return ScheduleAnchor(int(data["t0_wall_ns"]), int(data["t0_sim_ns"]))
    except (ValueError, TypeError, KeyError) as exc:
        raise ConfigError(path, "schedule anchor", text[:200],
                          f'JSON {{"t0_wall_ns": <int>, "t0_sim_ns": <int>}} ({type(exc).__name__}: {exc})') from None


class CatchUp:
    """A player joining a timeline that already runs (a restart, or a second player on the same
    anchor): :meth:`skip` is True for the samples overdue by more than ``tolerance_s`` when they come
    up, until the first that is not; from then on it is always False (later lateness is another
    matter: :class:`DeviceBuffer`)."""

    def __init__(self, tolerance_s: float) -> None:
        self.tolerance_ns = int(tolerance_s * 1e9)
        self.joined = False

    def skip(self, now_ns: int, due_ns: int) -> bool:
        if self.joined:
            return False
        if now_ns - due_ns > self.tolerance_ns:
            return True
        self.joined = True
        return False
