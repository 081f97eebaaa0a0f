"""Reading the real bags written by others: exact counts, exact values, time order."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from rgbt.bag import open_bag
from rgbt.bag.info import bag_info
from rgbt.bag.renames import CART_RENAMES, cart_sequences, clip_window
from helpers import need


def test_talker_strings_exact(talker_bag: Path) -> None:
    with open_bag(talker_bag) as bag:
        assert bag.kind == "ros2"
        assert bag.topics["/topic"].msgtype == "std_msgs/msg/String"
        assert bag.topics["/topic"].count == 10
        assert bag.topics["/rosout"].count == 10
        assert bag.message_count == 20
        records = list(bag.messages(topics=["/topic"]))
        assert [r.msg.data for r in records] == [f"Hello, world! {n}" for n in range(10)]
        times = [r.t_ns for r in bag.messages()]
        assert len(times) == 20 and times == sorted(times)
        assert bag.start_ns == times[0] and bag.end_ns == times[-1]
        assert bag.duration_ns == times[-1] - times[0]
        logs = [r.msg for r in bag.messages(topics=["/rosout"])]
        assert [m.msg for m in logs] == [f"Publishing: 'Hello, world! {n}'" for n in range(10)]


def _ros1_header(buf: bytes, off: int) -> tuple[int, int, int, str, int]:
    seq, sec, nsec, n = struct.unpack_from("<IIII", buf, off)
    frame = buf[off + 16: off + 16 + n].decode()
    return seq, sec, nsec, frame, off + 16 + n


def test_ros1_counts_values_and_order(ros1_bag: Path) -> None:
    with open_bag(ros1_bag) as bag:
        assert bag.kind == "ros1"
        assert {n: t.count for n, t in bag.topics.items()} == {
            "/imu/data": 11865, "/fix": 989, "/husky_velocity_controller/odom": 3952}
        assert bag.topics["/imu/data"].msgtype == "sensor_msgs/msg/Imu"
        assert bag.topics["/fix"].msgtype == "sensor_msgs/msg/NavSatFix"
        counts = {"/imu/data": 0, "/fix": 0, "/husky_velocity_controller/odom": 0}
        last = -1
        for rec in bag.messages():
            assert rec.t_ns >= last
            last = rec.t_ns
            counts[rec.topic] += 1
            raw = bytes(rec.raw)
            if rec.topic == "/imu/data":  # independent decode of the ROS 1 wire format
                _, sec, nsec, frame, off = _ros1_header(raw, 0)
                vals = struct.unpack_from("<4d9d3d9d3d9d", raw, off)
                m = rec.msg
                assert (m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id) == (sec, nsec, frame)
                assert (m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w) == vals[0:4]
                assert (m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z) == vals[13:16]
                assert (m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z) == vals[25:28]
                assert tuple(m.linear_acceleration_covariance) == vals[28:37]
            elif rec.topic == "/fix":
                _, sec, nsec, frame, off = _ros1_header(raw, 0)
                status, service, lat, lon, alt = struct.unpack_from("<bHddd", raw, off)
                m = rec.msg
                assert (m.status.status, m.status.service) == (status, service)
                assert (m.latitude, m.longitude, m.altitude) == (lat, lon, alt)
        assert counts == {n: t.count for n, t in bag.topics.items()}
        assert bag.end_ns == last


def test_ros1_imu_is_physical(ros1_bag: Path) -> None:
    """Spot check: a ground robot's accelerometer reads ~1 g on average."""
    with open_bag(ros1_bag) as bag:
        acc = np.array([(r.msg.linear_acceleration.x, r.msg.linear_acceleration.y, r.msg.linear_acceleration.z)
                        for r in bag.messages(topics=["/imu/data"])])
    assert acc.shape == (11865, 3)
    assert 9.0 < np.linalg.norm(acc, axis=1).mean() < 10.6


def test_info_rates_and_gaps_match_timestamps(ros1_bag: Path) -> None:
    info = bag_info(ros1_bag)
    with open_bag(ros1_bag) as bag:
        for name in bag.topics:
            t = np.array([r.t_ns for r in bag.messages(topics=[name])], dtype=np.int64)
            gaps = np.diff(t)
            entry = info["topics"][name]
            assert entry["count"] == len(t)
            assert abs(entry["rate_hz"] - (len(t) - 1) / ((t[-1] - t[0]) / 1e9)) < 1e-3
            assert abs(entry["max_gap_s"] - gaps.max() / 1e9) < 1e-6
            assert abs(entry["max_gap_at_s"] - (t[np.argmax(gaps)] - bag.start_ns) / 1e9) < 1e-6
    assert info["synthetic"] is False
    assert abs(info["duration_s"] - 395.307116) < 1e-3
    assert abs(info["topics"]["/imu/data"]["rate_hz"] - 30.0) < 0.1


def test_renames_and_topic_filter(ros1_bag: Path) -> None:
    renames = {"/fix": "/gps/fix", **CART_RENAMES}
    with open_bag(ros1_bag) as bag:
        by_new = [r for r in bag.messages(topics=["/gps/fix"], renames=renames)]
        by_old = [r for r in bag.messages(topics=["/fix"], renames=renames)]
    assert len(by_new) == len(by_old) == 989
    assert {r.topic for r in by_new} == {"/gps/fix"} and {r.source_topic for r in by_new} == {"/fix"}


def test_clip_window_like_rosbag_play(ros1_bag: Path) -> None:
    with open_bag(ros1_bag) as bag:
        all_t = np.array([r.t_ns for r in bag.messages()], dtype=np.int64)
        start, end = clip_window(bag.start_ns, bag.end_ns, 30.0, 30.0)
        assert (start, end) == (bag.start_ns + 30_000_000_000, bag.start_ns + 60_000_000_000)
        clipped = [r.t_ns for r in bag.messages(start_ns=start, end_ns=end)]
        assert len(clipped) == int(((all_t >= start) & (all_t < end)).sum())
        assert min(clipped) >= start and max(clipped) < end
        # -1 = to the end
        s2, e2 = clip_window(bag.start_ns, bag.end_ns, 390.0, -1)
        tail = [r.t_ns for r in bag.messages(start_ns=s2, end_ns=e2)]
        assert tail[-1] == bag.end_ns and len(tail) == int((all_t >= s2).sum())


def test_cart_sequence_table(cart_dir: Path) -> None:
    path = need(cart_dir / "ground_truth" / "SEQUENCES.md", "CART sequence table")
    seqs = cart_sequences(path)
    assert len(seqs) == 12
    assert seqs["2023-03-XX_Duck/2023-03-21-14-06-04"] == (30.0, 30.0)
    assert seqs["NorthField-2022-07-26-10-39-11"] == (0.0, -1.0)


@pytest.mark.parametrize("compression", ["lz4", "bz2", "none"])
def test_ros1_chunk_compressions(ros1_bag: Path, tmp_path: Path, compression: str) -> None:
    """Rewrite the fixture with rosbags' ROS 1 writer in each chunk compression, read it back."""
    from rosbags.rosbag1 import Writer as Writer1

    out = tmp_path / f"re_{compression}.bag"
    with open_bag(ros1_bag) as src:
        expected = [(r.topic, r.t_ns, bytes(r.raw)) for r in src.messages(topics=["/fix", "/imu/data"])][:3000]
        writer = Writer1(out)
        if compression != "none":
            writer.set_compression(getattr(Writer1.CompressionFormat, compression.upper()))
        with writer:
            conns = {}
            for conn in src._connections:
                if conn.topic in ("/fix", "/imu/data"):
                    conns[conn.topic] = writer.add_connection(conn.topic, conn.msgtype, msgdef=conn.msgdef.data,
                                                              md5sum=conn.digest)
            for topic, t_ns, raw in expected:
                writer.write(conns[topic], t_ns, raw)
    with open_bag(out) as bag:
        got = [(r.topic, r.t_ns, bytes(r.raw)) for r in bag.messages()]
        assert got == expected
        assert bag.topics["/fix"].known and next(bag.messages(topics=["/fix"])).msg.latitude != 0.0
