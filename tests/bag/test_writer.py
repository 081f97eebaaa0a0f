"""BagWriter: round trips, splits, compression, custom types, metadata, independent reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from helpers import wait_until
from rgbt.bag import BagWriter, numpy_to_image_msg, open_bag
from rgbt.image.codec import image_to_numpy
from rgbt.bag.mcapscan import scan_mcap
from rgbt.bag.types import ros2_typestore
from rgbt.errors import BagError

STORE = ros2_typestore()
T0 = 1_700_000_000_000_000_000


def _state(t_ns: int, armed: bool, mode: str):
    T = STORE.types
    sec, nsec = divmod(t_ns, 1_000_000_000)
    return T["mavros_msgs/msg/State"](T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](sec, nsec), "base"),
                                      True, armed, True, False, mode, 4)


def _write_sample(path: Path, n: int = 12, **kwargs) -> list[tuple[str, int, bytes]]:
    rng = np.random.default_rng(1)
    written = []
    with BagWriter(path, custom_data={"rgbt.synthetic": "true", "rgbt.seed": "1"}, **kwargs) as w:
        w.add_topic("/boson/thermal/image_raw", "sensor_msgs/msg/Image")
        w.add_topic("/uav1/mavros/state", "mavros_msgs/msg/State")
        for i in range(n):
            t = T0 + i * 16_666_667
            img = numpy_to_image_msg(rng.integers(0, 4096, (64, 80), dtype=np.uint16), t, "thermal", "mono16")
            raw = bytes(STORE.serialize_cdr(img, "sensor_msgs/msg/Image"))
            w.write("/boson/thermal/image_raw", t, raw)
            written.append(("/boson/thermal/image_raw", t, raw))
            st = _state(t + 1, i % 3 == 0, "GUIDED" if i % 2 else "LOITER")
            w.write_msg("/uav1/mavros/state", t + 1, st)
            written.append(("/uav1/mavros/state", t + 1, bytes(STORE.serialize_cdr(st, "mavros_msgs/msg/State"))))
    return written


def test_roundtrip_bit_exact(tmp_path: Path) -> None:
    written = _write_sample(tmp_path / "bag")
    with open_bag(tmp_path / "bag") as bag:
        assert bag.synthetic and bag.metadata["rgbt.seed"] == "1"
        assert bag.topics["/uav1/mavros/state"].msgtype == "mavros_msgs/msg/State"
        recs = list(bag.messages())
        assert [(r.topic, r.t_ns, bytes(r.raw)) for r in recs] == written
        states = [r.msg for r in recs if r.topic == "/uav1/mavros/state"]
        assert [s.armed for s in states] == [i % 3 == 0 for i in range(12)]
        img = image_to_numpy(recs[0].msg)
        assert img.shape == (64, 80) and img.dtype == np.uint16
    meta = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["storage_identifier"] == "mcap" and meta["message_count"] == 24
    assert meta["custom_data"]["rgbt.synthetic"] == "true"
    hashes = {t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"]
              for t in meta["topics_with_message_count"]}
    assert hashes["/uav1/mavros/state"] == STORE.hash_rihs01("mavros_msgs/msg/State")


def test_independent_reader_mcap_ros2(tmp_path: Path) -> None:
    """mcap-ros2-support decodes our files with its own CDR decoder and the embedded schemas."""
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    written = _write_sample(tmp_path / "bag", n=5)
    got = []
    for f in sorted((tmp_path / "bag").glob("*.mcap")):
        with f.open("rb") as fh:
            reader = make_reader(fh, decoder_factories=[DecoderFactory()])
            got += [(ch.topic, m.log_time, msg) for _, ch, m, msg in reader.iter_decoded_messages(log_time_order=True)]
            summary = reader.get_summary()  # the summary section rosbags wrote, read by mcap's own parser
            assert summary is not None and summary.statistics is not None
            assert summary.statistics.message_count == len(written)
    assert [(t, ts) for t, ts, _ in got] == [(t, ts) for t, ts, _ in written]
    for (topic, _, raw), (_, _, msg) in zip(written, got):
        ours = STORE.deserialize_cdr(raw, "sensor_msgs/msg/Image" if "image" in topic else "mavros_msgs/msg/State")
        if "image" in topic:
            assert (msg.width, msg.height, msg.encoding, msg.step) == (ours.width, ours.height, "mono16", ours.step)
            assert bytes(msg.data) == ours.data.tobytes()
        else:
            assert (msg.armed, msg.mode, msg.system_status) == (ours.armed, ours.mode, ours.system_status)


@pytest.mark.parametrize("split", [{"split_size_bytes": 40_000}, {"split_duration_ns": 50_000_000}])
def test_split_files_all_finished_and_listed(tmp_path: Path, split: dict) -> None:
    written = _write_sample(tmp_path / "bag", n=20, flush_interval_s=0.0, **split)
    files = sorted((tmp_path / "bag").glob("*.mcap"))
    assert len(files) > 2
    assert all(scan_mcap(f).finished for f in files)
    meta = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert sorted(meta["relative_file_paths"]) == sorted(f.name for f in files)
    assert sum(f["message_count"] for f in meta["files"]) == len(written) == meta["message_count"]
    if "split_duration_ns" in split:
        for f in meta["files"]:
            assert f["duration"]["nanoseconds"] < 50_000_000
    with open_bag(tmp_path / "bag") as bag:
        assert [(r.topic, r.t_ns, bytes(r.raw)) for r in bag.messages()] == written


def test_zstd_chunks(tmp_path: Path) -> None:
    with BagWriter(tmp_path / "z", compression="zstd") as w:
        w.add_topic("/eo/mono/image_raw", "sensor_msgs/msg/Image")
        for i in range(5):
            w.write_msg("/eo/mono/image_raw", T0 + i, numpy_to_image_msg(np.full((600, 960), i, np.uint8), T0 + i,
                                                                           "mono", "mono8"))
    assert sum(f.stat().st_size for f in (tmp_path / "z").glob("*.mcap")) < 100_000  # 5 x 576 kB raw
    with open_bag(tmp_path / "z") as bag:
        assert [int(image_to_numpy(r.msg)[599, 959]) for r in bag.messages()] == [0, 1, 2, 3, 4]


def test_writer_errors(tmp_path: Path) -> None:
    w = BagWriter(tmp_path / "b")
    with pytest.raises(BagError, match="unknown"):
        w.add_topic("/x", "acme_msgs/msg/Nope")
    with pytest.raises(BagError, match="add_topic"):
        w.write("/never", 1, b"\0\1\0\0")
    w.add_topic("/s", "std_msgs/msg/String")
    with pytest.raises(BagError, match="already added"):
        w.add_topic("/s", "std_msgs/msg/Int32")
    w.write_msg("/s", 5, STORE.types["std_msgs/msg/String"]("hi"))
    w.close()
    w.close()  # idempotent
    with pytest.raises(BagError, match="closed"):
        w.write_msg("/s", 6, STORE.types["std_msgs/msg/String"]("late"))
    with pytest.raises(BagError, match="exists"):
        BagWriter(tmp_path / "b")
    with pytest.raises(BagError, match="compression"):
        BagWriter(tmp_path / "c", compression="lz4")  # type: ignore[arg-type]
    with open_bag(tmp_path / "b") as bag:
        assert [r.msg.data for r in bag.messages()] == ["hi"]


def test_open_recording_is_listed_as_unfinished(tmp_path: Path) -> None:
    """While recording (or after a kill) metadata.yaml exists and the open file is reported."""
    w = BagWriter(tmp_path / "live")
    w.add_topic("/s", "std_msgs/msg/String")
    w.write_msg("/s", 1, STORE.types["std_msgs/msg/String"]("a"))
    with open_bag(tmp_path / "live") as bag:
        assert bag.message_count == 0
        assert [p.name for p in bag.unfinished_files] == ["live_0.mcap"]
    w.close()
    with open_bag(tmp_path / "live") as bag:
        assert bag.message_count == 1 and bag.unfinished_files == []


def test_concurrent_writers_and_close(tmp_path: Path) -> None:
    """Two threads write (like executor callbacks) while the main thread closes: every write that
    returned is in the bag, each thread's messages in order, no write after close succeeds."""
    import threading

    String = STORE.types["std_msgs/msg/String"]
    w = BagWriter(tmp_path / "mt", chunk_size_bytes=8_000, split_size_bytes=60_000, fsync=False)
    w.add_topic("/a", "std_msgs/msg/String")
    w.add_topic("/b", "std_msgs/msg/String")
    done: dict[str, int] = {}
    written = {"/a": 0, "/b": 0}
    started = threading.Barrier(3)

    def run(topic: str) -> None:
        started.wait()
        n = 0
        try:
            while n < 1_000_000:
                w.write_msg(topic, T0 + n * 1000 + (topic == "/b"), String(f"{n:08d}" + "k" * 300))
                n += 1
                written[topic] = n
        except BagError:
            pass
        done[topic] = n

    threads = [threading.Thread(target=run, args=(t,)) for t in ("/a", "/b")]
    for t in threads:
        t.start()
    started.wait()
    # close while both write, after several splits (60 kB each: ~190 messages of both topics)
    wait_until(lambda: min(written.values()) >= 1000, 30, "1000 writes on each topic")
    w.close()
    for t in threads:
        t.join(timeout=30)
    with open_bag(tmp_path / "mt") as bag:
        for topic in ("/a", "/b"):
            got = [int(r.msg.data[:8]) for r in bag.messages(topics=[topic])]
            assert got == list(range(done[topic])) and done[topic] > 0


def test_direct_file_writes_the_same_bytes_as_the_page_cache_path(tmp_path: Path) -> None:
    """``_DirectFile`` (O_DIRECT whole blocks + the partial last block through the cache) against
    ``_RawFile``: random write sizes across block and buffer boundaries, flushes, truncates to an
    unaligned size, reopening a file whose size is not a block multiple; after every flush both
    files hold the same bytes and the direct file's size is exactly what was written."""
    from rgbt.bag.writer import _DirectFile, _RawFile

    a, b = tmp_path / "raw.bin", tmp_path / "direct.bin"
    for p in (a, b):
        p.write_bytes(b"HEADER-not-a-block-multiple")
    raw = _RawFile(a)
    try:
        direct = _DirectFile(b, capacity=64 << 10)  # a small buffer: many pushes
    except OSError:
        pytest.skip(f"the filesystem of {tmp_path} refuses O_DIRECT")
    rng = np.random.default_rng(7)
    for step in range(300):
        data = rng.integers(0, 256, int(rng.choice([1, 9, 4095, 4096, 4097, 70_000, 200_000])), dtype=np.uint8)
        assert raw.write(data.tobytes()) == direct.write(memoryview(data)) == data.size
        assert raw.tell() == direct.tell()
        if step % 7 == 0:
            direct.flush()
            assert a.read_bytes() == b.read_bytes() and b.stat().st_size == direct.tell()
        if step % 50 == 49:  # a rollback to an unaligned earlier offset
            size = int(rng.integers(direct.flushed // 2, direct.flushed))
            raw.truncate(size)
            direct.truncate(size)
            assert direct.tell() == size == b.stat().st_size
    raw.close()
    direct.close()
    assert a.read_bytes() == b.read_bytes()
    again = _DirectFile(b)  # reopened at an unaligned size: the partial block is read back
    again.write(b"tail")
    again.close()
    assert b.read_bytes() == a.read_bytes() + b"tail"


def test_bag_writer_uses_o_direct_where_the_filesystem_takes_it(tmp_path: Path) -> None:
    """The default writer writes the open file with O_DIRECT (when the filesystem allows it) and the
    bag reads back complete; ``direct_io=False`` writes through the page cache."""
    import os

    from rgbt.bag.writer import _DirectFile, _RawFile

    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_DIRECT))
    except (OSError, AttributeError):
        pytest.skip(f"the filesystem of {tmp_path} refuses O_DIRECT")
    String = ros2_typestore().types["std_msgs/msg/String"]
    for direct, cls in ((True, _DirectFile), (False, _RawFile)):
        with BagWriter(tmp_path / f"bag_{direct}", chunk_size_bytes=5000, fsync=False, direct_io=direct) as w:
            assert isinstance(w._file.bio, cls)
            w.add_topic("/s", "std_msgs/msg/String")
            for i in range(500):
                w.write_msg("/s", 1000 + i, String(f"{i:06d}" + "z" * int(i % 97)))
        with open_bag(tmp_path / f"bag_{direct}") as bag:
            assert [int(r.msg.data[:6]) for r in bag.messages()] == list(range(500))
