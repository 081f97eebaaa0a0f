"""Summaries of a bag: topics, types, counts, rates and the largest gap per topic."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rgbt.bag.reader import open_bag

NS_PER_S = 1e9


def bag_info(path: str | Path, *, scan: bool = True,
             progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Describe a bag (ROS 1 or ROS 2) as a JSON-able dict.

    Keys: ``path``, ``format`` (``ros1``/``ros2``), ``storage``, ``topics`` (name -> ``type``,
    ``count``, ``rate_hz``, ``max_gap_s``, ``max_gap_at_s`` (offset from the bag start), ``known``),
    ``message_count``, ``start_ns``, ``end_ns``, ``duration_s``, ``synthetic``, ``custom_data``,
    ``unknown_types``, ``unfinished_files``. With ``scan`` (default) every message's log time is
    read to measure rates and gaps; without it ``rate_hz`` is count / bag duration and gaps are
    ``None``. ``progress(n)`` is called with the number of messages scanned so far.
    """
    with open_bag(path) as bag:
        stats: dict[str, dict[str, Any]] = {
            name: {"first": None, "last": None, "n": 0, "gap": 0, "gap_at": None} for name in bag.topics
        }
        if scan and bag.message_count:
            n_total = 0
            for rec in bag.messages(include_unknown=True):
                s = stats[rec.topic]
                if s["last"] is not None and rec.t_ns - s["last"] > s["gap"]:
                    s["gap"], s["gap_at"] = rec.t_ns - s["last"], s["last"]
                if s["first"] is None:
                    s["first"] = rec.t_ns
                s["last"] = rec.t_ns
                s["n"] += 1
                n_total += 1
                if progress is not None and n_total % 5000 == 0:
                    progress(n_total)
        topics: dict[str, dict[str, Any]] = {}
        bag_duration_s = bag.duration_ns / NS_PER_S
        for name, info in bag.topics.items():
            s = stats[name]
            if scan:
                span = (s["last"] - s["first"]) if s["n"] >= 2 else 0
                rate = (s["n"] - 1) / (span / NS_PER_S) if span > 0 else 0.0
                gap = s["gap"] / NS_PER_S if s["n"] >= 2 else None
                gap_at = (s["gap_at"] - bag.start_ns) / NS_PER_S if s["gap_at"] is not None else None
            else:
                rate = info.count / bag_duration_s if bag_duration_s > 0 else 0.0
                gap = gap_at = None
            topics[name] = {"type": info.msgtype, "count": info.count, "rate_hz": round(rate, 3),
                            "max_gap_s": None if gap is None else round(gap, 6),
                            "max_gap_at_s": None if gap_at is None else round(gap_at, 6),
                            "known": info.known}
        return {
            "path": str(bag.path),
            "format": bag.kind,
            "storage": bag.storage,
            "topics": topics,
            "message_count": bag.message_count,
            "start_ns": bag.start_ns,
            "end_ns": bag.end_ns,
            "duration_s": bag_duration_s,
            "synthetic": bag.synthetic,
            "custom_data": dict(bag.metadata),
            "unknown_types": list(bag.unknown_types),
            "unfinished_files": [p.name for p in bag.unfinished_files],
        }
