"""numpy <-> rosbags sensor_msgs/Image (``rgbt.image.codec``, ``rgbt.bag.images``): encodings, padded rows,
endianness, zero copy, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from rgbt.bag.images import numpy_to_image_msg
from rgbt.bag.types import ros2_typestore
from rgbt.errors import ImageError
from rgbt.image.codec import image_to_numpy

RNG = np.random.default_rng(7)

CASES = [
    ("mono8", RNG.integers(0, 256, (5, 7), dtype=np.uint8)),
    ("mono16", RNG.integers(0, 65536, (5, 7), dtype=np.uint16)),
    ("rgb8", RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)),
    ("32FC1", RNG.normal(size=(5, 7)).astype(np.float32)),
]


@pytest.mark.parametrize("encoding,arr", CASES, ids=[c[0] for c in CASES])
def test_roundtrip_through_cdr(encoding: str, arr: np.ndarray) -> None:
    store = ros2_typestore()
    msg = numpy_to_image_msg(arr, 1_700_000_000_123_456_789, "cam", encoding)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (1_700_000_000, 123_456_789)
    assert msg.step == arr.shape[1] * arr.itemsize * (arr.shape[2] if arr.ndim == 3 else 1)
    back = store.deserialize_cdr(store.serialize_cdr(msg, "sensor_msgs/msg/Image"), "sensor_msgs/msg/Image")
    out = image_to_numpy(back)
    assert out.dtype == arr.dtype and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)


def _msg(data: bytes, h: int, w: int, step: int, enc: str, big: int = 0):
    Image = ros2_typestore().types["sensor_msgs/msg/Image"]
    Header = ros2_typestore().types["std_msgs/msg/Header"]
    Time = ros2_typestore().types["builtin_interfaces/msg/Time"]
    return Image(Header(Time(0, 0), "f"), h, w, enc, big, step, np.frombuffer(data, dtype=np.uint8))


def test_padded_step_is_copied_dense_rows_are_not() -> None:
    arr = RNG.integers(0, 65536, (4, 6), dtype=np.uint16)
    padded = np.zeros((4, 16), dtype=np.uint8)  # 12 bytes of pixels + 4 bytes padding per row
    padded[:, :12] = arr.view(np.uint8).reshape(4, 12)
    msg = _msg(padded.tobytes(), 4, 6, 16, "mono16")
    out = image_to_numpy(msg)
    np.testing.assert_array_equal(out, arr)
    assert out.flags.c_contiguous and not np.shares_memory(out, msg.data)  # as the live nodes read it
    dense = _msg(arr.tobytes(), 4, 6, 12, "mono16")
    assert np.shares_memory(image_to_numpy(dense), dense.data)


def test_big_endian_mono16() -> None:
    arr = RNG.integers(0, 65536, (3, 5), dtype=np.uint16)
    msg = _msg(arr.astype(">u2").tobytes(), 3, 5, 10, "mono16", big=1)
    out = image_to_numpy(msg)
    assert out.dtype == np.uint16 and out.dtype.isnative
    np.testing.assert_array_equal(out, arr)


def test_bgr8_comes_back_as_sent_unless_rgb_is_asked() -> None:
    rgb = RNG.integers(0, 256, (2, 3, 3), dtype=np.uint8)
    msg = _msg(np.ascontiguousarray(rgb[..., ::-1]).tobytes(), 2, 3, 9, "bgr8")
    np.testing.assert_array_equal(image_to_numpy(msg, rgb=True), rgb)
    np.testing.assert_array_equal(image_to_numpy(msg), rgb[..., ::-1])


def test_bad_images_raise() -> None:
    with pytest.raises(ImageError, match=">= 12 bytes"):
        image_to_numpy(_msg(b"\0" * 10, 2, 3, 6, "mono16"))
    with pytest.raises(ImageError, match=">= 16 bytes"):  # the last row's padding is missing
        image_to_numpy(_msg(b"\0" * 14, 2, 3, 8, "mono16"))
    with pytest.raises(ImageError, match="step"):
        image_to_numpy(_msg(b"\0" * 12, 2, 3, 4, "mono16"))
    with pytest.raises(ImageError, match="unsupported image encoding"):
        image_to_numpy(_msg(b"\0" * 12, 2, 3, 6, "yuv422"))
    with pytest.raises(ImageError, match="does not match"):
        numpy_to_image_msg(np.zeros((2, 3), np.uint8), 0, "f", "mono16")
