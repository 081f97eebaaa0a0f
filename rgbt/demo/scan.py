"""One pass over a recording: what the evaluation needs, without holding the bag in memory.

ROS 1 (CART) and ROS 2 bags alike (C2 ``open_bag``); CART topic names are renamed to the stack's.

Per thermal frame: header stamp (the restamped trigger time), log time (recorder arrival) and the
CRC32 of its pixels (to find the simulator's frame it came from). Per recorded segmentation mask:
stamp and log time (FPS, latency). For up to ``max_pairs`` evaluation frames, evenly spread: the
thermal frame, the recorded mask and the label map (``/rgbt/sim/labels/thermal`` in bags written
by ``rgbt simulate``), paired by header stamp.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rgbt.bag.reader import open_bag
from rgbt.bag.renames import CART_RENAMES
from rgbt.topics import FUSION_CLASS_IDS_TOPIC, LABEL_TOPICS, SEG_CLASS_IDS_TOPIC

SEG_TOPIC = SEG_CLASS_IDS_TOPIC
FUSION_TOPIC = FUSION_CLASS_IDS_TOPIC  # RGB-T fusion, on the rectified colour canvas
LABEL_TOPIC = LABEL_TOPICS["thermal"]


@dataclass
class EvalFrame:
    """``stamp_ns`` (header stamp), ``thermal`` uint16 HxW, ``mask`` recorded class ids (or None),
    ``label`` simulator class ids (or None; filled from the bag or rendered later)."""

    stamp_ns: int
    thermal: np.ndarray
    mask: np.ndarray | None = None
    label: np.ndarray | None = None
    seq: int | None = None  # simulator frame index, when known


@dataclass
class Scan:
    bag: Path
    synthetic: bool
    start_ns: int
    duration_s: float
    topics: dict[str, dict]  # name -> {"type", "count"}
    thermal_topic: str
    thermal_stamp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    thermal_log: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    thermal_crc: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    mask_stamp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    mask_log: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    frames: list[EvalFrame] = field(default_factory=list)
    fusion_stamp: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fusion_log: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    fusion_masks: dict[int, np.ndarray] = field(default_factory=dict)  # stamp -> fused class ids (evenly spread)

    @property
    def has_masks(self) -> bool:
        return self.mask_stamp.size > 0

    @property
    def has_labels(self) -> bool:
        return LABEL_TOPIC in self.topics

    def mask_latency_ms(self) -> np.ndarray:
        """Recorder arrival of each mask minus its header stamp, the restamped trigger time of the
        thermal frame it segments (ms): trigger to mask at the recorder - camera transport, sync,
        queueing (latest-frame policy), preprocessing, inference and two DDS hops."""
        return (self.mask_log - self.mask_stamp) / 1e6


def scan_bag(path: str | Path, thermal_topic: str, max_pairs: int = 150) -> Scan:
    """Read ``path`` once (see module doc). Evaluation frames: every k-th recorded mask when the
    bag has masks, else every k-th labelled frame, else every k-th thermal frame."""
    from rgbt.image.codec import image_to_numpy

    path = Path(path)
    with open_bag(path) as reader:
        # CART's ROS 1 topic names (e.g. /flir_boson/image) are read under the stack's names
        topics: dict[str, dict[str, Any]] = {CART_RENAMES.get(name, name): {"type": info.msgtype, "count": info.count}
                  for name, info in reader.topics.items()}
        scan = Scan(path, bool(reader.synthetic), int(reader.start_ns), reader.duration_ns / 1e9, topics, thermal_topic)
        n_mask = topics.get(SEG_TOPIC, {}).get("count", 0)
        n_label = topics.get(LABEL_TOPIC, {}).get("count", 0)
        n_thermal = topics.get(thermal_topic, {}).get("count", 0)
        key = SEG_TOPIC if n_mask else LABEL_TOPIC if n_label else thermal_topic
        n_key = n_mask or n_label or n_thermal
        stride = max(1, math.ceil(n_key / max_pairs)) if max_pairs > 0 else 0
        wanted = [t for t in (thermal_topic, SEG_TOPIC, LABEL_TOPIC, FUSION_TOPIC) if t in topics]
        n_fused = topics.get(FUSION_TOPIC, {}).get("count", 0)
        fused_stride = max(1, math.ceil(n_fused / max_pairs)) if max_pairs > 0 else 0
        th_stamp: list[int] = []
        m_stamp: list[int] = []
        f_stamp: list[int] = []
        th_log: list[int] = []
        th_crc: list[int] = []
        m_log: list[int] = []
        f_log: list[int] = []
        recent: dict[int, np.ndarray] = {}  # stamp -> thermal frame (bounded)
        parts: dict[int, dict] = {}  # stamp -> parts of a selected evaluation frame
        selected: set[int] = set()
        n_seen = 0
        for rec in reader.messages(topics=wanted, renames=CART_RENAMES):
            msg = rec.msg
            stamp = int(msg.header.stamp.sec) * 1_000_000_000 + int(msg.header.stamp.nanosec)
            if rec.topic == thermal_topic:
                th_stamp.append(stamp)
                th_log.append(rec.t_ns)
                th_crc.append(zlib.crc32(msg.data))
                img = image_to_numpy(msg, rgb=True)
                recent[stamp] = img
                if len(recent) > 240:
                    recent.pop(next(iter(recent)))
            elif rec.topic == SEG_TOPIC:
                m_stamp.append(stamp)
                m_log.append(rec.t_ns)
            elif rec.topic == FUSION_TOPIC:
                if fused_stride and len(f_stamp) % fused_stride == 0:
                    scan.fusion_masks[stamp] = image_to_numpy(msg, rgb=True).copy()
                f_stamp.append(stamp)
                f_log.append(rec.t_ns)
                continue
            if rec.topic == key:
                if stride and n_seen % stride == 0:
                    selected.add(stamp)
                n_seen += 1
            if stamp in selected:
                p = parts.setdefault(stamp, {})
                if rec.topic == thermal_topic:
                    p["thermal"] = img.copy()
                elif rec.topic == SEG_TOPIC:
                    p["mask"] = image_to_numpy(msg, rgb=True).copy()
                else:
                    p["label"] = image_to_numpy(msg, rgb=True).copy()
                if "thermal" not in p and stamp in recent:
                    p["thermal"] = recent[stamp].copy()
    scan.thermal_stamp = np.array(th_stamp, np.int64)
    scan.thermal_log = np.array(th_log, np.int64)
    scan.thermal_crc = np.array(th_crc, np.int64)
    scan.mask_stamp = np.array(m_stamp, np.int64)
    scan.mask_log = np.array(m_log, np.int64)
    scan.fusion_stamp = np.array(f_stamp, np.int64)
    scan.fusion_log = np.array(f_log, np.int64)
    for stamp in sorted(parts):
        p = parts[stamp]
        if "thermal" in p and (key == thermal_topic or (key == SEG_TOPIC and "mask" in p)
                               or (key == LABEL_TOPIC and "label" in p)):
            scan.frames.append(EvalFrame(stamp, p["thermal"], p.get("mask"), p.get("label")))
    return scan
