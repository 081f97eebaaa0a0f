"""A recorder's crash spool: its unwritten messages in a shared-memory ring that outlives the process.

A recorder queues each message for its writer thread, which may run seconds behind on a loaded host
(a 2-core machine writing ~110 MB/s). A ``SIGKILL`` or an OOM kill ends the process with that queue,
and the publishers' retained history (3 s) does not always cover it. The spool holds the queued
messages in a file on a memory filesystem (``/dev/shm``): the kernel keeps it after the process dies,
and the recorder that takes over the flight reads what its predecessor had not written
(:func:`read_unwritten`). It costs one copy of each message (memory bandwidth, no disk) and its
capacity in RAM; a power loss empties it (the bag's own ``fsync`` bounds that loss).

Layout: a :data:`HEADER_BYTES` header (magic, capacity, then three logical offsets: ``tail``, the
oldest entry still whole; ``head``, the end of the newest whole entry; ``written``, the end of the
newest entry the writer has handed to the bag file), then the ring. Logical offsets only grow; an
entry sits at ``offset % capacity`` and never wraps: one that would not fit before the ring's end
starts at the next lap (a :data:`WRAP` length marks the skipped bytes when there is room for it).
An entry is ``ENTRY`` (data length, log time ns, key, topic length), the topic (UTF-8), the data.
The writer of the header is one process; ``head`` moves only once the entry is whole, so a reader
after a ``SIGKILL`` sees whole entries only.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rgbt.errors import BagError

MAGIC = b"RGBTSPL1"
HEADER = struct.Struct("<8sQQQQ")  # magic, capacity, tail, head, written
HEADER_BYTES = 4096
ENTRY = struct.Struct("<IqqH")  # data length, log time (ns), key (header stamp, else log time), topic length
WRAP = 0xFFFFFFFF
#: what :func:`read_unwritten` also returns before ``written``: the bag writer's pending chunk (at most
#: rosbags' 1 MiB chunk plus one message) and the last partial block of the chunk before it (< 4 KiB,
#: ``rgbt.bag.writer._DirectFile.push``) are lost with the process although the writer had taken them
PENDING_CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class SpoolEntry:
    """One spooled message: ``topic``, ``log_ns`` (arrival, ns), ``key`` (header stamp, else log time)."""

    topic: str
    log_ns: int
    key: int
    data: memoryview


def allocate(path: Path, capacity: int) -> int:
    """Create (or take as it is: a warm spare made it in standby) the file of a spool of ``capacity``
    bytes with every page allocated, and return it open for writing. Allocated now: a memory
    filesystem that ran out later would kill the process writing it (SIGBUS)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise BagError(f"spool {path}: not created ({exc.strerror or exc})") from exc
    try:
        st = os.fstat(fd)
        if st.st_size != HEADER_BYTES + capacity:
            os.ftruncate(fd, HEADER_BYTES + capacity)
        if st.st_size != HEADER_BYTES + capacity or st.st_blocks * 512 < st.st_size:  # not allocated yet
            os.posix_fallocate(fd, 0, HEADER_BYTES + capacity)
    except OSError as exc:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise BagError(f"spool {path}: {capacity / 1e6:.0f} MB not available ({exc.strerror or exc})") from exc
    return fd


class Spool:
    """The ring of one recorder process (created, sized and removed by it). :meth:`append` copies a
    message in and returns a view of the copy for the writer queue; :meth:`mark_written` moves the
    ``written`` offset once the writer has handed the entry to the bag (or counted it lost). An append
    that would overwrite an entry not yet written is refused (the caller counts the message dropped)."""

    def __init__(self, path: Path, capacity: int) -> None:
        if capacity < 1 << 20:
            raise BagError(f"spool capacity {capacity} bytes: expected at least 1 MiB")
        self.path = Path(path)
        self.capacity = capacity
        fd = allocate(self.path, capacity)
        try:
            # mapped in now (MAP_POPULATE): a ring page first touched while recording is a page fault, and
            # ~150 k of them (600 MB) in a take-over's first seconds kept it seconds behind on 2 cores
            self._map = mmap.mmap(fd, HEADER_BYTES + capacity, mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        finally:
            os.close(fd)
        self._view = memoryview(self._map)
        self.tail = self.head = self.written = 0
        self._header()

    def _header(self) -> None:
        HEADER.pack_into(self._map, 0, MAGIC, self.capacity, self.tail, self.head, self.written)

    def _entry_at(self, offset: int) -> int:
        """Logical offset just past the entry (or the wrap) at ``offset``."""
        pos = offset % self.capacity
        if self.capacity - pos < ENTRY.size:
            return offset + self.capacity - pos
        size, _, _, tlen = ENTRY.unpack_from(self._map, HEADER_BYTES + pos)
        if size == WRAP:
            return offset + self.capacity - pos
        return offset + ENTRY.size + tlen + size

    def append(self, topic: str, log_ns: int, key: int, data: bytes | memoryview) -> tuple[memoryview, int] | None:
        """Copy one message in; returns (a view of its data in the ring, the logical end offset for
        :meth:`mark_written`), or None when it would overwrite an entry not yet written."""
        name = topic.encode()
        need = ENTRY.size + len(name) + len(data)
        if need > self.capacity:
            return None
        start = self.head
        pos = start % self.capacity
        if self.capacity - pos < need:  # to the next lap: the entry stays contiguous
            start += self.capacity - pos
            pos = 0
        end = start + need
        tail = self.tail
        while end - tail > self.capacity:  # entries this one overwrites: only ones written already
            if tail >= self.written:
                return None
            tail = self._entry_at(tail)
        if tail != self.tail:
            self.tail = tail
            self._header()
        if start != self.head and self.capacity - self.head % self.capacity >= ENTRY.size:
            ENTRY.pack_into(self._map, HEADER_BYTES + self.head % self.capacity, WRAP, 0, 0, 0)
        base = HEADER_BYTES + pos
        ENTRY.pack_into(self._map, base, len(data), log_ns, key, len(name))
        self._map[base + ENTRY.size:base + ENTRY.size + len(name)] = name
        body = base + ENTRY.size + len(name)
        self._map[body:body + len(data)] = data
        self.head = end
        self._header()
        return self._view[body:body + len(data)], end

    def mark_written(self, end: int) -> None:
        """The entry ending at logical offset ``end`` (and every one before it) is in the bag writer."""
        if end > self.written:
            self.written = end
            struct.pack_into("<Q", self._map, HEADER.size - 8, end)

    def close(self, remove: bool = True) -> None:
        """Unmap (views still held by a writer keep the mapping until they go) and remove the file."""
        if remove:
            self.path.unlink(missing_ok=True)
        self._view.release()
        try:
            self._map.close()
        except BufferError:  # a view is still queued: the mapping goes with the last one
            pass


def read_unwritten(path: Path, margin: int | None = None) -> Iterator[SpoolEntry]:
    """The entries of a dead recorder's spool from ``margin`` bytes (default
    :data:`PENDING_CHUNK_BYTES`) before its ``written`` offset to its ``head``, oldest first: what it
    had queued and not written, and what may have been in the bag writer's unfinished chunk (the
    caller drops what the bag holds again). The file is mapped read-only; the views stay valid until
    the caller drops them."""
    margin = PENDING_CHUNK_BYTES if margin is None else margin
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size < HEADER_BYTES + ENTRY.size:
            raise BagError(f"spool {path}: {size} bytes, shorter than its header")
        mapped = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
    finally:
        os.close(fd)
    magic, capacity, tail, head, written = HEADER.unpack_from(mapped, 0)
    if magic != MAGIC or HEADER_BYTES + capacity != size or not tail <= head <= tail + capacity:
        raise BagError(f"spool {path}: not a spool or its header is damaged (magic {magic!r}, "
                       f"capacity {capacity}, tail {tail}, head {head}; file {size} bytes)")
    view = memoryview(mapped)
    offset, start = tail, max(tail, written - margin)
    while offset < head:
        pos = offset % capacity
        if capacity - pos < ENTRY.size:
            offset += capacity - pos
            continue
        dlen, log_ns, key, tlen = ENTRY.unpack_from(mapped, HEADER_BYTES + pos)
        if dlen == WRAP:
            offset += capacity - pos
            continue
        end = offset + ENTRY.size + tlen + dlen
        if end > head or pos + ENTRY.size + tlen + dlen > capacity:
            raise BagError(f"spool {path}: entry at {offset} runs past the ring ({end} > head {head})")
        if end > start:
            body = HEADER_BYTES + pos + ENTRY.size
            topic = bytes(mapped[body:body + tlen]).decode()
            yield SpoolEntry(topic, log_ns, key, view[body + tlen:body + tlen + dlen])
        offset = end
