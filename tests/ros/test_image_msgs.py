"""numpy <-> sensor_msgs/Image and raw CDR stamps, on real rclpy messages and their CDR bytes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 wheels (ros-jazzy-rclpy) not installed: real sensor_msgs messages needed",
                    exc_type=ImportError)

from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import Image, Imu  # noqa: E402

from rgbt.errors import ImageError  # noqa: E402
from rgbt.image.codec import image_to_numpy  # noqa: E402
from rgbt.ros.image import numpy_to_image  # noqa: E402
from rgbt.stamps import cdr_stamp_ns, cdr_with_stamp, ns_to_stamp, stamp_to_ns  # noqa: E402

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("encoding,arr", [
    ("mono16", RNG.integers(0, 65535, (512, 640), dtype=np.uint16)),
    ("mono8", RNG.integers(0, 255, (600, 960), dtype=np.uint8)),
    ("rgb8", RNG.integers(0, 255, (6, 5, 3), dtype=np.uint8)),
    ("32FC1", RNG.random((4, 7), dtype=np.float32)),
])
def test_round_trip_through_cdr_is_bit_exact(encoding: str, arr: np.ndarray) -> None:
    msg = numpy_to_image(arr, 1_700_000_000_123_456_789, "cam", encoding)
    back = deserialize_message(serialize_message(msg), Image)
    out = image_to_numpy(back)
    assert out.dtype == arr.dtype and out.shape == arr.shape
    assert np.array_equal(out, arr)
    assert stamp_to_ns(back.header.stamp) == 1_700_000_000_123_456_789
    assert back.step == arr.shape[1] * arr.itemsize * (3 if arr.ndim == 3 else 1)


def test_read_is_zero_copy_without_padding() -> None:
    msg = numpy_to_image(np.arange(12, dtype=np.uint16).reshape(3, 4), 0, "f", "mono16")
    out = image_to_numpy(msg)
    assert np.shares_memory(out, np.frombuffer(msg.data, np.uint8))  # a view of the message's own buffer
    msg.data[0] = 99  # a write into the message shows through the array
    assert out[0, 0] == 99


@pytest.mark.parametrize("case", ["padded rows", "big-endian"])
def test_read_copies_when_the_layout_needs_it(case: str) -> None:
    arr = np.arange(12, dtype=np.uint16).reshape(3, 4)
    if case == "padded rows":
        msg = Image(height=3, width=4, encoding="mono16", is_bigendian=0, step=4 * 2 + 2)
        padded = np.zeros((3, 10), np.uint8)
        padded[:, :8] = arr.view(np.uint8).reshape(3, 8)
        msg.data = padded.tobytes()
    else:
        msg = Image(height=3, width=4, encoding="mono16", is_bigendian=1, step=8,
                    data=arr.astype(">u2").tobytes())
    out = image_to_numpy(msg)
    assert np.array_equal(out, arr)
    assert not np.shares_memory(out, np.frombuffer(msg.data, np.uint8))  # the copying path
    msg.data[0] = 99
    assert out[0, 0] == 0


def test_step_padding_and_big_endian_are_honoured() -> None:
    arr = RNG.integers(0, 65535, (5, 3), dtype=np.uint16)
    msg = Image(height=5, width=3, encoding="mono16", is_bigendian=1, step=3 * 2 + 4)
    padded = np.zeros((5, 10), dtype=np.uint8)
    padded[:, :6] = arr.astype(">u2").view(np.uint8).reshape(5, 6)
    msg.data = padded.tobytes()
    out = image_to_numpy(msg)
    assert out.dtype == np.uint16 and out.dtype.isnative
    assert np.array_equal(out, arr)


def test_errors_name_encoding_and_sizes() -> None:
    with pytest.raises(ImageError, match="yuv422"):
        image_to_numpy(Image(height=1, width=1, encoding="yuv422", step=2, data=b"\0\0"))
    with pytest.raises(ImageError, match="step 4"):
        image_to_numpy(Image(height=2, width=4, encoding="mono8", step=4, data=b"\0" * 4))
    with pytest.raises(ImageError, match="mono16"):
        numpy_to_image(np.zeros((2, 2), np.uint8), 0, "f", "mono16")


def test_cdr_stamp_patch_keeps_every_other_byte() -> None:
    msg = numpy_to_image(RNG.integers(0, 255, (4, 4), dtype=np.uint8), 5_000_000_001, "thermal", "mono8")
    raw = serialize_message(msg)
    assert cdr_stamp_ns(raw) == 5_000_000_001
    patched = cdr_with_stamp(raw, 7_250_000_003)
    assert len(patched) == len(raw) and patched[12:] == raw[12:] and patched[:4] == raw[:4]
    back = deserialize_message(patched, Image)
    assert stamp_to_ns(back.header.stamp) == 7_250_000_003
    assert bytes(back.data) == bytes(msg.data)
    imu = Imu()
    ns_to_stamp(123_456_789_012, imu.header.stamp)
    assert cdr_stamp_ns(serialize_message(imu)) == 123_456_789_012
