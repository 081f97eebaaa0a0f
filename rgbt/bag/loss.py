"""What a recording lost, as header-stamp ranges per topic (written into each bag's manifest).

A range is ``[first_stamp_ns, last_stamp_ns, count, cause]``: ``count`` messages of the topic,
evenly spaced from ``first`` to ``last`` (both included; ``first == last`` for one), that the bag
does not hold, and why. Two kinds of entry:

* a message the recorder received and could not write (its memory budget, a write error, no bag
  open between two bags): its own stamp, consecutive ones of one cause merged into one range;
* messages that never arrived, seen as a step in a stream of known rate: a step of more than 1.5
  periods means ``round(step / period) - 1`` missing (:func:`missing_between`), whoever lost them (the
  sensor, its driver, the middleware, a recorder that was restarted).

Times are integer ns on the stamps' clock (the stack's host clock for restamped topics).
"""

from __future__ import annotations

import bisect

#: causes written into ``loss_ranges``
NOT_RECEIVED = "not received"
MEMORY_BUDGET = "recorder memory budget"
WRITE_ERROR = "write error"
NO_BAG = "no bag open"
RECORDER_RESTART = "recorder restart"


def missing_between(prev_ns: int, next_ns: int, period_ns: int) -> int:
    """Messages missing between two consecutive stamps (ns) of a stream of period ``period_ns``:
    ``round(step / period) - 1`` for a step over 1.5 periods, else 0."""
    step = next_ns - prev_ns
    if period_ns <= 0 or step <= 1.5 * period_ns:
        return 0
    return max(0, round(step / period_ns) - 1)


def ranges_before(ranges: list[list], cut_ns: int) -> list[list]:
    """The part of ``ranges`` (``[first, last, count, cause]``, evenly spaced) stamped before
    ``cut_ns``: what a bag cut there (a killed recorder's bag, recovered up to where the recorder that
    took over begins) lacks; the rest is the next bag's to hold or to count."""
    kept = []
    for first, last, count, cause in ranges:
        if last < cut_ns or (first < cut_ns and count < 2):  # whole (one message: counted here)
            kept.append([first, last, count, cause])
        elif first < cut_ns:
            step = (last - first) / (count - 1)
            n = min(count, int((cut_ns - 1 - first) // step) + 1)
            kept.append([first, first + round((n - 1) * step), n, cause])
    return kept


def steps_not_counted(prev_ns: int, next_ns: int, period_ns: int, counted: list[list]) -> list[list[int]]:
    """The messages missing between two consecutive stamps of a stream (:func:`missing_between`) that
    ``counted`` (loss ranges of the stream already written, e.g. by the recorder that was killed)
    does not hold, as ``[first, last, count]`` runs: a message counted lost once, not twice."""
    n = missing_between(prev_ns, next_ns, period_ns)
    if not n:
        return []
    step = (next_ns - prev_ns) / (n + 1)
    held = sorted(first + round(i * (last - first) / max(1, count - 1))
                  for first, last, count, _cause in counted if first < next_ns and last > prev_ns
                  for i in range(count))
    runs: list[list[int]] = []
    for k in range(1, n + 1):
        stamp = prev_ns + round(k * step)
        i = bisect.bisect_left(held, stamp - step / 2)
        if i < len(held) and held[i] <= stamp + step / 2:
            continue  # counted already
        if runs and runs[-1][1] == prev_ns + round((k - 1) * step):
            runs[-1][1], runs[-1][2] = stamp, runs[-1][2] + 1
        else:
            runs.append([stamp, stamp, 1])
    return runs


class LossLog:
    """Loss ranges by topic (see the module docstring); ``to_json()`` is what the manifest stores."""

    def __init__(self) -> None:
        self.ranges: dict[str, list[list]] = {}
        self._open: dict[str, str] = {}  # topic -> the cause of its last message, while it was lost

    def lost(self, topic: str, stamp_ns: int, cause: str) -> None:
        """One message of ``topic`` (header stamp ``stamp_ns``) not written, for ``cause``; merged with
        the topic's previous entry when that message was lost for the same cause."""
        ranges = self.ranges.setdefault(topic, [])
        if self._open.get(topic) == cause and ranges:
            last = ranges[-1]
            last[0], last[1], last[2] = min(last[0], stamp_ns), max(last[1], stamp_ns), last[2] + 1
        else:
            ranges.append([int(stamp_ns), int(stamp_ns), 1, cause])
        self._open[topic] = cause

    def kept(self, topic: str) -> None:
        """A message of ``topic`` was written: the next loss starts a new range."""
        self._open.pop(topic, None)

    def gap(self, topic: str, first_ns: int, last_ns: int, count: int, cause: str = NOT_RECEIVED) -> None:
        """``count`` messages from ``first_ns`` to ``last_ns`` (stamps, ns) that never arrived."""
        if count > 0:
            self.ranges.setdefault(topic, []).append([int(first_ns), int(last_ns), int(count), cause])
            self._open.pop(topic, None)

    def absorb(self, other: LossLog) -> None:
        """Take every range of ``other`` (which is left empty)."""
        for topic, ranges in other.ranges.items():
            self.ranges.setdefault(topic, []).extend(ranges)
        other.ranges, other._open = {}, {}

    def count(self, topic: str | None = None) -> int:
        """Messages lost (of ``topic``, or of every topic)."""
        topics = [topic] if topic is not None else list(self.ranges)
        return sum(r[2] for t in topics for r in self.ranges.get(t, []))

    def to_json(self, topic: str) -> list[list]:
        return [list(r) for r in sorted(self.ranges.get(topic, []), key=lambda r: r[0])]
