"""ROS 1 -> MCAP conversion, clipping and renames; re-read bit-exact and cross-checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from helpers import run_rgbt
from rgbt.bag import open_bag
from rgbt.bag.types import ros2_typestore

STORE = ros2_typestore()


def _fields(msg):
    """Plain nested values of a rosbags message (ROS 1 header.seq left out: ROS 2 has none)."""
    if hasattr(msg, "__msgtype__"):  # the ROS 2 field list (constants are not fields)
        return {k: _fields(getattr(msg, k)) for k, _ in STORE.fielddefs[msg.__msgtype__][1]}
    if isinstance(msg, np.ndarray):
        return msg.tolist()
    if isinstance(msg, list):
        return [_fields(x) for x in msg]
    return msg


def test_ros1_to_mcap_fields_equal_and_cdr_bit_exact(ros1_bag: Path, converted_ros1: Path) -> None:
    with open_bag(ros1_bag) as src, open_bag(converted_ros1) as dst:
        assert {n: t.count for n, t in dst.topics.items()} == {n: t.count for n, t in src.topics.items()}
        assert dst.metadata["rgbt.source_format"] == "ros1"
        n = 0
        for a, b in zip(src.messages(), dst.messages(), strict=True):
            assert (a.topic, a.msgtype, a.t_ns) == (b.topic, b.msgtype, b.t_ns)
            assert _fields(a.msg) == _fields(b.msg)
            # the stored CDR is exactly what the ROS 2 definition serializes the message to
            assert bytes(b.raw) == bytes(STORE.serialize_cdr(b.msg, b.msgtype))
            n += 1
        assert n == 16806


def test_converted_bag_decodes_with_mcap_ros2(ros1_bag: Path, converted_ros1: Path) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open_bag(ros1_bag) as src:
        fixes = [r.msg for r in src.messages(topics=["/fix"])]
    got = []
    for f in sorted(converted_ros1.glob("*.mcap")):
        with f.open("rb") as fh:
            reader = make_reader(fh, decoder_factories=[DecoderFactory()])
            got += [m for _, _, _, m in reader.iter_decoded_messages(topics=["/fix"], log_time_order=True)]
    assert len(got) == len(fixes) == 989
    for a, b in zip(fixes, got):
        assert (a.latitude, a.longitude, a.altitude, a.status.status) == (b.latitude, b.longitude, b.altitude,
                                                                          b.status.status)
        assert (a.header.stamp.sec, a.header.stamp.nanosec) == (b.header.stamp.sec, b.header.stamp.nanosec)
        assert list(a.position_covariance) == list(b.position_covariance)


def test_cli_clip_with_rename_then_info_json(ros1_bag: Path, tmp_path: Path) -> None:
    out = tmp_path / "clip"
    run_rgbt("bag", "clip", ros1_bag, out, "--start", "90", "--duration", "90", "--rename", "/fix:=/gps/fix",
             "--drop-topic", "/husky_velocity_controller/odom", "--split-duration", "30", "--compression", "zstd")
    with open_bag(ros1_bag) as src:
        t0 = src.start_ns
        want: dict[str, int] = {}
        for r in src.messages(topics=["/fix", "/imu/data"]):
            if t0 + 90e9 <= r.t_ns < t0 + 180e9:
                key = "/gps/fix" if r.topic == "/fix" else r.topic
                want[key] = want.get(key, 0) + 1
    info = json.loads(run_rgbt("bag", "info", out, "--json").stdout)
    assert {k: v["count"] for k, v in info["topics"].items()} == want
    assert info["duration_s"] < 90.0 and info["synthetic"] is False
    assert len(list(out.glob("*.mcap"))) >= 3


def test_cli_convert_ros2_sqlite3_to_mcap(bags_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "talker_mcap"
    res = json.loads(run_rgbt("bag", "convert", bags_dir / "ros2_talker_sqlite3", out, "--json").stdout)
    assert res["messages"] == 20 and res["topics"]["/topic"] == 10
    with open_bag(bags_dir / "ros2_talker_sqlite3") as a, open_bag(out) as b:
        assert [bytes(r.raw) for r in a.messages()] == [bytes(r.raw) for r in b.messages()]
        assert [r.msg.data for r in b.messages(topics=["/topic"])] == [f"Hello, world! {n}" for n in range(10)]
