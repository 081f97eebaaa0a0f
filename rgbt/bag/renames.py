"""CART topic renames and CART-style clipping (start offset + duration, ``-1`` = to the end).

The renames come from CART's own tooling (``extract_data/rosbag/tools/topic_renamer.py`` in
aerorobotics/caltech-aerial-rgbt-dataset), which mapped the topic names of their older bags to the
names of the released stack, plus the ``flir_boson_usb`` driver's default ``/flir_boson/image_raw``.
"""

from __future__ import annotations

import re
from pathlib import Path

from rgbt.errors import BagError

#: original topic -> CART stack topic
CART_RENAMES: dict[str, str] = {
    "/flir_boson/image": "/boson/thermal/image_raw",  # CART topic_renamer.py
    "/flir_boson/image_raw": "/boson/thermal/image_raw",  # flir_boson_usb driver default
    "/flir_cameras/image_raw": "/boson/thermal/image_raw",  # CART topic_renamer.py
    "/camera/image_raw": "/eo/color/image_raw",  # CART topic_renamer.py
    "/eo/colour/image_raw": "/eo/color/image_raw",  # British spelling of the colour camera topic
    "/eo/colour/image_raw/compressed": "/eo/color/image_raw/compressed",  # CART topic_renamer.py
}

#: rgbt stack topic -> the topic CART's released ROS 1 bags carry it on (the ``image0_topic`` /
#: ``image1_topic`` / ``imu_topic`` of CART's VINS-Fusion configs, ``vins_configs/*.yaml``: the ECCV
#: dataset sequences carry ``/eo/color/image_color``, ``/eo/mono/image_mono``, ``/imu/imu``). The
#: 16-bit thermal stream keeps ``/boson/thermal/image_raw`` in both.
CART_ROS1_NAMES: dict[str, str] = {
    "/eo/color/image_raw": "/eo/color/image_color",
    "/eo/mono/image_raw": "/eo/mono/image_mono",
}

#: topics CART's renamer deleted ("useless")
CART_DROP_TOPICS: frozenset[str] = frozenset({"/flir_cameras/cam_left/image"})

NS_PER_S = 1_000_000_000


def parse_renames(items: list[str] | None) -> dict[str, str]:
    """``["/old:=/new", ...]`` (ROS remap syntax; ``/old=/new`` also accepted) -> dict."""
    out: dict[str, str] = {}
    for item in items or []:
        sep = ":=" if ":=" in item else "="
        old, _, new = item.partition(sep)
        if not old.startswith("/") or not new.startswith("/"):
            raise BagError(f"rename {item!r}: expected /old_topic:=/new_topic")
        out[old] = new
    return out


def clip_window(bag_start_ns: int, bag_end_ns: int, start_s: float = 0.0,
                duration_s: float = -1.0) -> tuple[int, int]:
    """Absolute ``[start_ns, end_ns)`` for a clip like ``rosbag play -s START -u DURATION``.

    ``start_s`` is an offset from the bag's first message (s, >= 0); ``duration_s`` < 0 means to
    the end (CART's ``bag_durr = -1``). ``bag_end_ns`` is the last message's log time.
    """
    if start_s < 0:
        raise BagError(f"clip start {start_s} s: expected >= 0 (offset from the first message)")
    start_ns = bag_start_ns + round(start_s * NS_PER_S)
    end_ns = bag_end_ns + 1 if duration_s < 0 else start_ns + round(duration_s * NS_PER_S)
    return start_ns, end_ns


_ROW = re.compile(r"^\|\s*([^|]+?)\s*\|\s*(-?[\d.]+)\s*\|\s*(-?[\d.]+)\s*\|\s*$")


def cart_sequences(path: str | Path) -> dict[str, tuple[float, float]]:
    """Parse CART's ``SEQUENCES.md`` table: bag name -> (bag_start s, bag_durr s; -1 = to end)."""
    out: dict[str, tuple[float, float]] = {}
    for line in Path(path).read_text().splitlines():
        if m := _ROW.match(line.strip()):
            out[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    if not out:
        raise BagError(f"{path}: no '| bag | start | duration |' rows found")
    return out
