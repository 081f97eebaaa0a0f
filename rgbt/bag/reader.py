"""Read ROS 1 ``.bag`` files and ROS 2 bags (sqlite3 / MCAP directories, or a bare ``.mcap``).

:func:`open_bag` returns a :class:`BagReader` whose :meth:`BagReader.messages` yields
:class:`Record` s in log-time order. Message types come from the bag's own definitions (ROS 1
connection headers, MCAP schemas, rosbag2 sqlite3 ``message_definitions``), falling back to
rosbags' ROS 2 Jazzy store plus :mod:`rgbt.bag.types` (or ROS 1 Noetic for ROS 1 bags). A type with
no usable definition is listed as unknown (``TopicInfo.known == False``) and skipped unless its
topic is asked for by name; it never stops the bag from being read.

Every failure is a :class:`rgbt.errors.BagError` naming the file and, where known, the offset.
"""

from __future__ import annotations

import heapq
import io
import os
import re
import struct
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from rosbags.interfaces import Connection, MessageDefinitionFormat, Nodetype
from rosbags.rosbag1 import Reader as Reader1
from rosbags.rosbag2 import Reader as Reader2
from rosbags.rosbag2.reader import DirectoryReader
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.writer import zstd
from rosbags.typesys import Stores, get_types_from_idl, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from rgbt.bag.mcapscan import MAGIC, scan_mcap
from rgbt.bag.ros1scan import header_fields
from rgbt.bag.types import ros1_typestore, ros2_typestore
from rgbt.errors import BagError
from rgbt.topics import ROS1_METADATA_TOPIC

_OFFSET_RE = re.compile(r"offset (\d+)")
#: ROS 1 bags have no rosbag2 ``custom_data``; rgbt writes it as one YAML ``std_msgs/String`` here
#: (:func:`rgbt.bag.convert.convert_bag` with ``to="ros1"``) and reads it back into ``metadata``.
# Typestores built from a bag's definitions, keyed by those definitions (read-only once built).
_STORES: OrderedDict[tuple, tuple[Typestore, frozenset[str]]] = OrderedDict()


@dataclass(frozen=True)
class TopicInfo:
    """One topic of a bag: message type, message count, and whether it can be deserialized."""

    msgtype: str
    count: int
    known: bool = True
    connections: int = 1


class Record:
    """One message: ``topic`` (after renames), ``msgtype``, ``t_ns`` (log time, int ns), ``raw``
    (serialized bytes as stored: CDR for ROS 2 bags, ROS 1 wire format for ROS 1 bags) and ``msg``
    (the deserialized rosbags message, built on first access; images are zero-copy numpy views)."""

    __slots__ = ("topic", "msgtype", "t_ns", "raw", "source_topic", "_reader", "_msg")

    def __init__(self, topic: str, msgtype: str, t_ns: int, raw: bytes | memoryview, source_topic: str,
                 reader: BagReader) -> None:
        self.topic, self.msgtype, self.t_ns, self.raw = topic, msgtype, t_ns, raw
        self.source_topic = source_topic
        self._reader = reader
        self._msg: Any = None

    @property
    def msg(self) -> Any:
        if self._msg is None:
            self._msg = self._reader.deserialize(self.raw, self.msgtype, self.source_topic)
        return self._msg

    def __repr__(self) -> str:
        return f"Record(topic={self.topic!r}, msgtype={self.msgtype!r}, t_ns={self.t_ns}, {len(self.raw)} B)"


def open_bag(path: str | Path) -> BagReader:
    """Open a bag for reading (ROS 1 ``.bag``; ROS 2 directory; ``.mcap`` or ``.db3`` file)."""
    reader = BagReader(path)
    reader.open()
    return reader


class BagReader:
    """A bag opened for reading. Attributes after :meth:`open`: ``kind`` (``"ros1"``/``"ros2"``),
    ``storage`` (``"bag"``, ``"mcap"``, ``"sqlite3"``), ``topics``, ``start_ns``, ``end_ns``
    (last message log time), ``duration_ns``, ``message_count``, ``metadata`` (rosbag2
    ``custom_data``; ``{}`` for ROS 1), ``unknown_types``, ``unfinished_files`` (MCAP files in
    the directory that metadata.yaml does not list: an interrupted recording)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.kind = ""
        self.storage = ""
        self.topics: dict[str, TopicInfo] = {}
        self.start_ns = 0
        self.end_ns = 0
        self.message_count = 0
        self.metadata: dict[str, str] = {}
        self.unknown_types: list[str] = []
        self.unfinished_files: list[Path] = []
        self.typestore: Typestore = get_typestore(Stores.EMPTY)
        self._reader: Any = None
        self._connections: list[Connection] = []
        self._known: set[str] = set()

    @property
    def duration_ns(self) -> int:
        """Time from the first to the last message (log time, ns)."""
        return max(0, self.end_ns - self.start_ns) if self.message_count else 0

    @property
    def synthetic(self) -> bool:
        """True when the bag says it was generated (``custom_data`` ``rgbt.synthetic: "true"``)."""
        return str(self.metadata.get("rgbt.synthetic", "")).lower() == "true"

    # -- open / close ----------------------------------------------------------------------------
    def open(self) -> None:
        path = self.path
        if not path.exists():
            raise BagError(f"{path}: no such file or directory (expected a ROS 1 .bag, a ROS 2 bag directory, "
                           "or a .mcap / .db3 file)")
        if path.is_dir():
            self._open_ros2_dir()
        elif path.suffix == ".bag" or path.name.endswith(".bag.active"):
            self._open_ros1()
        elif path.suffix in (".mcap", ".db3"):
            self._open_ros2(path)
        else:
            raise BagError(f"{path}: not a bag: expected a ROS 1 .bag file, a ROS 2 bag directory "
                           "(with metadata.yaml), or a .mcap / .db3 file")
        try:
            self._build_typestore()
            self._summarize()
            if self.kind == "ros1" and ROS1_METADATA_TOPIC in self.topics:
                self._read_ros1_metadata()
        except Exception as exc:
            self.close()
            if isinstance(exc, BagError):
                raise
            raise BagError(f"{path}: cannot summarize bag: {exc}") from exc

    def _read_ros1_metadata(self) -> None:
        for rec in self.messages(topics=[ROS1_METADATA_TOPIC]):
            try:
                data = yaml.safe_load(rec.msg.data)
            except yaml.YAMLError as exc:
                raise BagError(
                    f"{self.path}: topic {ROS1_METADATA_TOPIC}: expected YAML key: value text ({exc})"
                ) from exc
            if isinstance(data, dict):
                self.metadata = {str(k): str(v) for k, v in data.items()}
            break

    def close(self) -> None:
        if self._reader is not None:
            reader, self._reader = self._reader, None
            try:
                reader.close()
            except Exception:  # noqa: BLE001 - closing a damaged reader must not mask the real error
                pass

    def __enter__(self) -> BagReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"BagReader({str(self.path)!r}, {self.kind}/{self.storage}, {self.message_count} messages, "
                f"{len(self.topics)} topics)")

    def _open_ros1(self) -> None:
        self.kind, self.storage = "ros1", "bag"
        reader = Reader1(self.path)
        reader.path = _BoundedPath(self.path)  # type: ignore[assignment]
        try:
            reader.open()
        except Exception as exc:  # noqa: BLE001 - rosbags raises several types for damaged files
            try:
                diagnosis = _ros1_diagnosis(self.path)
            except Exception:  # noqa: BLE001 - the diagnosis is a bonus; rosbags' own message stays
                diagnosis = ""
            raise BagError(f"{self.path}: cannot read ROS 1 bag: {diagnosis or exc}") from exc
        self._reader = reader
        self._connections = list(reader.connections)

    def _open_ros2_dir(self) -> None:
        meta = self.path / "metadata.yaml"
        mcaps = sorted(self.path.glob("*.mcap"))
        if not meta.exists():
            if mcaps:
                raise BagError(f"{self.path}: no metadata.yaml but {len(mcaps)} .mcap file(s): an interrupted "
                               f"recording? run `rgbt bag recover {self.path}`")
            raise BagError(f"{self.path}: not a ROS 2 bag directory (no metadata.yaml)")
        self._open_ros2(self.path)
        listed = {Path(str(s.path)).name for s in getattr(self._reader.storage, "storages", [])}
        self.unfinished_files = [p for p in mcaps if p.name not in listed]

    def _open_ros2(self, path: Path) -> None:
        Reader2 = _bounded_ros2_reader()

        self.kind = "ros2"
        try:
            reader = Reader2(path)
            reader.open()
        except Exception as exc:  # noqa: BLE001
            try:
                diagnosis = self._ros2_diagnosis(path, exc)
            except Exception:  # noqa: BLE001 - the diagnosis is a bonus; rosbags' own message stays
                diagnosis = str(exc)
            raise BagError(f"{path}: cannot read ROS 2 bag: {diagnosis}") from exc
        self._reader = reader
        self._connections = list(reader.connections)
        if path.is_dir():
            self.storage = _storage_id(path)
            custom = reader.storage.metadata.custom or {}
            self.metadata = {str(k): str(v) for k, v in custom.items()}
        else:
            self.storage = "mcap" if path.suffix == ".mcap" else "sqlite3"
            try:
                self.metadata = _mcap_custom_data(path) if path.suffix == ".mcap" else {}
            except Exception:  # noqa: BLE001 - a damaged metadata record only loses custom_data
                self.metadata = {}

    def _ros2_diagnosis(self, path: Path, exc: Exception) -> str:
        files = sorted(path.glob("*.mcap")) if path.is_dir() else [path] if path.suffix == ".mcap" else []
        for file in files:
            scan = scan_mcap(file)
            if not scan.finished:
                hint = f"; run `rgbt bag recover {path}`" if scan.magic_ok and path.is_dir() else ""
                return (f"{file.name}: {scan.problem or 'unfinished MCAP file (no footer)'}; last complete record "
                        f"ends at offset {scan.complete_end} of {scan.size} bytes{hint} ({exc})")
        dbs = sorted(path.glob("*.db3")) if path.is_dir() else [path] if path.suffix == ".db3" else []
        for db in dbs:
            size = db.stat().st_size
            if size % 1024 or size < 1024:
                return f"{db.name}: sqlite3 file of {size} bytes is not a whole number of pages (truncated?) ({exc})"
        return str(exc)

    # -- types -----------------------------------------------------------------------------------
    def _build_typestore(self) -> None:
        fallback = ros1_typestore() if self.kind == "ros1" else ros2_typestore()
        by_type: dict[str, list[Connection]] = {}
        for conn in self._connections:
            by_type.setdefault(conn.msgtype, []).append(conn)
        # The same definitions give the same store: reuse it (and rosbags' generated (de)serializers,
        # which cost ~0.1 s per type to build) across the files of a split bag and repeated opens.
        key = (self.kind, tuple(sorted((t, tuple(sorted({(str(c.msgdef.format), c.msgdef.data, c.digest or "")
                                                          for c in conns})))
                                       for t, conns in by_type.items())))
        cached = _STORES.get(key)
        if cached is not None:
            _STORES.move_to_end(key)
            self.typestore, known = cached
            self._known = set(known)
            self.unknown_types = sorted(set(by_type) - self._known)
            return
        store = get_typestore(Stores.EMPTY)
        for msgtype, conns in by_type.items():
            # ROS 1 definitions and hashed ROS 2 definitions (Iron+) are authoritative; older ROS 2
            # bags carry no hash and rosbags may report a partial definition for them, so the
            # typestore goes first there.
            from_bag = next((t for c in conns if (t := _types_from_msgdef(c, msgtype))), None)
            from_store = _closure(fallback, msgtype) if msgtype in fallback.fielddefs else None
            hashed = self.kind == "ros1" or any(c.digest for c in conns)
            order = [from_bag, from_store] if hashed else [from_store, from_bag]
            candidates = [t for t in order if t]
            for typs in candidates:
                try:
                    store.register(typs)
                    self._known.add(msgtype)
                    break
                except Exception:  # noqa: BLE001 - conflicting or broken definitions: try the next
                    continue
        self.typestore = store
        self.unknown_types = sorted(set(by_type) - self._known)
        _STORES[key] = (store, frozenset(self._known))
        while len(_STORES) > 16:
            _STORES.popitem(last=False)

    def deserialize(self, raw: bytes | memoryview, msgtype: str, topic: str = "?") -> Any:
        """Deserialize ``raw`` bytes of ``msgtype`` stored in this bag (CDR or ROS 1 wire format)."""
        if msgtype not in self._known:
            raise BagError(f"{self.path}: topic {topic}: message type {msgtype!r} has no definition in the bag "
                           "or in rgbt's typestore; cannot deserialize")
        try:
            if self.kind == "ros1":
                return self.typestore.deserialize_ros1(raw, msgtype)
            return self.typestore.deserialize_cdr(raw, msgtype)
        except Exception as exc:  # noqa: BLE001
            raise BagError(f"{self.path}: topic {topic}: cannot deserialize a {msgtype} message of {len(raw)} B: "
                           f"{exc}") from exc

    # -- summary ---------------------------------------------------------------------------------
    def _summarize(self) -> None:
        topics: dict[str, list[Connection]] = {}
        for conn in self._connections:
            topics.setdefault(conn.topic, []).append(conn)
        self.topics = {}
        for name, conns in sorted(topics.items()):
            types = sorted({c.msgtype for c in conns})
            self.topics[name] = TopicInfo(types[0] if len(types) == 1 else "|".join(types),
                                          sum(c.msgcount for c in conns),
                                          all(t in self._known for t in types), len(conns))
        self.message_count = int(self._reader.message_count)
        if self.message_count:
            self.start_ns = int(self._reader.start_time)
            self.end_ns = int(self._reader.end_time) - 1  # rosbags: end_time is one past the last
        else:
            self.start_ns = self.end_ns = 0

    # -- messages --------------------------------------------------------------------------------
    def messages(self, topics: Iterable[str] | None = None, start_ns: int | None = None,
                 end_ns: int | None = None, renames: Mapping[str, str] | None = None,
                 include_unknown: bool = False) -> Iterator[Record]:
        """Yield messages in log-time order.

        ``topics``: names to keep (original or renamed names; ``None`` = all). ``start_ns`` /
        ``end_ns``: log-time window, start inclusive, end exclusive (absolute int ns).
        ``renames``: original -> new topic name (e.g. :data:`rgbt.bag.renames.CART_RENAMES`).
        Topics whose type is unknown are skipped unless named in ``topics`` or
        ``include_unknown`` is set (their ``Record.msg`` then raises :class:`BagError`).
        """
        if self._reader is None:
            raise BagError(f"{self.path}: bag is not open")
        renames = dict(renames or {})
        wanted = set(topics) if topics is not None else None
        conns = []
        for conn in self._connections:
            new = renames.get(conn.topic, conn.topic)
            if wanted is not None and conn.topic not in wanted and new not in wanted:
                continue
            if conn.msgtype not in self._known and wanted is None and not include_unknown:
                continue
            conns.append(conn)
        if not conns:
            return
        last_t = None
        try:
            for conn, t_ns, raw in self._raw_messages(conns, start_ns, end_ns):
                last_t = t_ns
                yield Record(renames.get(conn.topic, conn.topic), conn.msgtype, t_ns, raw, conn.topic, self)
        except Exception as exc:  # noqa: BLE001 - damaged data found while iterating
            where = f"after log time {last_t} ns" if last_t is not None else "before the first message"
            offset = self._offset_hint(exc, last_t)
            raise BagError(f"{self.path}: cannot read messages {where}{offset}: {exc}") from exc

    def _raw_messages(self, conns: list[Connection], start: int | None,
                      stop: int | None) -> Iterator[tuple[Connection, int, bytes]]:
        """(connection, log time, raw) in time order.

        For ROS 2 directories the storages are read directly and matched on (topic, type):
        rosbags 0.11.9 also compares QoS, which differs between metadata.yaml v4 and the storage
        for real ``ros2 bag record`` output, and then yields nothing. Files are merged by time.
        """
        directory = getattr(self._reader, "storage", None)
        storages = getattr(directory, "storages", None)
        if self.kind != "ros2" or directory is None or storages is None:
            yield from self._reader.messages(connections=conns, start=start, stop=stop)
            return
        wanted = {(c.topic, c.msgtype): c for c in conns}
        sources = []
        for storage in storages:
            sconns = [x for x in storage.connections if (x.topic, x.msgtype) in wanted]
            if sconns:
                sources.append(_named_source(storage, sconns, wanted, start, stop))
        merged: Iterator[tuple[Any, int, bytes]] = (m for m in heapq.merge(*sources, key=lambda m: m[1])
                                                    if m[0] is not None)
        if directory.metadata.compression_mode == "message":
            merged = ((c, t, zstd.decompress(d)) for c, t, d in merged)
        yield from merged

    def _offset_hint(self, exc: Exception, last_t: int | None) -> str:
        try:
            return self._find_offset(exc, last_t)
        except Exception:  # noqa: BLE001 - the hint is a bonus on an error path already
            return ""

    def _find_offset(self, exc: Exception, last_t: int | None) -> str:
        if m := _OFFSET_RE.search(str(exc)):
            return f" (offset {m.group(1)})"
        # ROS 1: find the damaged chunk by decompressing the candidates (only on this error path)
        infos = getattr(self._reader, "chunk_infos", None)
        headers = getattr(self._reader, "chunks", None)
        if infos and headers:
            size = self.path.stat().st_size
            candidates = [c for c in infos if last_t is None or c.end_time >= last_t]
            with self.path.open("rb") as bio:
                for info in candidates:
                    head = headers.get(info.pos)
                    if head is None:
                        continue
                    try:
                        if head.datapos + head.datasize > size:
                            raise ValueError("runs past the end of the file")
                        bio.seek(head.datapos)
                        data = bio.read(head.datasize)
                        if len(data) < head.datasize:
                            raise ValueError("short")
                        head.decompressor(data)
                    except Exception:  # noqa: BLE001 - this is the damaged chunk
                        return f" (damaged chunk record at offset {info.pos}, data at {head.datapos})"
        return ""


class _BoundedReader(io.BufferedReader):
    """A file whose ``read(n)`` never asks for more than the bytes left: rosbags reads record
    lengths from the file and a damaged one (4 GiB) would otherwise allocate that much first."""

    def __init__(self, path: Path) -> None:
        super().__init__(io.FileIO(path, "rb"))
        self._size = os.fstat(self.fileno()).st_size

    def read(self, size: int | None = -1) -> bytes:
        if size is not None and size > 0:
            size = min(size, max(0, self._size - self.tell()))
        return super().read(size)


class _BoundedPath:
    """What rosbags' ROS 1 reader needs of its path (``open``, ``exists``, ``str``), opening a
    :class:`_BoundedReader`."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def open(self, mode: str = "rb") -> _BoundedReader:  # noqa: ARG002 - the reader only reads
        return _BoundedReader(self._path)

    def exists(self) -> bool:
        return self._path.exists()

    def __fspath__(self) -> str:
        return str(self._path)

    def __str__(self) -> str:
        return str(self._path)


@lru_cache(maxsize=1)
def _bounded_ros2_reader() -> type:
    """rosbags' ROS 2 reader whose MCAP files are opened as :class:`_BoundedReader` (a damaged record
    length must not allocate gigabytes before the read fails)."""
    class BoundedMcapReader(McapReader):
        def open(self) -> None:
            path = self.path
            # rosbags hands its storage a pathlib.Path, typed as its own RPath protocol
            self.path = _BoundedPath(Path(path))  # type: ignore[arg-type, assignment]
            try:
                super().open()
            finally:
                self.path = path

    class BoundedDirectoryReader(DirectoryReader):
        STORAGE_PLUGINS = {**DirectoryReader.STORAGE_PLUGINS, "mcap": BoundedMcapReader}

    class BoundedReader(Reader2):
        STORAGE_PLUGINS = {**Reader2.STORAGE_PLUGINS, "dir": BoundedDirectoryReader, ".mcap": BoundedMcapReader}

    return BoundedReader


def _named_source(storage: Any, sconns: list[Connection], wanted: dict[tuple[str, str], Connection],
                  start: int | None, stop: int | None) -> Iterator[tuple[Connection | None, int, bytes]]:
    """Messages of one storage file; a read error names that file.

    Starts with a ``(None, first log time, b"")`` placeholder so that merging files by time reads a
    file only when its turn comes (split files follow each other in time).
    """
    first = int(getattr(getattr(storage, "metadata", None), "start_time", 0) or 0)
    yield None, first, b""
    try:
        for x, t, d in storage.messages(sconns, start, stop):
            yield wanted[(x.topic, x.msgtype)], t, d
    except Exception as exc:  # noqa: BLE001 - damaged data in this file
        name = Path(str(getattr(storage, "path", "?"))).name
        raise BagError(f"{name}: {exc}") from exc


def _closure(store: Typestore, msgtype: str) -> dict[str, Any]:
    """``msgtype`` and every type it embeds, as field definitions copied from ``store``."""
    out: dict[str, Any] = {}
    todo = [msgtype]
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out[name] = store.fielddefs[name]
        for _, desc in out[name][1]:
            node, arg = desc
            if node in (Nodetype.ARRAY, Nodetype.SEQUENCE):
                node, arg = arg[0]
            if node == Nodetype.NAME:
                todo.append(arg)
    return out


def _types_from_msgdef(conn: Connection, msgtype: str) -> dict[str, Any]:
    """Types from a connection's embedded definition, or ``{}`` when absent or unparsable."""
    return dict(_parse_msgdef(conn.msgdef.format, conn.msgdef.data, msgtype))


@lru_cache(maxsize=256)
def _parse_msgdef(fmt: MessageDefinitionFormat, data: str, msgtype: str) -> tuple[tuple[str, Any], ...]:
    """Parsed definition (cached: every file of a split bag, and every bag of a session, repeats them)."""
    try:
        if fmt == MessageDefinitionFormat.MSG and data.strip():
            return tuple(get_types_from_msg(data, msgtype).items())
        if fmt == MessageDefinitionFormat.IDL and data.strip():
            sep = "=" * 80 + "\n"
            typs: dict[str, Any] = {}
            parts = data.split(sep)[1:] if data.startswith(f"{sep}IDL: ") else [f"IDL: x\n{data}"]
            for part in parts:
                typs.update(get_types_from_idl(part.split("\n", 1)[1]))
            return tuple(typs.items()) if msgtype in typs else ()
    except Exception:  # noqa: BLE001 - a broken definition makes the type unknown, not the bag unreadable
        return ()
    return ()


def _storage_id(path: Path) -> str:
    try:
        meta = yaml.safe_load((path / "metadata.yaml").read_text())
        return str(meta["rosbag2_bagfile_information"]["storage_identifier"])
    except Exception:  # noqa: BLE001
        return ""


def _mcap_custom_data(path: Path) -> dict[str, str]:
    """Find the ``rosbag2`` metadata record (opcode 0x0C) and read its custom_data."""
    with path.open("rb") as bio:
        if bio.read(8) != MAGIC:
            return {}
        size = path.stat().st_size
        pos = 8
        while pos + 9 <= size:
            bio.seek(pos)
            op, length = struct.unpack("<BQ", bio.read(9))
            if pos + 9 + length > size:  # checked before reading: a damaged length must not allocate
                break
            if op == 0x0C:
                body = memoryview(bio.read(length))
                (n,) = struct.unpack_from("<I", body, 0)
                name = bytes(body[4:4 + n]).decode()
                off = 8 + n
                entries: dict[str, str] = {}
                while off < len(body):
                    (k,) = struct.unpack_from("<I", body, off)
                    key = bytes(body[off + 4:off + 4 + k]).decode()
                    off += 4 + k
                    (v,) = struct.unpack_from("<I", body, off)
                    entries[key] = bytes(body[off + 4:off + 4 + v]).decode()
                    off += 4 + v
                if name == "rosbag2" and "serialized_metadata" in entries:
                    try:
                        meta: Any = yaml.safe_load(entries["serialized_metadata"]) or {}
                    except Exception:  # noqa: BLE001
                        return {}
                    meta = meta.get("rosbag2_bagfile_information", meta)
                    return {str(k): str(v) for k, v in (meta.get("custom_data") or {}).items()}
            if op == 0x02:
                break
            pos += 9 + length
    return {}


def _ros1_diagnosis(path: Path) -> str:
    """Explain why a ROS 1 bag cannot be opened, with offsets, or ``""`` if nothing specific."""
    size = path.stat().st_size
    with path.open("rb") as bio:
        magic = bio.read(13)
        if magic != b"#ROSBAG V2.0\n":
            return f"not a ROS 1 bag v2.0 (file starts with {magic[:13]!r}, {size} bytes)"
        raw = bio.read(4)
        if len(raw) < 4:
            return f"file truncated at offset {size} inside the bag header record"
        (hlen,) = struct.unpack("<I", raw)
        header = bio.read(hlen) if 17 + hlen <= size else b""
        if len(header) < hlen:
            return f"file truncated at offset {size} inside the bag header record (needs {13 + 4 + hlen} bytes)"
        fields = header_fields(header)
        index_pos = struct.unpack("<Q", fields["index_pos"])[0] if len(fields.get("index_pos", b"")) == 8 else None
        if index_pos is None:
            return "bag header record has no index_pos field"
        if index_pos == 0:
            return (f"bag is not indexed (index_pos = 0: the recording was interrupted); salvage it with "
                    f"`rgbt bag reindex {path} OUT.bag`")
        if index_pos >= size:
            return (f"file truncated: the bag header says the index starts at offset {index_pos} but the file "
                    f"ends at offset {size}; salvage the whole chunks with `rgbt bag reindex {path} OUT.bag`")
    return ""
