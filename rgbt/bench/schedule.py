"""The fault bench's independent judge: what the simulated sensors produced, against what a flight's
bags hold of it (``rgbt bench faults``).

The simulator is deterministic: a pre-rendered run (:mod:`rgbt.sim.cache`) lists every sample the
sensors produce, with its true (trigger) time, its simulated host arrival and, for a frame, its
pixels. A virtual stack plays it on a timeline fixed by its *anchor* (``{"t0_wall_ns",
"t0_sim_ns"}``: the wall time at which the simulated host time ``t0_sim_ns`` was due), which a
restarted virtual stack keeps, as real sensors keep producing while no driver reads them. So each
sample has a wall time at which it was due at the host (``due_ns``) and a header stamp it must carry
in the bag once the trigger sync restamps it (``stamp_ns``: its true time on that clock; host-stamped
on the sync's before-lock topic, ``due_ns`` there). Nothing the graph reports about itself is used:
:func:`match` finds each scheduled sample in the bags (frames by the CRC32 of their pixels, in order;
IMU samples by stamp), and :func:`reported` reads what the bags' manifests say was lost
(``loss_ranges``), so the two can be compared: nothing may be lost silently.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.bag.reader import open_bag
from rgbt.graph.recording import STAMPED_TYPES
from rgbt.sim.cache import SimCache
from rgbt.stamps import cdr_stamp_ns

#: an IMU sample in a bag is the scheduled one when its stamp is within this of the expected (ns)
IMU_TOLERANCE_NS = 2_000_000
#: a recorded frame is looked for this many scheduled frames ahead of the last match
LOOKAHEAD = 2000


@dataclass
class Stream:
    """One sensor stream of the schedule (times in wall-clock ns on the flight's timeline)."""

    kind: str  # thermal, color, mono, imu
    topic: str  # the restamped stack topic
    unlocked: str  # the trigger sync's before-lock topic of the same stream
    period_ns: int
    due_ns: np.ndarray  # when each sample was due at the host (the virtual stack publishes it then)
    stamp_ns: np.ndarray  # its trigger-grid stamp in the bag
    crc: list[int] = field(default_factory=list)  # frames: CRC32 of the pixels


@dataclass
class Recorded:
    """A stream's messages in the flight's bags, in bag order and, within a bag, in log order."""

    stamp_ns: list[int] = field(default_factory=list)
    crc: list[int] = field(default_factory=list)  # frames only
    locked: list[bool] = field(default_factory=list)  # on the stack topic (else the before-lock topic)
    bag: list[int] = field(default_factory=list)  # index of the bag it is in


@dataclass
class Match:
    """Which scheduled samples of a stream are in the bags."""

    found: np.ndarray  # bool per scheduled sample
    duplicates: int = 0  # recorded messages that matched no scheduled sample ahead (repeats, strays)


def schedule(cache_dir: str | Path, anchor: dict[str, int], stack: Any, kinds: Iterable[str]) -> dict[str, Stream]:
    """The streams ``kinds`` (camera names, ``imu``) of the cached run in ``cache_dir`` on the
    timeline of ``anchor``; keyed by stack topic."""
    from rgbt.topics import unlocked_topic

    offset = int(anchor["t0_wall_ns"]) - int(anchor["t0_sim_ns"])  # simulated host time -> wall
    kinds = list(kinds)
    rows: dict[str, dict[str, list]] = {k: {"due": [], "stamp": [], "crc": []} for k in kinds}
    for s in SimCache(Path(cache_dir)).samples():
        row = rows.get(s.kind)
        if row is None:
            continue
        row["due"].append(s.t_host_ns + offset)
        row["stamp"].append(s.t_ns + offset)
        if s.kind != "imu":
            row["crc"].append(zlib.crc32(np.ascontiguousarray(s.data).data.cast("B")))
    out = {}
    for kind in kinds:
        spec = stack.imu if kind == "imu" else stack.cameras[kind]
        due, stamp = np.asarray(rows[kind]["due"], np.int64), np.asarray(rows[kind]["stamp"], np.int64)
        order = np.argsort(stamp, kind="stable")
        out[spec.topic] = Stream(
            kind,
            spec.topic,
            unlocked_topic(kind),
            int(round(1e9 / spec.rate_hz)),
            due[order],
            stamp[order],
            [rows[kind]["crc"][i] for i in order] if rows[kind]["crc"] else [],
        )
    return out


@dataclass
class FlightBags:
    """What a flight's bags hold: each schedule stream's messages (:class:`Recorded`), every topic's
    log times (all bags, in order), whether header stamps never decrease within a bag on every
    stamped topic, and the problems met (a bag that does not open)."""

    recorded: dict[str, Recorded]
    logs: dict[str, list[int]]
    monotonic: bool
    problems: list[str]


def read_flight(bags: list[Path], streams: dict[str, Stream]) -> FlightBags:
    """Read ``bags`` (in that order) once: see :class:`FlightBags`. A stream's stack topic and its
    before-lock topic are merged by log time within a bag (host stamps before lock are another clock:
    stamps are compared on each topic by itself)."""
    of_stream = {s.topic: s.topic for s in streams.values()} | {s.unlocked: s.topic for s in streams.values()}
    out = FlightBags({t: Recorded() for t in streams}, {}, True, [])
    for i, bag in enumerate(bags):
        rows: dict[str, list[tuple[int, int, int, bool]]] = {t: [] for t in streams}
        last: dict[str, int] = {}
        try:
            with open_bag(bag) as reader:
                for rec in reader.messages():
                    out.logs.setdefault(rec.topic, []).append(rec.t_ns)
                    if rec.msgtype not in STAMPED_TYPES:
                        continue
                    stamp = cdr_stamp_ns(bytes(rec.raw))
                    if stamp < last.get(rec.topic, -1):
                        out.monotonic = False
                    last[rec.topic] = stamp
                    stream = of_stream.get(rec.topic)
                    if stream is not None:
                        crc = zlib.crc32(rec.msg.data) if rec.msgtype == "sensor_msgs/msg/Image" else 0
                        rows[stream].append((rec.t_ns, stamp, crc, rec.topic == stream))
        except Exception as exc:  # noqa: BLE001 - a bag that does not open is a finding
            out.problems.append(f"{bag.name} does not open: {exc}")
            continue
        for topic, items in rows.items():
            r = out.recorded[topic]
            for _, stamp, crc, locked in sorted(items, key=lambda x: x[0]):
                r.stamp_ns.append(stamp)
                r.crc.append(crc)
                r.locked.append(locked)
                r.bag.append(i)
    for times in out.logs.values():
        times.sort()
    return out


def match(stream: Stream, recorded: Recorded) -> Match:
    """Which scheduled samples of ``stream`` are in ``recorded``: frames by CRC32, in order (a
    recorded frame takes the first scheduled frame with its CRC at or after the previous match, so
    the frozen frames of a flat-field correction pair up one by one); IMU samples by stamp (locked:
    the trigger-grid stamp, before lock: the host stamp = when it was due), within
    :data:`IMU_TOLERANCE_NS`."""
    n = len(stream.stamp_ns)
    found = np.zeros(n, dtype=bool)
    dups = 0
    if stream.crc:
        positions: dict[int, list[int]] = {}
        for i, c in enumerate(stream.crc):
            positions.setdefault(c, []).append(i)
        nxt = 0
        for crc in recorded.crc:
            cands = positions.get(crc, [])
            k = int(np.searchsorted(cands, nxt))
            if k < len(cands) and cands[k] - nxt <= LOOKAHEAD:
                found[cands[k]] = True
                nxt = cands[k] + 1
            else:
                dups += 1
        return Match(found, dups)
    due_order = np.argsort(stream.due_ns, kind="stable")
    due_sorted = stream.due_ns[due_order]
    for stamp, locked in zip(recorded.stamp_ns, recorded.locked, strict=False):
        ref, order = (stream.stamp_ns, None) if locked else (due_sorted, due_order)
        k = int(np.searchsorted(ref, stamp))
        best = min((j for j in (k - 1, k) if 0 <= j < n), key=lambda j: abs(int(ref[j]) - stamp), default=None)
        if best is None or abs(int(ref[best]) - stamp) > IMU_TOLERANCE_NS:
            dups += 1
            continue
        i = best if order is None else int(order[best])
        if found[i]:
            dups += 1
        found[i] = True
    return Match(found, dups)


def missing_in(stream: Stream, m: Match, window: tuple[int, int]) -> np.ndarray:
    """Indexes of the scheduled samples due in ``window`` (wall ns, [a, b)) that are not in the bags."""
    a, b = window
    return np.nonzero((stream.due_ns >= a) & (stream.due_ns < b) & ~m.found)[0]


def longest_gap_s(stream: Stream, missing: np.ndarray) -> float:
    """The longest run of consecutive missing samples (s of the stream's time)."""
    if not len(missing):
        return 0.0
    breaks = np.nonzero(np.diff(missing) != 1)[0]
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [len(missing) - 1]])
    runs = missing[ends] - missing[starts] + 1
    return round(float(runs.max()) * stream.period_ns / 1e9, 3)


def stamp_window(stream: Stream, window: tuple[int, int]) -> tuple[int, int]:
    """``window`` (due times, wall ns) as header stamps of the stream: from half a period before
    the first stamp due in it to half a period after the last ((0, 0) when none is due in it)."""
    a, b = window
    inside = stream.stamp_ns[(stream.due_ns >= a) & (stream.due_ns < b)]
    if not len(inside):
        return 0, 0
    half = stream.period_ns // 2
    return int(inside.min()) - half, int(inside.max()) + half


def reported(manifests: list[dict], stream: Stream, window: tuple[int, int]) -> int:
    """What the bags' manifests say was lost of ``stream`` in ``window`` (due times): the samples of
    their ``loss_ranges`` (``[first_stamp_ns, last_stamp_ns, count, cause]``, evenly spaced) whose
    stamps fall in the window, and of what arrived after a recording stopped for good
    (``not_recorded_after_stop``: a full disk, the size cap)."""
    sa, sb = stamp_window(stream, window)
    total = 0
    for manifest in manifests:
        ranges = list(manifest.get("topics", {}).get(stream.topic, {}).get("loss_ranges", []))
        ranges += (manifest.get("not_recorded_after_stop") or {}).get("loss_ranges", {}).get(stream.topic, [])
        for first, last, count, *_ in ranges:
            count = int(count)
            if count <= 0:
                continue
            step = (int(last) - int(first)) / (count - 1) if count > 1 else 0.0
            stamps = int(first) + step * np.arange(count)
            total += int(np.count_nonzero((stamps >= sa) & (stamps < sb)))
    return total
