"""Convert / clip / rename any readable bag into a rosbag2 MCAP bag directory or a ROS 1 ``.bag``.

To ROS 2 (default): ROS 1 messages are converted to ROS 2 CDR by rosbags' converter
(``std_msgs/Header.seq`` dropped, ``tf/tfMessage`` renamed ``tf2_msgs/TFMessage``; types missing from
ROS 2 Jazzy are carried over from the bag's own definitions). ROS 2 messages are copied byte for byte.

To ROS 1 (``ConvertOptions(to="ros1")``): ROS 2 CDR is converted to the ROS 1 wire format by the same
converter against rosbags' ROS 1 Noetic typestore (``Header.seq`` written as 0; definitions and MD5 sums
of standard types are Noetic's, other types are carried over from the source). ROS 1 messages are
copied byte for byte. rosbag2 ``custom_data`` (e.g. ``rgbt.synthetic``) has no place in a ROS 1 bag, so
it is written as one YAML ``std_msgs/String`` message on :data:`ROS1_METADATA_TOPIC`, which
:class:`rgbt.bag.reader.BagReader` reads back into ``metadata``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from rosbags.convert.converter import STATIC_MSGTYPE_RENAMES, generate_message_converter
from rosbags.rosbag1 import Writer as Writer1
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from rgbt.bag.reader import BagReader, open_bag
from rgbt.bag.renames import clip_window
from rgbt.bag.types import new_ros2_typestore
from rgbt.bag.writer import BagWriter
from rgbt.errors import BagError
from rgbt.topics import ROS1_METADATA_TOPIC

#: output compression per format (MCAP chunks: zstd; ROS 1 chunks: lz4 or bz2)
COMPRESSIONS = {"ros2": ("none", "zstd"), "ros1": ("none", "lz4", "bz2")}


@dataclass
class ConvertOptions:
    """What :func:`convert_bag` copies: ``renames`` (old -> new topic), ``topics`` (keep only these,
    original or new names; ``None`` = all), ``drop_topics``, clip ``start_s`` (offset from the first
    message) and ``duration_s`` (``-1`` = to the end), output format ``to`` (``"ros2"``: rosbag2 MCAP
    directory; ``"ros1"``: one ROS 1 ``.bag`` file), output ``compression`` (see :data:`COMPRESSIONS`) and
    splitting (ROS 2 only)."""

    renames: dict[str, str] = field(default_factory=dict)
    topics: list[str] | None = None
    drop_topics: list[str] = field(default_factory=list)
    start_s: float = 0.0
    duration_s: float = -1.0
    to: Literal["ros2", "ros1"] = "ros2"
    compression: Literal["none", "zstd", "lz4", "bz2"] = "none"
    split_size_bytes: int | None = None
    split_duration_ns: int | None = None


def ros2_msgtype(ros1_msgtype: str) -> str:
    """The ROS 2 name of a ROS 1 message type (``tf/msg/tfMessage`` -> ``tf2_msgs/msg/TFMessage``,
    rosbags' static renames); other names are unchanged."""
    return STATIC_MSGTYPE_RENAMES.get(ros1_msgtype, ros1_msgtype)


def _ros1_to_ros2(bag: BagReader, dst_store: Any, msgtype: str) -> Callable[[Any], Any]:
    """A raw ROS 1 -> ROS 2 CDR function for ``msgtype`` (registers missing types in ``dst_store``)."""
    dst_type = ros2_msgtype(msgtype)
    if dst_type not in dst_store.fielddefs:
        typs = get_types_from_msg(bag.typestore.generate_msgdef(msgtype, ros_version=2)[0], dst_type)
        typs = {k: v for k, v in typs.items() if k not in dst_store.fielddefs}
        dst_store.register(typs)
    return _converter(bag.typestore, dst_store, msgtype, dst_type, src_is2=False, dst_is2=True)


def _ros2_to_ros1(bag: BagReader, dst_store: Any, msgtype: str) -> Callable[[Any], Any]:
    """A raw ROS 2 CDR -> ROS 1 function for ``msgtype``; types Noetic lacks are registered in
    ``dst_store`` from the source definitions (their ``std_msgs/Header`` stays Noetic's)."""
    if msgtype not in dst_store.fielddefs:
        typs = get_types_from_msg(bag.typestore.generate_msgdef(msgtype, ros_version=1)[0], msgtype)
        dst_store.register({k: v for k, v in typs.items() if k not in dst_store.fielddefs})
    return _converter(bag.typestore, dst_store, msgtype, msgtype, src_is2=True, dst_is2=False)


def _converter(src_store: Any, dst_store: Any, src_type: str, dst_type: str, *, src_is2: bool,
               dst_is2: bool) -> Callable[[Any], Any]:
    # rosbags prints a note when a type needs field migration; keep stdout clean for --json.
    with contextlib.redirect_stdout(sys.stderr):
        return generate_message_converter(src_store, dst_store, src_type, dst_type, {}, src_is2=src_is2,
                                          dst_is2=dst_is2)


class _Ros1Out:
    """The ROS 1 side of :func:`convert_bag`: rosbags' rosbag1 ``Writer`` plus a Noetic typestore."""

    def __init__(self, bag: BagReader, dst: Path, compression: str, custom: dict[str, str]) -> None:
        self.bag, self.store = bag, get_typestore(Stores.ROS1_NOETIC)
        self.writer = Writer1(dst)
        if compression != "none":
            self.writer.set_compression(getattr(Writer1.CompressionFormat, compression.upper()))
        self.writer.open()
        self.conns: dict[str, Any] = {}
        self.convert: dict[str, Callable[[Any], Any]] = {}
        self.custom = custom

    def add_topic(self, topic: str, msgtype: str) -> None:
        if self.bag.kind == "ros1":
            msgdef, md5 = self.bag.typestore.generate_msgdef(msgtype)
            self.conns[topic] = self.writer.add_connection(topic, msgtype, msgdef=msgdef, md5sum=md5)
            self.convert.setdefault(msgtype, memoryview)
        else:
            if msgtype not in self.convert:
                self.convert[msgtype] = _ros2_to_ros1(self.bag, self.store, msgtype)
            self.conns[topic] = self.writer.add_connection(topic, msgtype, typestore=self.store)

    def write(self, topic: str, msgtype: str, t_ns: int, raw: Any) -> None:
        self.writer.write(self.conns[topic], t_ns, self.convert[msgtype](raw))

    def close(self, first_ns: int) -> None:
        if self.custom:
            msgtype = "std_msgs/msg/String"
            conn = self.writer.add_connection(ROS1_METADATA_TOPIC, msgtype, typestore=self.store, latching=1)
            msg = self.store.types[msgtype](data=yaml.safe_dump(self.custom, sort_keys=True))
            self.writer.write(conn, first_ns, self.store.serialize_ros1(msg, msgtype))
        self.writer.close()


def convert_bag(src: str | Path, dst: str | Path, options: ConvertOptions | None = None, *,
                progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Write ``src`` (ROS 1 or ROS 2) to ``dst``: a rosbag2 MCAP bag directory, or with
    ``options.to == "ros1"`` a ROS 1 ``.bag`` file; returns a summary dict.

    ``progress(done, total)`` is called every few thousand messages. Topics whose type has no
    definition are skipped and listed in the summary's ``skipped_topics``. Message log times are
    kept to the nanosecond in both directions.
    """
    opts = options or ConvertOptions()
    if opts.to not in COMPRESSIONS:
        raise BagError(f"output format {opts.to!r}: expected one of {sorted(COMPRESSIONS)}")
    if opts.compression not in COMPRESSIONS[opts.to]:
        raise BagError(f"compression {opts.compression!r} for a {opts.to} bag: expected one of "
                       f"{', '.join(COMPRESSIONS[opts.to])}")
    if opts.to == "ros1" and (opts.split_size_bytes or opts.split_duration_ns):
        raise BagError(f"{dst}: splitting is for ROS 2 output only (a ROS 1 bag is one file)")
    with open_bag(src) as bag:
        start_ns, end_ns = clip_window(bag.start_ns, bag.end_ns, opts.start_s, opts.duration_s)
        skipped = sorted(n for n, t in bag.topics.items() if not t.known)
        keep = [n for n, t in bag.topics.items() if t.known and n not in opts.drop_topics
                and n != ROS1_METADATA_TOPIC
                and (opts.topics is None or n in opts.topics or opts.renames.get(n, n) in opts.topics)]
        custom = dict(bag.metadata)
        custom.update({"rgbt.converted_from": Path(src).name, "rgbt.source_format": bag.kind,
                       "rgbt.clip": f"start_s={opts.start_s} duration_s={opts.duration_s}"})
        if bag.synthetic:
            custom["rgbt.synthetic"] = "true"
        counts: dict[str, int] = {}
        total = sum(bag.topics[n].count for n in keep)
        done = 0
        if opts.to == "ros1":
            out: Any = _Ros1Out(bag, Path(dst), opts.compression, custom)
        else:
            out = _Ros2Out(bag, Path(dst), opts, custom)
        try:
            for name in keep:
                new = opts.renames.get(name, name)
                out.add_topic(new, bag.topics[name].msgtype)
                counts.setdefault(new, 0)
            if keep:
                for rec in bag.messages(topics=keep, start_ns=start_ns, end_ns=end_ns, renames=opts.renames):
                    out.write(rec.topic, rec.msgtype, rec.t_ns, rec.raw)
                    counts[rec.topic] += 1
                    done += 1
                    if progress is not None and done % 2000 == 0:
                        progress(done, total)
        finally:
            out.close(max(start_ns, bag.start_ns))
        if progress is not None:
            progress(done, total)
        return {"src": str(src), "dst": str(dst), "source_format": bag.kind, "output_format": opts.to,
                "messages": done, "topics": counts, "start_ns": start_ns, "end_ns": end_ns,
                "skipped_topics": skipped, "options": asdict(opts)}


class _Ros2Out:
    """The ROS 2 side of :func:`convert_bag`: :class:`BagWriter` (MCAP) plus a Jazzy typestore."""

    def __init__(self, bag: BagReader, dst: Path, opts: ConvertOptions, custom: dict[str, str]) -> None:
        self.bag, self.store = bag, new_ros2_typestore()
        # MCAP chunks: zstd or none (convert_bag checked opts.compression against COMPRESSIONS["ros2"])
        compression: Literal["none", "zstd"] = "zstd" if opts.compression == "zstd" else "none"
        self.writer = BagWriter(dst, compression=compression, split_size_bytes=opts.split_size_bytes,
                                split_duration_ns=opts.split_duration_ns, custom_data=custom,
                                typestore=self.store)
        self.writer.__enter__()
        self.convert: dict[str, Callable[[Any], Any]] = {}

    def add_topic(self, topic: str, msgtype: str) -> None:
        bag = self.bag
        if bag.kind == "ros1":
            if msgtype not in self.convert:
                self.convert[msgtype] = _ros1_to_ros2(bag, self.store, msgtype)
            self.writer.add_topic(topic, ros2_msgtype(msgtype))
        else:
            self.convert.setdefault(msgtype, lambda raw: raw)
            self.writer.add_topic(topic, msgtype, msgdef=bag.typestore.generate_msgdef(msgtype, ros_version=2)[0],
                                  rihs01=bag.typestore.hash_rihs01(msgtype))

    def write(self, topic: str, msgtype: str, t_ns: int, raw: Any) -> None:
        self.writer.write(topic, t_ns, self.convert[msgtype](raw))

    def close(self, first_ns: int) -> None:  # noqa: ARG002 - same signature as _Ros1Out.close
        self.writer.__exit__(None, None, None)


def ensure_new(path: str | Path) -> None:
    """Raise :class:`BagError` if ``path`` exists and is not an empty directory."""
    p = Path(path)
    if p.exists() and not (p.is_dir() and not any(p.iterdir())):
        raise BagError(f"{p}: output exists already; not overwriting")
