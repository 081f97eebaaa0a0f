"""Salvage ROS 1 bags that have no usable index: ``rosbag reindex`` without ROS.

A ROS 1 recording that was never closed (``NAME.bag.active``: the bag header says
``index_pos = 0``) or a bag cut short (a partial download: the index at the end is gone) still
holds whole chunks of messages. :func:`reindex_ros1` reads the records in file order, keeps every
complete chunk, and writes them into a new, indexed ROS 1 bag through rosbags' ROS 1 writer, which
:func:`rgbt.bag.open_bag` (and ``rgbt bag convert``) can then read.

Record layout (ROS bag format 2.0): ``header_len u32, header (fields: len u32 + name=value),
data_len u32, data``; ``op`` 0x02 message data, 0x03 bag header, 0x04 index data, 0x05 chunk,
0x06 chunk info, 0x07 connection.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from rosbags.rosbag1 import Writer as Writer1
from rosbags.rosbag1.reader import decompressors

from rgbt.errors import BagError

MAGIC = b"#ROSBAG V2.0\n"
OP_MSG, OP_BAG_HEADER, OP_INDEX, OP_CHUNK, OP_CHUNK_INFO, OP_CONNECTION = 0x02, 0x03, 0x04, 0x05, 0x06, 0x07


@dataclass
class Ros1Connection:
    id: int
    topic: str
    msgtype: str  # normalized: pkg/msg/Type
    md5sum: str
    msgdef: str
    callerid: str | None
    latching: int | None


@dataclass
class Ros1Scan:
    """Where the scan stopped: ``complete_end`` is the offset after the last whole record."""

    size: int
    complete_end: int = len(MAGIC)
    chunks: int = 0
    problem: str = ""
    connections: dict[int, Ros1Connection] = field(default_factory=dict)


def header_fields(raw: bytes) -> dict[str, bytes]:
    """The ``name=value`` fields of a ROS 1 record header (each prefixed by its uint32 LE length)."""
    out: dict[str, bytes] = {}
    off = 0
    while off + 4 <= len(raw):
        (n,) = struct.unpack_from("<I", raw, off)
        name, _, value = raw[off + 4:off + 4 + n].partition(b"=")
        out[name.decode(errors="replace")] = value
        off += 4 + n
    return out


def _records(bio: BinaryIO | memoryview, size: int, start: int) -> Iterator[tuple[int, dict[str, bytes], bytes, int]]:
    """Yield ``(offset, header fields, data, end)`` of whole records; stop at the first partial one."""
    pos = start
    while pos + 4 <= size:
        if isinstance(bio, memoryview):
            buf = bio
            (hlen,) = struct.unpack_from("<I", buf, pos)
            if pos + 4 + hlen + 4 > size:
                return
            header = bytes(buf[pos + 4:pos + 4 + hlen])
            (dlen,) = struct.unpack_from("<I", buf, pos + 4 + hlen)
            end = pos + 8 + hlen + dlen
            if end > size:
                return
            data = bytes(buf[pos + 8 + hlen:end])
        else:
            bio.seek(pos)
            raw = bio.read(4)
            if len(raw) < 4:
                return
            (hlen,) = struct.unpack("<I", raw)
            if pos + 8 + hlen > size:  # checked before reading: a damaged length must not allocate
                return
            header = bio.read(hlen)
            raw = bio.read(4)
            if len(header) < hlen or len(raw) < 4:
                return
            (dlen,) = struct.unpack("<I", raw)
            if pos + 8 + hlen + dlen > size:
                return
            data = bio.read(dlen)
            if len(data) < dlen:
                return
            end = pos + 8 + hlen + dlen
        yield pos, header_fields(header), data, end
        pos = end


def _op(fields: dict[str, bytes]) -> int:
    op = fields.get("op", b"")
    return op[0] if len(op) == 1 else -1


class _BadRecord(Exception):
    """A record whose header fields are missing or malformed."""


def _u32(fields: dict[str, bytes], name: str) -> int:
    value = fields.get(name)
    if value is None or len(value) != 4:
        raise _BadRecord(f"field {name!r} is {value!r}, expected 4 bytes")
    return struct.unpack("<I", value)[0]


def _time(fields: dict[str, bytes]) -> int:
    value = fields.get("time")
    if value is None or len(value) != 8:
        raise _BadRecord(f"field 'time' is {value!r}, expected 8 bytes")
    sec, nsec = struct.unpack("<II", value)
    return sec * 1_000_000_000 + nsec


def _text(fields: dict[str, bytes], name: str, required: bool = True) -> str | None:
    value = fields.get(name)
    if value is None:
        if required:
            raise _BadRecord(f"field {name!r} is missing")
        return None
    try:
        return value.decode()
    except UnicodeDecodeError as exc:
        raise _BadRecord(f"field {name!r} is not UTF-8 text ({exc})") from None


def _normalize(msgtype: str) -> str:
    pkg, _, name = msgtype.partition("/")
    return msgtype if "/msg/" in msgtype or not name else f"{pkg}/msg/{name}"


def _connection(fields: dict[str, bytes], data: bytes) -> Ros1Connection:
    conn = header_fields(data)
    latching = _text(conn, "latching", required=False)
    if latching is not None and not (latching or "0").isdigit():
        raise _BadRecord(f"field 'latching' is {latching!r}, expected 0 or 1")
    msgtype = _text(conn, "type") or ""
    if "/" not in msgtype:
        raise _BadRecord(f"field 'type' is {msgtype!r}, expected pkg/Type")
    return Ros1Connection(
        id=_u32(fields, "conn"), topic=_text(fields, "topic") or "",
        msgtype=_normalize(msgtype), md5sum=_text(conn, "md5sum", required=False) or "",
        msgdef=_text(conn, "message_definition", required=False) or "",
        callerid=_text(conn, "callerid", required=False),
        latching=int(latching or 0) if latching is not None else None)


def scan_ros1(path: str | Path, scan: Ros1Scan | None = None) -> Iterator[tuple[int, int, bytes]]:
    """Yield ``(connection id, log time ns, raw ROS 1 message)`` of every whole chunk in file order.

    Fills ``scan`` (connections, where it stopped and why) as it goes.
    """
    path = Path(path)
    scan = scan if scan is not None else Ros1Scan(path.stat().st_size)
    with path.open("rb") as bio:
        if bio.read(len(MAGIC)) != MAGIC:
            raise BagError(f"{path}: not a ROS 1 bag v2.0 (bad magic)")
        for pos, fields, data, end in _records(bio, scan.size, len(MAGIC)):
            try:
                found = list(_record_messages(pos, fields, data, scan))
            except _BadRecord as exc:  # a malformed record ends the salvage, like a damaged chunk
                scan.problem = f"record at offset {pos}: {exc}"
                return
            if scan.problem:
                return
            yield from found
            scan.complete_end = end
        if scan.complete_end < scan.size and not scan.problem:
            scan.problem = f"incomplete record at offset {scan.complete_end} (file ends at {scan.size})"


def _record_messages(pos: int, fields: dict[str, bytes], data: bytes,
                     scan: Ros1Scan) -> Iterator[tuple[int, int, bytes]]:
    """The messages of one top-level record (a chunk, a connection, a bare message)."""
    op = _op(fields)
    if op == OP_CHUNK:
        compression = fields.get("compression", b"none").decode(errors="replace")
        if compression not in decompressors:
            scan.problem = f"chunk at offset {pos}: unknown compression {compression!r}"
            return
        try:
            raw = decompressors[compression](data)
        except Exception as exc:  # noqa: BLE001 - a damaged chunk ends the salvage
            scan.problem = f"chunk at offset {pos} cannot be decompressed: {exc}"
            return
        view = memoryview(raw)
        for ipos, ifields, idata, _ in _records(view, len(raw), 0):
            iop = _op(ifields)
            try:
                if iop == OP_CONNECTION:
                    conn = _connection(ifields, idata)
                    scan.connections.setdefault(conn.id, conn)
                elif iop == OP_MSG:
                    yield _u32(ifields, "conn"), _time(ifields), idata
            except _BadRecord as exc:
                raise _BadRecord(f"chunk, inner record at {ipos}: {exc}") from None
        scan.chunks += 1
    elif op == OP_CONNECTION:
        conn = _connection(fields, data)
        scan.connections.setdefault(conn.id, conn)
    elif op == OP_MSG:  # an uncompressed bag written without chunks
        yield _u32(fields, "conn"), _time(fields), data


def reindex_ros1(src: str | Path, dst: str | Path, *, compress: bool = True) -> dict[str, Any]:
    """Write every whole chunk of ROS 1 bag ``src`` into a new, indexed ROS 1 bag ``dst``.

    Returns ``{"messages", "connections", "chunks", "bytes_dropped", "problem"}``. Messages keep
    their bytes, topics, types, definitions and log times; chunks are bz2-compressed (uncompressed
    with ``compress=False``: a temporary copy that is read once, as ``rgbt bag extract`` makes).
    """
    src, dst = Path(src), Path(dst)
    if dst.exists():
        raise BagError(f"{dst}: exists already; not overwriting")
    if not src.is_file():
        raise BagError(f"{src}: {'is a directory' if src.is_dir() else 'no such file'}, expected a ROS 1 .bag file")
    with src.open("rb") as fh:
        if fh.read(len(MAGIC)) != MAGIC:
            raise BagError(f"{src}: not a ROS 1 bag v2.0 (bad magic)")
    scan = Ros1Scan(src.stat().st_size)
    writer = Writer1(dst)
    if compress:
        writer.set_compression(Writer1.CompressionFormat.BZ2)
    count = 0
    out: dict[int, Any] = {}
    try:
        with writer:
            for cid, t_ns, raw in scan_ros1(src, scan):
                conn = scan.connections.get(cid)
                if conn is None:
                    continue  # a message whose connection record was lost
                if cid not in out:
                    out[cid] = writer.add_connection(conn.topic, conn.msgtype, msgdef=conn.msgdef,
                                                     md5sum=conn.md5sum, callerid=conn.callerid,
                                                     latching=conn.latching)
                writer.write(out[cid], t_ns, raw)
                count += 1
    except BagError:
        dst.unlink(missing_ok=True)
        raise
    except Exception as exc:  # noqa: BLE001 - rosbags' writer refuses a salvaged connection or message
        dst.unlink(missing_ok=True)
        raise BagError(f"{src}: cannot write the reindexed bag {dst}: {exc}") from exc
    except BaseException:
        dst.unlink(missing_ok=True)
        raise
    return {"messages": count, "connections": len(out), "chunks": scan.chunks,
            "bytes_dropped": scan.size - scan.complete_end, "problem": scan.problem}
