"""MCAP -> ROS 1 ``.bag`` (``rgbt bag convert --to ros1``): fields, stamps and metadata survive, the
ROS 1 definitions are Noetic's, and converting back gives the original CDR byte for byte. SYNTHETIC data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import run_rgbt
from rgbt.bag import BagWriter, numpy_to_image_msg, open_bag
from rgbt.image.codec import image_to_numpy
from rgbt.bag.convert import ConvertOptions, convert_bag
from rgbt.topics import ROS1_METADATA_TOPIC
from rgbt.bag.types import ros2_typestore
from rgbt.errors import BagError

STORE = ros2_typestore()
T0 = 1_700_000_000_000_000_000
TOPICS = {"/boson/thermal/image_raw": "sensor_msgs/msg/Image", "/eo/color/image_raw": "sensor_msgs/msg/Image",
          "/imu/imu": "sensor_msgs/msg/Imu", "/uav1/mavros/state": "mavros_msgs/msg/State"}


def _imu(t_ns: int, i: int):  # type: ignore[no-untyped-def]
    T = STORE.types
    sec, nsec = divmod(t_ns, 1_000_000_000)
    v3 = T["geometry_msgs/msg/Vector3"]
    return T["sensor_msgs/msg/Imu"](T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](sec, nsec), "imu"),
                                    T["geometry_msgs/msg/Quaternion"](0.0, 0.0, 0.0, 1.0), np.zeros(9),
                                    v3(0.01 * i, -0.02, 0.03), np.zeros(9), v3(0.1, 0.2, 9.81 + 1e-3 * i), np.zeros(9))


def _state(t_ns: int, armed: bool):  # type: ignore[no-untyped-def]
    T = STORE.types
    sec, nsec = divmod(t_ns, 1_000_000_000)
    return T["mavros_msgs/msg/State"](T["std_msgs/msg/Header"](T["builtin_interfaces/msg/Time"](sec, nsec), "base"),
                                      True, armed, True, False, "GUIDED", 4)


@pytest.fixture(scope="module")
def mcap_bag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ros1") / "sim"
    rng = np.random.default_rng(3)
    with BagWriter(path, custom_data={"rgbt.synthetic": "true", "rgbt.seed": "3"}) as w:
        for topic, msgtype in TOPICS.items():
            w.add_topic(topic, msgtype)
        for i in range(10):
            t = T0 + i * 33_333_333 + 7  # odd nanoseconds: stamps must survive to the ns
            w.write_msg("/boson/thermal/image_raw", t, numpy_to_image_msg(
                rng.integers(0, 65535, (24, 32), dtype=np.uint16), t, "thermal", "mono16"))
            w.write_msg("/eo/color/image_raw", t + 1, numpy_to_image_msg(
                rng.integers(0, 255, (12, 16, 3), dtype=np.uint8), t + 1, "color", "rgb8"))
            for k in range(5):
                w.write_msg("/imu/imu", t + 2 + k * 5_000_000, _imu(t + 2 + k * 5_000_000, i * 5 + k))
        w.write_msg("/uav1/mavros/state", T0 + 3, _state(T0 + 3, True))
    return path


def test_mcap_to_ros1_keeps_fields_stamps_and_metadata(mcap_bag: Path, tmp_path: Path) -> None:
    from rosbags.typesys import Stores, get_typestore

    dst = tmp_path / "sim.bag"
    res = convert_bag(mcap_bag, dst, ConvertOptions(to="ros1", compression="lz4"))
    assert res["output_format"] == "ros1" and res["messages"] == 71
    noetic = get_typestore(Stores.ROS1_NOETIC)
    with open_bag(mcap_bag) as src, open_bag(dst) as out:
        assert out.kind == "ros1" and out.synthetic and out.metadata["rgbt.seed"] == "3"
        assert {n: t.count for n, t in out.topics.items() if n != ROS1_METADATA_TOPIC} == \
            {n: t.count for n, t in src.topics.items()}
        conns = {c.topic: c for c in out._connections}  # the md5 a ROS 1 subscriber checks
        assert conns["/imu/imu"].digest == noetic.generate_msgdef("sensor_msgs/msg/Imu")[1]
        assert conns["/eo/color/image_raw"].digest == noetic.generate_msgdef("sensor_msgs/msg/Image")[1]
        recs = [r for r in out.messages() if r.topic != ROS1_METADATA_TOPIC]
        for a, b in zip(src.messages(), recs, strict=True):
            assert (a.topic, a.msgtype, a.t_ns) == (b.topic, b.msgtype, b.t_ns)
            assert (a.msg.header.stamp.sec, a.msg.header.stamp.nanosec) == \
                (b.msg.header.stamp.sec, b.msg.header.stamp.nanosec)
            if a.msgtype == "sensor_msgs/msg/Image":
                x, y = image_to_numpy(a.msg), image_to_numpy(b.msg)
                assert x.dtype == y.dtype and np.array_equal(x, y)
            elif a.msgtype == "sensor_msgs/msg/Imu":
                assert a.msg.linear_acceleration.z == b.msg.linear_acceleration.z
            else:
                assert (a.msg.armed, a.msg.mode) == (b.msg.armed, b.msg.mode)
    back = tmp_path / "back"  # ROS 1 -> ROS 2 again: the same CDR, byte for byte
    convert_bag(dst, back)
    with open_bag(mcap_bag) as src, open_bag(back) as again:
        assert again.synthetic
        assert [(r.topic, r.t_ns, bytes(r.raw)) for r in src.messages()] == \
            [(r.topic, r.t_ns, bytes(r.raw)) for r in again.messages()]


def test_cli_to_ros1_with_cart_names_and_clip(mcap_bag: Path, tmp_path: Path) -> None:
    dst = tmp_path / "cart.bag"
    proc = run_rgbt("bag", "convert", mcap_bag, dst, "--to", "ros1", "--cart-names", "--start", "0.1",
                    "--duration", "0.2", "--json")
    res = json.loads(proc.stdout)
    assert res["topics"]["/eo/color/image_color"] == 6 and "/eo/color/image_raw" not in res["topics"]
    with open_bag(dst) as out:
        stamps = [r.t_ns for r in out.messages(topics=["/boson/thermal/image_raw"])]
        assert stamps == [T0 + i * 33_333_333 + 7 for i in range(3, 9)]


def test_ros1_output_rejects_mcap_only_options(mcap_bag: Path, tmp_path: Path) -> None:
    with pytest.raises(BagError, match="compression 'zstd' for a ros1 bag"):
        convert_bag(mcap_bag, tmp_path / "a.bag", ConvertOptions(to="ros1", compression="zstd"))
    with pytest.raises(BagError, match="splitting is for ROS 2 output only"):
        convert_bag(mcap_bag, tmp_path / "b.bag", ConvertOptions(to="ros1", split_size_bytes=10_000))
