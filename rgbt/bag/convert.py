"""Convert / clip / rename any readable bag into a rosbag2 MCAP bag directory.

ROS 1 messages are converted to ROS 2 CDR by rosbags' converter (``std_msgs/Header.seq`` dropped,
``tf/tfMessage`` renamed ``tf2_msgs/TFMessage``; types missing from ROS 2 Jazzy are carried over
from the bag's own definitions). ROS 2 messages
are copied byte for byte.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from rgbt.bag.reader import BagReader, open_bag
from rgbt.bag.renames import clip_window
from rgbt.bag.writer import BagWriter
from rgbt.errors import BagError


@dataclass
class ConvertOptions:
    """What :func:`convert_bag` copies: ``renames`` (old -> new topic), ``topics`` (keep only these,
    original or new names; ``None`` = all), ``drop_topics``, clip ``start_s`` (offset from the first
    message) and ``duration_s`` (``-1`` = to the end), output ``compression`` and splitting."""

    renames: dict[str, str] = field(default_factory=dict)
    topics: list[str] | None = None
    drop_topics: list[str] = field(default_factory=list)
    start_s: float = 0.0
    duration_s: float = -1.0
    compression: Literal["none", "zstd"] = "none"
    split_size_bytes: int | None = None
    split_duration_ns: int | None = None


def ros2_msgtype(ros1_msgtype: str) -> str:
    """The ROS 2 name of a ROS 1 message type (``tf/msg/tfMessage`` -> ``tf2_msgs/msg/TFMessage``,
    rosbags' static renames); other names are unchanged."""
    from rosbags.convert.converter import STATIC_MSGTYPE_RENAMES

    return STATIC_MSGTYPE_RENAMES.get(ros1_msgtype, ros1_msgtype)


def _ros1_converter(bag: BagReader, dst_store: Any, msgtype: str) -> Callable[[Any], Any]:
    """A raw ROS 1 -> ROS 2 CDR function for ``msgtype`` (registers missing types in ``dst_store``)."""
    from rosbags.convert.converter import generate_message_converter
    from rosbags.typesys import get_types_from_msg

    dst_type = ros2_msgtype(msgtype)
    if dst_type not in dst_store.fielddefs:
        typs = get_types_from_msg(bag.typestore.generate_msgdef(msgtype, ros_version=2)[0], dst_type)
        typs = {k: v for k, v in typs.items() if k not in dst_store.fielddefs}
        dst_store.register(typs)
    # rosbags prints a note when a type needs field migration; keep stdout clean for --json.
    with contextlib.redirect_stdout(sys.stderr):
        return generate_message_converter(bag.typestore, dst_store, msgtype, dst_type, {}, src_is2=False,
                                          dst_is2=True)


def convert_bag(src: str | Path, dst: str | Path, options: ConvertOptions | None = None, *,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write ``src`` (ROS 1 or ROS 2) to the MCAP bag directory ``dst``; returns a summary dict.

    ``progress(done, total)`` is called every few thousand messages. Topics whose type has no
    definition are skipped and listed in the summary's ``skipped_topics``.
    """
    from rgbt.bag.types import new_ros2_typestore

    opts = options or ConvertOptions()
    with open_bag(src) as bag:
        start_ns, end_ns = clip_window(bag.start_ns, bag.end_ns, opts.start_s, opts.duration_s)
        skipped = sorted(n for n, t in bag.topics.items() if not t.known)
        keep = [n for n, t in bag.topics.items() if t.known and n not in opts.drop_topics
                and (opts.topics is None or n in opts.topics or opts.renames.get(n, n) in opts.topics)]
        custom = dict(bag.metadata)
        custom.update({"rgbt.converted_from": Path(src).name, "rgbt.source_format": bag.kind,
                       "rgbt.clip": f"start_s={opts.start_s} duration_s={opts.duration_s}"})
        if bag.synthetic:
            custom["rgbt.synthetic"] = "true"
        dst_store = new_ros2_typestore()
        counts: dict[str, int] = {}
        converters: dict[str, Callable[[Any], Any]] = {}
        total = sum(bag.topics[n].count for n in keep)
        done = 0
        with BagWriter(dst, compression=opts.compression, split_size_bytes=opts.split_size_bytes,
                       split_duration_ns=opts.split_duration_ns, custom_data=custom,
                       typestore=dst_store) as writer:
            for name in keep:
                msgtype = bag.topics[name].msgtype
                new = opts.renames.get(name, name)
                if bag.kind == "ros1":
                    if msgtype not in converters:
                        converters[msgtype] = _ros1_converter(bag, dst_store, msgtype)
                    writer.add_topic(new, ros2_msgtype(msgtype))
                else:
                    writer.add_topic(new, msgtype, msgdef=bag.typestore.generate_msgdef(msgtype, ros_version=2)[0],
                                     rihs01=bag.typestore.hash_rihs01(msgtype))
                counts.setdefault(new, 0)
            if keep:
                for rec in bag.messages(topics=keep, start_ns=start_ns, end_ns=end_ns, renames=opts.renames):
                    raw = converters[rec.msgtype](rec.raw) if bag.kind == "ros1" else rec.raw
                    writer.write(rec.topic, rec.t_ns, raw)
                    counts[rec.topic] += 1
                    done += 1
                    if progress is not None and done % 2000 == 0:
                        progress(done, total)
        if progress is not None:
            progress(done, total)
        return {"src": str(src), "dst": str(dst), "source_format": bag.kind, "messages": done,
                "topics": counts, "start_ns": start_ns, "end_ns": end_ns, "skipped_topics": skipped,
                "options": asdict(opts)}


def ensure_new(path: str | Path) -> None:
    """Raise :class:`BagError` if ``path`` exists and is not an empty directory."""
    p = Path(path)
    if p.exists() and not (p.is_dir() and not any(p.iterdir())):
        raise BagError(f"{p}: output exists already; not overwriting")
