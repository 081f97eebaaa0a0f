"""Bad input: truncated, corrupt, missing and unknown-typed bags give clear errors, never crashes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import run_rgbt
from rgbt.bag import open_bag
from rgbt.bag.convert import convert_bag
from rgbt.bag.info import bag_info
from rgbt.bag.types import ros2_typestore
from rgbt.errors import BagError


def _copy(src: Path, dst: Path) -> Path:
    if src.is_dir():
        shutil.copytree(src, dst)
        for f in dst.iterdir():
            f.chmod(0o644)
    else:
        shutil.copyfile(src, dst)
        dst.chmod(0o644)
    return dst


def test_truncated_ros1_names_file_and_offsets(ros1_bag: Path, tmp_path: Path) -> None:
    bad = _copy(ros1_bag, tmp_path / "cut.bag")
    size = bad.stat().st_size
    with bad.open("r+b") as fh:
        fh.truncate(size // 2)
    with pytest.raises(BagError, match=rf"cut\.bag: .*truncated.*offset \d+.*ends at offset {size // 2}"):
        open_bag(bad)


def test_corrupt_ros1_chunk_names_the_chunk_offset(ros1_bag: Path, tmp_path: Path) -> None:
    bad = _copy(ros1_bag, tmp_path / "corrupt.bag")
    with bad.open("r+b") as fh:
        fh.seek(bad.stat().st_size // 2)
        fh.write(b"\0" * 64)
    with open_bag(bad) as bag:
        assert bag.topics["/imu/data"].count == 11865  # the index is intact
        n = 0
        with pytest.raises(BagError, match=r"corrupt\.bag: cannot read messages after log time \d+ ns "
                                           r"\(damaged chunk record at offset \d+"):
            for _ in bag.messages():
                n += 1
        assert 0 < n < 16806  # the messages before the damage were delivered


@pytest.mark.parametrize("bare", [False, True], ids=["dir", "file"])
def test_truncated_mcap_names_file_and_offset(bags_dir: Path, tmp_path: Path, bare: bool) -> None:
    bag = _copy(bags_dir / "ros2_talker_mcap", tmp_path / "t")
    with (bag / "talker.mcap").open("r+b") as fh:
        fh.truncate(9000)
    target = bag / "talker.mcap" if bare else bag
    with pytest.raises(BagError, match=r"talker\.mcap: .*offset \d+.*ends at offset 9000"):
        open_bag(target)


def test_truncated_sqlite3(bags_dir: Path, tmp_path: Path) -> None:
    bag = _copy(bags_dir / "ros2_talker_sqlite3", tmp_path / "s")
    with (bag / "talker.db3").open("r+b") as fh:
        fh.truncate(9000)
    with pytest.raises(BagError, match=r"talker\.db3: sqlite3 file of 9000 bytes"):
        open_bag(bag)


def test_missing_and_wrong_paths(tmp_path: Path) -> None:
    with pytest.raises(BagError, match="no such file"):
        open_bag(tmp_path / "nope.bag")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BagError, match=r"empty: not a ROS 2 bag directory \(no metadata.yaml\)"):
        open_bag(tmp_path / "empty")
    (tmp_path / "junk.bag").write_bytes(b"hello, not a bag at all" * 10)
    with pytest.raises(BagError, match=r"junk\.bag: cannot read ROS 1 bag: not a ROS 1 bag"):
        open_bag(tmp_path / "junk.bag")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(BagError, match="not a bag"):
        open_bag(tmp_path / "x.txt")
    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "rec_0.mcap").write_bytes(b"\x89MCAP0\r\n")
    with pytest.raises(BagError, match="no metadata.yaml but 1 .mcap file.*rgbt bag recover"):
        open_bag(rec)


def test_cli_reports_bad_input_cleanly(tmp_path: Path) -> None:
    proc = run_rgbt("bag", "info", tmp_path / "missing_dir", check=False)
    assert proc.returncode == 2
    assert "missing_dir: no such file or directory" in proc.stderr and "Traceback" not in proc.stderr


def _bag_with_unknown_type(path: Path) -> None:
    from rosbags.rosbag2 import StoragePlugin, Writer

    store = ros2_typestore()
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        good = w.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
        bad = w.add_connection("/widget", "acme_msgs/msg/Widget", msgdef="this ::: is not a msg definition",
                               rihs01="RIHS01_" + "0" * 64)
        for i in range(3):
            w.write(good, 100 + i, bytes(store.serialize_cdr(store.types["std_msgs/msg/String"](f"m{i}"),
                                                             "std_msgs/msg/String")))
            w.write(bad, 101 + i, b"\x00\x01\x00\x00\xde\xad\xbe\xef")


def test_unknown_types_listed_skipped_not_crashed(tmp_path: Path) -> None:
    _bag_with_unknown_type(tmp_path / "u")
    with open_bag(tmp_path / "u") as bag:
        assert bag.unknown_types == ["acme_msgs/msg/Widget"]
        assert bag.topics["/widget"].known is False and bag.topics["/widget"].count == 3
        assert [r.msg.data for r in bag.messages()] == ["m0", "m1", "m2"]  # skipped by default
        widgets = list(bag.messages(topics=["/widget"]))  # asked for by name: raw only
        assert [bytes(r.raw) for r in widgets] == [b"\x00\x01\x00\x00\xde\xad\xbe\xef"] * 3
        with pytest.raises(BagError, match="acme_msgs/msg/Widget.*no definition"):
            _ = widgets[0].msg
    info = bag_info(tmp_path / "u")
    assert info["unknown_types"] == ["acme_msgs/msg/Widget"] and info["topics"]["/widget"]["count"] == 3
    proc = run_rgbt("bag", "info", tmp_path / "u")
    assert "unknown types" in proc.stdout and "acme_msgs/msg/Widget" in proc.stdout
    res = convert_bag(tmp_path / "u", tmp_path / "out")
    assert res["skipped_topics"] == ["/widget"] and res["topics"] == {"/chatter": 3}


def test_corrupt_chunk_in_a_split_mcap_bag_names_the_file(tmp_path: Path) -> None:
    from rgbt.bag import BagWriter

    import numpy as np

    rng = np.random.default_rng(3)
    String = ros2_typestore().types["std_msgs/msg/String"]
    with BagWriter(tmp_path / "z", compression="zstd", split_size_bytes=30_000, chunk_size_bytes=10_000) as w:
        w.add_topic("/n", "std_msgs/msg/String")
        for i in range(300):
            w.write_msg("/n", 1_000 + i, String(f"{i:08d}" + rng.bytes(200).hex()))  # incompressible
    assert len(list((tmp_path / "z").glob("*.mcap"))) >= 3
    victim = tmp_path / "z" / "z_1.mcap"
    from rgbt.bag.mcapscan import scan_mcap

    chunk_offset = scan_mcap(victim).chunks[0][0]
    with victim.open("r+b") as fh:  # damage the first chunk's CRC field: its data no longer match it
        fh.seek(chunk_offset + 9 + 24)
        fh.write(b"\xff\xff\xff\xff")
    with open_bag(tmp_path / "z") as bag:
        seen = []
        with pytest.raises(BagError, match=rf"z: cannot read messages after log time \d+ ns.*{victim.name}"):
            for rec in bag.messages():
                seen.append(int(rec.msg.data[:8]))
        assert seen == list(range(len(seen))) and len(seen) > 0  # the first file's messages came through


def test_unindexed_ros1_bag_is_explained(ros1_bag: Path, tmp_path: Path) -> None:
    """A ROS 1 recording that was never closed (``.bag.active``, index_pos = 0)."""
    bad = _copy(ros1_bag, tmp_path / "rec.bag.active")
    data = bad.read_bytes()
    pos = data.index(b"index_pos=", 0, 4096) + len(b"index_pos=")
    with bad.open("r+b") as fh:
        fh.seek(pos)
        fh.write(b"\0" * 8)
    with pytest.raises(BagError, match=r"rec\.bag\.active: .*not indexed \(index_pos = 0"):
        open_bag(bad)
