"""Walk the top-level records of an MCAP file without trusting its summary.

Used to say *where* a damaged or unfinished file ends (for error messages) and to salvage the
whole chunks of a file whose writer was killed (:mod:`rgbt.bag.recover`). Record layout from the
MCAP specification: ``opcode u8, length u64, body``; a file starts and ends with the magic.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from rosbags.rosbag2.storage_mcap import decompress

MAGIC = b"\x89MCAP0\r\n"
# 256 MiB: rosbags closes a chunk at 1 MiB plus one message; a larger size is damage
MAX_CHUNK_BYTES = 1 << 28
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_DATA_END = (
    0x01,
    0x02,
    0x03,
    0x04,
    0x05,
    0x06,
    0x0F,
)


@dataclass
class McapScan:
    """What a scan of one MCAP file found (offsets in bytes from the file start)."""

    path: Path
    size: int
    magic_ok: bool
    complete_end: int  # offset after the last complete top-level record
    has_data_end: bool = False
    has_footer: bool = False
    chunks: list[tuple[int, int]] = field(default_factory=list)  # (offset, record length)
    problem: str = ""  # why the scan stopped early ("" when it reached the footer)

    @property
    def finished(self) -> bool:
        return self.magic_ok and self.has_footer and not self.problem


def scan_mcap(path: str | Path) -> McapScan:
    """Scan top-level records from the start until the footer or the first incomplete record."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as bio:
        if bio.read(8) != MAGIC:
            return McapScan(path, size, False, 0, problem="file magic is not MCAP")
        scan = McapScan(path, size, True, 8)
        pos = 8
        while True:
            head = bio.read(9)
            if len(head) < 9:
                scan.problem = f"file ends inside a record header at offset {pos}" if head else \
                    f"file ends at offset {pos} without a footer"
                break
            op, length = struct.unpack("<BQ", head)
            end = pos + 9 + length
            if end > size:
                scan.problem = (f"record 0x{op:02x} at offset {pos} needs {length} bytes but the file "
                                f"ends at offset {size}")
                break
            if op == OP_CHUNK:
                scan.chunks.append((pos, length))
            elif op == OP_DATA_END:
                scan.has_data_end = True
            elif op == OP_FOOTER:
                scan.complete_end = end
                scan.has_footer = True
                if bio.seek(end) and bio.read(8) != MAGIC:
                    scan.problem = f"footer at offset {pos} is not followed by the closing magic"
                break
            bio.seek(end)
            pos = end
            scan.complete_end = end
    return scan


def _string(buf: memoryview, off: int) -> tuple[str, int]:
    (n,) = struct.unpack_from("<I", buf, off)
    return bytes(buf[off + 4:off + 4 + n]).decode(), off + 4 + n


def _bytes(buf: memoryview, off: int) -> tuple[bytes, int]:
    (n,) = struct.unpack_from("<I", buf, off)
    return bytes(buf[off + 4:off + 4 + n]), off + 4 + n


@dataclass
class Schema:
    id: int
    name: str
    encoding: str
    data: bytes


@dataclass
class Channel:
    id: int
    schema_id: int
    topic: str
    message_encoding: str
    metadata: dict[str, str]


def read_chunk(bio: BinaryIO, offset: int) -> Iterator[Schema | Channel | tuple[int, int, bytes]]:
    """Yield the schemas, channels and messages ``(channel_id, log_time_ns, data)`` of one chunk."""
    bio.seek(offset)
    op, length = struct.unpack("<BQ", bio.read(9))
    if op != OP_CHUNK:
        raise ValueError(f"record at offset {offset} is 0x{op:02x}, not a chunk")
    bio.seek(0, 2)
    if offset + 9 + length > bio.tell():
        raise ValueError(f"chunk at offset {offset} needs {length} bytes, past the end of the file")
    bio.seek(offset + 9)
    body = memoryview(bio.read(length))
    _, _, usize, crc = struct.unpack_from("<QQQI", body, 0)
    compression, off = _string(body, 28)
    (csize,) = struct.unpack_from("<Q", body, off)
    if off + 8 + csize > len(body):
        raise ValueError(f"chunk at offset {offset}: records of {csize} bytes do not fit in the chunk")
    if (compression == "" and usize != csize) or usize > MAX_CHUNK_BYTES:
        raise ValueError(f"chunk at offset {offset}: uncompressed size {usize} does not match "
                         f"{csize} stored bytes ({compression or 'uncompressed'})")
    records = memoryview(decompress(bytes(body[off + 8:off + 8 + csize]), compression, usize, crc))
    pos = 0
    while pos < len(records):
        op, length = struct.unpack_from("<BQ", records, pos)
        if pos + 9 + length > len(records):
            raise ValueError(f"chunk at offset {offset}: record 0x{op:02x} at {pos} runs past the chunk's end")
        rec = records[pos + 9:pos + 9 + length]
        pos += 9 + length
        if op == OP_SCHEMA:
            (sid,) = struct.unpack_from("<H", rec, 0)
            name, o = _string(rec, 2)
            enc, o = _string(rec, o)
            data, _ = _bytes(rec, o)
            yield Schema(sid, name, enc, data)
        elif op == OP_CHANNEL:
            cid, sid = struct.unpack_from("<HH", rec, 0)
            topic, o = _string(rec, 4)
            menc, o = _string(rec, o)
            (mlen,) = struct.unpack_from("<I", rec, o)
            o += 4
            meta: dict[str, str] = {}
            stop = o + mlen
            while o < stop:
                key, o = _string(rec, o)
                meta[key], o = _string(rec, o)
            yield Channel(cid, sid, topic, menc, meta)
        elif op == OP_MESSAGE:
            cid, _seq, log_time, _pub = struct.unpack_from("<HIQQ", rec, 0)
            yield cid, log_time, bytes(rec[22:])
