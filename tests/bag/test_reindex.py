"""Salvaging ROS 1 bags without a usable index (cut short, or never closed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import run_rgbt
from rgbt.bag import open_bag
from rgbt.bag.ros1scan import reindex_ros1
from rgbt.errors import BagError


def _original(ros1_bag: Path) -> list[tuple[str, int, bytes]]:
    with open_bag(ros1_bag) as bag:
        return [(r.topic, r.t_ns, bytes(r.raw)) for r in bag.messages()]


def test_truncated_bag_keeps_every_whole_chunk(ros1_bag: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.bag"
    data = ros1_bag.read_bytes()
    cut.write_bytes(data[: len(data) * 6 // 10])
    with pytest.raises(BagError, match="rgbt bag reindex"):
        open_bag(cut)
    res = reindex_ros1(cut, tmp_path / "fixed.bag")
    assert res["problem"].startswith("incomplete record at offset") and res["bytes_dropped"] > 0
    with open_bag(tmp_path / "fixed.bag") as bag:
        got = [(r.topic, r.t_ns, bytes(r.raw)) for r in bag.messages()]
        assert bag.topics["/imu/data"].msgtype == "sensor_msgs/msg/Imu"
        assert next(bag.messages(topics=["/fix"])).msg.latitude != 0.0
    orig = _original(ros1_bag)
    # the fixture's chunks follow each other in time: the salvage is exactly the messages up to the
    # last one of the last whole chunk, bytes and times unchanged
    assert got == [m for m in orig if m[1] <= got[-1][1]]
    assert 0.4 * len(orig) < len(got) < 0.6 * len(orig) + 2000
    assert res["messages"] == len(got)


@pytest.mark.slow
def test_unindexed_active_bag_is_fully_recovered(ros1_bag: Path, tmp_path: Path) -> None:
    active = tmp_path / "rec.bag.active"
    shutil.copyfile(ros1_bag, active)
    data = bytearray(active.read_bytes())
    pos = data.index(b"index_pos=", 0, 4096) + len(b"index_pos=")
    data[pos:pos + 8] = b"\0" * 8
    active.write_bytes(bytes(data))
    out = run_rgbt("bag", "reindex", active, tmp_path / "rec.bag").stdout
    assert "16806 messages" in out
    with open_bag(tmp_path / "rec.bag") as bag:
        assert [(r.topic, r.t_ns, bytes(r.raw)) for r in bag.messages()] == _original(ros1_bag)


def test_reindex_refuses_non_bags_and_existing_outputs(tmp_path: Path) -> None:
    (tmp_path / "x.bag").write_bytes(b"not a bag")
    with pytest.raises(BagError, match="bad magic"):
        reindex_ros1(tmp_path / "x.bag", tmp_path / "y.bag")
    assert not (tmp_path / "y.bag").exists()
    (tmp_path / "y.bag").write_bytes(b"")
    with pytest.raises(BagError, match="exists"):
        reindex_ros1(tmp_path / "x.bag", tmp_path / "y.bag")
