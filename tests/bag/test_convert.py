"""ROS 1 -> MCAP conversion, clipping and renames; re-read bit-exact and cross-checked."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

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


@pytest.mark.slow
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


def test_cli_cart_renames_images(tmp_path: Path) -> None:
    """A bag with CART's older topic names comes out with the stack's names and identical pixels."""
    from rgbt.bag import BagWriter, numpy_to_image_msg
    from rgbt.image.codec import image_to_numpy
    from rgbt.bag.renames import CART_DROP_TOPICS

    rng = np.random.default_rng(5)
    thermal = rng.integers(0, 2**14, (512, 640), dtype=np.uint16)
    color = rng.integers(0, 256, (600, 960, 3), dtype=np.uint8)
    with BagWriter(tmp_path / "old") as w:
        for topic in ("/flir_boson/image", "/camera/image_raw", *sorted(CART_DROP_TOPICS)):
            w.add_topic(topic, "sensor_msgs/msg/Image")
        for k in range(3):
            w.write_msg("/flir_boson/image", 10 + k, numpy_to_image_msg(thermal + k, 10 + k, "boson", "mono16"))
            w.write_msg("/camera/image_raw", 11 + k, numpy_to_image_msg(color, 11 + k, "eo", "rgb8"))
            w.write_msg(sorted(CART_DROP_TOPICS)[0], 12 + k, numpy_to_image_msg(thermal, 12 + k, "x", "mono16"))
    run_rgbt("bag", "convert", tmp_path / "old", tmp_path / "new", "--cart-renames")
    with open_bag(tmp_path / "new") as bag:
        assert set(bag.topics) == {"/boson/thermal/image_raw", "/eo/color/image_raw"}
        thermals = [image_to_numpy(r.msg) for r in bag.messages(topics=["/boson/thermal/image_raw"])]
        assert all(np.array_equal(t, thermal + k) for k, t in enumerate(thermals)) and len(thermals) == 3
        assert all(np.array_equal(image_to_numpy(r.msg), color) for r in bag.messages(topics=["/eo/color/image_raw"]))


def test_ros1_legacy_tf_and_custom_types(tmp_path: Path) -> None:
    """A ROS 1 bag with the legacy ``tf/tfMessage`` and a type ROS 2 Jazzy lacks: the first becomes
    ``tf2_msgs/msg/TFMessage``, the second is carried over from the bag's own definition."""
    from rosbags.rosbag1 import Writer as Writer1
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    src_store = get_typestore(Stores.ROS1_NOETIC)
    src_store.register(get_types_from_msg("geometry_msgs/TransformStamped[] transforms\n", "tf/msg/tfMessage"))
    src_store.register(get_types_from_msg("uint32 id\nfloat64[] values\nstring label\n", "acme_msgs/msg/Reading"))
    T = src_store.types
    stamp = T["builtin_interfaces/msg/Time"](12, 345)
    tf = T["tf/msg/tfMessage"]([T["geometry_msgs/msg/TransformStamped"](
        T["std_msgs/msg/Header"](7, stamp, "world"), "imu",
        T["geometry_msgs/msg/Transform"](T["geometry_msgs/msg/Vector3"](1.0, 2.0, 3.0),
                                         T["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0)))])
    reading = T["acme_msgs/msg/Reading"](42, np.array([1.5, -2.5]), "probe")
    with Writer1(tmp_path / "legacy.bag") as w:
        c_tf = w.add_connection("/tf", "tf/msg/tfMessage", typestore=src_store)
        c_r = w.add_connection("/reading", "acme_msgs/msg/Reading", typestore=src_store)
        w.write(c_tf, 10, src_store.serialize_ros1(tf, "tf/msg/tfMessage"))
        w.write(c_r, 11, src_store.serialize_ros1(reading, "acme_msgs/msg/Reading"))
    run_rgbt("bag", "convert", tmp_path / "legacy.bag", tmp_path / "out")
    with open_bag(tmp_path / "out") as bag:
        assert bag.topics["/tf"].msgtype == "tf2_msgs/msg/TFMessage"
        assert bag.topics["/reading"].msgtype == "acme_msgs/msg/Reading" and bag.unknown_types == []
        msgs = {r.topic: r.msg for r in bag.messages()}
    t = msgs["/tf"].transforms[0]
    assert (t.header.frame_id, t.child_frame_id, t.header.stamp.sec, t.header.stamp.nanosec) == ("world", "imu", 12, 345)
    assert (t.transform.translation.x, t.transform.translation.z) == (1.0, 3.0)
    r = msgs["/reading"]
    assert (r.id, list(r.values), r.label) == (42, [1.5, -2.5], "probe")
