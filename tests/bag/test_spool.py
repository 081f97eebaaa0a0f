"""The recorder's crash spool (``rgbt.bag.spool``): a ring in a shared file that a second process reads
after the first is gone: whole entries only, laps without wrapping an entry, never overwriting what
the writer has not taken, and a clear error for a file that is not a spool."""

from __future__ import annotations

from pathlib import Path

import pytest

from rgbt.bag.spool import ENTRY, Spool, read_unwritten
from rgbt.errors import BagError

MB = 1 << 20


def _payload(i: int, size: int = 100_000) -> bytes:
    return bytes([i % 251]) * size


def test_the_ring_laps_keeps_entries_whole_and_refuses_to_overwrite_what_is_unwritten(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s", MB)
    ends = []
    for i in range(9):  # 9 x ~100 kB: fits the 1 MiB ring
        view, end = spool.append("/t", i, 1000 + i, _payload(i))
        assert bytes(view) == _payload(i)
        ends.append(end)
    assert spool.append("/t", 99, 99, _payload(99, 200_000)) is None  # would overwrite unwritten entries
    spool.mark_written(ends[2])  # the writer took 0..2
    entry = spool.append("/t", 9, 1009, _payload(9, 250_000))  # laps: overwrites 0..2 only
    assert entry is not None and entry[1] > MB
    assert bytes(entry[0]) == _payload(9, 250_000)
    got = list(read_unwritten(tmp_path / "s", margin=0))
    assert [e.key for e in got] == [1003, 1004, 1005, 1006, 1007, 1008, 1009]
    assert all(bytes(e.data) == _payload(e.log_ns, len(e.data)) for e in got)
    spool.mark_written(ends[6])  # the writer took 3..6
    assert [e.key for e in read_unwritten(tmp_path / "s", margin=0)] == [1007, 1008, 1009]
    # the margin gives back what the bag writer may still have held in its unfinished chunk
    assert [e.key for e in read_unwritten(tmp_path / "s", margin=150_000)] == [1005, 1006, 1007, 1008, 1009]
    spool.close()
    assert not (tmp_path / "s").exists()


def test_a_reader_sees_only_whole_entries_and_a_damaged_file_is_named(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "s", MB)
    spool.append("/imu", 1, 1, b"abc")
    assert [(e.topic, bytes(e.data)) for e in read_unwritten(tmp_path / "s")] == [("/imu", b"abc")]
    spool.close(remove=False)
    (tmp_path / "bad").write_bytes(b"\0" * (4096 + ENTRY.size))
    with pytest.raises(BagError, match="not a spool"):
        list(read_unwritten(tmp_path / "bad"))
    with pytest.raises(BagError, match="at least 1 MiB"):
        Spool(tmp_path / "small", 1000)
